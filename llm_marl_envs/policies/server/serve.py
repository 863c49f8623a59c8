"""The policy server itself: :class:`PolicyServer` (its micro-batching worker and the limits
it keeps, :class:`ServerLimits`) and :func:`serve_policy`, which starts one.

What it answers and how is the package's docstring (:mod:`llm_marl_envs.policies.server`);
the answers' shape is :mod:`~llm_marl_envs.policies.server.answers`, the HTTP side
:mod:`~llm_marl_envs.policies.server.http`, the command line
:mod:`~llm_marl_envs.policies.server.command`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from llm_marl_envs.core.asgi_guard import GuardSettings, is_loopback
from llm_marl_envs.core.validation import check_int, check_number
from llm_marl_envs.policies.server.answers import RequestError
from llm_marl_envs.policies.server.http import HTTPServer, build_app
from llm_marl_envs.policies.base import Completion, Policy, Prompt

__all__ = ["API_KEY_ENV", "PolicyServer", "ServerLimits", "serve_policy"]

log = logging.getLogger("llm_marl_envs.policies.server")  # the package's

#: The environment variable the command line reads the API key from.
API_KEY_ENV = "LLM_MARL_API_KEY"


@dataclass(frozen=True)
class ServerLimits:
    """What one request may ask of a :class:`PolicyServer` (the package's docstring: "Limits")."""

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
                raise RequestError(503, "the server is shutting down", "server_error")
            if self._queued + len(jobs) > self.limits.max_queued:
                raise RequestError(
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
            raise RequestError(500, failed, "server_error")
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
        :class:`RequestError` (the tests inject faults so)."""


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
