"""PettingZoo's own checks, run unchanged on every registered environment.

One test per (environment, check). Warnings that PettingZoo raises for every text
environment (it expects numeric Box/Discrete spaces and numpy observations) are allowed
explicitly; any other warning fails the test.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, render_test, seed_test
from pettingzoo.test.seed_test import parallel_seed_test

import llm_marl_envs

ENV_IDS = llm_marl_envs.list_envs()

EXPECTED_WARNINGS = (
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
    "Action space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
)


class _OnlyExpectedWarnings:
    def __enter__(self):
        self._ctx = warnings.catch_warnings(record=True)
        self.caught = self._ctx.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        unexpected = {str(w.message) for w in self.caught} - set(EXPECTED_WARNINGS)
        assert not unexpected, f"unexpected warnings: {sorted(unexpected)}"


def _has_parallel(env_id: str) -> bool:
    return llm_marl_envs.spec(env_id).parallel_entry_point is not None


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_api(env_id):
    with _OnlyExpectedWarnings():
        api_test(llm_marl_envs.make(env_id), num_cycles=100)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pettingzoo_make(env_id):
    import pettingzoo

    with _OnlyExpectedWarnings():
        api_test(pettingzoo.make("aec", env_id), num_cycles=20)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seed(env_id):
    with _OnlyExpectedWarnings():
        seed_test(lambda: llm_marl_envs.make(env_id), num_cycles=100)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render(env_id, capsys):
    with _OnlyExpectedWarnings():
        render_test(lambda render_mode=None: llm_marl_envs.make(env_id, render_mode=render_mode))
    assert f"=== {llm_marl_envs.make(env_id).metadata['name']}" in capsys.readouterr().out


@pytest.mark.parametrize("env_id", [e for e in ENV_IDS if _has_parallel(e)])
def test_parallel_api(env_id):
    with _OnlyExpectedWarnings():
        parallel_api_test(llm_marl_envs.make_parallel(env_id), num_cycles=100)
        parallel_seed_test(lambda: llm_marl_envs.make_parallel(env_id))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_max_cycles(env_id):
    """PettingZoo's max_cycles_test where it applies; the same contract checked on AEC otherwise.

    ``max_cycles_test`` needs a Parallel form and an episode of at least 4 cycles. One-shot
    games (one turn per agent, such as CORY's pioneer -> observer chain) end by termination
    before any cycle limit, so for them we check that: ``max_cycles`` is accepted, a natural
    end is a termination (never a truncation), and a non-positive ``max_cycles`` is refused.
    """
    probe = llm_marl_envs.make(env_id)
    natural_cycles = _cycles_played(probe)
    if _has_parallel(env_id) and natural_cycles >= 4:
        module = SimpleNamespace(
            env=lambda **kw: llm_marl_envs.make(env_id, **kw),
            parallel_env=lambda **kw: llm_marl_envs.make_parallel(env_id, **kw),
        )
        with _OnlyExpectedWarnings():
            max_cycles_test(module)
        return
    for max_cycles in (1, 4, 1000):
        env = llm_marl_envs.make(env_id, max_cycles=max_cycles)
        assert _cycles_played(env) == min(natural_cycles, max_cycles)
    with pytest.raises(ValueError, match="max_cycles"):
        llm_marl_envs.make(env_id, max_cycles=0)


def _cycles_played(env) -> int:
    """Play one episode with random actions; return the largest number of turns of any agent."""
    env.reset(seed=0)
    turns = dict.fromkeys(env.possible_agents, 0)
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        turns[agent] += 1
        env.step(env.action_space(agent).sample())
    return max(turns.values())
