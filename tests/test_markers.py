"""The markers' rules in tests/conftest.py: a ``shared_data`` test skips, naming the folder,
where ``../shared/data`` is absent, and fails instead under ``LLM_MARL_REQUIRE_SHARED_DATA=1``,
which CI sets; ``make test-quick`` leaves out the ``slow`` tests."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def rules(monkeypatch, tmp_path):
    """tests/conftest.py loaded afresh, its data folder pointed at a missing path."""
    spec = importlib.util.spec_from_file_location("conftest_rules", REPO / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "SHARED_DATA", tmp_path / "absent")
    monkeypatch.delenv(module.REQUIRE_SHARED_DATA, raising=False)
    return module


def _item(*markers: str) -> SimpleNamespace:
    return SimpleNamespace(get_closest_marker=lambda name: name if name in markers else None)


def test_a_shared_data_test_skips_naming_the_missing_folder(rules, tmp_path):
    with pytest.raises(pytest.skip.Exception, match=re.escape(str(tmp_path / "absent"))):
        rules.pytest_runtest_setup(_item("shared_data"))


def test_ci_turns_the_skip_into_a_failure(rules, tmp_path, monkeypatch):
    monkeypatch.setenv(rules.REQUIRE_SHARED_DATA, "1")
    with pytest.raises(pytest.fail.Exception, match="LLM_MARL_REQUIRE_SHARED_DATA=1 but .*absent"):
        rules.pytest_runtest_setup(_item("shared_data"))


def test_the_data_present_or_no_marker_runs_the_test(rules, tmp_path, monkeypatch):
    monkeypatch.setenv(rules.REQUIRE_SHARED_DATA, "1")
    assert rules.pytest_runtest_setup(_item("slow")) is None
    monkeypatch.setattr(rules, "SHARED_DATA", tmp_path)
    assert rules.pytest_runtest_setup(_item("shared_data")) is None


def _collected(path: str, *markers: str, fixtures=("tmp_path",)) -> SimpleNamespace:
    item = SimpleNamespace(path=Path(path), fixturenames=list(fixtures), marks=[])
    item.add_marker = item.marks.append
    item.get_closest_marker = lambda name: name if name in markers else None
    return item


def test_the_fixture_marks_its_users(rules):
    user = _collected("test_a.py", fixtures=["tmp_path", "shared_data"])
    other = _collected("test_a.py")
    rules.pytest_collection_modifyitems([user, other])
    assert [m.name for m in user.marks] == ["shared_data"] and other.marks == []


def test_modules_with_slow_tests_run_first_each_together_and_in_order(rules):
    a1, a2 = _collected("test_a.py"), _collected("test_a.py")
    b1, b2, b3 = _collected("test_b.py"), _collected("test_b.py", "slow"), _collected("test_b.py")
    c1 = _collected("test_c.py", "slow")
    items = [a1, a2, b1, b2, b3, c1]
    rules.pytest_collection_modifyitems(items)
    assert list(map(id, items)) == list(map(id, [b1, b2, b3, c1, a1, a2]))


def test_ci_requires_the_data_and_runs_make_test():
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^export LLM_MARL_REQUIRE_SHARED_DATA=1$", ci, re.M)
    assert ci.index("LLM_MARL_REQUIRE_SHARED_DATA") < ci.index("\nmake test\n")


def _pytest_lines(target: str) -> list[str]:
    """The pytest command lines ``make TARGET`` runs (a dry run: ``make -n``, without the
    settings of a make this test may run under)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "WORKERS")}
    dry = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, env=env)
    return [line for line in dry.stdout.splitlines() if " -m pytest " in line]


def _workers(line: str) -> int:
    """The pytest-xdist workers a command line asks for (``-n N``, a number)."""
    return int(re.search(r" -n (\d+) ", line).group(1))


def test_make_test_quick_leaves_out_the_slow_tests():
    [line] = _pytest_lines("test-quick")
    assert line.endswith(' -m "not slow"') and " -n auto " in line  # a worker per core


def test_make_test_runs_every_suite_on_every_core_and_names_the_slowest():
    main, *stacks = _pytest_lines("test")
    assert " -m " not in main.partition(" -m pytest ")[2]  # every test, the slow ones too
    assert main.endswith(" --durations=15") and stacks
    assert _workers(main) >= len(os.sched_getaffinity(0))
    assert all(" -n auto " in line for line in stacks)  # a worker per core at least
    assert all(" --dist loadgroup" in line for line in (main, *stacks))


GROUPED = """
import os
from pathlib import Path

import pytest


@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    Path(f"grouped-{i}").write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass
"""


@pytest.mark.slow  # starts pytest-xdist's workers
def test_loadgroup_keeps_a_group_on_one_worker(tmp_path):
    """``make test``'s ``--dist loadgroup`` runs each ``xdist_group`` on one worker (the shared
    transformers serve and the module's Ray instance start once). pytest 9.2 with
    pytest-xdist 3.8 spreads a group silently (pytest-dev/pytest-xdist#1386): setup.cfg caps
    pytest below 9.2, and this fails if the pair in use stops grouping."""
    (tmp_path / "test_grouping.py").write_text(GROUPED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    argv = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q"]
    done = subprocess.run(
        [*argv, "-p", "no:cacheprovider", "test_grouping.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    workers = {path.read_text() for path in tmp_path.glob("grouped-*")}
    assert len(list(tmp_path.glob("grouped-*"))) == 6 and len(workers) == 1, workers
