"""OpenAIPolicy against the package's own OpenAI-compatible server (and a few broken ones).

Everything runs on 127.0.0.1 with port 0; no test needs the network.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llm_marl_envs.policies import CallablePolicy, Completion, Policy, PolicyError, Prompt
from llm_marl_envs.policies.openai import OpenAIPolicy, ServerOptions
from policy_server_helpers import FaultyPolicyServer, openai_client

SECRET = "sk-test-0123456789-secret"


def echo(observation: str, info: dict) -> str:
    return f"echo:{observation}"


def chat_prompt(text: str) -> Prompt:
    messages = [{"role": "system", "content": "Play well."}, {"role": "user", "content": text}]
    return Prompt("gnome_0", text, messages, {})


def text_prompt(text: str) -> Prompt:
    return Prompt("gnome_0", text, [], {})


class CountingPolicy(Policy):
    """Echoes, and records the size of every generate call."""

    name = "counting"

    def __init__(self) -> None:
        self.batch_sizes: list[int] = []
        self.gate: threading.Event | None = None

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        self.batch_sizes.append(len(prompts))
        if self.gate is not None and len(self.batch_sizes) == 1:
            self.gate.wait(2.0)  # hold the first batch so the others queue up behind it
        return [Completion(echo(p.observation, p.info)) for p in prompts]


class LogprobPolicy(Policy):
    """Answers with token ids and log-probabilities, as the transformers policy does."""

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return [
            Completion("ok", prompt_ids=[1, 2, 3], completion_ids=[7, 8], logprobs=[-0.25, -1.5])
            for _ in prompts
        ]


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(autouse=True)
def no_leaked_threads():
    before = set(threading.enumerate())
    yield
    leaked = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leaked, f"threads left running: {leaked}"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """No proxy may intercept loopback requests, and no real key may leak into the tests."""
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
def start_server():
    servers: list[FaultyPolicyServer] = []

    def start(policy: Policy | None = None, **kwargs) -> FaultyPolicyServer:
        server = FaultyPolicyServer(policy or CallablePolicy(echo), **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def make_client():
    clients: list[OpenAIPolicy] = []

    def make(url: str, **kwargs) -> OpenAIPolicy:
        kwargs.setdefault("timeout", 5.0)
        kwargs.setdefault("backoff", 0.01)
        client = openai_client(url, **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def raw_server():
    """A throwaway server answering every POST with a fixed status and body."""
    started: list[tuple[ThreadingHTTPServer, threading.Thread]] = []

    def start(body: bytes, status: int = 200) -> tuple[str, list[str]]:
        seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                seen.append(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = False
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        started.append((httpd, thread))
        return f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen

    yield start
    for httpd, thread in started:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def http_json(url: str, body: bytes | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


# ---------------------------------------------------------------------- round trips
def test_chat_round_trip(start_server, make_client):
    server = start_server(model_name="served")
    client = make_client(
        server.url, model="served", max_tokens=16, seed=3, stop="\n", extra_body={"top_k": 5}
    )
    [completion] = client.generate([chat_prompt("left or right?")])
    assert completion.text == "echo:left or right?"
    assert completion.completion_ids is None
    [record] = server.requests
    assert record["method"] == "POST" and record["path"] == "/v1/chat/completions"
    body = record["body"]
    assert body["messages"][-1] == {"role": "user", "content": "left or right?"}
    assert (body["model"], body["max_tokens"], body["seed"], body["stop"], body["top_k"]) == (
        "served",
        16,
        3,
        ["\n"],
        5,
    )
    assert "Authorization" not in record["headers"]


def test_completions_round_trip(start_server, make_client):
    server = start_server()
    [completion] = make_client(server.url).generate([text_prompt("hello")])
    assert completion.text == "echo:hello"
    # use_chat=False sends the observation even when the prompt has messages
    [completion] = make_client(server.url + "/", use_chat=False).generate([chat_prompt("hi")])
    assert completion.text == "echo:hi"
    assert [r["path"] for r in server.requests] == ["/v1/completions", "/v1/completions"]
    assert server.requests[1]["body"]["prompt"] == "hi"


def test_batch_order_is_preserved(start_server, make_client):
    server = start_server(max_batch=3)
    client = make_client(server.url, concurrency=4)
    prompts = [chat_prompt(f"p{i}") if i % 2 else text_prompt(f"p{i}") for i in range(20)]
    assert [c.text for c in client.generate(prompts)] == [f"echo:p{i}" for i in range(20)]
    assert client.generate([]) == []


@pytest.mark.slow  # about 2 s: waits out the server's batching window
def test_server_batches_concurrent_requests(start_server, make_client):
    policy = CountingPolicy()
    policy.gate = threading.Event()
    server = start_server(policy, max_batch=4, batch_wait=0.05)

    def release_when_all_arrived() -> None:
        for _ in range(200):
            if server.request_count >= 8:
                break
            time.sleep(0.01)
        policy.gate.set()

    releaser = threading.Thread(target=release_when_all_arrived)
    releaser.start()
    try:
        texts = [
            c.text
            for c in make_client(server.url, concurrency=8).generate(
                [text_prompt(str(i)) for i in range(8)]
            )
        ]
    finally:
        policy.gate.set()
        releaser.join()
    assert texts == [f"echo:{i}" for i in range(8)]
    assert sum(policy.batch_sizes) == 8
    assert max(policy.batch_sizes) <= 4
    assert len(policy.batch_sizes) < 8


def test_server_batches_completions_prompt_lists(start_server):
    policy = CountingPolicy()
    server = start_server(policy)
    status, answer = http_json(
        server.url + "/completions", json.dumps({"prompt": ["a", "b", "c"]}).encode()
    )
    assert status == 200
    assert [c["text"] for c in answer["choices"]] == ["echo:a", "echo:b", "echo:c"]
    assert [c["index"] for c in answer["choices"]] == [0, 1, 2]
    assert policy.batch_sizes == [3]


# ---------------------------------------------------------------------- retries and failures
def test_retries_until_success(start_server, make_client):
    server = start_server(fail_first=2)
    [completion] = make_client(server.url, max_retries=3).generate([chat_prompt("x")])
    assert completion.text == "echo:x"
    assert server.request_count == 3


def test_rate_limit_is_retried(start_server, make_client):
    server = start_server(fail_first=1, fail_status=429)
    assert make_client(server.url, max_retries=1).generate([text_prompt("x")])[0].text == "echo:x"
    assert server.request_count == 2


def test_retries_exhausted(start_server, make_client):
    server = start_server(fail_first=10, fail_status=503)
    client = make_client(server.url, max_retries=2)
    with pytest.raises(PolicyError) as caught:
        client.generate([chat_prompt("x")])
    message = str(caught.value)
    assert f"{server.url}/chat/completions" in message
    assert "503" in message and "3 attempt" in message and "injected failure" in message
    assert server.request_count == 3


@pytest.mark.parametrize("extra_body", [None, {"n": 2}])
def test_client_errors_are_not_retried(start_server, make_client, extra_body):
    server = start_server(fail_first=10 if extra_body is None else 0, fail_status=400)
    client = make_client(server.url, max_retries=3, extra_body=extra_body)
    with pytest.raises(PolicyError, match=r"HTTP 400.*") as caught:
        client.generate([chat_prompt("x")])
    assert "1 attempt" in str(caught.value)
    assert server.request_count == 1


def test_policy_exception_is_http_500(start_server, make_client):
    def broken(observation: str, info: dict) -> str:
        raise ValueError("the model fell over")

    server = start_server(CallablePolicy(broken))
    with pytest.raises(PolicyError, match=r"500.*ValueError; error id \w+") as caught:
        make_client(server.url, max_retries=0).generate([text_prompt("x")])
    assert "the model fell over" not in str(caught.value)  # logged by the server, not sent


def test_timeout(start_server, make_client):
    server = start_server(delay=1.0)
    client = make_client(server.url, timeout=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(PolicyError, match="timed out") as caught:
        client.generate([chat_prompt("x")])
    assert time.monotonic() - started < 5.0  # loose: the point is that it does not hang
    assert "2 attempt" in str(caught.value) and server.url in str(caught.value)


def test_connection_refused(make_client):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(PolicyError, match="connection error") as caught:
        make_client(url, max_retries=1).generate([text_prompt("x")])
    assert url in str(caught.value) and "2 attempt" in str(caught.value)


# ---------------------------------------------------------------------- API key
def test_api_key_is_sent_and_never_shown(start_server, make_client, monkeypatch):
    server = start_server(api_key=SECRET)
    client = make_client(server.url, api_key=SECRET)
    assert client.generate([chat_prompt("x")])[0].text == "echo:x"
    assert server.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(client)

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the default key comes from the environment
    assert make_client(server.url).generate([text_prompt("y")])[0].text == "echo:y"

    with pytest.raises(PolicyError, match="401") as caught:
        make_client(server.url, api_key=SECRET + "-wrong").generate([text_prompt("x")])
    assert SECRET not in str(caught.value)

    failing = start_server(fail_first=10)
    with pytest.raises(PolicyError) as caught:
        make_client(failing.url, api_key=SECRET, max_retries=1).generate([text_prompt("x")])
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value)


def test_a_key_echoed_by_the_server_is_redacted(raw_server, make_client):
    url, _ = raw_server(json.dumps({"error": {"message": f"bad key {SECRET}"}}).encode(), 401)
    with pytest.raises(PolicyError) as caught:
        make_client(url, api_key=SECRET).generate([text_prompt("x")])
    assert SECRET not in str(caught.value) and "***" in str(caught.value)


# ---------------------------------------------------------------------- logprobs
@pytest.mark.parametrize("prompt", [chat_prompt("x"), text_prompt("x")], ids=["chat", "text"])
def test_logprobs_pass_through(start_server, make_client, prompt):
    server = start_server(LogprobPolicy())
    [completion] = make_client(server.url, logprobs=True).generate([prompt])
    assert completion.text == "ok"
    assert completion.logprobs == [-0.25, -1.5]
    [completion] = make_client(server.url).generate([prompt])  # not asked for: not sent
    assert completion.logprobs is None


def test_server_answer_shape(start_server):
    server = start_server(LogprobPolicy(), model_name="tiny")
    body = {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "logprobs": True}
    status, answer = http_json(server.url + "/chat/completions", json.dumps(body).encode())
    assert status == 200
    assert answer["object"] == "chat.completion" and answer["model"] == "tiny"
    choice = answer["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "ok"}
    assert choice["finish_reason"] == "stop"
    assert [t["token"] for t in choice["logprobs"]["content"]] == ["token_id:7", "token_id:8"]
    assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}

    status, models = http_json(server.url + "/models")
    assert status == 200 and models["data"][0]["id"] == "tiny"


# ---------------------------------------------------------------------- token ids (vLLM)
@pytest.mark.parametrize("prompt", [chat_prompt("x"), text_prompt("x")], ids=["chat", "text"])
def test_token_ids_are_asked_for_and_filled_as_vllm_gives_them(start_server, make_client, prompt):
    server = start_server(LogprobPolicy())
    [completion] = make_client(server.url, return_token_ids=True).generate([prompt])
    assert completion.text == "ok"
    assert completion.prompt_ids == [1, 2, 3] and completion.completion_ids == [7, 8]
    assert completion.logprobs == [-0.25, -1.5]  # return_token_ids implies logprobs
    body = server.requests[-1]["body"]
    assert body["return_token_ids"] is True and body["return_tokens_as_token_ids"] is True
    assert body["logprobs"] in (True, 0)
    [completion] = make_client(server.url).generate([prompt])  # off by default: not asked for
    assert completion.prompt_ids is completion.completion_ids is completion.logprobs is None
    assert not {"return_token_ids", "return_tokens_as_token_ids"} & set(server.requests[-1]["body"])


def test_server_answers_token_ids_where_vllm_puts_them(start_server):
    server = start_server(LogprobPolicy())
    chat = {"messages": [{"role": "user", "content": "x"}], "return_token_ids": True}
    status, answer = http_json(server.url + "/chat/completions", json.dumps(chat).encode())
    assert status == 200 and answer["prompt_token_ids"] == [1, 2, 3]
    assert answer["choices"][0]["token_ids"] == [7, 8]
    status, answer = http_json(
        server.url + "/completions", json.dumps({"prompt": "x", "return_token_ids": True}).encode()
    )
    assert status == 200 and "prompt_token_ids" not in answer
    assert answer["choices"][0]["prompt_token_ids"] == [1, 2, 3]
    assert answer["choices"][0]["token_ids"] == [7, 8]
    status, answer = http_json(server.url + "/completions", json.dumps({"prompt": "x"}).encode())
    assert "token_ids" not in answer["choices"][0]  # only when asked, as vLLM


def test_older_vllm_gives_completion_ids_through_logprob_tokens(raw_server, make_client, caplog):
    # vLLM < 0.10.2 ignores return_token_ids but honours return_tokens_as_token_ids.
    content = [{"token": f"token_id:{i}", "logprob": -0.5, "top_logprobs": []} for i in (5, 6)]
    body = {"choices": [{"message": {"content": "ok"}, "logprobs": {"content": content}}]}
    url, _ = raw_server(json.dumps(body).encode())
    client = make_client(url, return_token_ids=True)
    with caplog.at_level("WARNING", logger="llm_marl_envs.policies.openai.policy"):
        [completion] = client.generate([chat_prompt("x")])
        client.generate([chat_prompt("y")])
    assert completion.completion_ids == [5, 6] and completion.logprobs == [-0.5, -0.5]
    assert completion.prompt_ids is None  # not given: left unknown, never guessed
    warnings_ = [r for r in caplog.records if "lacks prompt token ids" in r.message]
    assert len(warnings_) == 1  # said once per policy


# ---------------------------------------------------------------------- malformed answers
@pytest.mark.parametrize(
    "body",
    [
        b"not json at all",
        b'{"id": "x"}',
        b'{"choices": []}',
        b'{"choices": [{"message": {"role": "assistant"}}]}',
        b'{"choices": [{"message": {"content": 42}}]}',
        b"[1, 2]",
    ],
    ids=["invalid-json", "no-choices", "empty-choices", "no-content", "non-text", "not-object"],
)
def test_malformed_answers_raise(raw_server, make_client, body):
    url, seen = raw_server(body)
    with pytest.raises(PolicyError, match=url):
        make_client(url, max_retries=2).generate([chat_prompt("x")])
    assert len(seen) == 1  # a malformed answer is not retried


def test_null_content_is_an_error(raw_server, make_client):
    # Never silently an empty action (more cases in test_openai_faults.py).
    answer = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": []},
            }
        ]
    }
    url, seen = raw_server(json.dumps(answer).encode())
    with pytest.raises(PolicyError, match="content is null"):
        make_client(url, max_retries=2).generate([chat_prompt("x")])
    assert len(seen) == 1


def test_server_rejects_bad_requests(start_server):
    server = start_server()
    cases = [
        ("/chat/completions", b"{not json"),
        ("/chat/completions", b'{"messages": []}'),
        ("/chat/completions", b'{"messages": [{"content": "no role"}]}'),
        ("/chat/completions", b'{"messages": [{"role": "user", "content": "x"}], "n": 2}'),
        ("/completions", b'{"prompt": 5}'),
        ("/completions", b'["a list"]'),
    ]
    for path, body in cases:
        status, answer = http_json(server.url + path, body)
        assert status == 400, (path, body)
        assert answer["error"]["type"] == "invalid_request_error" and answer["error"]["message"]
    status, answer = http_json(server.url + "/nowhere", b"{}")
    assert status == 404 and "error" in answer


def test_server_builds_prompts_from_messages(start_server):
    seen: list[Prompt] = []

    class Recorder(Policy):
        def generate(self, prompts):
            seen.extend(prompts)
            return [Completion("ok") for _ in prompts]

    server = start_server(Recorder())
    parts = [{"type": "text", "text": "left "}, {"type": "text", "text": "or right?"}]
    bodies = [
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": parts}]},
        {"messages": [{"role": "system", "content": "rules"}]},
    ]
    for body in bodies:
        assert http_json(server.url + "/chat/completions", json.dumps(body).encode())[0] == 200
    assert seen[0].agent == "remote" and seen[0].observation == "left or right?"
    assert seen[0].messages[-1] == {"role": "user", "content": "left or right?"}
    assert seen[1].observation == "system: rules"


# ---------------------------------------------------------------------- construction
@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "ftp://host/v1"},
        {"base_url": "127.0.0.1:8000/v1"},
        {"max_tokens": 0},
        {"temperature": -0.1},
        {"top_p": 0.0},
        {"model": ""},
        {"stop": ["", "x"]},
        {"extra_body": ["not", "a", "dict"]},
        {"extra_body": {"stream": True}},  # a stream is not JSON: refused up front
        {"seed": "7"},
    ],
)
def test_constructor_validates(kwargs):
    kwargs = {"base_url": "http://127.0.0.1:1/v1", **kwargs}
    with pytest.raises((ValueError, TypeError)):
        OpenAIPolicy(**kwargs)


def test_from_spec_and_close():
    policy = OpenAIPolicy.from_spec(
        "https://example.invalid/v1/#my-model", options=ServerOptions(timeout=1.0)
    )
    assert (policy.base_url, policy.model, policy.name) == (
        "https://example.invalid/v1",
        "my-model",
        "openai:my-model",
    )
    policy.close()
    with pytest.raises(PolicyError, match="closed"):
        policy.generate([text_prompt("x")])
    plain = OpenAIPolicy.from_spec("http://127.0.0.1:8000")  # no /v1 added, no model
    assert (plain.base_url, plain.model) == ("http://127.0.0.1:8000", "default")
    plain.close()
