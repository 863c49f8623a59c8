"""TLDRSummarization-v0 and ArxivExpansion-v0: joint reward, simultaneity, AEC == Parallel."""

from __future__ import annotations

import json

import pytest

import llm_marl_envs
from llm_marl_envs.rewards.writing import ARXIV, TLDR, writing_reward
from llm_marl_envs.policies.scripted import scripted_policy

WRITING = {
    "llm_marl_envs/TLDRSummarization-v0": TLDR,
    "llm_marl_envs/ArxivExpansion-v0": ARXIV,
}


def _play_aec(env_id, seed, texts=None):
    env = llm_marl_envs.make(env_id, data_source="bundled")
    env.reset(seed=seed)
    policies = {a: scripted_policy(env_id, a) for a in env.possible_agents}
    actions, returns, infos = {}, {}, {}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        if term or trunc:
            returns[agent], infos[agent] = reward, info
            env.step(None)
            continue
        actions[agent] = texts[agent] if texts else policies[agent](str(obs), info)
        env.step(actions[agent])
    return actions, returns, infos


@pytest.mark.parametrize("env_id", WRITING)
def test_joint_reward_is_shared_and_matches_the_reward_function(env_id):
    actions, returns, infos = _play_aec(env_id, seed=3)
    first, second = llm_marl_envs.make(env_id, data_source="bundled").possible_agents
    expected = writing_reward(actions[first], actions[second], WRITING[env_id])
    assert returns[first] == returns[second] == pytest.approx(expected["total"])
    for agent in (first, second):
        components = infos[agent]["reward_components"]
        for key in ("structure", "length_ratio", "vocabulary", "coherence", "consistency", "total"):
            assert components[key] == pytest.approx(expected[key])
        assert components["task_reward"] == components["total"]
    assert expected["total"] > 0.5  # the scripted writers pass at least the structure level


@pytest.mark.parametrize("env_id", WRITING)
def test_aec_and_parallel_forms_agree(env_id):
    actions, returns, infos = _play_aec(env_id, seed=8)
    par = llm_marl_envs.make_parallel(env_id, data_source="bundled")
    observations, par_infos = par.reset(seed=8)
    assert set(observations) == set(actions)
    obs, rewards, terms, truncs, step_infos = par.step(actions)
    assert rewards == returns
    assert all(terms.values()) and not any(truncs.values())
    assert {a: i["reward_components"] for a, i in step_infos.items()} == {
        a: i["reward_components"] for a, i in infos.items()
    }
    assert par.agents == []
    assert "[" in par.state()  # the transcript


@pytest.mark.parametrize("env_id", WRITING)
def test_agents_do_not_see_each_other(env_id):
    env = llm_marl_envs.make(env_id, data_source="bundled")
    env.reset(seed=0)
    first, second = env.possible_agents
    prompt_before = str(env.observe(second))
    env.step("A SECRET SENTENCE that the other agent must not see.")
    assert env.agent_selection == second
    assert str(env.observe(second)) == prompt_before
    assert "SECRET" not in str(env.observe(second))


@pytest.mark.parametrize("env_id", WRITING)
def test_format_failure_zeroes_the_joint_reward(env_id):
    env = llm_marl_envs.make(env_id, data_source="bundled")
    first, second = env.possible_agents
    long_text = " ".join(f"word{i}" for i in range(200))
    _, returns, infos = _play_aec(env_id, seed=1, texts={first: "   ", second: long_text})
    assert returns == {first: 0.0, second: 0.0}
    assert infos[first]["reward_components"]["format_failure"] == 1.0
    assert infos[second]["reward_components"]["format_failure"] == 0.0
    assert infos[first]["format_error"] == "empty"


@pytest.mark.parametrize("env_id", WRITING)
def test_parallel_rejects_bad_joint_actions_without_changing_state(env_id):
    par = llm_marl_envs.make_parallel(env_id, data_source="bundled")
    par.reset(seed=0)
    first, second = par.possible_agents
    with pytest.raises(TypeError, match=second):
        par.step({first: "fine text", second: 7})
    with pytest.raises(ValueError, match="missing"):
        par.step({first: "only one"})
    with pytest.raises(ValueError, match="not live"):
        par.step({first: "a", second: "b", "intruder_0": "c"})
    assert par.aec_env.num_moves == 0 and par.aec_env.transcript == []
    _, rewards, terms, _, _ = par.step({first: "fine text", second: "also fine"})
    assert all(terms.values())
    with pytest.raises(RuntimeError, match="reset"):
        par.step({first: "a", second: "b"})


def test_tldr_local_file_and_sliced_split(tmp_path):
    rows = [
        {
            "prompt": f"SUBREDDIT: r/test\n\nTITLE: title {i}\n\nPOST: post number {i} text\n\nTL;DR:",
            "completion": " sum",
        }
        for i in range(10)
    ]
    path = tmp_path / "tldr.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    env = llm_marl_envs.make(
        "llm_marl_envs/TLDRSummarization-v0", data_source=path, split="train[2:5]"
    )
    assert len(env.data) == 3 and env.data.row_ids == (2, 3, 4)
    env.reset(seed=0, options={"row_index": 1})
    assert env.row_id == 3 and env.source_text.endswith("POST: post number 3 text")
    assert "TL;DR:" not in env.source_text
