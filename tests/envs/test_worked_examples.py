"""MazeCollab-v1 and DonorGame-v1: a worked example exchange before the game (so a small model
sees the reply format once); the rules and rewards are v0's."""

from __future__ import annotations

import pytest

import llm_marl_envs
from llm_marl_envs.envs.maze_collab import EXAMPLE_REPLY
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.registry import agent_names

PAIRS = [
    ("llm_marl_envs/MazeCollab-v0", "llm_marl_envs/MazeCollab-v1", {"size": 5}),
    ("llm_marl_envs/DonorGame-v0", "llm_marl_envs/DonorGame-v1", {"num_agents": 4}),
]


@pytest.mark.parametrize(("old", "new", "kwargs"), PAIRS)
def test_v1_shows_one_example_exchange_first(old, new, kwargs):
    before, after = llm_marl_envs.make(old, **kwargs), llm_marl_envs.make(new, **kwargs)
    before.reset(seed=3)
    after.reset(seed=3)
    agent = after.agent_selection
    plain, shown = before.infos[agent]["messages"], after.infos[agent]["messages"]
    assert [m["role"] for m in plain] == ["system", "user"]
    assert [m["role"] for m in shown] == ["system", "user", "assistant", "user"]
    assert shown[0] == plain[0] and shown[-1] == plain[-1]  # the real turn is unchanged
    assert "an example, not your game" in shown[1]["content"]
    assert shown[2]["content"] in (EXAMPLE_REPLY, "Answer: 4")
    assert "Example:" in after.observe(agent) and "Example:" not in before.observe(agent)


@pytest.mark.parametrize(("old", "new", "kwargs"), PAIRS)
def test_v1_plays_and_scores_like_v0(old, new, kwargs):
    returns = []
    for env_id in (old, new):
        env = llm_marl_envs.make(env_id, **kwargs)
        players = {a: scripted_policy(env_id, a, 0) for a in agent_names(env_id)}
        env.reset(seed=5)
        total = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, info = env.last()
            total[agent] += reward
            env.step(None if terminated or truncated else players[agent](observation, info))
        returns.append(total)
    assert returns[0] == returns[1]


def test_worked_example_can_be_switched_either_way():
    env = llm_marl_envs.make("llm_marl_envs/DonorGame-v0", num_agents=2, worked_example=True)
    env.reset(seed=0)
    assert len(env.infos[env.agent_selection]["messages"]) == 4
    env = llm_marl_envs.make("llm_marl_envs/MazeCollab-v1", size=5, worked_example=False)
    env.reset(seed=0)
    assert len(env.infos[env.agent_selection]["messages"]) == 2
