"""``python -m llm_marl_envs.policies.server --model openai:URL#MODEL``: a relay of another
OpenAI-compatible server, whose streams end with ``data: [DONE]`` (verifiers waits for it;
``transformers serve`` never sends it: tests/integrations/test_verifiers.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from llm_marl_envs.policies import CallablePolicy, Prompt
from llm_marl_envs.policies.openai import OpenAIPolicy
from llm_marl_envs.testing import free_port
from llm_marl_envs.policies.server import serve_policy


def _wait(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the relay did not start")


@pytest.mark.slow
def test_the_relay_serves_the_upstream_answers_under_its_name():
    upstream_policy = CallablePolicy(lambda observation, info: f"echo: {observation}")
    with serve_policy(upstream_policy, model_name="upstream-model") as upstream:
        port = free_port()
        relay = subprocess.Popen(
            [sys.executable, "-m", "llm_marl_envs.policies.server", "--port", str(port)]
            + ["--model", f"openai:{upstream.url}#upstream-model"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait(url, relay)
            with urllib.request.urlopen(f"{url}/models", timeout=10) as response:
                names = [m["id"] for m in json.load(response)["data"]]
            assert names == ["upstream-model"]
            client = OpenAIPolicy(url, "upstream-model")
            [answer] = client.generate([Prompt("a", "hello", [], {})])
            client.close()
            assert answer.text == "echo: hello"
            body = {"model": "upstream-model", "stream": True}
            body["messages"] = [{"role": "user", "content": "hi"}]
            request = urllib.request.Request(
                f"{url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
            assert raw.rstrip().endswith(b"data: [DONE]") and b"echo: hi" in raw
        finally:
            relay.terminate()
            relay.wait(timeout=30)
