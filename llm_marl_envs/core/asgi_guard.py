"""An ASGI middleware that treats every client as a stranger: authority, size and bounds before
the app sees a request, one JSON error for any failure, idle WebSocket sessions closed.

It wraps an app (OpenEnv's server: :mod:`llm_marl_envs.integrations.openenv`) without
forking it, and imports nothing beyond the standard library:

* **Authority first.** ``Host`` must be one of ``allowed_hosts`` (when given) and an ``Origin``
  header, if any, must name one of them (or a loopback name): DNS rebinding and cross-origin
  pages get 403 (a WebSocket is refused with close code 1008). With ``api_key``, a request must
  send ``Authorization: Bearer <key>`` (compared in constant time) before anything else: 401.
* **Size before work.** An HTTP body larger than ``max_body_bytes`` (from ``Content-Length``,
  or counted while a chunked body arrives) is answered 413 before the app reads it, and one
  that takes longer than ``body_timeout`` seconds to arrive 408.
* **Bounds before parsing.** A JSON body (and each WebSocket text message) is parsed within
  bounds (:mod:`~llm_marl_envs.core.bounded_json`: values, depth, 64-bit integers, finite
  numbers, UTF-8 strings) and refused with a 400 naming the problem (a WebSocket with close
  code 1007); the app then gets the same bytes, and the parsed value as
  ``scope["state"]["json"]``.
* **Idle sessions end.** A WebSocket client silent for ``ws_idle_timeout`` seconds is closed
  (code 1001) and the app told it left, so that its session is reclaimed.
* **Every error is JSON.** An exception the app raises before answering becomes a 500 whose
  body names its type and an id that the server's log holds with the traceback; never the
  exception's text.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from llm_marl_envs.core.bounded_json import BoundsError, loads

__all__ = ["Guard", "GuardSettings", "LOOPBACK_NAMES", "host_name", "is_loopback", "send_json"]

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


async def send_json(
    send: Send, status: int, payload: Any, headers: dict[str, str] | None = None
) -> None:
    """An ASGI JSON response: ``payload`` with ``status`` and any extra ``headers``."""
    data = json.dumps(payload).encode("utf-8")
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def is_loopback(host: str) -> bool:
    """Whether a server bound at ``host`` is reachable from this machine only."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def host_name(value: str) -> str:
    """The host of a ``Host`` header or an origin's authority, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(frozen=True)
class GuardSettings:
    """What :class:`Guard` enforces (module docstring); ``allowed_hosts`` None: any ``Host``."""

    api_key: str | None = None
    allowed_hosts: frozenset[str] | None = None
    max_body_bytes: int = 2**20
    max_json_values: int = 100_000
    max_json_depth: int = 32
    ws_idle_timeout: float | None = 300.0
    body_timeout: float = 30.0

    @staticmethod
    def hosts(bound: str, extra: Iterable[str] | None) -> frozenset[str] | None:
        """The host names a server bound at ``bound`` answers: loopback's, ``bound`` and
        ``extra``; None (any) for a server bound to every interface without ``extra``."""
        wildcard = bound in ("0.0.0.0", "::", "")
        if wildcard and extra is None:
            return None
        named = [*LOOPBACK_NAMES, *(extra or ())] + ([] if wildcard else [bound])
        return frozenset(host_name(h) for h in named)


class _Refused(Exception):
    def __init__(self, status: int, message: str, close_code: int) -> None:
        super().__init__(message)
        self.status, self.close_code = status, close_code


class Guard:
    """The middleware (module docstring). ``error`` shapes an error body from (status,
    message): OpenEnv's ``{"detail": message}`` by default."""

    def __init__(
        self,
        app: Any,
        settings: GuardSettings,
        error: Callable[[int, str], dict] = lambda status, message: {"detail": message},
    ) -> None:
        self.app, self.settings, self.error = app, settings, error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        try:
            self._authority(headers)
        except _Refused as refused:
            if kind == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": refused.close_code})
            else:
                await self._reply(send, refused.status, str(refused))
            return
        if kind == "http":
            await self._http(scope, receive, send, headers)
        else:
            await self._websocket(scope, receive, send)

    # ..................................................................... authority
    def _authority(self, headers: dict[str, str]) -> None:
        allowed = self.settings.allowed_hosts
        if allowed is not None and host_name(headers.get("host", "")) not in allowed:
            raise _Refused(403, "the Host header does not name this server", 1008)
        origin = headers.get("origin")
        if origin is not None:
            authority = origin.split("://", 1)[-1].split("/", 1)[0]
            if origin == "null" or host_name(authority) not in (allowed or LOOPBACK_NAMES):
                raise _Refused(403, "requests from web pages of other origins are refused", 1008)
        key = self.settings.api_key
        if key is not None:
            given = headers.get("authorization", "").encode("utf-8", "replace")
            if not hmac.compare_digest(given, f"Bearer {key}".encode()):
                raise _Refused(401, "missing or wrong API key", 1008)

    # ..................................................................... HTTP
    async def _http(self, scope: Scope, receive: Receive, send: Send, headers: dict) -> None:
        limit = self.settings.max_body_bytes
        try:
            declared = int(headers.get("content-length", "0") or 0)
        except ValueError:
            await self._reply(send, 400, "Content-Length is not a number")
            return
        if declared > limit:
            await self._reply(send, 413, f"the body must be at most {limit:,} bytes")
            return
        body, more = b"", True
        while more:
            try:
                message = await asyncio.wait_for(receive(), self.settings.body_timeout)
            except asyncio.TimeoutError:
                await self._reply(send, 408, "the body did not arrive in time")
                return
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > limit:
                await self._reply(send, 413, f"the body must be at most {limit:,} bytes")
                return
        parsed = None
        if body.strip():
            try:
                parsed = loads(
                    body,
                    "the body",
                    max_values=self.settings.max_json_values,
                    max_depth=self.settings.max_json_depth,
                )
            except BoundsError as error:
                await self._reply(send, 400, str(error))
                return
        scope.setdefault("state", {})["json"] = parsed  # the app need not parse it again
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, replay, watched)
        except Exception as error:  # noqa: BLE001 - answered as JSON, logged with an id
            error_id = uuid.uuid4().hex[:12]
            log.error(
                "error handling %s %s (error id %s)",
                scope.get("method"),
                scope.get("path"),
                error_id,
                exc_info=(type(error), error, error.__traceback__),
            )
            if started:
                raise
            await self._reply(
                send,
                500,
                f"internal error ({type(error).__name__}; error id {error_id}: the server's log "
                "has more)",
            )

    async def _reply(self, send: Send, status: int, message: str) -> None:
        await send_json(send, status, self.error(status, message), {"Connection": "close"})

    # ..................................................................... WebSocket
    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        closed = False
        idle = self.settings.ws_idle_timeout

        async def close(code: int, reason: str) -> Message:
            nonlocal closed
            if not closed:
                closed = True
                await send({"type": "websocket.close", "code": code, "reason": reason})
            return {"type": "websocket.disconnect", "code": code}

        async def guarded_receive() -> Message:
            if closed:
                return {"type": "websocket.disconnect", "code": 1000}
            try:
                message = await (receive() if idle is None else asyncio.wait_for(receive(), idle))
            except asyncio.TimeoutError:
                return await close(1001, f"idle for {idle:g} s")
            text = message.get("text")
            if message["type"] == "websocket.receive" and text is not None:
                if len(text.encode("utf-8", "surrogatepass")) > self.settings.max_body_bytes:
                    return await close(1009, "message too big")
                try:
                    loads(
                        text,
                        "the message",
                        max_values=self.settings.max_json_values,
                        max_depth=self.settings.max_json_depth,
                    )
                except BoundsError as error:
                    return await close(1007, str(error)[:120])
            return message

        async def guarded_send(message: Message) -> None:
            if not closed:
                await send(message)

        await self.app(scope, guarded_receive, guarded_send)
