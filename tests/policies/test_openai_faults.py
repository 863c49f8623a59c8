"""OpenAIPolicy against misbehaving servers: trickling, hanging, unusable and huge answers.

Every server is a real one on 127.0.0.1 (port 0), started by the test. Names added for these
faults (``SlowResponseWarning``, ``max_response_bytes``) are looked up inside the tests, so
that on a version without them each test fails on its own rather than the module failing to
import.
"""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
import warnings
from collections.abc import Callable

import pytest

from llm_marl_envs.policies import PolicyError, Prompt
from llm_marl_envs.policies.openai import OpenAIPolicy, ServerOptions
from policy_server_helpers import openai_client

Handler = Callable[[socket.socket, threading.Event], None]


def chat_prompt(text: str) -> Prompt:
    return Prompt("gnome_0", text, [{"role": "user", "content": text}], {})


def chat_answer(content: object, **message: object) -> bytes:
    choice = {
        "index": 0,
        "finish_reason": "stop",
        "message": {"role": "assistant", "content": content, **message},
    }
    return json.dumps({"choices": [choice]}).encode()


def http_head(status: str = "200 OK", length: int | None = None) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n"
    if length is not None:
        head += f"Content-Length: {length}\r\n"
    return (head + "\r\n").encode()


def read_request(conn: socket.socket) -> None:
    """Read one HTTP request (headers and Content-Length body) off ``conn``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(autouse=True)
def no_leaked_threads():
    before = set(threading.enumerate())
    yield
    leaked = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leaked, f"threads left running: {leaked}"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def socket_server():
    """A raw TCP server: ``handler(conn, stop)`` runs in its own thread for each connection.

    Teardown sets ``stop``, closes the listener and joins every thread, so a handler must
    return soon after ``stop`` is set (or when the client goes away).
    """
    stop = threading.Event()
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []
    counts: list[int] = []

    def start(handler: Handler) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(0.05)
        listeners.append(listener)

        def serve_one(conn: socket.socket) -> None:
            with conn:
                try:
                    handler(conn, stop)
                except OSError:
                    pass  # the client went away, as these tests expect it to

        def accept_loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except (TimeoutError, OSError):
                    continue
                counts.append(1)
                thread = threading.Thread(target=serve_one, args=(conn,))
                threads.append(thread)
                thread.start()

        thread = threading.Thread(target=accept_loop)
        threads.append(thread)
        thread.start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}/v1"

    start.connections = counts  # type: ignore[attr-defined]
    yield start
    stop.set()
    for thread in list(threads):
        thread.join(10)
    for listener in listeners:
        listener.close()


@pytest.fixture
def make_client():
    clients: list[OpenAIPolicy] = []

    def make(url: str, **kwargs) -> OpenAIPolicy:
        kwargs.setdefault("backoff", 0.01)
        client = openai_client(url, **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def trickle(prefix: bytes, drip: bytes, every: float, give_up: float = 6.0) -> Handler:
    """Send ``prefix``, then one byte of ``drip`` every ``every`` seconds (for ``give_up`` s)."""

    def handler(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(prefix)
        ends = time.monotonic() + give_up
        for byte in drip:
            if stop.wait(every) or time.monotonic() > ends:
                return
            conn.sendall(bytes([byte]))

    return handler


def hang(conn: socket.socket, stop: threading.Event) -> None:
    read_request(conn)
    stop.wait(10)


# ---------------------------------------------------------------------- the deadline
@pytest.mark.parametrize("phase", ["headers", "body"])
@pytest.mark.slow
def test_a_trickling_server_fails_at_the_deadline(socket_server, make_client, phase):
    # One byte every 0.1 s: every socket read succeeds well within any per-read timeout, so
    # before the total deadline this hung until the server gave up.
    body = chat_answer("left")
    if phase == "headers":
        prefix, drip = b"HTTP/1.1 200 OK\r\n", b"X-Padding: " + b"a" * 1000
    else:
        prefix, drip = http_head(length=len(body) + 1000), body + b" " * 1000
    url = socket_server(trickle(prefix, drip, every=0.1))
    client = make_client(url, timeout=1.0, max_retries=1)
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the slow-answer warning is tested below
        with pytest.raises(PolicyError) as caught:
            client.generate([chat_prompt("x")])
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert "timed out" in message and "1s deadline" in message and "2 attempt" in message, message
    assert 1.9 < elapsed < 3.5  # two attempts of 1 s, plus a 0.01 s back-off


@pytest.mark.slow
def test_a_hanging_server_fails_after_timeout_times_attempts(socket_server, make_client):
    url = socket_server(hang)
    client = make_client(url, timeout=0.5, max_retries=2)
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(PolicyError, match="timed out") as caught:
            client.generate([chat_prompt("x")])
    assert 1.4 < time.monotonic() - started < 3.0
    assert "3 attempt" in str(caught.value)
    assert len(socket_server.connections) == 3


@pytest.mark.slow
def test_a_slow_answer_warns_once_per_prompt(socket_server, make_client):
    def slow(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        if not stop.wait(0.5):
            body = chat_answer("left")
            conn.sendall(http_head(length=len(body)) + body)

    url = socket_server(slow)
    client = make_client(url, timeout=0.8, max_retries=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [completion] = client.generate([chat_prompt("x")])
    assert completion.text == "left"
    slow_warnings = [w for w in caught if w.category.__name__ == "SlowResponseWarning"]
    assert len(slow_warnings) == 1, [str(w.message) for w in caught]
    text = str(slow_warnings[0].message)
    assert url in text and "0.4s" in text and "deadline 0.8s" in text

    fast = make_client(url, timeout=5.0, max_retries=0)  # default warn_after = 2.5 s: silent
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fast.generate([chat_prompt("x")])[0].text == "left"
    assert not [w for w in caught if w.category.__name__ == "SlowResponseWarning"]


def test_close_aborts_requests_in_flight(socket_server, make_client):
    url = socket_server(hang)
    client = make_client(url, timeout=8.0, max_retries=3, warn_after=100.0)
    failure: list[BaseException] = []

    def call() -> None:
        try:
            client.generate([chat_prompt("x"), chat_prompt("y")])
        except PolicyError as error:
            failure.append(error)

    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(0.3)
    started = time.monotonic()
    client.close()
    caller.join(10)
    assert time.monotonic() - started < 2.0  # not the 8 s deadline, nor its retries
    assert failure and "closed" in str(failure[0])


# ---------------------------------------------------------------------- unusable answers
@pytest.mark.parametrize(
    "message",
    [
        {
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "move", "arguments": "{}"}}
            ],
        },
        {"content": None, "refusal": "I can't help with that."},
        {"content": None, "reasoning_content": "Let me think about the maze..."},
        {"content": None},
    ],
    ids=["tool-calls-only", "refusal", "reasoning-cut-off", "bare-null"],
)
def test_null_content_is_an_error_not_an_empty_action(socket_server, make_client, message):
    body = chat_answer(**message)

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(http_head(length=len(body)) + body)

    url = socket_server(answer)
    with pytest.raises(PolicyError) as caught:
        make_client(url, timeout=5.0, max_retries=2).generate([chat_prompt("x")])
    text = str(caught.value)
    assert url in text and "content is null" in text and "no text to use as the action" in text
    for key in ("tool_calls", "refusal", "reasoning_content"):
        assert (key in text) == (key in message)
    assert len(socket_server.connections) == 1  # not retried


@pytest.mark.parametrize(
    "payload, problem",
    [
        ({"choices": [{"index": 0, "text": None, "finish_reason": "length"}]}, "text is null"),
        ({"choices": [{"index": 0, "message": "left"}]}, "message is str, not an object"),
        (
            {"choices": [{"index": 0, "message": {"content": [{"type": "text", "text": "x"}]}}]},
            "content is a list, not a string",
        ),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, "neither a message nor a text"),
        ({"choices": None}, "no choices"),
    ],
)
def test_other_unusable_answers_name_the_problem(socket_server, make_client, payload, problem):
    body = json.dumps(payload).encode()

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(http_head(length=len(body)) + body)

    url = socket_server(answer)
    with pytest.raises(PolicyError, match="unusable answer") as caught:
        make_client(url, timeout=5.0).generate([chat_prompt("x")])
    assert problem in str(caught.value)


def test_an_empty_string_is_a_real_answer(socket_server, make_client):
    body = chat_answer("")

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(http_head(length=len(body)) + body)

    url = socket_server(answer)
    assert make_client(url, timeout=5.0).generate([chat_prompt("x")])[0].text == ""


# ---------------------------------------------------------------------- the size cap
HUGE = 64 * 2**20  # what the server offers; the client's cap is 1 MiB


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_a_huge_answer_is_refused_while_reading(socket_server, make_client, declared):
    sent: list[int] = []

    def flood(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(http_head(length=HUGE if declared else None))
        conn.sendall(b'{"choices": [{"message": {"content": "')
        block = b"x" * 65536
        for _ in range(HUGE // len(block)):
            if stop.is_set():
                return
            try:
                conn.sendall(block)
            except OSError:
                break
            sent.append(len(block))

    url = socket_server(flood)
    client = make_client(url, timeout=20.0, max_retries=2, max_response_bytes=2**20)
    started = time.monotonic()
    with pytest.raises(PolicyError, match="max_response_bytes=1048576") as caught:
        client.generate([chat_prompt("x")])
    assert time.monotonic() - started < 5.0
    assert "1 attempt" in str(caught.value)  # refused, not retried
    time.sleep(0.2)  # let the server notice the closed connection
    # The client stopped reading at the cap: the server could only fill the socket buffers.
    assert sum(sent) < HUGE // 2


def test_the_default_caps_leave_normal_answers_alone():
    from llm_marl_envs.policies.openai import DEFAULT_MAX_RESPONSE_BYTES

    policy = OpenAIPolicy("http://127.0.0.1:1/v1")
    assert policy.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES >= 16 * 2**20
    assert policy.slow_after == policy.timeout / 2
    policy.close()
    for bad in (
        {"max_response_bytes": 0},
        {"warn_after": 0},
        {"warn_after": -1.0},
        {"timeout": float("inf")},
    ):
        with pytest.raises((ValueError, TypeError)):
            OpenAIPolicy("http://127.0.0.1:1/v1", options=ServerOptions(**bad))


def test_ctrl_c_is_seen_while_waiting_even_if_a_worker_thread_gets_the_signal(
    socket_server, make_client
):
    # The OS may hand a process's SIGINT to any thread; Python then only raises
    # KeyboardInterrupt in the main thread when it wakes up. generate() must wake up often.
    url = socket_server(hang)
    client = make_client(url, timeout=5.0, max_retries=0, warn_after=100.0)

    def interrupt_a_worker() -> None:
        time.sleep(0.3)
        worker = next(t for t in threading.enumerate() if t.name.startswith("openai-policy_"))
        signal.pthread_kill(worker.ident, signal.SIGINT)

    # A runner started in the background may inherit SIGINT ignored; Ctrl-C in a terminal
    # reaches Python's default handler, which is what this test is about.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    poker = threading.Thread(target=interrupt_a_worker)
    poker.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.generate([chat_prompt("x")])
    finally:
        poker.join()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 1.5  # not the 5 s deadline
