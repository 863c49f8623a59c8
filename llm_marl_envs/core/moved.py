"""Old import paths kept for one release as deprecated aliases.

A module that moved leaves a one-line file at its old path::

    \"\"\"Deprecated: moved to :mod:`llm_marl_envs.policies.openai.policy`.\"\"\"
    from llm_marl_envs.core.moved import alias
    alias(__name__, "llm_marl_envs.policies.openai.policy")

Importing the old path warns (``DeprecationWarning``, pointing at the importer) and hands back
the new module itself, so ``old.name is new.name`` for every name, private ones included, and
a ``monkeypatch`` of one is a patch of the other. A module whose docstring starts with
"Deprecated" is such an alias; ``scripts/house_metrics.py`` leaves them out of its counts.

Keywords that a settings object now carries warn the same way (:func:`keywords_moved`).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Iterable


def alias(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Make the module being imported as ``old`` the module ``new``, with a warning."""
    warnings.warn(
        f"{old} is now {new}: import that instead", DeprecationWarning, stacklevel=stacklevel
    )
    sys.modules[old] = importlib.import_module(new)


def keywords_moved(caller: str, names: Iterable[str], into: str, *, stacklevel: int) -> None:
    """Warn that ``caller``'s keywords ``names`` are deprecated, naming the object that carries
    them now: ``into`` is a format string of the replacement, ``{}`` its keyword list, as
    ``"generation=GenerationConfig({})"``."""
    given = ", ".join(f"{name}=..." for name in names)
    warnings.warn(
        f"{caller}({given}) is deprecated: pass {into.format(given)} instead",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )
