"""The local Ray cluster's port plan (``rollout/_ray_nodes.py``), without starting Ray: a
node's 100 worker ports never hold the head's port or a port given to another component (CI
once drew a worker range around the head's GCS port, and ``ray start`` refused it)."""

from __future__ import annotations

import shutil
from itertools import chain, count

from llm_marl_envs.rollout import _ray_nodes


def _ports(argv: list[str]) -> tuple[range, set[int]]:
    values = dict(arg[2:].split("=") for arg in argv)
    low, high = int(values.pop("min-worker-port")), int(values.pop("max-worker-port"))
    return range(low, high + 1), {int(port) for port in values.values()}


def test_a_worker_range_never_holds_the_heads_port_or_a_component(tmp_path, monkeypatch):
    head = 54811
    # the port draws: the head's, then a draw whose hundred holds the head's port, then one
    # whose hundred holds node 1's components, then free ones
    draws = chain([head, 54850, 41000], count(41010), [0])
    monkeypatch.setattr(_ray_nodes, "free_port", lambda: next(draws))
    cluster = _ray_nodes.LocalCluster(tmp_path)
    try:
        assert cluster.port == head
        first_range, first = _ports(cluster._ports())
        assert head not in first_range and not first & set(first_range)
        assert first_range == range(41000, 41100) and head not in first
        second_range, second = _ports(cluster._ports())
        assert not set(second_range) & (first | set(first_range) | {head})
        assert not second & (first | set(first_range) | set(second_range) | {head})
    finally:
        shutil.rmtree(cluster.temp, ignore_errors=True)
