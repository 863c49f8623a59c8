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

    ``max_cycles_test`` needs a Parallel form and an episode of at least 4 cycles. For the
    others (one-shot games such as CORY's pioneer -> observer chain, turn-based games such as
    the maze, the Donor game whose round is half the agents) we check the contract on AEC with
    ``env.num_cycles``: ``max_cycles=k`` ends a longer episode after exactly k cycles by
    truncation, a natural end is a termination (never a truncation), and a non-positive
    ``max_cycles`` is refused.
    """
    natural_cycles, natural_end = _play_random(llm_marl_envs.make(env_id))
    if _has_parallel(env_id) and natural_cycles >= 4:
        module = SimpleNamespace(
            env=lambda **kw: llm_marl_envs.make(env_id, **kw),
            parallel_env=lambda **kw: llm_marl_envs.make_parallel(env_id, **kw),
        )
        with _OnlyExpectedWarnings():
            max_cycles_test(module)
        return
    open_ended = natural_end == "truncation"  # the default max_cycles is the horizon (maze)
    for max_cycles in (1, 4, 1000):
        cycles, end = _play_random(llm_marl_envs.make(env_id, max_cycles=max_cycles))
        if open_ended or max_cycles < natural_cycles:
            assert (cycles, end) == (max_cycles, "truncation")
        else:
            assert (cycles, end) == (natural_cycles, "termination")
    with pytest.raises(ValueError, match="max_cycles"):
        llm_marl_envs.make(env_id, max_cycles=0)


def _play_random(env) -> tuple[int, str]:
    """Play one episode with random actions; return the cycles played and how it ended."""
    env.reset(seed=0)
    ends = set()
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            ends.add("truncation" if truncated else "termination")
            env.step(None)
            continue
        env.step(env.action_space(agent).sample())
    assert len(ends) == 1, f"agents ended differently: {ends}"
    return env.num_cycles, ends.pop()
