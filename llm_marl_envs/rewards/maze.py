"""Scoring of MazeCollab-v0 (Gnomes at Night, Chen, Fried & Topcu, IJCAI-24): pure functions.

Every turn costs ``STEP_PENALTY``; a move that is blocked, leaves the grid or cannot be read
costs ``INVALID_PENALTY`` more; reaching the treasure pays ``SUCCESS_REWARD``. Both gnomes
receive the team reward of every turn.
"""

from __future__ import annotations

__all__ = ["INVALID_PENALTY", "MOVE_OUTCOMES", "STEP_PENALTY", "SUCCESS_REWARD", "turn_components"]

STEP_PENALTY, INVALID_PENALTY, SUCCESS_REWARD = -0.1, -0.5, 20.0
#: What a move can end in: None (the token moved or stayed as asked) or why it was invalid.
MOVE_OUTCOMES = (None, "unparseable", "off_grid", "blocked")


def turn_components(outcome: str | None, success: bool, scale: float = 1.0) -> dict[str, float]:
    """The named reward components of one turn; ``task_reward`` is ``raw_total * scale``.

    >>> turn_components("blocked", False)["raw_total"]
    -0.6
    >>> turn_components(None, True, scale=1 / 20)["task_reward"]
    0.995
    """
    invalid = INVALID_PENALTY if outcome is not None else 0.0
    bonus = SUCCESS_REWARD if success else 0.0
    raw = STEP_PENALTY + invalid + bonus
    return {
        "step": STEP_PENALTY,
        "invalid": invalid,
        "success": bonus,
        "raw_total": raw,
        "task_reward": raw * scale,
        "format_failure": float(outcome == "unparseable"),
        "off_grid": float(outcome == "off_grid"),
        "blocked": float(outcome == "blocked"),
    }
