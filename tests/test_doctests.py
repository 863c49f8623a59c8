"""The examples in the package's docstrings run, one test per module that has any.

(``pytest --doctest-modules`` would collect the test folders' ``conftest.py`` files too; this
runs the standard library's ``doctest`` on the package's own modules only.)
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import llm_marl_envs

# The sandbox's private modules are scripts for its worker processes, loaded by file path.
SKIP = ("llm_marl_envs.sandbox._",)


def _modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(llm_marl_envs.__path__, "llm_marl_envs."):
        if info.name.startswith(SKIP):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec is not None and spec.name != info.name:
            continue  # a deprecated alias, already imported: the module it names is walked too
        # Read the file itself: a module pytest loaded as a plugin has pytest's assertion
        # rewriter as its loader, which has no get_source().
        origin = spec.origin if spec is not None else None
        source = (
            Path(origin).read_text(encoding="utf-8") if origin and origin.endswith(".py") else ""
        )
        if ">>>" in source:
            names.append(info.name)
    return names


MODULES = _modules_with_examples()


def test_examples_are_found():
    assert len(MODULES) >= 10, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
