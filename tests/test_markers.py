"""The markers' rules in tests/conftest.py: a ``shared_data`` test skips, naming the folder,
where ``../shared/data`` is absent, and fails instead under ``LLM_MARL_REQUIRE_SHARED_DATA=1``,
which CI sets; ``make test-quick`` leaves out the ``slow`` tests."""

from __future__ import annotations

import importlib.util
import re
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


def test_the_fixture_marks_its_users(rules):
    user = SimpleNamespace(fixturenames=["tmp_path", "shared_data"], marks=[])
    other = SimpleNamespace(fixturenames=["tmp_path"], marks=[])
    for item in (user, other):
        item.add_marker = item.marks.append
    rules.pytest_collection_modifyitems([user, other])
    assert [m.name for m in user.marks] == ["shared_data"] and other.marks == []


def test_ci_requires_the_data_and_runs_make_test():
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^export LLM_MARL_REQUIRE_SHARED_DATA=1$", ci, re.M)
    assert ci.index("LLM_MARL_REQUIRE_SHARED_DATA") < ci.index("\nmake test\n")


def test_make_test_quick_leaves_out_the_slow_tests():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r'^test-quick:.*\n\t.*pytest -m "not slow"( -n 2)?$', makefile, re.M)
