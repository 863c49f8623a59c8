"""Deprecated: moved to :mod:`llm_marl_envs.cli.leaderboard`; this alias goes in the next
release."""

from llm_marl_envs.core.moved import alias

alias(__name__, "llm_marl_envs.cli.leaderboard")
