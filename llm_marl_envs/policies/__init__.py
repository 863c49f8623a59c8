"""Policies: one interface for models, servers, scripts and people (see ``base``)."""

from llm_marl_envs.policies.base import (
    CallablePolicy,
    Completion,
    Policy,
    PolicyError,
    Prompt,
    as_policy,
)

__all__ = ["CallablePolicy", "Completion", "Policy", "PolicyError", "Prompt", "as_policy"]
