"""Fixtures for the sandbox tests: one shared pool and the isolation in force."""

from __future__ import annotations

import sys

import pytest

from llm_marl_envs.sandbox import SandboxPool

import sandbox_helpers

if not sys.platform.startswith("linux"):
    collect_ignore_glob = ["test_*.py"]  # the sandbox targets Linux


@pytest.fixture(autouse=True)
def _children_before_the_test():
    """What :func:`sandbox_helpers.assert_no_leftovers` leaves aside: the processes this one
    had already started before the test began."""
    sandbox_helpers.BEFORE_TEST = sandbox_helpers.children_of_this_process()
    yield


@pytest.fixture(scope="session")
def pool():
    with SandboxPool(2) as shared:
        yield shared


@pytest.fixture(scope="session")
def caps(pool) -> dict:
    return pool.capabilities()


@pytest.fixture
def isolated(caps) -> dict:
    """Skip tests whose hostile programs are only safe with full isolation (root)."""
    if caps["mode"] != "full":
        pytest.skip(f"needs full isolation (root); in force: {caps['mode']} {caps['warnings']}")
    return caps
