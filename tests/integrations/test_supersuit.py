"""SuperSuit's vector envs over every parallel environment, in this process and in two worker
processes (issue 30: ``concat_vec_envs_v1(num_cpus=2)`` raised ``ValueError: numpy_deepcopy``
at ``reset``, because FreeText's shared-memory reader returned an object SuperSuit cannot copy).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory
from gymnasium.vector.utils import write_to_shared_memory as write

import llm_marl_envs
from llm_marl_envs.core.spaces import FreeText

supersuit = pytest.importorskip("supersuit")

PARALLEL_IDS = [e for e in llm_marl_envs.list_envs() if llm_marl_envs.spec(e).parallel_entry_point]
# Code for the coding seats, prose for the others; non-ASCII and a lone surrogate on purpose.
ACTION = "def aux(x):\n    return x  # ✓ 日本語 😀 \ud800"


def _run(env_id: str, num_cpus: int) -> list:
    """Reset and two steps of 2 copies of the env; what each call returned."""
    env = llm_marl_envs.make_parallel(env_id, data_source="bundled")
    vec = supersuit.concat_vec_envs_v1(
        supersuit.pettingzoo_env_to_vec_env_v1(env), 2, num_cpus=num_cpus, base_class="gymnasium"
    )
    try:
        observations, _ = vec.reset(seed=3)
        seen = [observations]
        for _ in range(2):
            observations, rewards, terms, truncs, _ = vec.step([ACTION] * vec.num_envs)
            seen.append((observations, np.asarray(rewards).tolist(), list(terms), list(truncs)))
        return seen
    finally:
        vec.close()


@pytest.fixture(scope="module")
def in_process() -> dict:
    """The single-process runs, the reference for the multi-process ones (built once)."""
    return {env_id: _run(env_id, 0) for env_id in PARALLEL_IDS}


def test_every_parallel_env_is_covered():
    assert len(PARALLEL_IDS) >= 7 and all(
        any(name in e for e in PARALLEL_IDS) for name in ("TLDR", "Arxiv", "CoopCoding")
    )


@pytest.mark.parametrize("env_id", PARALLEL_IDS)
def test_two_worker_processes_match_one_process(env_id, in_process):
    seen = _run(env_id, 2)
    reference = in_process[env_id]
    first = seen[0]
    assert type(first) is tuple and len(first) == 4  # 2 copies x 2 seats
    assert all(isinstance(o, str) and o for o in first)
    assert seen == reference


def test_the_shared_memory_view_copies_to_a_tuple_and_stays_live():
    space = FreeText(16)
    memory = create_shared_memory(space, n=2)
    write(space, 0, "a\x00", memory)
    write(space, 1, "日本 \ud800", memory)
    view = read_from_shared_memory(space, memory, n=2)
    assert isinstance(view, np.ndarray)  # what SuperSuit's numpy_deepcopy accepts
    snapshots = [view.copy(), copy.copy(view), copy.deepcopy(view)]
    snapshots.append(pickle.loads(pickle.dumps(view)))
    assert all(type(s) is tuple and s == ("a\x00", "日本 \ud800") for s in snapshots)
    write(space, 0, "changed", memory)  # the view follows the buffer; its copies do not
    assert view == ("changed", "日本 \ud800") and snapshots[0][0] == "a\x00"
    assert view[0] == "changed" and view[-1] == "日本 \ud800" and view[:1] == ("changed",)
    assert list(view) == ["changed", "日本 \ud800"] and "changed" in view and len(view) == 2
    assert view.index("日本 \ud800") == 1 and repr(view) == repr(("changed", "日本 \ud800"))
    assert view != ("changed",) and bool(view)
    with pytest.raises(ValueError):
        view.view(np.ndarray)[0, 0] = 1  # read-only
