"""Serve any :class:`Policy` over the OpenAI-compatible HTTP API, with micro-batching.

>>> from llm_marl_envs.policies import CallablePolicy
>>> from llm_marl_envs.policies.openai_compat import OpenAIPolicy
>>> with serve_policy(CallablePolicy(lambda observation, info: "left")) as server:
...     client = OpenAIPolicy(server.url)
...     print(client.generate([Prompt("gnome_0", "left or right?", [], {})])[0].text)
...     client.close()
left

Endpoints (under ``/v1``):

- ``POST /v1/chat/completions``: ``messages`` become ``Prompt(agent="remote",
  observation=<the last user message, or all messages rendered as "role: content" lines>,
  messages=messages, info={})``.
- ``POST /v1/completions``: ``prompt`` (a string or a list of strings) becomes
  ``Prompt(agent="remote", observation=prompt, messages=[], info={})``.
- ``GET /v1/models``: lists ``model_name`` (with ``max_model_len`` when one is given).
- ``POST /tokenize`` (at the root, as vLLM has it): ``{"count": <prompt tokens>}`` for a chat
  (``messages``, rendered with the chat template) or completion (``prompt``) request, when the
  policy has a tokenizer (an :class:`~llm_marl_envs.policies.hf.HFPolicy`); else HTTP 404.

With ``max_model_len`` (and a policy that counts tokens), a request whose prompt tokens plus
``max_tokens`` exceed it is refused with HTTP 400 in vLLM's words, as vLLM refuses it.

Answers follow the OpenAI JSON shape; ``usage`` carries the token counts the policy reports
(``prompt_ids`` / ``completion_ids``), and ``logprobs`` is filled when the request asks for it
and the completion has them (token strings are ``"token_id:<id>"`` when the ids are known, as
vLLM's ``--return-tokens-as-token-ids`` writes them). A request with ``return_token_ids: true``
gets the ids the policy reports as vLLM (>= 0.10.2) answers them: ``prompt_token_ids`` at the
top of a chat answer and ``token_ids`` in its choice; both in each choice of a completion
answer. Sampling fields of a request (``max_tokens``, ``temperature``, ``stop``, ``seed``, ...)
are ignored: the policy's own settings apply. ``n > 1`` is refused with HTTP 400.

Streaming (``"stream": true``, on both endpoints) answers with server-sent events in OpenAI's
chunk format, as ``vllm serve`` does: ``data: {...}`` lines of ``chat.completion.chunk``
objects (first the assistant ``role``, then the ``content``, then an empty ``delta`` with the
``finish_reason``) or of ``text_completion`` chunks (each choice's ``text``, then its
``finish_reason``), a last chunk with ``usage`` and no choices when
``stream_options.include_usage`` is true, and ``data: [DONE]``. ``logprobs`` and the token
ids ride on the content chunk (``prompt_token_ids`` on a chat stream's first chunk). The
policy writes whole completions, so each one arrives as a single content chunk once it is
generated; a request the server refuses, or a policy failure, is answered before the stream
starts, with its HTTP status and JSON error body as without streaming.

Micro-batching: one worker thread owns the policy. Requests that arrive within ``batch_wait``
seconds of the first waiting one (up to ``max_batch`` prompts) are answered by a single
``policy.generate`` call, so a model that is efficient on batches stays efficient when served,
and a policy that is not thread-safe is only ever called from that one thread.

Bad requests get HTTP 400, unknown paths 404, a policy exception HTTP 500, each with an OpenAI
style ``{"error": {"message", "type", ...}}`` body. The server does not close the policy.

Run a model from the command line (needs the ``hf`` extra)::

    python -m llm_marl_envs.policies.server --model tiny --port 8000

or relay another OpenAI-compatible server (``--model openai:http://127.0.0.1:8001/v1#NAME``):
its answers, in this server's shape (a ``transformers serve`` stream never sends
``data: [DONE]``, which some clients, verifiers among them, wait for).
"""

