"""Helpers for tests of a leaderboard's ledger."""

from __future__ import annotations

from pathlib import Path

from llm_marl_envs.leaderboard import ledger as board_ledger, records as board_records
from llm_marl_envs.leaderboard.rules import identity


def ledger_of(board: Path) -> board_ledger.Ledger:
    """The board's ledger, checked with the board's key."""
    return board_ledger.read(board, board_records.board_key(board))


def events_of(board: Path, entry_id: str) -> list[dict]:
    """The ledger's events of the content now in entry ``entry_id``'s folder."""
    found = identity(board / "entries" / entry_id, strict=True)
    return ledger_of(board).events(found.digest)


def forget(board: Path) -> Path:
    """The board with no ledger: nothing recorded yet (as a board whose folders were all placed
    by hand), so that a test can put edited folders there without their history."""
    for name in (board_ledger.LEDGER_FILE, board_ledger.HEAD_FILE):
        (board / name).unlink(missing_ok=True)
    return board
