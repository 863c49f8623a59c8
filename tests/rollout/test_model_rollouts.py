"""Rollouts with real models: the tiny GPT-2 (fast), an HTTP server serving it, SmolLM2 (slow)."""

from __future__ import annotations

import threading
import time

import pytest

from llm_marl_envs.cli import main
from llm_marl_envs.policies import GenerationConfig, Policy
from llm_marl_envs.policies.hf import HFPolicy
from llm_marl_envs.policies.openai import OpenAIPolicy, ServerOptions
from llm_marl_envs.policies.server import serve_policy
from llm_marl_envs.rollout import RolloutError, read_jsonl, rollout

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # model rollouts, over a second each

SMALL = {  # short episodes: every env, a few turns
    "llm_marl_envs/GSM8K-v0": {"data_source": "bundled"},
    "llm_marl_envs/TLDRSummarization-v0": {"data_source": "bundled"},
    "llm_marl_envs/CoopCoding-v0": {},
    "llm_marl_envs/MazeCollab-v0": {"size": 5, "max_cycles": 3},
    "llm_marl_envs/DonorGame-v0": {"num_agents": 4, "num_rounds": 2},
}


@pytest.fixture(scope="module")
def tiny():
    return HFPolicy.from_spec("tiny", max_new_tokens=12)


def _records(result):
    """Episode records with token ids; log-probabilities apart (padding moves them by ~1e-6)."""
    records = [e.to_dict(include_tokens=True) for e in result.episodes]
    logprobs = [t.pop("logprobs") for r in records for t in r["turns"]]
    return records, [x for turn in logprobs for x in (turn or [])]


@pytest.mark.parametrize("env_id", sorted(SMALL))
def test_batched_and_sequential_rollouts_are_identical(tiny, env_id):
    kwargs = SMALL[env_id]
    episodes = 3 if "Coop" in env_id else 6
    args = {"episodes": episodes, "seed": 5, "env_kwargs": kwargs, "progress": False}
    batched = rollout(env_id, tiny, batch_size=episodes, **args)
    sequential = rollout(env_id, tiny, batch_size=1, **args)
    (records_b, logprobs_b), (records_s, logprobs_s) = _records(batched), _records(sequential)
    assert records_b == records_s  # same prompts, actions (token for token), rewards
    assert logprobs_b == pytest.approx(logprobs_s, abs=2e-3)  # float32 with large logits
    turn = batched.episodes[0].turns[0]
    assert turn.completion_ids and turn.prompt_ids
    assert len(turn.logprobs) == len(turn.completion_ids)
    # batching is real: far fewer model calls than turns
    assert sum(batched.policy_calls.values()) < batched.turns


def test_groups_replay_the_task_and_sampling_varies_within_a_group():
    sampler = HFPolicy.from_spec(
        "tiny", max_new_tokens=12, generation=GenerationConfig(do_sample=True, seed=3)
    )
    result = rollout(
        "llm_marl_envs/GSM8K-v0",
        sampler,
        episodes=8,
        batch_size=8,
        group_size=4,
        seed=0,
        env_kwargs={"data_source": "bundled"},
        progress=False,
    )
    for group in (0, 1):
        members = [e for e in result.episodes if e.group == group]
        assert len({e.turns[0].observation for e in members}) == 1  # same task
        assert len({e.turns[0].action for e in members}) > 1  # different samples


def test_jsonl_keeps_token_ids_and_logprobs(tiny, tmp_path):
    out = tmp_path / "tokens.jsonl"
    result = rollout(
        "llm_marl_envs/MazeCollab-v0",
        tiny,
        episodes=2,
        batch_size=2,
        out=out,
        include_tokens=True,
        env_kwargs=SMALL["llm_marl_envs/MazeCollab-v0"],
        progress=False,
    )
    loaded = sorted(read_jsonl(out), key=lambda e: e.episode)
    assert [e.to_dict(include_tokens=True) for e in loaded] == [
        e.to_dict(include_tokens=True) for e in result.episodes
    ]
    assert loaded[0].turns[0].logprobs == pytest.approx(result.episodes[0].turns[0].logprobs)


