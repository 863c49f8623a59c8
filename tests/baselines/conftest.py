"""Shared set-up of the trainer tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Trainer tests use the tiny model, whose ops are too small for two threads: one thread is
    faster, and a busy machine hurts it less. Restores the thread count afterwards."""
    try:
        import torch
    except ImportError:  # the tests that need torch skip themselves
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
