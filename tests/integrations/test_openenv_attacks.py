"""The OpenEnv server against strangers (issue 50, step 2), over real sockets: size (a body or a
message over the limit refused before OpenEnv reads it), bounds (NaN, 1e400, deep nesting:
a 400, not a bare 500), liveness (a silent WebSocket client's session reclaimed), authority
(the key, Host and Origin, on HTTP and on the WebSocket), errors (JSON, with an id)."""

from __future__ import annotations

import contextlib
import json
import socket
import time

import pytest

pytest.importorskip("openenv")

from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

pytestmark = pytest.mark.xdist_group("openenv")
KEY = "openenv-key"
GSM8K = "llm_marl_envs/GSM8K-v0"


@pytest.fixture(scope="module")
def openenv():
    from llm_marl_envs.integrations import openenv

    return openenv


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def server(openenv):
    running = openenv.serve(
        GSM8K,
        port=0,
        block=False,
        max_concurrent_envs=2,
        session_timeout=1.0,
        data_source="bundled",
    )
    yield running
    running.close()


@pytest.fixture(scope="module")
def keyed(openenv):
    running = openenv.serve(GSM8K, port=0, block=False, api_key=KEY, data_source="bundled")
    yield running
    running.close()


def http(server, method: str, path: str, body: bytes | str = b"", **headers: str):
    """One raw HTTP/1.1 request: the status and the JSON body of the answer."""
    body = body.encode() if isinstance(body, str) else body
    head = {"Host": f"127.0.0.1:{server.port}", "Connection": "close", **headers}
    head.setdefault("Content-Length", str(len(body)))
    head.setdefault("Content-Type", "application/json")
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in head.items())]
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_text, _, payload = data.partition(b"\r\n\r\n")
    return int(head_text.split()[1]), json.loads(payload or b"null")


def ws(server, **headers):
    return connect(f"ws://127.0.0.1:{server.port}/ws", additional_headers=headers, open_timeout=10)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('{"seed": NaN}', "NaN is not a JSON value"),
        ('{"seed": 1e400}', "too large to be finite"),
        ('{"seed": ' + "9" * 5000 + "}", "beyond 64 bits"),
        ("[" * 50_000 + "]" * 50_000, "nested deeper"),
        ('{"seed": 0', "not JSON"),
    ],
    ids=["NaN", "1e400", "digits", "deep", "cut"],
)
def test_bad_values_are_a_400_not_a_bare_500(server, body, words):
    status, answer = http(server, "POST", "/reset", body)
    assert status == 400 and words in answer["detail"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(server):
    started = time.monotonic()
    status, answer = http(server, "POST", "/reset", b"", **{"Content-Length": str(200 * 2**20)})
    assert status == 413 and "at most 1,048,576 bytes" in answer["detail"]
    assert time.monotonic() - started < 5


def test_a_message_over_the_limit_or_out_of_bounds_closes_the_socket(server):
    with ws(server) as socket_:
        socket_.send(json.dumps({"type": "reset", "data": {"seed": "x" * (2 * 2**20)}}))
        with pytest.raises(ConnectionClosed):
            socket_.recv(timeout=10)
    with ws(server) as socket_:
        socket_.send('{"type": "reset", "data": {"seed": NaN}}')
        with pytest.raises(ConnectionClosed) as closed:
            socket_.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007


def test_silent_sessions_are_reclaimed(server):
    """Liveness: two silent clients hold the 2 sessions; after the 1 s timeout both are closed
    and a new client plays."""
    with contextlib.ExitStack() as stack:
        silent = [stack.enter_context(ws(server)) for _ in range(2)]
        for socket_ in silent:
            socket_.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            socket_.recv(timeout=10)
        time.sleep(1.5)
        for socket_ in silent:
            with pytest.raises(ConnectionClosed) as closed:
                socket_.recv(timeout=5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    with ws(server) as fresh:
        fresh.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        answer = json.loads(fresh.recv(timeout=10))
    assert answer.get("type") != "error", answer


def test_the_key_is_needed_on_http_and_on_the_websocket(keyed):
    assert http(keyed, "POST", "/reset", "{}")[0] == 401
    assert http(keyed, "POST", "/reset", "{}", Authorization=f"Bearer {KEY}x")[0] == 401
    assert http(keyed, "POST", "/reset", "{}", Authorization=f"Bearer {KEY}")[0] == 200
    with pytest.raises(InvalidStatus), ws(keyed):
        pass
    with ws(keyed, Authorization=f"Bearer {KEY}") as socket_:
        socket_.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(socket_.recv(timeout=10)).get("type") != "error"


@pytest.mark.parametrize(
    "headers",
    [{"Host": "attacker.example"}, {"Origin": "http://attacker.example"}, {"Origin": "null"}],
)
def test_host_and_origin_must_name_the_server(server, headers):
    status, answer = http(server, "POST", "/reset", "{}", **headers)
    assert status == 403 and ("refused" in answer["detail"] or "Host" in answer["detail"])
    with pytest.raises(InvalidStatus), ws(server, **headers):
        pass


def test_a_server_beyond_loopback_without_a_key_warns(openenv, caplog):
    with caplog.at_level("WARNING", logger="llm_marl_envs.integrations.openenv"):
        running = openenv.serve(GSM8K, host="0.0.0.0", port=0, block=False, data_source="bundled")
        running.close()
    assert "without an API key" in caplog.text


@pytest.mark.slow  # OpenEnv's reaper looks every max(timeout / 4, 5) seconds
def test_idle_mcp_sessions_over_http_are_reaped(openenv):
    """Liveness, round 1 of issue 50: POST /mcp sessions filled the capacity and were never
    reaped. With a session_timeout, OpenEnv's reaper ends them and the capacity comes back."""
    server = openenv.serve(
        GSM8K,
        port=0,
        block=False,
        max_concurrent_envs=2,
        session_timeout=1.0,
        data_source="bundled",
    )
    try:
        create = json.dumps({"jsonrpc": "2.0", "method": "openenv/session/create", "id": 1})
        made = [http(server, "POST", "/mcp", create)[1] for _ in range(3)]
        assert all("session_id" in answer.get("result", {}) for answer in made[:2])
        assert "error" in made[2]  # full: 2 sessions at most
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            answer = http(server, "POST", "/mcp", create)[1]
            if "session_id" in answer.get("result", {}):
                break
            time.sleep(0.5)
        else:
            raise AssertionError("idle MCP sessions were never reaped")
    finally:
        server.close()
