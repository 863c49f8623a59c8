"""Shared test set-up: offline mode, the markers' rules, the real-data folder, the Ray session.

Markers (declared in pyproject.toml):

* ``slow``: heavy tests (sandbox attacks, Ray, kill -9 resumes, the browser, the docs build,
  real models, wheels, trainer runs); ``pytest -m "not slow"`` (``make test-quick``) leaves
  them out, ``make test`` runs everything.
* ``shared_data``: the test reads the real data slices in ``../shared/data``, which only this
  project's CI has. Every test that takes the ``shared_data`` fixture carries it. Where the
  folder is absent such a test skips with the reason; with ``LLM_MARL_REQUIRE_SHARED_DATA=1``
  (set by ``.ci/run``) it fails instead, so CI cannot pass without running them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests never touch the network: the Hub clients fail at once instead of retrying.
for _flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_flag, "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
REQUIRE_SHARED_DATA = "LLM_MARL_REQUIRE_SHARED_DATA"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that takes the ``shared_data`` fixture carries the ``shared_data`` marker."""
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``shared_data`` test without the folder skips, or fails where CI requires the data."""
    if item.get_closest_marker("shared_data") is None or SHARED_DATA.is_dir():
        return
    if os.environ.get(REQUIRE_SHARED_DATA) == "1":
        pytest.fail(
            f"{REQUIRE_SHARED_DATA}=1 but {SHARED_DATA} is absent: put the real data slices "
            "there, or unset the variable to skip the real-data tests",
            pytrace=False,
        )
    pytest.skip(f"real-data test: needs {SHARED_DATA}, which is absent on this machine")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data slices in ../shared/data (the ``shared_data`` marker's rule checks them)."""
    return SHARED_DATA


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray instance with 2 CPUs for the Ray tests, which all live in one module
    (tests/rollout/test_ray_executor.py), so it starts once per test session. It is shut
    down after them: its daemons are children of this process, and the sandbox tests check
    that no stray child is left."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    yield ray
    ray.shutdown()
