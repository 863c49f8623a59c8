"""Shared test set-up: offline mode, threads per worker, the markers' rules, the real-data
folder, the Ray session, and the real servers of :mod:`llm_marl_envs.testing.fixtures` (the
one ``transformers serve``, local Ray clusters), the same fixtures users get.

Markers (declared in pyproject.toml):

* ``slow``: heavy tests (sandbox attacks, Ray, kill -9 resumes, the browser, the docs build,
  real models, wheels, trainer runs); ``pytest -m "not slow"`` (``make test-quick``) leaves
  them out, ``make test`` runs everything.
* ``shared_data``: the test reads the real data slices in ``../shared/data``, which only this
  project's CI has. Every test that takes the ``shared_data`` fixture carries it. Where the
  folder is absent such a test skips with the reason; with ``LLM_MARL_REQUIRE_SHARED_DATA=1``
  (set by ``.ci/run``) it fails instead, so CI cannot pass without running them.

``make test`` runs the suite on every core with pytest-xdist (``-n auto --dist loadgroup``).
Tests that share a costly process (the module's local Ray instance, the one ``transformers
serve`` of the fixtures) carry an ``xdist_group`` mark, which keeps them on one worker, so the
process starts once per run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The fixtures users get (``transformers_serve``, ``ray_cluster``, ...), ours too.
pytest_plugins = ["llm_marl_envs.testing.fixtures"]

# Tests never touch the network: the Hub clients fail at once instead of retrying.
for _flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_flag, "1")


def threads_per_worker() -> int | None:
    """The torch threads each pytest-xdist worker gets: its share of the cores (at least one);
    None outside xdist, where torch's default (every core) stays."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, len(os.sched_getaffinity(0)) // workers) if workers > 1 else None


# Workers side by side must not oversubscribe the cores: a worker and everything it starts (a
# server, a command-line run, a Ray node) inherit its share before torch is imported. With
# torch's default threads, a transformers serve request beside a busy worker took 3-5x as
# long as alone; with one thread it took as long as alone (2 cores).
if threads_per_worker() is not None:
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(threads_per_worker()))

# Boards made by tests keep their sealing keys in a folder of this run, not the user's
# ~/.config (llm_marl_envs.leaderboard.records.keys_folder).
if "LLM_MARL_BOARD_KEYS" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["LLM_MARL_BOARD_KEYS"] = tempfile.mkdtemp(prefix="llm-marl-board-keys-")
    atexit.register(shutil.rmtree, os.environ["LLM_MARL_BOARD_KEYS"], True)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
REQUIRE_SHARED_DATA = "LLM_MARL_REQUIRE_SHARED_DATA"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that takes the ``shared_data`` fixture carries the ``shared_data`` marker;
    the modules that hold ``slow`` tests run first."""
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)
    slow_first(items)


def slow_first(items: list[pytest.Item]) -> None:
    """Put the modules that hold ``slow`` tests before the others, each module's tests together
    and in their order. pytest-xdist hands out work in collection order: with the long tests
    first and the many short ones last, the workers finish together, instead of one running
    a two-minute test alone at the end (the longest-first rule of scheduling)."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)  # stable: the order stays otherwise


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
