"""Scripted players: every environment playable without a model, offline, in microseconds.

A scripted player is a :data:`~llm_marl_envs.policies.base.PolicyFn`, a callable
``(observation, info) -> str`` for one agent, deterministic for a given seed. Each registry
entry of ``envs_registry.yaml`` names its environment's factory in ``scripted_policy``
(``"module:function"``, called as ``factory(agent, seed)``), so adding an environment needs
no change here:

>>> from llm_marl_envs.policies.scripted import scripted_policy
>>> pioneer = scripted_policy("llm_marl_envs/GSM8K-v0", "pioneer_0")
>>> pioneer("Question: Tom has 2 apples and buys 3 more.", {})
'Adding the numbers 2, 3 gives 5. The answer is 5.'

Players that draw at random draw from :func:`turn_draw`, a hash of their seed and of what
they see, not from a generator that runs on across episodes: replaying an episode's seed
replays the episode, whatever the same player object played before (GRPO groups built by
replaying a seed are then exact).

One module per task family: :mod:`.gsm8k`, :mod:`.imdb_sentiment`, :mod:`.writing` (TL;DR
and arXiv), :mod:`.coding` (with :mod:`.coding_split`, the authors' format's oracle), and the
games' reference players :mod:`.maze` (oracle and random pairs) and :mod:`.donor`
(reciprocators, defectors, strategies from text).
"""

from __future__ import annotations

import importlib
import zlib

from llm_marl_envs.policies.base import PolicyFn
from llm_marl_envs.registry import spec

__all__ = ["PolicyFn", "scripted_policy", "turn_draw"]


def turn_draw(seed: int, observation: str, choices: int) -> int:
    """A draw in ``range(choices)`` that depends only on ``seed`` and ``observation``.

    A CRC-32 of the observation, started from one of the seed: stable across processes and
    fast (under a microsecond for a 1.5 KB prompt, which matters in the game benchmarks),
    uniform enough to pick among a handful of moves; not a cryptographic hash.

    >>> turn_draw(0, "Round 1", 5) == turn_draw(0, "Round 1", 5)
    True
    """
    start = zlib.crc32(int(seed).to_bytes(8, "little", signed=True))
    return zlib.crc32(observation.encode("utf-8", "surrogatepass"), start) % choices


def scripted_policy(env_id: str, agent: str, seed: int = 0) -> PolicyFn:
    """The built-in scripted player of ``agent`` in ``env_id`` (see the registry entry)."""
    entry = spec(env_id).scripted_policy
    if not entry:
        raise ValueError(f"{env_id} names no scripted_policy in envs_registry.yaml")
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)(agent, seed)