# ---------------------------------------------------------------------- over HTTP
class _Breaks(Policy):
    """Serves the tiny model, then breaks after ``calls`` batches: an error or a hang."""

    def __init__(self, inner, calls, hang=False):
        self.inner, self.calls, self.hang, self.name = inner, calls, hang, "breaks"
        self.release = threading.Event()

    def generate(self, prompts):
        self.calls -= 1
        if self.calls < 0:
            if self.hang:
                self.release.wait(5)  # longer than the client's timeout
            else:
                raise RuntimeError("the model server fell over")
        return self.inner.generate(prompts)


def test_http_policy_against_a_local_server_matches_the_model(tiny):
    env_id, kwargs = "llm_marl_envs/MazeCollab-v0", SMALL["llm_marl_envs/MazeCollab-v0"]
    direct = rollout(env_id, tiny, episodes=4, batch_size=4, env_kwargs=kwargs, progress=False)
    with serve_policy(tiny, batch_wait=0.02) as server:
        client = OpenAIPolicy(
            server.url, options=ServerOptions(timeout=10, max_retries=0, concurrency=4)
        )
        try:
            remote = rollout(
                env_id, client, episodes=4, batch_size=4, env_kwargs=kwargs, progress=False
            )
        finally:
            client.close()
    assert [[t.action for t in e.turns] for e in remote.episodes] == [
        [t.action for t in e.turns] for e in direct.episodes
    ]
    assert [e.returns for e in remote.episodes] == [e.returns for e in direct.episodes]


@pytest.mark.parametrize("hang", [False, True], ids=["server-error", "server-timeout"])
def test_a_failing_server_stops_the_rollout_and_keeps_finished_episodes(tiny, tmp_path, hang):
    out = tmp_path / "partial.jsonl"
    served = _Breaks(tiny, calls=6, hang=hang)
    with serve_policy(served, batch_wait=0.0) as server:
        client = OpenAIPolicy(
            server.url,
            options=ServerOptions(timeout=0.5, max_retries=1, backoff=0.05, concurrency=1),
        )
        started = time.perf_counter()
        try:
            with pytest.raises(RolloutError) as caught:
                rollout(
                    "llm_marl_envs/GSM8K-v0",
                    client,
                    episodes=10,
                    batch_size=1,
                    out=out,
                    env_kwargs={"data_source": "bundled"},
                    progress=False,
                )
        finally:
            served.release.set()
            client.close()
    message = str(caught.value)
    assert ("timed out" in message) if hang else ("500" in message)
    kept = caught.value.result.episodes
    assert len(kept) == 3  # 6 good calls = 3 two-turn episodes, all saved
    assert sorted(e.episode for e in read_jsonl(out)) == [0, 1, 2]
    assert time.perf_counter() - started < 30


def test_demo_runs_every_env_with_the_tiny_model(capsys):
    assert main(["demo", "--policy", "tiny", "--episodes", "1", "--max-new-tokens", "8"]) == 0
    out = capsys.readouterr().out
    assert "Summary: tiny policy" in out and "MazeCollab-v1" in out and "DonorGame-v1" in out


def test_the_embedded_model_plays_an_episode():
    policy = HFPolicy.from_spec("default", max_new_tokens=24)
    result = rollout(
        "llm_marl_envs/GSM8K-v0",
        policy,
        episodes=1,
        batch_size=1,
        env_kwargs={"data_source": "procedural", "difficulty": 1},
        progress=False,
    )
    episode = result.episodes[0]
    assert [t.agent for t in episode.turns] == ["pioneer_0", "observer_0"]
    assert all(t.action.strip() for t in episode.turns)  # SmolLM2 writes real text
    assert episode.turns[0].completion_ids and set(episode.returns) == {"pioneer_0", "observer_0"}
