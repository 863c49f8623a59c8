"""Bad input never crashes an environment (issue: 'Bad input gets a clear outcome').

Strings of any kind get a defined outcome (a format failure with reward 0 where nothing can
be scored); non-``str`` actions raise ``TypeError`` naming the agent and leave the state as
it was. Parametrised over every registered environment.
"""

from __future__ import annotations

import copy
import inspect
import math

import pytest

import llm_marl_envs

ENV_IDS = llm_marl_envs.list_envs()

FAILING_STRINGS = {
    "empty": "",
    "whitespace": " \n\t  ",
    "control_only": "\x00\x01\x02\x1b\x7f",
    # over every env's cap, CoopCoding-v3's 1 MiB of scored text (SCORED_TEXT_CAP) included
    "one_megabyte": "7" * ((1 << 20) + 1),
}
OTHER_STRINGS = {
    "junk": "qwe$#@!zz}{",
    "unicode": "答案是 ½ — 😀 naïve café ﷽ \u200b\u202e",
    "lone_surrogate": "ok \ud800 then",
    "control_mixed": "the answer\x00 is\x07 good\x1b[31m",
}


# What a format failure pays where it is not 0: in the maze an unreadable move is a stay
# with the step and invalid-move penalties, (-0.1 - 0.5) / 20 with the default scale.
FORMAT_FAILURE_REWARD = {
    "llm_marl_envs/MazeCollab-v0": (-0.1 - 0.5) / 20,
    "llm_marl_envs/MazeCollab-v1": (-0.1 - 0.5) / 20,
}


def _first_turn(env_id):
    env = llm_marl_envs.make(env_id)
    env.reset(seed=0)
    return env, env.agent_selection


def _act_and_score(env, agent, action):
    """Step ``agent`` with ``action``, then the other agents of its round with valid text
    (simultaneous games score a round when everyone has acted); return ``agent``'s info."""
    env.step(action)
    while not env.infos[agent]["reward_components"]:
        env.step("A perfectly ordinary answer: 12.")
    return env.infos[agent]


def _snapshot(env):
    return (
        env.agent_selection,
        str(env.observe(env.agent_selection)),
        copy.deepcopy(env.infos),
        dict(env.rewards),
        dict(env._cumulative_rewards),
        dict(env.terminations),
        dict(env.truncations),
        len(env.transcript),
        env.num_moves,
    )


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("name", sorted(FAILING_STRINGS))
def test_unscorable_strings_are_format_failures(env_id, name):
    env, agent = _first_turn(env_id)
    info = _act_and_score(env, agent, FAILING_STRINGS[name])
    components = info["reward_components"]
    assert components["format_failure"] == 1.0
    assert components["task_reward"] == pytest.approx(FORMAT_FAILURE_REWARD.get(env_id, 0.0))
    expected = "too_long" if name == "one_megabyte" else "empty"
    assert info["format_error"] == expected
    _finish_episode(env)  # the episode goes on normally afterwards


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("name", sorted(OTHER_STRINGS))
def test_odd_strings_get_a_defined_outcome(env_id, name):
    env, agent = _first_turn(env_id)
    components = _act_and_score(env, agent, OTHER_STRINGS[name])["reward_components"]
    assert components and all(
        isinstance(v, float) and math.isfinite(v) for v in components.values()
    )
    recorded = next(t.action for t in env.transcript if t.agent == agent)
    assert len(recorded.encode("utf-8")) >= len(
        recorded
    )  # cleaned text is always encodable (no lone surrogates)
    assert "\x00" not in recorded and "\x07" not in recorded
    str(env.observe(env.agent_selection)).encode("utf-8")  # raises on a lone surrogate
    _finish_episode(env)
    env.render_mode = "ansi"
    assert isinstance(env.render(), str)


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("action", [42, 3.5, b"bytes", ["a", "list"], {"a": "dict"}, None])
def test_non_string_actions_raise_and_change_nothing(env_id, action):
    env, agent = _first_turn(env_id)
    before = _snapshot(env)
    with pytest.raises(TypeError, match=agent) as error:
        env.step(action)
    assert "str" in str(error.value)
    assert _snapshot(env) == before
    _finish_episode(env)  # and the env is still usable


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_dead_agents_take_only_none(env_id):
    env, _ = _first_turn(env_id)
    for _agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            with pytest.raises(ValueError, match="None"):
                env.step("too late")
            env.step(None)
        else:
            env.step("1")
    assert env.agents == []


def _finish_episode(env):
    for _agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else "fine, 12")
    assert env.agents == []


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_bad_constructor_arguments_are_clear(env_id):
    with pytest.raises(ValueError, match="render_mode"):
        llm_marl_envs.make(env_id, render_mode="rgb")
    entry = llm_marl_envs.spec(env_id).entry_point.split(":")
    env_class = getattr(__import__(entry[0], fromlist=[entry[1]]), entry[1])
    if "reward_mode" in inspect.signature(env_class).parameters:
        with pytest.raises(ValueError, match="reward_mode"):
            llm_marl_envs.make(env_id, reward_mode="selfish")
    with pytest.raises(TypeError):
        llm_marl_envs.make(env_id, no_such_argument=1)
    with pytest.raises(Exception, match="data_source"):
        llm_marl_envs.make(env_id, data_source="/no/such/file.jsonl")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_without_an_episode_is_a_clear_error(env_id):
    env = llm_marl_envs.make(env_id, render_mode="ansi")
    assert isinstance(env.render(), str)  # rendering before reset is harmless
    with pytest.raises(RuntimeError, match="reset"):
        env.step("hello")
    env.reset(seed=0)
    _finish_episode(env)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("one more")
    env.reset()
    _finish_episode(env)
