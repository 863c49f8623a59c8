"""Hashes of what every registered id does: its transcripts, rewards and infos, per seed.

Used by ``test_version_transcripts.py`` to prove that reorganising the environments (one
class per environment, versions as registry arguments) changes no id's behaviour. The
expected hashes in ``version_transcripts.json`` were computed on the tree before that change:

    PYTHONPATH=<old tree> python tests/envs/version_transcripts.py > tests/envs/version_transcripts.json

CoopCoding-v1's and -v2's hashes were renewed once since, when their scripted players became
an oracle of the authors' format (a change of the players, not of the envs): the new players'
actions, replayed in the old tree's envs, gave the same hashes as in the new tree.

Each seed plays three episodes: every agent scripted, every agent random (short random
words: format failures, gates that fail), and, for envs with a Parallel form, the Parallel
form with scripted players. Every step's rendered ``ansi`` transcript, rewards and infos go
into one SHA-256 (JSON with sorted keys, floats as ``float.hex``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import zlib
from typing import Any

import numpy as np

import llm_marl_envs
from llm_marl_envs.policies.scripted import scripted_policy

SEEDS = range(6)
_WORDS = (
    "the answer is 7 however because as a result aux def return up down left right stay "
    "donate 3 give 0 movie great film summary post paper method"
).split()


def _plain(value: Any) -> Any:
    """JSON-able, with floats exact (``float.hex``) and tuples as lists."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, np.floating):
        return float(value).hex()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def random_player(seed: int):
    """Short random words, drawn from a hash of the seed and the observation."""

    def play(observation: Any, info: dict) -> str:
        rng = np.random.default_rng(zlib.crc32(f"{seed}|{observation}".encode()))
        return " ".join(rng.choice(_WORDS, size=int(rng.integers(0, 30))))

    return play


def _kwargs(env_id: str) -> dict[str, Any]:
    data = {"data_source": "bundled"} if "data_source" in llm_marl_envs.spec(env_id).kwargs else {}
    return {"render_mode": "ansi", **data}


def _players(env_id: str, agents: list[str], seed: int, kind: str) -> dict[str, Any]:
    if kind == "random":
        return {agent: random_player(seed * 100 + i) for i, agent in enumerate(agents)}
    return {agent: scripted_policy(env_id, agent, seed) for agent in agents}


def _aec_steps(env_id: str, seed: int, kind: str) -> list[Any]:
    env = llm_marl_envs.make(env_id, **_kwargs(env_id))
    players = _players(env_id, list(env.possible_agents), seed, kind)
    env.reset(seed=seed)
    steps = []
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        action = None if terminated or truncated else players[agent](observation, info)
        env.step(action)
        steps.append([agent, action, reward, terminated, truncated, info, env.render()])
    env.close()
    return steps


def _parallel_steps(env_id: str, seed: int) -> list[Any]:
    env = llm_marl_envs.make_parallel(env_id, **_kwargs(env_id))
    players = _players(env_id, list(env.possible_agents), seed, "scripted")
    observations, infos = env.reset(seed=seed)
    steps = [[observations, infos]]
    while env.agents:
        actions = {a: players[a](observations[a], infos[a]) for a in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        steps.append([actions, rewards, terminations, truncations, infos, env.render()])
    env.close()
    return steps


def episode_hash(env_id: str, seed: int) -> str:
    """The SHA-256 of one seed's episodes of ``env_id`` (see the module docstring)."""
    played = [_aec_steps(env_id, seed, "scripted"), _aec_steps(env_id, seed, "random")]
    if llm_marl_envs.spec(env_id).parallel_entry_point is not None:
        played.append(_parallel_steps(env_id, seed))
    text = json.dumps(_plain(played), sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def all_hashes() -> dict[str, list[str]]:
    return {
        env_id: [episode_hash(env_id, seed) for seed in SEEDS]
        for env_id in llm_marl_envs.list_envs()
    }


if __name__ == "__main__":
    json.dump(all_hashes(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
