"""Defects found by using the environments from other RL stacks (issue 16), one test each.

1. Info dicts handed out by ``last()`` / Parallel ``reset`` and ``step`` are never changed
   afterwards (a replay buffer keeps what the agent saw).
2. Scripted players are functions of what they see: replaying a seed replays the episode,
   whichever episodes the same player object played before.
4. ``FreeText`` works in Gymnasium's vector utilities and SuperSuit's vector envs, for any
   Unicode text, with shared memory.

(Defect 3, TRL-shaped rewards, is tested in tests/rewards and tests/integrations.)
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gymnasium.vector.utils import (
    batch_space,
    create_shared_memory,
    iterate,
    read_from_shared_memory,
    write_to_shared_memory,
)

import llm_marl_envs
from llm_marl_envs.core.spaces import FreeText
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.rollout.play import play_episode

ENV_IDS = llm_marl_envs.list_envs()
PARALLEL_IDS = [e for e in ENV_IDS if llm_marl_envs.spec(e).parallel_entry_point is not None]


# --------------------------------------------------------------------------- 1. infos
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_infos_from_last_are_never_changed_afterwards(env_id):
    env = llm_marl_envs.make(env_id)
    env.reset(seed=0)
    policies = {a: scripted_policy(env_id, a, 0) for a in env.possible_agents}
    kept = []
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        kept.append((info, copy.deepcopy(info)))
        env.step(None if terminated or truncated else policies[agent](observation, info))
    assert len(kept) >= 2
    changed = [i for i, (info, snapshot) in enumerate(kept) if info != snapshot]
    assert changed == [], f"infos changed after they were handed out: turns {changed}"


@pytest.mark.parametrize("env_id", PARALLEL_IDS)
def test_parallel_infos_are_never_changed_afterwards(env_id):
    env = llm_marl_envs.make_parallel(env_id, **({"num_turns": 2} if "Coding" in env_id else {}))
    observations, infos = env.reset(seed=0)
    kept = [(infos, copy.deepcopy(infos))]
    while env.agents:
        actions = {a: scripted_policy(env_id, a, 0)(observations[a], infos[a]) for a in env.agents}
        observations, rewards, terms, truncs, infos = env.step(actions)
        kept.append((infos, copy.deepcopy(infos)))
    assert all(infos == snapshot for infos, snapshot in kept)


# --------------------------------------------------------------------------- 2. scripted players
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_replaying_a_seed_replays_the_episode_with_the_same_scripted_players(env_id):
    env = llm_marl_envs.make(env_id, render_mode="ansi")
    players = {a: scripted_policy(env_id, a, seed=5) for a in env.possible_agents}
    first = play_episode(env, players, seed=11)
    transcript = env.render()
    for seed in (12, 13):  # the same player objects play other episodes in between
        play_episode(env, players, seed=seed)
    again = play_episode(env, players, seed=11)
    assert again == first and env.render() == transcript


def test_the_random_maze_pair_is_a_function_of_what_it_sees():
    from llm_marl_envs.policies.scripted.maze import random_pair

    env = llm_marl_envs.make("llm_marl_envs/MazeCollab-v0", render_mode="ansi")
    pair = random_pair(seed=3)
    play_episode(env, pair, seed=1)
    transcript = env.render()
    play_episode(env, pair, seed=2)
    play_episode(env, pair, seed=1)
    assert env.render() == transcript


# --------------------------------------------------------------------------- 4. vector support
TEXTS = ["", "plain", "日本語 ok! 😀", "a\ud800b", "\x00\n\t" + "z" * 29]


def test_free_text_shared_memory_holds_any_unicode():
    space = FreeText(32)
    memory = create_shared_memory(space, n=len(TEXTS))
    for index, text in enumerate(TEXTS):
        write_to_shared_memory(space, index, text, memory)
    assert read_from_shared_memory(space, memory, n=len(TEXTS)) == tuple(TEXTS)
    with pytest.raises(ValueError, match="do not fit"):
        write_to_shared_memory(space, 0, "x" * 33, memory)


def test_free_text_iterates_as_a_single_space_and_as_a_batch():
    space = FreeText(8)
    assert list(iterate(space, ["a", "b"])) == ["a", "b"]  # how SuperSuit calls it
    assert list(iterate(batch_space(space, 3), ("x", "y", "z"))) == ["x", "y", "z"]


def test_supersuit_vector_envs_step_the_parallel_envs():
    supersuit = pytest.importorskip("supersuit")
    env = llm_marl_envs.make_parallel("llm_marl_envs/TLDRSummarization-v0", data_source="bundled")
    vec = supersuit.concat_vec_envs_v1(
        supersuit.pettingzoo_env_to_vec_env_v1(env), 2, num_cpus=0, base_class="gymnasium"
    )
    observations, infos = vec.reset(seed=0)
    assert vec.num_envs == 4 and len(observations) == 4 and all(observations)
    observations, rewards, terminations, truncations, infos = vec.step(["a summary 😀"] * 4)
    assert np.asarray(rewards).shape == (4,) and all(terminations)
