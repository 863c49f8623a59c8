"""The policy server's HTTP side: an ASGI app under uvicorn, as vLLM's OpenAI server runs.

uvicorn does the HTTP framing, keep-alive and graceful shutdown; :class:`~llm_marl_envs.core.
asgi_guard.Guard` checks every request's authority, size and JSON bounds before the app sees
it (its errors in OpenAI's shape); the app (:func:`build_app`) counts the requests, caps those
in progress (a JSON 503 with ``Retry-After``), hands each to the server's answers in a thread
(the micro-batching worker owns the policy), drops a request's queued prompts when its client
disconnects, and writes the answer or its stream. Held apart from
:mod:`~llm_marl_envs.policies.server.serve` (the batching worker and the limits) because this
is the transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from llm_marl_envs.core.asgi_guard import Guard, GuardSettings, send_json
from llm_marl_envs.core.optional import require
from llm_marl_envs.policies.server.answers import (
    chat_completion,
    chunks,
    RequestError,
    text_completion,
    tokenize,
)

log = logging.getLogger("llm_marl_envs.policies.server")

_KINDS = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    500: "server_error",
    503: "server_error",
}


def openai_error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """An error body in OpenAI's shape."""
    kind = _KINDS.get(status, "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


def build_app(srv: Any) -> Any:
    """The ASGI app of a :class:`~llm_marl_envs.policies.server.serve.PolicyServer`: the request
    counter, then the guard, then the API (at most ``limits.max_in_progress`` requests at once;
    one more is answered 503 with ``Retry-After``)."""
    limits = srv.limits
    pool = ThreadPoolExecutor(limits.max_in_progress, thread_name_prefix="policy-server")
    srv._pool = pool
    active = 0

    async def api(scope: dict, receive: Any, send: Any) -> None:
        nonlocal active
        if active >= limits.max_in_progress:
            message = f"the server is busy ({active} requests in progress): try again shortly"
            await send_json(send, 503, openai_error(503, message), {"Retry-After": "1"})
            return
        active += 1
        try:
            await _reply(srv, pool, scope, receive, send)
        finally:
            active -= 1

    guarded = Guard(
        api,
        GuardSettings(
            api_key=srv._api_key,
            allowed_hosts=srv.allowed_hosts,
            max_body_bytes=limits.max_body_bytes,
            max_json_values=limits.max_json_values,
            max_json_depth=limits.max_json_depth,
            body_timeout=limits.body_timeout,
        ),
        error=lambda status, message: openai_error(status, message),
    )

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {})["number"] = srv._count()
        elif scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.close", "code": 1003})
            return
        await guarded(scope, receive, send)

    return app


async def _reply(srv: Any, pool: ThreadPoolExecutor, scope: dict, receive: Any, send: Any) -> None:
    """Answer one request the guard let through: its answer is made in ``pool`` (it waits for
    the batching worker) and written whole or as a stream; nothing is written to a client
    that left."""
    method, path = scope["method"], scope["path"].rstrip("/") or "/"
    number = scope["state"]["number"]
    body = scope["state"].get("json") if method == "POST" else None
    headers = {
        k.decode("latin-1").title(): v.decode("latin-1") for k, v in scope.get("headers", [])
    }
    left = threading.Event()
    watcher = asyncio.create_task(_watch(receive, left))
    loop = asyncio.get_running_loop()
    try:
        call = functools.partial(_answer, srv, number, method, path, headers, body, left)
        answer = await loop.run_in_executor(pool, call)
        if left.is_set():
            return
        if isinstance(body, dict) and body.get("stream"):
            await _events(send, chunks(answer, body))
        else:
            await send_json(send, 200, answer)
    except RequestError as error:
        if left.is_set():
            return
        retry = {"Retry-After": str(error.retry_after)} if error.retry_after else {}
        await send_json(
            send, error.status, openai_error(error.status, str(error), error.param), retry
        )
    except asyncio.CancelledError:  # cut off by a shutdown that ran out of time
        message = "the server shut down before this request was answered: try again"
        with contextlib.suppress(Exception):
            await send_json(send, 503, openai_error(503, message), {"Retry-After": "1"})
        raise
    finally:
        watcher.cancel()


