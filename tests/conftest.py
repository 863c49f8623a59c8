"""Shared test set-up: offline mode, the real-data folder, and an env factory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests never touch the network: the Hub clients fail at once instead of retrying.
for _flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_flag, "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data slices in ../shared/data (CI always has them)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real-data tests need {SHARED_DATA}, which is absent on this machine")
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
