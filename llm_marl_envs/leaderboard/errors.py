"""The leaderboard's one error: :class:`LeaderboardError`, raised by every part of the board
(importable from :mod:`~llm_marl_envs.leaderboard.entry` and :mod:`~llm_marl_envs.leaderboard.board`
too). Its message is the one line ``llm-marl leaderboard`` prints."""

from __future__ import annotations

__all__ = ["LeaderboardError"]


class LeaderboardError(ValueError):
    """A result that cannot join the board, or an entry that is not there."""
