"""Deprecated: moved to :mod:`llm_marl_envs.policies.openai.policy` (import
:mod:`llm_marl_envs.policies.openai`)."""

from llm_marl_envs.core.moved import alias

alias(__name__, "llm_marl_envs.policies.openai.policy")
