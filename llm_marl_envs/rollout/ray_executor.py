"""Deprecated: moved to :mod:`llm_marl_envs.rollout.ray.executor`."""

from llm_marl_envs.core.moved import alias

alias(__name__, "llm_marl_envs.rollout.ray.executor")
