"""Lazy imports of optional dependencies, with errors that say which extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingDependencyError", "require"]


class MissingDependencyError(ImportError):
    """An optional dependency is not installed; the message names the pip extra."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError`.

    Args:
        module: Importable module name, e.g. ``"vaderSentiment.vaderSentiment"``.
        extra: The package extra that provides it, e.g. ``"sentiment"``.
        purpose: What needs it, for the message, e.g. ``"the VADER sentiment scorer"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDependencyError(
            f"{purpose} needs the optional dependency '{module.split('.')[0]}', which is not "
            f"installed. Install it with:  pip install 'llm-marl-envs[{extra}]'"
        ) from error
