"""``reward_impl`` on the MAGRPO writing environments: v0 keeps the paper's implementation,
v1 defaults to the authors', the choice is in ``infos`` and in every episode record."""

from __future__ import annotations

import pytest

import llm_marl_envs
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.registry import agent_names
from llm_marl_envs.rewards.writing import writing_components
from llm_marl_envs.rollout import rollout

CASES = [
    ("llm_marl_envs/TLDRSummarization-v0", "tldr", "paper"),
    ("llm_marl_envs/TLDRSummarization-v1", "tldr", "authors"),
    ("llm_marl_envs/ArxivExpansion-v0", "arxiv", "paper"),
    ("llm_marl_envs/ArxivExpansion-v1", "arxiv", "authors-2025"),
]


def _play(env, texts):
    env.reset(seed=5)
    for agent in env.agents:
        env.step(texts[agent])
    return env


@pytest.mark.parametrize(("env_id", "task", "default"), CASES)
@pytest.mark.parametrize("choice", [None, "paper", "authors", "authors-2025"])
def test_reward_is_the_chosen_implementation(env_id, task, default, choice):
    kwargs = {"data_source": "bundled"} | ({} if choice is None else {"reward_impl": choice})
    env = llm_marl_envs.make(env_id, **kwargs)
    first, second = env.possible_agents
    c1 = "The landlord kept the deposit, also the rent went up, so I am asking what to do now."
    c2 = (c1 + " ") * 2 + "However, the lease says otherwise; therefore a letter may help here."
    _play(env, {first: c1, second: c2})
    impl = choice or default
    assert env.reward_impl == impl
    want = writing_components(c1, c2, task, impl)
    for agent in env.possible_agents:
        info = env.infos[agent]
        assert info["reward_impl"] == impl
        assert info["reward_components"]["total"] == want["total"]
        assert env.rewards[agent] == want["total"]


def test_v0_and_v1_differ_on_a_pair_where_the_implementations_do():
    c1 = "the cat and the dog were here at home today as usual"
    c2 = "the cat and the dog were also here at home today with them and then some more of it all"
    totals = {}
    for env_id in ("llm_marl_envs/TLDRSummarization-v0", "llm_marl_envs/TLDRSummarization-v1"):
        env = _play(
            llm_marl_envs.make(env_id, data_source="bundled"),
            {"summarizer_0": c1, "elaborator_0": c2},
        )
        totals[env_id] = env.rewards["summarizer_0"]
    assert (
        totals["llm_marl_envs/TLDRSummarization-v0"] != totals["llm_marl_envs/TLDRSummarization-v1"]
    )


def test_bad_reward_impl_is_refused_at_make():
    with pytest.raises(ValueError, match="reward_impl must be one of"):
        llm_marl_envs.make("llm_marl_envs/ArxivExpansion-v1", reward_impl="theirs")


@pytest.mark.parametrize(("env_id", "task", "default"), CASES)
def test_episode_records_carry_the_implementation(env_id, task, default):
    policies = {a: scripted_policy(env_id, a, 0) for a in agent_names(env_id)}
    result = rollout(
        env_id, policies, episodes=2, env_kwargs={"data_source": "bundled"}, progress=False
    )
    for record in result.episodes:
        assert record.reward_impl == default
        assert record.to_dict()["reward_impl"] == default
        assert all(info["reward_impl"] == default for info in record.final_infos.values())
