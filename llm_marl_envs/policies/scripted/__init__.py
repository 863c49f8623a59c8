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

One module per task family: :mod:`.cory`, :mod:`.writing`, :mod:`.coding`, and the games'
reference players :mod:`.maze` (oracle and random pairs) and :mod:`.donor` (reciprocators,
defectors, strategies from text).
"""

from __future__ import annotations

import importlib

from llm_marl_envs.policies.base import PolicyFn
from llm_marl_envs.registry import spec

__all__ = ["PolicyFn", "scripted_policy"]


def scripted_policy(env_id: str, agent: str, seed: int = 0) -> PolicyFn:
    """The built-in scripted player of ``agent`` in ``env_id`` (see the registry entry)."""
    entry = spec(env_id).scripted_policy
    if not entry:
        raise ValueError(f"{env_id} names no scripted_policy in envs_registry.yaml")
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)(agent, seed)
