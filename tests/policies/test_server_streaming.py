"""The stand-in OpenAI-compatible server streams, as ``vllm serve`` does (issue 30).

Read with the ``openai`` package's own streaming client (``stream=True``), and byte for byte
with httpx: server-sent ``data: {...}`` chunks in OpenAI's chunk format, ending
``data: [DONE]``. Everything runs on 127.0.0.1, port 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from llm_marl_envs.policies import CallablePolicy, Completion, Policy, Prompt
from llm_marl_envs.policies.server import serve_policy

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")


class TokenPolicy(Policy):
    """Answers ``reply to <observation>`` with token ids and log-probabilities."""

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return [
            Completion(
                f"reply to {p.observation}",
                prompt_ids=[1, 2, 3],
                completion_ids=[7, 8],
                logprobs=[-0.25, -1.5],
            )
            for p in prompts
        ]


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def server():
    with serve_policy(TokenPolicy(), model_name="tiny") as running:
        yield running


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=10) as c:
        yield c


def _events(server, path: str, body: dict) -> tuple[httpx.Response, list[str]]:
    """The raw ``data:`` payloads of a streamed answer, in order."""
    with httpx.Client(timeout=10) as http:
        response = http.post(server.url + path, json=body)
    lines = response.text.split("\n\n")
    assert lines[-1] == "", "the stream must end with a blank line"
    assert all(line.startswith("data: ") for line in lines[:-1]), lines
    return response, [line[len("data: ") :] for line in lines[:-1]]


def test_chat_streams_to_the_openai_client(client):
    stream = client.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "hello"}],
        stream=True,
        stream_options={"include_usage": True},
        logprobs=True,
    )
    chunks = list(stream)
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert len({c.id for c in chunks}) == 1 and chunks[0].model == "tiny"
    with_choices = [c for c in chunks if c.choices]
    assert with_choices[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in with_choices)
    assert text == "reply to hello"
    assert [c.choices[0].finish_reason for c in with_choices][-1] == "stop"
    assert all(c.choices[0].finish_reason is None for c in with_choices[:-1])
    tokens = [
        t.token
        for c in with_choices
        if c.choices[0].logprobs
        for t in c.choices[0].logprobs.content
    ]
    assert tokens == ["token_id:7", "token_id:8"]
    assert not chunks[-1].choices
    assert chunks[-1].usage.prompt_tokens == 3 and chunks[-1].usage.completion_tokens == 2


def test_completions_stream_to_the_openai_client(client):
    stream = client.completions.create(model="tiny", prompt=["a", "b"], stream=True)
    chunks = list(stream)
    assert {c.object for c in chunks} == {"text_completion"}
    texts = {0: "", 1: ""}
    finished = {}
    for c in chunks:
        for choice in c.choices:
            texts[choice.index] += choice.text
            if choice.finish_reason is not None:
                finished[choice.index] = choice.finish_reason
    assert texts == {0: "reply to a", 1: "reply to b"}
    assert finished == {0: "stop", 1: "stop"}
    assert all(c.usage is None for c in chunks)  # usage only when stream_options asks for it


def test_the_stream_is_server_sent_events_ending_with_done(server):
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "stream": True,
        "return_token_ids": True,
    }
    response, payloads = _events(server, "/chat/completions", body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert chunks[0]["prompt_token_ids"] == [1, 2, 3]  # where vLLM puts them
    assert [c["choices"][0].get("token_ids") for c in chunks] == [None, [7, 8], None]

    response, payloads = _events(server, "/completions", {"prompt": "x", "stream": True})
    assert payloads[-1] == "[DONE]"
    assert "".join(json.loads(p)["choices"][0]["text"] for p in payloads[:-1]) == "reply to x"


def test_a_stream_matches_the_plain_answer(server):
    body = {"messages": [{"role": "user", "content": "same"}], "logprobs": True}
    with httpx.Client(timeout=10) as http:
        plain = http.post(server.url + "/chat/completions", json=body).json()
    _, payloads = _events(server, "/chat/completions", {**body, "stream": True})
    chunks = [json.loads(p) for p in payloads[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == plain["choices"][0]["message"]["content"]
    logprobs = [c["choices"][0]["logprobs"] for c in chunks if c["choices"][0]["logprobs"]]
    assert logprobs == [plain["choices"][0]["logprobs"]]


@pytest.mark.parametrize(
    "extra",
    [
        {"stream": "yes"},
        {"stream": 1.5},
        {"stream_options": {"include_usage": True}},  # without stream
        {"stream": True, "stream_options": "usage"},
        {"stream": True, "stream_options": {"include_usage": "please"}},
    ],
)
def test_bad_stream_requests_are_refused_with_a_message(server, extra):
    body = {"messages": [{"role": "user", "content": "x"}], **extra}
    with httpx.Client(timeout=10) as http:
        response = http.post(server.url + "/chat/completions", json=body)
    assert response.status_code == 400
    assert "stream" in response.json()["error"]["message"]


def test_a_policy_failure_is_an_http_error_before_the_stream():
    def broken(observation: str, info: dict) -> str:
        raise ValueError("the model fell over")

    with serve_policy(CallablePolicy(broken)) as failing:
        with openai.OpenAI(base_url=failing.url, api_key="x", max_retries=0, timeout=10) as c:
            # the client learns the failure's type and id, never its text (module docstring)
            with pytest.raises(openai.InternalServerError, match=r"ValueError; error id \w+"):
                list(
                    c.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "x"}], stream=True
                    )
                )
