"""The leaderboard: a board of ``llm-marl eval`` results, checked on the way in, verified by
replay, built into a static site (``llm-marl leaderboard`` on the command line).

>>> from llm_marl_envs.leaderboard import add_entry, build, verify_entry  # doctest: +SKIP

It stands above :mod:`llm_marl_envs.evaluation` (the harness that writes the results it
reads), which never imports it. Its parts:

* :mod:`.board`: add, verify, override and build, the board's operations;
* :mod:`.entry`: an entry folder read within its limits (:func:`~.entry.open_entry`), its files
  through :mod:`.descriptors`; :mod:`.errors`: the board's one error;
* :mod:`.schema`: the shape of a ``results.json``; :mod:`.rules`: the rules every command
  applies to an entry, and the listing of a board's entries; :mod:`.copies`: an entry's
  identity by its content, and the rule against copies;
* :mod:`.ledger`: what the board found about each entry, known by its content, in an
  append-only, hash-chained, sealed ledger; :mod:`.records`: the board's key, the seal and
  the badge rule;
* :mod:`.standings`: the site's data (scores, ranks, ties) from the entries; :mod:`.ranks`: who
  is ranked, and how;
* :mod:`.verify`, :mod:`.sampling` (the forger's problem in :mod:`.forgery`), :mod:`.replay`
  and :mod:`.rescore` (a whole entry scored from its replay): verification by replaying recorded
  actions and regenerating a secret sample; :mod:`.names`: names a visitor can tell apart;
* :mod:`.site`: the static pages; :mod:`.cli`: ``llm-marl leaderboard``;
* ``entries/``: the entries that ship with the package.

See ``docs/leaderboard.md``. The board's names are importable from here (lazily: importing
the package itself loads nothing heavy).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DEFAULT_BOARD",
    "LeaderboardError",
    "add_entry",
    "build",
    "build_board",
    "check_result",
    "entries",
    "entry_problems",
    "override_entry",
    "replay_entry",
    "same_play",
    "shipped_entries",
    "verify_entry",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("llm_marl_envs.leaderboard.board"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