async def _watch(receive: Any, left: threading.Event) -> None:
    """Set ``left`` when the client disconnects (its queued prompts are then dropped)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            left.set()
            return


def _answer(
    srv: Any,
    number: int,
    method: str,
    path: str,
    headers: dict,
    body: Any,
    left: threading.Event,
) -> dict[str, Any]:
    """The answer to one request (in a worker thread: it waits for the batching worker)."""
    srv._admit(number, method, path, headers, body)
    if method == "GET" and path == "/v1/models":
        model = {"id": srv.model_name, "object": "model", "created": 0, "owned_by": "llm-marl"}
        if srv.max_model_len:
            model["max_model_len"] = srv.max_model_len
        return {"object": "list", "data": [model]}
    if method != "POST" or path not in ("/tokenize", "/v1/chat/completions", "/v1/completions"):
        raise RequestError(404, f"no route for {method} {path}", "not_found_error")
    if not isinstance(body, dict):
        raise RequestError(400, "the body must be a JSON object")
    srv._local.left = left
    try:
        if path == "/tokenize":
            return tokenize(srv, body)
        if path == "/v1/chat/completions":
            return chat_completion(srv, body)
        return text_completion(srv, body)
    finally:
        srv._local.left = None


async def _events(send: Any, events: list[dict[str, Any]]) -> None:
    """Server-sent events: one ``data:`` line per chunk, then ``data: [DONE]``."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream; charset=utf-8"),
                (b"cache-control", b"no-cache"),
            ],
        }
    )
    for event in events:
        line = f"data: {json.dumps(event)}\n\n".encode()
        await send({"type": "http.response.body", "body": line, "more_body": True})
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


def _timed_h11(request_timeout: float) -> type:
    """uvicorn's h11 protocol, closing a connection on which no whole request line and headers
    arrive within ``request_timeout`` seconds of connecting (uvicorn waits forever for them: a
    silent or slow client would hold a connection; after a response its keep-alive timeout
    applies)."""
    h11_impl = require("uvicorn.protocols.http.h11_impl", "serve", "the policy server")

    class TimedH11(h11_impl.H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._request_deadline = self.loop.call_later(request_timeout, self._no_request)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and self._request_deadline is not None:
                self._request_deadline.cancel()
                self._request_deadline = None

        def connection_lost(self, exc: Exception | None) -> None:
            if self._request_deadline is not None:
                self._request_deadline.cancel()
                self._request_deadline = None
            super().connection_lost(exc)

        def _no_request(self) -> None:
            self._request_deadline = None
            if self.cycle is None and not self.transport.is_closing():
                self.transport.close()

    return TimedH11


class HTTPServer:
    """uvicorn serving ``app`` on a socket bound at once, from a background thread."""

    def __init__(self, app: Any, host: str, port: int, limits: Any) -> None:
        uvicorn = require("uvicorn", "serve", "the policy server")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family, backlog=2048)
        self.host, self.port = host, self.socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            http=_timed_h11(limits.header_timeout),
            log_level="warning",
            lifespan="off",
            limit_concurrency=2 * limits.max_in_progress,  # a backstop: the app caps first
            timeout_keep_alive=limits.idle_timeout,
            timeout_graceful_shutdown=limits.shutdown_timeout,
            h11_max_incomplete_event_size=64 * 2**10,
            access_log=False,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self.socket]},
            name="policy-server-http",
            daemon=True,
        )
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.close(0)
                raise RuntimeError(f"the policy server on {host}:{self.port} did not start")
            time.sleep(0.005)

    def close(self, timeout: float) -> None:
        """Stop accepting, let requests in progress finish (at most ``timeout`` seconds)."""
        self.server.should_exit = True
        self.thread.join(timeout + 5)
        self.socket.close()
