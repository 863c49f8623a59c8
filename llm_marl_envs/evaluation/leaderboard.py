"""Deprecated: moved to :mod:`llm_marl_envs.leaderboard.board` (see ``_moved.py``)."""

from llm_marl_envs.evaluation._moved import alias

alias(__name__)
