"""The tests mirror the package: every package of ``llm_marl_envs`` has its ``tests/<package>``
folder, and every test folder names a package, apart from the exceptions listed here.

Tests of the top-level modules (``registry.py``, ...) and the cross-cutting tests
(conformance, robustness, faults, seeding over every registered id) sit in ``tests/`` itself.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

#: Test folders that test something other than a package of ``llm_marl_envs``.
NOT_A_PACKAGE = {
    "baselines": "the reference trainers in the repository's baselines/, outside the package",
}

#: Packages that are only an old name of another (tested with the package they alias).
ALIASES = {"bench": "evaluation (tests/evaluation/test_bench_alias.py)"}

#: Test data kept beside the tests that read it.
DATA_FOLDERS = {"parity_data"}


def _packages() -> set[str]:
    return {p.parent.name for p in (REPO / "llm_marl_envs").glob("*/__init__.py")} - set(ALIASES)


def _test_folders() -> set[str]:
    return {
        p.name
        for p in TESTS.iterdir()
        if p.is_dir() and p.name not in DATA_FOLDERS and not p.name.startswith((".", "__"))
    }


def test_every_package_has_its_test_folder():
    missing = sorted(_packages() - _test_folders())
    assert missing == [], f"add tests/<package>/ for {missing}: the tests mirror llm_marl_envs/"


def test_every_test_folder_names_a_package_or_an_exception():
    strays = sorted(_test_folders() - _packages() - set(NOT_A_PACKAGE))
    assert strays == [], (
        f"tests/{strays[0]}/ names no package of llm_marl_envs: move its tests to the folder "
        "of the package they test, or list it in NOT_A_PACKAGE with the reason"
    )
