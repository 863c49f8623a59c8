"""Every registered environment as a ``gem.multiagent.MultiAgentEnv``, held to GEM's own checks.

GEM (gem-llm 0.1.0) ships no environment checker; its multi-agent contract is what its own
test suite asserts of a ``MultiAgentEnv`` (``tests/test_multiagent/test_multiagent.py`` at
v0.1.0): ``step`` takes a dict and refuses anything else, a missing action and an action of
an agent that is not active (``ValueError``); ``get_state`` refuses an unknown agent;
``get_active_states`` holds exactly the active agents (one in sequential mode, all in
parallel mode); ``observe`` gives a string; ``get_state``'s return is the sum of the step
rewards; finished agents leave ``agents``. :func:`check_gem_episode` asserts each of those on
every step of a whole episode played with the scripted players, whose rewards must equal the
same episode played with PettingZoo's API.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

# Our adapter imports GEM first: a plain `import gem` would configure the root logger of the
# whole test session (GEM's __init__ calls logging.basicConfig), which the adapter undoes.
pytest.importorskip("llm_marl_envs.integrations.gem")

import gem

import llm_marl_envs
from llm_marl_envs.integrations.gem import GEMMultiAgentEnv, register_envs
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.rollout.play import play_episode
from small_envs import SMALL, short

ENV_IDS = llm_marl_envs.list_envs()
PARALLEL_IDS = [e for e in ENV_IDS if llm_marl_envs.spec(e).parallel_entry_point is not None]


def players(env: GEMMultiAgentEnv, seed: int) -> dict:
    return {agent: scripted_policy(env.env_id, agent, seed) for agent in env.possible_agents}


def check_gem_episode(env: GEMMultiAgentEnv, seed: int) -> dict[str, float]:
    """Play one episode through GEM's API, checking GEM's contract at every step."""
    policy = players(env, seed)
    observations, infos = env.reset(seed=seed)
    assert env.agents == env.possible_agents
    assert set(observations) == set(infos) == set(env.agents)
    assert all(isinstance(env.observe(agent), str) for agent in env.agents)
    with pytest.raises(ValueError):
        env.get_state("no_such_agent")
    totals = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    while env.agents:
        active = env.agent_selector.get_active_agents()
        states = env.get_active_states()
        assert list(states) == active
        if env.parallel:
            assert active == env.agents and env.current_agent is None
        else:
            assert active == [env.current_agent] and env.current_agent in env.agents
        if steps == 0:  # refusals leave the episode as it was
            with pytest.raises(ValueError):
                env.step("not a dict")
            with pytest.raises(ValueError):
                env.step({})  # the active agents' actions are missing
            idle = [a for a in env.possible_agents if a not in active]
            if idle:
                with pytest.raises(ValueError):
                    env.step({**{a: "x" for a in active}, idle[0]: "x"})
        actions = {}
        for agent, (observation, cumulative, terminated, truncated, info) in states.items():
            assert isinstance(observation, str) and not (terminated or truncated)
            assert cumulative == pytest.approx(totals[agent])
            actions[agent] = policy[agent](observation, info)
        live = list(env.agents)
        observations, rewards, terminations, truncations, infos = env.step(actions)
        steps += 1
        assert set(rewards) == set(terminations) == set(truncations) == set(observations)
        assert set(active) <= set(rewards) <= set(live)
        for agent, reward in rewards.items():
            totals[agent] += reward
            if terminations[agent] or truncations[agent]:
                assert agent not in env.agents  # finished agents leave
            else:
                assert env.get_state(agent)[1] == pytest.approx(totals[agent])
    assert env.agent_selector.get_active_agents() == [] and env.get_active_states() == {}
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})
    return totals


@pytest.mark.parametrize("env_id", ENV_IDS, ids=short)
def test_every_env_passes_gems_checks_turn_by_turn(env_id):
    kwargs = SMALL.get(env_id, {})
    env = GEMMultiAgentEnv(env_id, **kwargs)
    totals = check_gem_episode(env, seed=0)
    local = llm_marl_envs.make(env_id, **kwargs)
    expected = play_episode(local, players(env, 0), seed=0)
    assert totals == pytest.approx(expected)
    env.close()


@pytest.mark.parametrize("env_id", PARALLEL_IDS, ids=short)
def test_simultaneous_envs_pass_gems_checks_in_parallel_mode(env_id):
    kwargs = SMALL.get(env_id, {})
    env = GEMMultiAgentEnv(env_id, parallel=True, **kwargs)
    totals = check_gem_episode(env, seed=1)
    sequential = GEMMultiAgentEnv(env_id, **kwargs)
    assert totals == pytest.approx(check_gem_episode(sequential, seed=1))  # same game either way
    env.close()


def test_turns_follow_the_environment_not_round_robin():
    env = GEMMultiAgentEnv("llm_marl_envs/MazeCollab-v0", size=5)
    first_movers = set()
    for seed in range(8):
        env.reset(seed=seed)
        first_movers.add(env.current_agent)
        assert env.current_agent == env.env.agent_selection
    assert first_movers == {"gnome_0", "gnome_1"}  # seeded first mover, not always agents[0]


def test_turn_based_envs_have_no_parallel_mode_and_agents_are_fixed():
    with pytest.raises(ValueError, match="turn-based"):
        GEMMultiAgentEnv("llm_marl_envs/GSM8K-v0", parallel=True)
    env = GEMMultiAgentEnv("llm_marl_envs/GSM8K-v0", data_source="bundled")
    env.reset(seed=0)
    with pytest.raises(NotImplementedError, match="fixed set of agents"):
        env.add_agent("pioneer_1")


def test_seed_and_options_reach_the_environment():
    env = GEMMultiAgentEnv("llm_marl_envs/GSM8K-v0", seed=4, data_source="bundled")
    observations, infos = env.reset()  # the constructor's seed, as gem.make_vec passes it
    assert env.env.np_random_seed == 4
    again = GEMMultiAgentEnv("llm_marl_envs/GSM8K-v0", data_source="bundled")
    assert again.reset(seed=4) == (observations, infos)
    _, infos = env.reset(seed=0, options={"row_index": 1})
    local = llm_marl_envs.make("llm_marl_envs/GSM8K-v0", data_source="bundled")
    local.reset(seed=0, options={"row_index": 1})
    assert infos["pioneer_0"]["row_id"] == local.infos["pioneer_0"]["row_id"]


def test_gem_make_builds_registered_envs():
    ids = register_envs()
    assert register_envs() == ids == ENV_IDS  # twice is harmless
    env = gem.make("llm_marl_envs/MazeCollab-v0", size=5)
    assert isinstance(env, GEMMultiAgentEnv) and isinstance(env, gem.Env)
    assert env.env_id == "llm_marl_envs/MazeCollab-v0" and env.env.size == 5
    check_gem_episode(env, seed=2)


@pytest.mark.slow
def test_importing_the_adapter_leaves_the_root_logger_alone():
    code = (
        "import logging, llm_marl_envs.integrations.gem; "
        "root = logging.getLogger(); "
        "assert not root.handlers and root.level == logging.WARNING, (root.handlers, root.level)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
