"""The transport under :class:`~llm_marl_envs.policies.openai.policy.OpenAIPolicy`: one HTTP
attempt's total deadline and how a failed attempt is classified.

Held apart from :mod:`~llm_marl_envs.policies.openai.policy` (which builds requests, retries
and parses answers) because this is socket-level machinery: a watchdog thread per attempt
(:class:`Attempt`) that shuts the attempt's sockets down at its deadline or on ``close()``,
``urllib`` handlers whose connections hand their sockets to it, a body reader that enforces
``max_response_bytes``, and the mapping of network and HTTP errors onto retryable
(:class:`Retryable`) or final (:class:`~llm_marl_envs.policies.base.PolicyError`) failures.
The behaviour is documented in the policy's module docstring.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from llm_marl_envs.policies.openai.answers import ERROR_BODY_CHARS
from llm_marl_envs.policies.base import PolicyError

# The policy's logger: these records read as the policy's, as before the split.
log = logging.getLogger("llm_marl_envs.policies.openai.policy")

_ERROR_BODY_BYTES = 64 * 1024  # how much of an error response we read at all
_READ_CHUNK = 64 * 1024  # answer bodies are read in pieces this size, so the cap is checked early


class Retryable(Exception):
    """One attempt failed in a way worth retrying (the message says how); ``full``: the
    failure says the server is full (a timeout, HTTP 429 or 503), so fewer requests should be
    in flight."""

    def __init__(self, message: str, retry_after: float | None = None, full: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.full = full


# ---------------------------------------------------------------------- deadline
class Attempt:
    """The deadline of one HTTP attempt, kept by a watchdog thread.

    Socket timeouts only bound each wait for data, so a server sending a byte now and then
    never trips them. The watchdog instead shuts down the attempt's sockets when the total
    deadline passes (or when the policy is closed): whatever the request is blocked in
    (connect, send, headers, body) then returns or raises at once, and ``reason`` says why.
    Sockets are registered by the connection classes below as soon as they exist.
    """

    def __init__(self, timeout: float, warn_after: float, on_slow: Callable[[], None]) -> None:
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.reason: str | None = None  # "deadline" or "closed" once aborted
        self._warn_after = warn_after
        self._on_slow = on_slow
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._finished = False
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name="openai-policy-deadline", daemon=True
        )
        self._thread.start()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def watch(self, sock: socket.socket) -> None:
        """Put ``sock`` under the deadline (shut down at once if the attempt is already over)."""
        with self._lock:
            self._sockets.append(sock)
            if self.reason is not None:
                _shutdown(sock)

    def abort(self, reason: str) -> None:
        """End the attempt now: shut its sockets down (no effect once it has finished)."""
        with self._lock:
            if self._finished or self.reason is not None:
                return
            self.reason = reason
            for sock in self._sockets:
                _shutdown(sock)

    def finish(self) -> None:
        """The attempt is over (answered or failed); stop and join the watchdog."""
        with self._lock:
            self._finished = True
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        warn_at = self.started + self._warn_after
        if warn_at < self.deadline and not self._done.wait(max(0.0, warn_at - time.monotonic())):
            try:
                self._on_slow()
            except Exception:  # noqa: BLE001 - e.g. warnings turned into errors: keep the deadline
                log.warning("slow answer", exc_info=True)
        if not self._done.wait(max(0.0, self.remaining())):
            self.abort("deadline")


current = threading.local()  # .attempt: the attempt the current worker thread is making


def _shutdown(sock: socket.socket) -> None:
    """Shut ``sock`` down at the OS level, waking any thread blocked on it.

    The plain socket method is used even for TLS sockets (``SSLSocket.shutdown`` would also
    drop its TLS state under the reading thread's feet). A socket already closed has no file
    descriptor any more, so this cannot hit a descriptor reused by another connection.
    """
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed, or not connected yet


def _watch_current(sock: socket.socket) -> None:
    attempt = getattr(current, "attempt", None)
    if attempt is not None:
        attempt.watch(sock)


def _watched_create(create: Callable[..., socket.socket]) -> Callable[..., socket.socket]:
    """``socket.create_connection`` that registers the new socket with the current attempt."""

    def create_connection(*args: Any, **kwargs: Any) -> socket.socket:
        sock = create(*args, **kwargs)
        _watch_current(sock)
        return sock

    return create_connection


class _WatchedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _watched_create(self._create_connection)


class _WatchedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _watched_create(self._create_connection)

    def connect(self) -> None:
        # As HTTPSConnection.connect, but the TLS socket goes under the deadline before the
        # handshake (wrapping detaches the plain socket the watchdog knew).
        http.client.HTTPConnection.connect(self)
        server_hostname = self._tunnel_host or self.host
        self.sock = self._context.wrap_socket(
            self.sock, server_hostname=server_hostname, do_handshake_on_connect=False
        )
        _watch_current(self.sock)
        self.sock.do_handshake()


class WatchedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTPConnection, req)


class WatchedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        kwargs: dict[str, Any] = {"context": self._context}
        if getattr(self, "_check_hostname", None) is not None:  # gone in Python 3.12
            kwargs["check_hostname"] = self._check_hostname
        return self.do_open(_WatchedHTTPSConnection, req, **kwargs)


def read_capped(response: http.client.HTTPResponse, cap: int) -> bytes:
    """The whole body, read in pieces; PolicyError as soon as it is longer than ``cap`` bytes."""
    if response.length is not None and response.length > cap:
        raise PolicyError(
            f"the answer is {response.length} bytes (Content-Length), more than "
            f"max_response_bytes={cap}; refused without reading it"
        )
    body = bytearray()
    while True:
        chunk = response.read(min(_READ_CHUNK, cap + 1 - len(body)))
        if not chunk:
            break
        body += chunk
        if len(body) > cap:
            raise PolicyError(
                f"the answer is longer than max_response_bytes={cap}; refused after "
                f"reading {len(body)} bytes"
            )
    if response.length:  # read(n) returns b"" on early EOF instead of raising
        raise http.client.IncompleteRead(bytes(body[-ERROR_BODY_CHARS:]), response.length)
    return bytes(body)


def http_failure(error: urllib.error.HTTPError) -> Exception:
    """The failure an HTTP error status stands for (429 and 5xx are worth retrying)."""
    detail = _error_detail(error)
    status = f"HTTP {error.code} {error.reason}".rstrip()
    message = f"{status}: {detail}" if detail else status
    if error.code == 429 or error.code >= 500:
        return Retryable(message, _retry_after(error), full=error.code in (429, 503))
    return PolicyError(message)


def classify(failure: BaseException, timeout: float) -> Exception:
    """A failed attempt's exception as Retryable (network trouble) or PolicyError."""
    if isinstance(failure, (Retryable, PolicyError)):
        return failure
    if isinstance(failure, urllib.error.URLError):  # connection refused, DNS, connect timeout
        if isinstance(failure.reason, TimeoutError):
            return Retryable(f"timed out after {timeout:g}s (connect)", full=True)
        return Retryable(f"connection error: {failure.reason}")
    if isinstance(failure, TimeoutError):  # the socket timeout, set to the time left
        return Retryable(
            f"timed out: no complete answer within the {timeout:g}s deadline "
            f"(connect, send and read)",
            full=True,
        )
    if isinstance(failure, OSError):  # reset, broken pipe, remote disconnect
        return Retryable(f"connection error: {type(failure).__name__}: {failure}")
    # IncompleteRead, BadStatusLine, ...
    return Retryable(f"bad HTTP answer: {type(failure).__name__}: {failure}")


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The server's error message (OpenAI ``{"error": {"message": ...}}`` or raw text), short."""
    try:
        raw = error.read(_ERROR_BODY_BYTES)  # a bounded read: the body is only decoration
    except Exception:  # noqa: BLE001 - the body is only decoration for the message
        return ""
    finally:
        error.close()
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
        message = parsed["error"]["message"] if isinstance(parsed.get("error"), dict) else None
        text = message or parsed.get("error") or parsed.get("detail") or text
    except (json.JSONDecodeError, AttributeError, TypeError, KeyError):
        pass
    return str(text).strip()[:ERROR_BODY_CHARS]


def _retry_after(error: urllib.error.HTTPError) -> float | None:
    """The ``Retry-After`` header in seconds, if it is a number."""
    value = error.headers.get("Retry-After") if error.headers else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
