"""A server seat is the model its server serves, not its URL's text (issue 51, item 7): an
evaluation resumed through another URL of the same server (``localhost`` for ``127.0.0.1``)
resumes and finishes; a server that serves another model is refused in one line naming the
seat and both models. Real policy servers (the tiny model) on 127.0.0.1; no network."""

from __future__ import annotations

import json

import pytest

from llm_marl_envs.evaluation.evaluate import EvalError, Team, evaluate
from llm_marl_envs.evaluation.suite import parse_suite

SUITE = {
    "name": "served",
    "version": 1,
    "seed": 5,
    "tasks": [
        {
            "name": "gsm8k",
            "env": "llm_marl_envs/GSM8K-v0",
            "kwargs": {"data_source": "bundled", "split": "test"},
            "rows": "0:2",
            "max_new_tokens": 4,
            "metrics": ["pass@1"],
            "primary": "pass@1",
        },
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "seeds": [0],
            "max_new_tokens": 3,
            "metrics": ["success"],
            "primary": "success",
        },
    ],
}


@pytest.fixture(scope="module")
def tiny_servers():
    """Two real policy servers of the tiny model on 127.0.0.1: one reporting ``tiny``, one
    reporting ``other``."""
    pytest.importorskip("torch")
    from llm_marl_envs.policies.hf import HFPolicy
    from llm_marl_envs.policies.server import serve_policy

    policy = HFPolicy.from_spec("tiny")
    servers = {
        name: serve_policy(policy, "127.0.0.1", model_name=name) for name in ("tiny", "other")
    }
    yield servers
    for server in servers.values():
        server.close()
    policy.close()


def _eval(spec: str, out, lines: list[str] | None = None) -> dict:
    return evaluate(
        parse_suite(SUITE),
        Team.parse(spec),
        out,
        progress=False,
        batch_size=2,
        write=(lines.append if lines is not None else lambda line: None),
    )


@pytest.mark.slow
def test_a_resume_through_localhost_is_the_same_seat_and_finishes(tiny_servers, tmp_path):
    server = tiny_servers["tiny"]
    out = tmp_path / "run"
    first = _eval(f"openai:http://127.0.0.1:{server.port}/v1#tiny", out)
    assert first["complete"]
    # a stopped run: one task's episodes and the results are gone
    (out / "episodes" / "maze.jsonl").unlink()
    (out / "results.json").unlink()
    said: list[str] = []
    again = _eval(f"openai:http://localhost:{server.port}/v1#tiny", out, said)
    assert again["complete"] and again["tasks"]["maze"]["items"] == 1
    assert any("gsm8k: done earlier (2 episodes)" in line for line in said)
    assert any(line.startswith("  maze: 1 episodes") for line in said)
    run = json.loads((out / "run.json").read_text())
    assert run["served"] == {f"openai:http://localhost:{server.port}/v1#tiny": "tiny"}


@pytest.mark.slow
@pytest.mark.parametrize("asked", ["", "#other", "#tiny"])
def test_a_server_serving_another_model_is_refused_naming_the_seat_and_both(
    tiny_servers, tmp_path, asked
):
    tiny, other = tiny_servers["tiny"], tiny_servers["other"]
    out = tmp_path / "run"
    _eval(f"openai:http://127.0.0.1:{tiny.port}/v1#tiny", out)
    (out / "results.json").unlink()
    spec = f"openai:http://localhost:{other.port}/v1{asked}"
    with pytest.raises(EvalError) as refused:
        _eval(spec, out)
    message = str(refused.value)
    assert "\n" not in message
    assert "team differ: seat 0:" in message
    assert f"model 'tiny' (openai:http://127.0.0.1:{tiny.port}/v1#tiny) then" in message
    if asked == "#tiny":  # the server does not serve the model asked for: it says what it does
        assert f"{spec} (its server serves 'other', not 'tiny') now" in message
    else:
        assert f"model 'other' ({spec}) now" in message
    assert "new --out folder" in message