from __future__ import annotations

import argparse
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from llm_marl_envs.core.validation import check_int, check_number
from llm_marl_envs.policies._server_answers import (
    _chat_completion,
    _chunks,
    _RequestError,
    _text_completion,
    _tokenize,
)
from llm_marl_envs.policies.base import Completion, Policy, Prompt

__all__ = ["PolicyServer", "serve_policy"]

log = logging.getLogger(__name__)

_MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass
class _Job:
    """One prompt waiting for the worker."""

    prompt: Prompt
    done: threading.Event = field(default_factory=threading.Event)
    completion: Completion | None = None
    error: str | None = None


class PolicyServer:
    """A running server (start it with :func:`serve_policy`); a context manager.

    Attributes:
        url: The API root for clients, ``http://<host>:<port>/v1``.
        host, port: Where it listens (``port`` is the real one when 0 was asked).
        model_name: The model id it reports.
        max_model_len: The context length it reports (None: none).
        request_count: HTTP requests received so far (all endpoints, failed ones included).
    """

    def __init__(
        self,
        policy: Policy,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        model_name: str = "llm-marl",
        max_batch: int = 32,
        batch_wait: float = 0.01,
        api_key: str | None = None,
        max_model_len: int | None = None,
    ) -> None:
        if not isinstance(policy, Policy):
            raise TypeError(f"serve_policy needs a Policy, got {policy!r}")
        check_int("max_batch", max_batch, 1)
        check_number("batch_wait", batch_wait, 0)
        check_int("max_model_len", max_model_len, 1, none_ok=True)
        self.policy = policy
        self.max_model_len = max_model_len
        self.model_name = model_name
        self.max_batch = max_batch
        self.batch_wait = float(batch_wait)
        self.request_count = 0
        self._api_key = api_key
        self._lock = threading.Lock()
        self._tokens = threading.Lock()
        self._closed = False
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()

        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = False  # so server_close() joins the handler threads
        self._httpd.block_on_close = True
        self._httpd.policy_server = self  # type: ignore[attr-defined]
        self.host, self.port = self._httpd.server_address[:2]
        self.url = f"http://{self.host}:{self.port}/v1"
        self._worker = threading.Thread(target=self._work, name="policy-server-worker", daemon=True)
        self._serving = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="policy-server-http",
            daemon=True,
        )
        self._worker.start()
        self._serving.start()

    def __enter__(self) -> PolicyServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PolicyServer({self.url!r}, policy={getattr(self.policy, 'name', self.policy)!r})"

    def close(self) -> None:
        """Stop accepting requests, answer those queued, and join the threads (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)  # after every job already queued
        self._httpd.shutdown()
        self._httpd.server_close()
        self._worker.join()
        self._serving.join()

    def serve_forever(self) -> None:
        """Block until interrupted (Ctrl-C), then close."""
        try:
            while self._serving.is_alive():
                self._serving.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    # ------------------------------------------------------------------ batching
    def submit(self, prompts: list[Prompt]) -> list[Completion]:
        """Queue prompts for the worker and wait for their completions (called by handlers)."""
        jobs = [_Job(prompt) for prompt in prompts]
        with self._lock:
            if self._closed:
                raise _RequestError(503, "the server is shutting down", "server_error")
            for job in jobs:
                self._queue.put(job)
        for job in jobs:
            job.done.wait()
        failed = next((job.error for job in jobs if job.error is not None), None)
        if failed is not None:
            raise _RequestError(500, failed, "server_error")
        return [job.completion for job in jobs]  # type: ignore[misc]

    def _work(self) -> None:
        """The worker: gather a batch, call the policy once, hand out the answers."""
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            deadline = time.monotonic() + self.batch_wait
            while len(batch) < self.max_batch:
                try:
                    job = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if job is None:
                    stopping = True
                    break
                batch.append(job)
            self._run_batch(batch)

    def _run_batch(self, batch: list[_Job]) -> None:
        try:
            completions = self.policy.generate([job.prompt for job in batch])
            if len(completions) != len(batch):
                raise RuntimeError(
                    f"the policy returned {len(completions)} completions for {len(batch)} prompts"
                )
        except Exception as error:  # noqa: BLE001 - reported to every client of the batch
            log.exception("policy %r failed on a batch of %d", self.policy, len(batch))
            for job in batch:
                job.error = f"{type(error).__name__}: {error}"
                job.done.set()
            return
        for job, completion in zip(batch, completions, strict=True):
            job.completion = completion
            job.done.set()

    def count_tokens(self, prompt: Prompt) -> int | None:
        """The prompt's length in the policy's tokens (chat template applied), or None when the
        policy has no tokenizer."""
        render = getattr(self.policy, "render", None)
        tokenizer = getattr(self.policy, "tokenizer", None)
        if render is None or tokenizer is None:
            return None
        special = not getattr(self.policy, "use_chat_template", False)
        with self._tokens:  # one encoding at a time (a fast tokenizer is not re-entrant)
            ids = tokenizer(
                [render(prompt)], add_special_tokens=special, padding=False, truncation=False
            )["input_ids"][0]
        return len(ids)

    def _count(self) -> int:
        """Count a request; its 1-based number."""
        with self._lock:
            self.request_count += 1
            return self.request_count

    def _admit(
        self, number: int, method: str, path: str, headers: dict[str, str], body: Any
    ) -> None:
        """Called with each request (numbered as received) before it is answered: every one is
        admitted; a subclass may delay one or answer it with an error by raising
        :class:`_RequestError` (the tests inject faults so)."""


def serve_policy(
    policy: Policy,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    model_name: str = "llm-marl",
    max_batch: int = 32,
    batch_wait: float = 0.01,
    api_key: str | None = None,
    max_model_len: int | None = None,
) -> PolicyServer:
    """Serve ``policy`` on ``host:port`` (0 = a free port) from background threads.

    Args:
        policy: The policy; only the server's worker thread calls it. Not closed by the server.
        host: Interface to listen on (keep ``127.0.0.1`` unless others must reach it).
        port: TCP port; 0 picks a free one (read ``server.port`` / ``server.url``).
        model_name: The model id reported in answers and ``/v1/models``.
        max_batch: Most prompts per ``policy.generate`` call.
        batch_wait: Seconds the worker waits for more requests after the first one arrives.
        api_key: If set, requests must send ``Authorization: Bearer <api_key>`` (else HTTP 401).
        max_model_len: The context length to report in ``/v1/models`` and to refuse longer
            requests by (with a policy that counts tokens), as vLLM's ``--max-model-len``.

    Returns:
        The running :class:`PolicyServer`; call ``close()`` or use it in a ``with`` block.
    """
    return PolicyServer(
        policy,
        host,
        port,
        model_name=model_name,
        max_batch=max_batch,
        batch_wait=batch_wait,
        api_key=api_key,
        max_model_len=max_model_len,
    )


# ---------------------------------------------------------------------- HTTP
class _Handler(BaseHTTPRequestHandler):
    server_version = "llm-marl-policy-server"
    timeout = 30  # seconds a silent client may hold a handler thread

    @property
    def _policy_server(self) -> PolicyServer:
        return self.server.policy_server  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self._handle("POST")

    def _handle(self, method: str) -> None:
        srv = self._policy_server
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = self._read_json() if method == "POST" else None
        except _RequestError as error:
            body = None
            bad_body: _RequestError | None = error
        else:
            bad_body = None
        number = srv._count()
        try:
            srv._admit(number, method, path, dict(self.headers.items()), body)
            if srv._api_key is not None and self.headers.get("Authorization") != (
                f"Bearer {srv._api_key}"
            ):
                raise _RequestError(401, "missing or wrong API key", "authentication_error")
            if bad_body is not None:
                raise bad_body
            if method == "GET" and path == "/v1/models":
                answer = {
                    "object": "list",
                    "data": [
                        {
                            "id": srv.model_name,
                            "object": "model",
                            "created": 0,
                            "owned_by": "llm-marl",
                        }
                        | ({"max_model_len": srv.max_model_len} if srv.max_model_len else {})
                    ],
                }
            elif method == "POST" and path == "/tokenize":
                answer = _tokenize(srv, body)
            elif method == "POST" and path == "/v1/chat/completions":
                answer = _chat_completion(srv, body)
            elif method == "POST" and path == "/v1/completions":
                answer = _text_completion(srv, body)
            else:
                raise _RequestError(404, f"no route for {method} {path}", "not_found_error")
            if isinstance(body, dict) and body.get("stream"):
                self._send_events(_chunks(answer, body))
            else:
                self._send(200, answer)
        except _RequestError as error:
            self._send_error(error.status, str(error), error.kind)
        except Exception as error:  # noqa: BLE001 - a server bug must still answer the client
            log.exception("error handling %s %s", method, path)
            self._send_error(500, f"{type(error).__name__}: {error}", "server_error")

    def _send_error(self, status: int, message: str, kind: str) -> None:
        self._send(
            status, {"error": {"message": message, "type": kind, "param": None, "code": status}}
        )

    def _read_json(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise _RequestError(411, "a Content-Length header is required") from None
        if not 0 <= length <= _MAX_BODY_BYTES:
            raise _RequestError(413, f"the body must be at most {_MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise _RequestError(400, f"the body is not valid JSON: {error}") from None
        if not isinstance(body, dict):
            raise _RequestError(400, "the body must be a JSON object")
        return body

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timed out) before the answer
            log.debug("client %s left before the answer", self.address_string())

    def _send_events(self, events: list[dict[str, Any]]) -> None:
        """Server-sent events: one ``data:`` line per chunk, then ``data: [DONE]``; the
        connection closes after the last (HTTP/1.0, no length)."""
        lines = [f"data: {json.dumps(event)}\n\n" for event in events] + ["data: [DONE]\n\n"]
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for line in lines:
                self.wfile.write(line.encode("utf-8"))
                self.wfile.flush()
        except OSError:  # the client gave up before the end of the stream
            log.debug("client %s left during the stream", self.address_string())
        self.close_connection = True


# ---------------------------------------------------------------------- command line
def main(argv: list[str] | None = None) -> None:
    """``python -m llm_marl_envs.policies.server --model tiny|default|PATH|openai:URL#MODEL``.

    An ``openai:`` model relays another server's answers (its requests' messages go on
    upstream; the answers come back in this server's OpenAI shape, streams ending with
    ``data: [DONE]``), served under the upstream's model name.
    """
    parser = argparse.ArgumentParser(description="Serve a transformers policy over the OpenAI API.")
    parser.add_argument(
        "--model",
        default="default",
        help="tiny, default, a model path/id, or openai:URL#MODEL (relay another server)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument(
        "--max-model-len", type=int, default=None, help="the context length to report and keep"
    )
    parser.add_argument("--batch-wait", type=float, default=0.01)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    if args.model.startswith("openai:"):
        from llm_marl_envs.policies.openai_compat import OpenAIPolicy

        policy = OpenAIPolicy.from_spec(args.model[len("openai:") :])
        name = policy.model
    else:
        from llm_marl_envs.policies.hf import HFPolicy  # heavy: only here

        policy = HFPolicy.from_spec(args.model)
        name = args.model
    server = serve_policy(
        policy,
        args.host,
        args.port,
        model_name=name,
        max_batch=args.max_batch,
        batch_wait=args.batch_wait,
        max_model_len=args.max_model_len,
    )
    log.info("serving %s at %s (Ctrl-C stops)", args.model, server.url)
    try:
        server.serve_forever()
    finally:
        policy.close()


if __name__ == "__main__":
    main()
