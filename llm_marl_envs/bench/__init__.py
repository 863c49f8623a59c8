"""Deprecated: the evaluation harness is :mod:`llm_marl_envs.evaluation` (it was ``bench``,
a name that read like the speed scripts in ``benchmarks/``).

``import llm_marl_envs.bench`` and its submodules (``llm_marl_envs.bench.stats``, ...) still
work: they are the same module objects as ``llm_marl_envs.evaluation``'s, with a
``DeprecationWarning``. This alias will be removed in a later release.
"""

import importlib
import sys
import warnings

from llm_marl_envs.evaluation import *  # noqa: F403 - the alias re-exports the package
from llm_marl_envs.evaluation import __all__  # noqa: F401

warnings.warn(
    "llm_marl_envs.bench is now llm_marl_envs.evaluation: import that instead",
    DeprecationWarning,
    stacklevel=2,
)

for _name in (
    "evaluate",
    "metrics",
    "pairings",
    "results",
    "stats",
    "suite",
):
    _module = importlib.import_module(f"llm_marl_envs.evaluation.{_name}")
    sys.modules[f"{__name__}.{_name}"] = _module
    globals()[_name] = _module

# The board moved to llm_marl_envs.leaderboard (issue 49), the eval command to
# llm_marl_envs.cli (issue 51): bench's old names point there.
for _name, _new in (
    ("leaderboard", "leaderboard.board"),
    ("site", "leaderboard.site.pages"),
    ("cli", "cli.eval"),
):
    _module = importlib.import_module(f"llm_marl_envs.{_new}")
    sys.modules[f"{__name__}.{_name}"] = _module
    globals()[_name] = _module
