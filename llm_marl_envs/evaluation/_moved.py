"""The leaderboard's old import paths, kept for one release as deprecated aliases.

The board moved out of the evaluation harness into its own package,
:mod:`llm_marl_envs.leaderboard` (issue 49); :mod:`llm_marl_envs.evaluation` never imports it.
Each old module (``llm_marl_envs.evaluation.leaderboard``, ``.submission``, ...) is a file that
calls :func:`alias`: the import warns (``DeprecationWarning``) and hands back the new module
itself, so ``llm_marl_envs.evaluation.leaderboard.build`` *is*
``llm_marl_envs.leaderboard.board.build``. These aliases go in the next release.
"""

from __future__ import annotations

from llm_marl_envs.core.moved import alias as _alias

#: The old module name under ``llm_marl_envs.evaluation`` -> its new one under
#: ``llm_marl_envs.leaderboard``.
MOVED = {
    "board_build": "standings",
    "board_records": "records",
    "board_rules": "rules",
    "leaderboard": "board",
    "names": "names",
    "replay": "replay",
    "sampling": "sampling",
    "site": "site.pages",
    "submission": "entry",
    "verification": "verify",
}


def alias(name: str) -> None:
    """Make the module being imported as ``name`` (an old path) the moved module."""
    _alias(name, f"llm_marl_envs.leaderboard.{MOVED[name.rpartition('.')[2]]}", stacklevel=4)
