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

**The HTTP stack** is uvicorn (the ``serve`` extra: ``pip install 'llm-marl-envs[serve]'``),
as under vLLM's OpenAI server; the app (``_server_http``) sits behind
:class:`~llm_marl_envs.core.asgi_guard.Guard`, which checks each request's authority, size and
JSON bounds before the API sees it.

Bad requests get HTTP 400 naming the field (``param``), unknown paths 404, a policy exception
HTTP 500, each with an OpenAI style ``{"error": {"message", "type", "param", "code"}}`` body.
A failure the server did not expect (a policy's exception included) is logged with an id, and
the client gets that id and the exception's type, never its text, a traceback, a path or an
upstream URL. The server does not close the policy.

**Limits** (:class:`ServerLimits`; each a flag of the command line), checked before any work:

* ``max_body_bytes`` (``--max-body-bytes``, default 8 MiB): a larger ``Content-Length`` is
  answered 413 before one byte of the body is read; a chunked body is refused (411);
* the body is parsed within bounds (:mod:`~llm_marl_envs.core.bounded_json`): at most
  ``max_json_values`` values (1,000,000) nested at most ``max_json_depth`` deep (32), no
  integer beyond 64 bits, no ``NaN`` / ``Infinity`` / ``1e400``, no lone surrogate (each a
  400 naming the place, as ``messages[0].content``);
* ``max_prompts`` (``--max-prompts``, default 256): prompts of a completion request, messages
  of a chat request;
* ``max_tokens`` (``--max-tokens``, default 32,768): the largest ``max_tokens`` a request
  may ask for;
* ``max_queued`` (``--max-queued``, default 4,096): prompts waiting for the worker; a request
  that would pass it is answered 503 with ``Retry-After``;
* ``max_in_progress`` (``--max-in-progress``, default 64): requests being answered at once; one
  more is answered 503 with ``Retry-After`` (uvicorn's own cap, twice that, is a backstop);
* ``header_timeout`` (10 s): a connection whose request line and headers have not arrived is
  closed; ``body_timeout`` (30 s): a body that has not arrived is answered 408;
  ``idle_timeout`` (5 s): an idle keep-alive connection is closed;
* ``shutdown_timeout`` (5 s): ``close()`` returns within it whatever the clients do (a request
  still waiting is answered 503 as the server stops; a policy call in progress is left to
  finish on its own thread).

A client that disconnects has its queued prompts dropped, never played.

**Isolation.** Every request is checked on its own before its prompts join a batch; a batch
whose ``policy.generate`` fails is played again one prompt at a time, so only the prompt that
fails gets the 500 and its batch neighbours their answers.

**Authority.** With ``api_key`` (``--api-key``, or the ``LLM_MARL_API_KEY`` environment
variable), a request must send ``Authorization: Bearer <key>``, compared in constant time,
before its body is read (401). A server bound beyond loopback without a key logs a warning.
``Host`` must name the server (a loopback name, the address it is bound to, or one of
``allowed_hosts``; ``--allowed-host``), and a request with an ``Origin`` header must come
from such a host, so a web page cannot drive a server on loopback through DNS rebinding or a
cross-origin request (403). A server bound to every interface (``0.0.0.0``) takes any
``Host`` unless ``allowed_hosts`` is given: its key is its guard.

Run a model from the command line (needs the ``hf`` extra)::

    python -m llm_marl_envs.policies.server --model tiny --port 8000

or relay another OpenAI-compatible server (``--model openai:http://127.0.0.1:8001/v1#NAME``):
its answers, in this server's shape (a ``transformers serve`` stream never sends
``data: [DONE]``, which some clients, verifiers among them, wait for).
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from llm_marl_envs.core.asgi_guard import GuardSettings, is_loopback
from llm_marl_envs.core.validation import check_int, check_number
from llm_marl_envs.policies._server_answers import _RequestError
from llm_marl_envs.policies._server_http import HTTPServer, build_app
from llm_marl_envs.policies.base import Completion, Policy, Prompt

__all__ = ["API_KEY_ENV", "PolicyServer", "ServerLimits", "serve_policy"]

log = logging.getLogger(__name__)

#: The environment variable the command line reads the API key from.
API_KEY_ENV = "LLM_MARL_API_KEY"


@dataclass(frozen=True)
class ServerLimits:
    """What one request may ask of a :class:`PolicyServer` (module docstring: "Limits")."""

    max_body_bytes: int = 8 * 2**20
    max_json_values: int = 1_000_000
    max_json_depth: int = 32
    max_prompts: int = 256
    max_tokens: int = 32_768
    max_queued: int = 4096
    max_in_progress: int = 64
    header_timeout: float = 10.0
    idle_timeout: float = 5.0
    body_timeout: float = 30.0
    shutdown_timeout: float = 5.0

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            if name.endswith("_timeout"):
                check_number(name, getattr(self, name), 0.001)
            else:
                check_int(name, getattr(self, name), 1)


@dataclass
class _Job:
    """One prompt waiting for the worker."""

    prompt: Prompt
    done: threading.Event = field(default_factory=threading.Event)
    completion: Completion | None = None
    error: str | None = None
    left: threading.Event | None = None  # set when the client disconnected: the job is dropped


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
        limits: ServerLimits | None = None,
        allowed_hosts: tuple[str, ...] | list[str] | None = None,
    ) -> None:
        if not isinstance(policy, Policy):
            raise TypeError(f"serve_policy needs a Policy, got {policy!r}")
        check_int("max_batch", max_batch, 1)
        check_number("batch_wait", batch_wait, 0)
        check_int("max_model_len", max_model_len, 1, none_ok=True)
        if api_key is not None and (not isinstance(api_key, str) or not api_key):
            raise ValueError("api_key must be a non-empty string (or None: no key)")
        self.limits = limits if limits is not None else ServerLimits()
        if not isinstance(self.limits, ServerLimits):
            raise TypeError(f"limits must be a ServerLimits, got {limits!r}")
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
        self._queued = 0  # prompts submitted and not yet answered

        self._local = threading.local()  # the request a handler thread is answering
        self._pool = None  # the handlers' threads (build_app makes them)
        self.allowed_hosts = GuardSettings.hosts(str(host), allowed_hosts)
        self._worker = threading.Thread(target=self._work, name="policy-server-worker", daemon=True)
        self._worker.start()
        self._http = HTTPServer(build_app(self), host, port, self.limits)
        self.host, self.port = self._http.host, self._http.port
        self.url = (
            f"http://{f'[{self.host}]' if ':' in str(self.host) else self.host}:{self.port}/v1"
        )
        if api_key is None and not is_loopback(str(self.host)):
            log.warning(
                "serving on %s without an API key: anyone who can reach this port can use the "
                "model; pass api_key= (--api-key, or %s)",
                self.host,
                API_KEY_ENV,
            )

    def __enter__(self) -> PolicyServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PolicyServer({self.url!r}, policy={getattr(self.policy, 'name', self.policy)!r})"

    def close(self) -> None:
        """Stop accepting requests, answer those queued (requests in progress get at most
        ``limits.shutdown_timeout`` seconds), and join the threads (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)  # after every job already queued
        timeout = self.limits.shutdown_timeout
        self._http.close(timeout)
        self._worker.join(timeout)
        stuck = self._worker.is_alive()
        if stuck:  # the policy is still on a batch: its thread finishes it alone
            log.warning("closed with the policy still answering a batch; it is left to finish")
        if self._pool is not None:
            self._pool.shutdown(wait=not stuck, cancel_futures=True)

    def serve_forever(self) -> None:
        """Block until interrupted (Ctrl-C), then close."""
        try:
            while self._http.thread.is_alive():
                self._http.thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    # ------------------------------------------------------------------ batching
    def submit(self, prompts: list[Prompt]) -> list[Completion]:
        """Queue prompts for the worker and wait for their completions (called by handlers);
        503 with ``Retry-After`` when ``limits.max_queued`` prompts are already waiting."""
        left = getattr(self._local, "left", None)
        jobs = [_Job(prompt, left=left) for prompt in prompts]
        with self._lock:
            if self._closed:
                raise _RequestError(503, "the server is shutting down", "server_error")
            if self._queued + len(jobs) > self.limits.max_queued:
                raise _RequestError(
                    503,
                    f"the server is busy ({self._queued} prompts waiting; at most "
                    f"{self.limits.max_queued}): try again shortly",
                    "server_error",
                    retry_after=1,
                )
            self._queued += len(jobs)
            for job in jobs:
                self._queue.put(job)
        try:
            for job in jobs:
                job.done.wait()
        finally:
            with self._lock:
                self._queued -= len(jobs)
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
        """One ``policy.generate`` call for the batch; if it fails, each prompt alone, so
        that only a prompt that fails by itself gets the error. Prompts of clients that left
        are dropped unplayed."""
        for job in [job for job in batch if job.left is not None and job.left.is_set()]:
            job.error = "the client left"
            job.done.set()
        batch = [job for job in batch if job.error is None]
        if not batch:
            return
        try:
            completions = self._generate(batch)
        except Exception as error:  # noqa: BLE001 - played again one prompt at a time
            if len(batch) == 1:
                self._fail(batch[0], error)
                return
            log.warning("a batch of %d failed: playing each prompt alone", len(batch))
            for job in batch:
                try:
                    job.completion = self._generate([job])[0]
                except Exception as alone:  # noqa: BLE001 - this prompt's own failure
                    self._fail(job, alone)
                    continue
                job.done.set()
            return
        for job, completion in zip(batch, completions, strict=True):
            job.completion = completion
            job.done.set()

    def _generate(self, batch: list[_Job]) -> list[Completion]:
        completions = self.policy.generate([job.prompt for job in batch])
        if len(completions) != len(batch):
            raise RuntimeError(
                f"the policy returned {len(completions)} completions for {len(batch)} prompts"
            )
        return completions

    def _fail(self, job: _Job, error: Exception) -> None:
        """Answer ``job`` with ``error``: logged with an id; the client gets the id and the
        exception's type, never its text (which may hold a path or an upstream URL)."""
        error_id = uuid.uuid4().hex[:12]
        log.error(
            "policy %r failed on a prompt (error id %s)",
            self.policy,
            error_id,
            exc_info=(type(error), error, error.__traceback__),
        )
        kind = type(error).__name__
        job.error = f"the policy failed ({kind}; error id {error_id}: the server's log has more)"
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
    limits: ServerLimits | None = None,
    allowed_hosts: tuple[str, ...] | list[str] | None = None,
) -> PolicyServer:
    """Serve ``policy`` on ``host:port`` (0 = a free port) from background threads.

    Args:
        policy: The policy; only the server's worker thread calls it. Not closed by the server.
        host: Interface to listen on (keep ``127.0.0.1`` unless others must reach it).
        port: TCP port; 0 picks a free one (read ``server.port`` / ``server.url``).
        model_name: The model id reported in answers and ``/v1/models``.
        max_batch: Most prompts per ``policy.generate`` call.
        batch_wait: Seconds the worker waits for more requests after the first one arrives.
        api_key: If set, requests must send ``Authorization: Bearer <api_key>`` (else HTTP
            401, before the body is read). Without one, a server bound beyond loopback warns.
        max_model_len: The context length to report in ``/v1/models`` and to refuse longer
            requests by (with a policy that counts tokens), as vLLM's ``--max-model-len``.
        limits: What one request may ask (:class:`ServerLimits`; default its defaults).
        allowed_hosts: Host names (besides loopback's and the bound address) that ``Host``
            and ``Origin`` may name; a server bound to every interface takes any ``Host`` when
            this is None.

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
        limits=limits,
        allowed_hosts=allowed_hosts,
    )


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
    parser.add_argument(
        "--api-key",
        default=os.environ.get(API_KEY_ENV) or None,
        help=f"the key clients must send as 'Authorization: Bearer KEY' (default: ${API_KEY_ENV})",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="NAME",
        help="a host name clients may reach the server by, besides loopback's (repeatable)",
    )
    defaults = ServerLimits()
    for name in ("max_body_bytes", "max_prompts", "max_tokens", "max_queued", "max_in_progress"):
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=int,
            default=getattr(defaults, name),
            help=f"limit: {name.replace('_', ' ')} (default {getattr(defaults, name):,})",
        )
    args = parser.parse_args(argv)
    try:
        limits = ServerLimits(
            max_body_bytes=args.max_body_bytes,
            max_prompts=args.max_prompts,
            max_tokens=args.max_tokens,
            max_queued=args.max_queued,
            max_in_progress=args.max_in_progress,
        )
    except (TypeError, ValueError) as error:
        parser.error(str(error))
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
        api_key=args.api_key,
        limits=limits,
        allowed_hosts=args.allowed_host,
    )
    log.info("serving %s at %s (Ctrl-C stops)", args.model, server.url)
    try:
        server.serve_forever()
    finally:
        policy.close()


if __name__ == "__main__":
    main()
