"""The policy server against strangers (issue 50, step 1), by class, over real sockets: size
(limits before work), isolation (one request's bad input fails it alone), authority (the token
before the body, Host and Origin), errors (a JSON error, never a policy's text). Each attack is
written as a raw HTTP request, as a client that floods or probes a port would send it."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time

import pytest

from llm_marl_envs.policies import CallablePolicy
from llm_marl_envs.policies.server import ServerLimits, main, serve_policy

KEY = "s3cret-key"


def request(
    server, method: str, path: str, body: bytes | str | None = None, **headers: str
) -> tuple[int, dict, dict]:
    """Send one raw HTTP/1.1 request; the status, headers and JSON body of the answer."""
    if isinstance(body, str):
        body = body.encode()
    head = {"Host": f"127.0.0.1:{server.port}", "Connection": "close", **headers}
    if body is not None and "Content-Length" not in head and "Transfer-Encoding" not in head:
        head["Content-Length"] = str(len(body))
    lines = [f"{method} {path} HTTP/1.1", *(f"{k.replace('_', '-')}: {v}" for k, v in head.items())]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_text, _, payload = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head_text.decode().split("\r\n")
    answer_headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in header_lines)}
    return int(status_line.split()[1]), answer_headers, json.loads(payload or b"null")


def completion(prompt, **extra) -> str:
    return json.dumps({"model": "m", "prompt": prompt, **extra})


@pytest.fixture
def server():
    with serve_policy(CallablePolicy(lambda observation, info: f"echo:{observation}")) as srv:
        yield srv


# --------------------------------------------------------------------------- size
@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ("[" * 100_000 + "]" * 100_000, 400, "nested deeper than 32 levels"),
        ('{"prompt": "x", "n": ' + "9" * 5000 + "}", 400, "an integer beyond 64 bits"),
        ('{"prompt": "x", "temperature": NaN}', 400, "NaN is not a JSON value"),
        ('{"prompt": "x", "temperature": 1e400}', 400, "too large to be finite"),
        ("{" + ",".join(f'"k{i}": 0' for i in range(600_000)) + "}", 400, "more than 1,000,000"),
        ('{"prompt": "x"', 400, "not JSON"),
        ("[1, 2]", 400, "must be a JSON object"),
        (completion(["x"] * 300), 400, "'prompt' holds 300 prompts; at most 256"),
        (completion("x", max_tokens=10**9), 400, "'max_tokens' must be an integer from 1"),
        (completion("x", max_tokens="many"), 400, "'max_tokens' must be an integer"),
    ],
    ids=[
        "deep",
        "5000 digits",
        "NaN",
        "1e400",
        "values",
        "cut",
        "array",
        "prompts",
        "tokens",
        "tokens type",
    ],
)
def test_bad_bodies_are_a_400_naming_what_not_an_empty_reply(server, body, status, words):
    code, _, answer = request(server, "POST", "/v1/completions", body)
    assert code == status and words in answer["error"]["message"]
    assert answer["error"]["code"] == status and answer["error"]["type"] == "invalid_request_error"


def test_a_body_over_the_limit_is_refused_before_it_is_read(server):
    """A Content-Length of a gigabyte, and no byte of it sent: answered 413 at once."""
    started = time.monotonic()
    code, _, answer = request(
        server, "POST", "/v1/completions", b"", **{"Content-Length": str(10**9)}
    )
    assert code == 413 and "at most 8,388,608 bytes" in answer["error"]["message"]
    assert time.monotonic() - started < 5


def test_a_chunked_body_is_counted_as_it_arrives(server):
    """No Content-Length to refuse by: the body is counted chunk by chunk and refused once it
    passes the limit (413), never read whole first."""
    code, _, answer = request(
        server, "POST", "/v1/completions", b"5\r\nhello\r\n0\r\n\r\n", Transfer_Encoding="chunked"
    )
    assert code == 400 and "not JSON" in answer["error"]["message"]
    chunk = b"x" * 800
    huge = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(3)) + b"0\r\n\r\n"
    small = ServerLimits(max_body_bytes=1000)
    with serve_policy(CallablePolicy(lambda o, i: "ok"), limits=small) as tight:
        code, _, answer = request(
            tight, "POST", "/v1/completions", huge, Transfer_Encoding="chunked"
        )
    assert code == 413 and "at most 1,000 bytes" in answer["error"]["message"]


def test_the_limits_are_the_servers_own(server):
    small = ServerLimits(max_body_bytes=100, max_prompts=2, max_tokens=5)
    with serve_policy(CallablePolicy(lambda o, i: "ok"), limits=small) as tight:
        assert request(tight, "POST", "/v1/completions", completion(["a"] * 3))[0] == 400
        assert request(tight, "POST", "/v1/completions", completion("a", max_tokens=6))[0] == 400
        assert request(tight, "POST", "/v1/completions", completion("a" * 200))[0] == 413
        assert request(tight, "POST", "/v1/completions", completion(["a", "b"]))[0] == 200
    with pytest.raises(ValueError, match="max_prompts"):
        ServerLimits(max_prompts=0)


# --------------------------------------------------------------------------- isolation
def together(server, bodies: list[str]) -> list[tuple[int, dict]]:
    """``bodies`` sent at once (one micro-batch); their statuses and answers, in order."""
    results: list = [None] * len(bodies)

    def send(i: int) -> None:
        code, _, answer = request(server, "POST", "/v1/completions", bodies[i])
        results[i] = (code, answer)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_a_lone_surrogate_fails_its_own_request_alone():
    """Round 1 of issue 50: a prompt with a lone surrogate in a micro-batch made every batched
    client get HTTP 500. It is refused on its own now, naming the field, before any batch."""
    seen: list[list[str]] = []

    class Recording(CallablePolicy):
        def generate(self, prompts):
            seen.append([p.observation for p in prompts])
            return super().generate(prompts)

    policy = Recording(lambda observation, info: f"echo:{observation}")
    with serve_policy(policy, batch_wait=0.3) as srv:
        bad = '{"model": "m", "prompt": ["fine", "bad \\ud800"]}'
        results = together(srv, [completion("first"), bad, completion("third")])
    assert results[0][0] == 200 and results[2][0] == 200
    assert results[0][1]["choices"][0]["text"] == "echo:first"
    code, answer = results[1]
    assert code == 400 and "prompt[1] holds a lone surrogate" in answer["error"]["message"]
    assert not any("fine" in batch for batch in seen)  # the bad request never joined a batch
    assert sorted(p for batch in seen for p in batch) == ["first", "third"]


def test_a_prompt_the_policy_fails_on_fails_alone_and_its_neighbours_are_answered():
    def fragile(observation, info):
        if observation == "boom":
            raise RuntimeError("cannot open /secret/path/model.bin")
        return f"echo:{observation}"

    with serve_policy(CallablePolicy(fragile), batch_wait=0.3) as srv:
        results = together(srv, [completion("a"), completion("boom"), completion("c")])
    assert [r[0] for r in results] == [200, 500, 200]
    message = results[1][1]["error"]["message"]
    assert "RuntimeError" in message and "error id" in message
    assert "/secret/path" not in message and "cannot open" not in message


# --------------------------------------------------------------------------- authority
@pytest.fixture
def keyed():
    with serve_policy(CallablePolicy(lambda o, i: "ok"), api_key=KEY) as srv:
        yield srv


def test_the_token_is_checked_before_the_body_is_read(keyed):
    """A stranger without the key gets no parse for free: a 401 with the body unsent."""
    started = time.monotonic()
    code, _, answer = request(
        keyed, "POST", "/v1/completions", b"", **{"Content-Length": str(2**20)}
    )
    assert code == 401 and answer["error"]["type"] == "authentication_error"
    assert time.monotonic() - started < 5
    bearer = {"Authorization": f"Bearer {KEY}"}
    assert request(keyed, "POST", "/v1/completions", completion("x"), **bearer)[0] == 200
    for wrong in (f"Bearer {KEY}x", KEY, "Bearer ", "Bearer ключ"):
        assert (
            request(keyed, "POST", "/v1/completions", completion("x"), Authorization=wrong)[0]
            == 401
        )
    assert request(keyed, "GET", "/v1/models")[0] == 401


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "attacker.example"}, 403),  # DNS rebinding: a page's name bound to 127.0.0.1
        ({"Host": "attacker.example:8000"}, 403),
        ({"Origin": "http://attacker.example"}, 403),  # a cross-origin page
        ({"Origin": "null"}, 403),
        ({"Host": "localhost"}, 200),
        ({"Origin": "http://127.0.0.1:8000"}, 200),
        ({"Host": "[::1]:8000"}, 200),
    ],
)
def test_host_and_origin_must_name_the_server(server, headers, status):
    code, _, answer = request(server, "POST", "/v1/completions", completion("x"), **headers)
    assert code == status
    if status == 403:
        assert answer["error"]["type"] == "permission_error"


def test_other_names_are_allowed_when_given():
    with serve_policy(CallablePolicy(lambda o, i: "ok"), allowed_hosts=["gpu-7.cluster"]) as srv:
        assert request(srv, "GET", "/v1/models", Host="gpu-7.cluster:8000")[0] == 200
        assert request(srv, "GET", "/v1/models", Host="gpu-8.cluster:8000")[0] == 403


def test_a_server_beyond_loopback_without_a_key_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="llm_marl_envs.policies.server"):
        with serve_policy(CallablePolicy(lambda o, i: "ok"), host="0.0.0.0") as srv:
            assert request(srv, "GET", "/v1/models", Host="any-name:1")[0] == 200
    assert "without an API key" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="llm_marl_envs.policies.server"):
        with serve_policy(CallablePolicy(lambda o, i: "ok"), host="0.0.0.0", api_key=KEY):
            pass
        with serve_policy(CallablePolicy(lambda o, i: "ok")):
            pass
    assert "without an API key" not in caplog.text


def test_the_command_line_takes_a_key_from_a_flag_or_the_environment(monkeypatch):
    """``--api-key`` and ``LLM_MARL_API_KEY`` reach the server, and so do the limits."""
    captured = {}

    class Stop(Exception):
        pass

    def fake_serve(policy, host, port, **options):
        captured.update(options)
        raise Stop

    monkeypatch.setattr("llm_marl_envs.policies.server.command.serve_policy", fake_serve)
    relay = ["--model", "openai:http://127.0.0.1:9/v1#m"]
    monkeypatch.setenv("LLM_MARL_API_KEY", "from-env")
    with pytest.raises(Stop):
        main([*relay, "--max-prompts", "4"])
    assert captured["api_key"] == "from-env" and captured["limits"].max_prompts == 4
    with pytest.raises(Stop):
        main([*relay, "--api-key", "from-flag", "--allowed-host", "gpu-7"])
    assert captured["api_key"] == "from-flag" and captured["allowed_hosts"] == ["gpu-7"]
    with pytest.raises(SystemExit):
        main([*relay, "--max-tokens", "0"])


# --------------------------------------------------------------------------- errors
def test_a_full_queue_is_a_503_with_retry_after():
    release = threading.Event()

    def slow(observation, info):
        release.wait(10)
        return "late"

    limits = ServerLimits(max_queued=2)
    with serve_policy(CallablePolicy(slow), limits=limits, batch_wait=0) as srv:
        first = threading.Thread(
            target=request, args=(srv, "POST", "/v1/completions", completion(["a", "b"]))
        )
        first.start()
        time.sleep(0.5)
        code, headers, answer = request(srv, "POST", "/v1/completions", completion("c"))
        release.set()
        first.join(10)
    assert code == 503 and headers.get("retry-after") == "1"
    assert "the server is busy" in answer["error"]["message"]


def test_every_error_is_json(server):
    for method, path, body in (
        ("GET", "/nowhere", None),
        ("POST", "/v1/completions", "not json"),
        ("POST", "/v1/chat/completions", '{"messages": []}'),
    ):
        code, headers, answer = request(server, method, path, body)
        assert code in (400, 404) and headers["content-type"] == "application/json"
        assert set(answer["error"]) == {"message", "type", "param", "code"}
    code, _, answer = request(server, "POST", "/v1/chat/completions", '{"messages": []}')
    assert answer["error"]["param"] == "messages"


# --------------------------------------------------------------------------- liveness
def test_silent_and_slow_clients_are_cut_off():
    """A connection that sends nothing, or half its headers, is closed after header_timeout;
    a body that stops arriving is answered 408 after body_timeout."""
    limits = ServerLimits(header_timeout=0.5, body_timeout=0.5)
    with serve_policy(CallablePolicy(lambda o, i: "ok"), limits=limits) as srv:
        for sent in (b"", b"POST /v1/completions HTTP/1.1\r\nHost: 127.0"):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
                sock.sendall(sent)
                started = time.monotonic()
                assert sock.recv(100) == b""  # closed by the server
                assert time.monotonic() - started < 5
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
            head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50\r\n\r\n"
            sock.sendall(head.encode() + b'{"prompt": ')
            assert sock.recv(100).startswith(b"HTTP/1.1 408")


def test_work_of_a_client_that_left_is_dropped():
    """A client that disconnects while its prompts wait in the queue: they are never played."""
    release, played = threading.Event(), []

    def slow(observation, info):
        if observation == "first":
            release.wait(10)
        played.append(observation)
        return "ok"

    with serve_policy(CallablePolicy(slow), batch_wait=0) as srv:
        first = threading.Thread(
            target=request, args=(srv, "POST", "/v1/completions", completion("first"))
        )
        first.start()
        time.sleep(0.3)  # the worker is busy with "first"
        body = completion(["gone-1", "gone-2"]).encode()
        with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
            head = (
                f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            sock.sendall(head.encode() + body)
            time.sleep(0.3)  # queued behind "first"
        time.sleep(0.3)  # the server saw the disconnect
        release.set()
        first.join(10)
        assert request(srv, "POST", "/v1/completions", completion("after"))[0] == 200
    assert "gone-1" not in played and "gone-2" not in played and "after" in played


def test_requests_in_progress_are_capped_with_a_json_503():
    release = threading.Event()

    def slow(observation, info):
        release.wait(10)
        return "ok"

    limits = ServerLimits(max_in_progress=2)
    with serve_policy(CallablePolicy(slow), limits=limits, batch_wait=0) as srv:
        held = [
            threading.Thread(
                target=request, args=(srv, "POST", "/v1/completions", completion(str(i)))
            )
            for i in range(2)
        ]
        for thread in held:
            thread.start()
        time.sleep(0.5)
        code, headers, answer = request(srv, "POST", "/v1/completions", completion("third"))
        release.set()
        for thread in held:
            thread.join(10)
    assert code == 503 and headers["retry-after"] == "1"
    assert answer["error"]["type"] == "server_error" and "in progress" in answer["error"]["message"]


def test_shutdown_is_bounded_whatever_a_client_does():
    """A client holding a request open (its answer never comes) does not hold close() open
    past shutdown_timeout."""
    stuck = threading.Event()

    def never(observation, info):
        stuck.wait(30)
        return "late"

    limits = ServerLimits(shutdown_timeout=0.5)
    srv = serve_policy(CallablePolicy(never), limits=limits)

    answers = []

    def hold() -> None:
        with contextlib.suppress(OSError):
            answers.append(request(srv, "POST", "/v1/completions", completion("x")))

    client = threading.Thread(target=hold, daemon=True)
    client.start()
    time.sleep(0.3)
    started = time.monotonic()
    closer = threading.Thread(target=srv.close)
    closer.start()
    closer.join(10)
    elapsed = time.monotonic() - started
    stuck.set()  # (the policy's own call is the policy's: it is let finish)
    closer.join(10)
    client.join(10)
    assert elapsed < 8
    [(code, headers, answer)] = answers  # told, in JSON, rather than left hanging
    assert code == 503 and "shut down" in answer["error"]["message"]
