"""Policies: one interface for models, servers, scripts and people (see ``base``).

Model policies take their settings as one :class:`GenerationConfig`; a :class:`ModelCache`
loads each model once; a :class:`PolicyFactory` and :func:`build_policies` turn specs
(``default``, ``tiny``, ``hf:...``, ``openai:...``, ``ckpt:...``, ``scripted``, ``random``,
``human``; :mod:`llm_marl_envs.policies.specs`) into the policies of an environment's agents.
"""

from llm_marl_envs.policies.base import (
    CallablePolicy,
    Completion,
    Policy,
    PolicyError,
    Prompt,
    as_policy,
)
from llm_marl_envs.policies.generation import GenerationConfig
from llm_marl_envs.policies.specs import ModelCache, PolicyFactory, build_policies

__all__ = [
    "CallablePolicy",
    "Completion",
    "GenerationConfig",
    "ModelCache",
    "Policy",
    "PolicyError",
    "PolicyFactory",
    "Prompt",
    "as_policy",
    "build_policies",
]
