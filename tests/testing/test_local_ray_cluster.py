"""``llm_marl_envs.testing.LocalRayCluster`` without starting Ray: its port plan (a node's 100
worker ports never hold the head's port or a port given to another component: CI once drew a
worker range around the head's GCS port, and ``ray start`` refused it), its folders, its
refusal without the ``ray`` command, and the process tree it kills a node by. A real
two-node cluster is started by tests/rollout/test_ray_multinode.py."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from itertools import chain, count

import pytest

from llm_marl_envs.testing import ray_cluster as nodes


def _ports(argv: list[str]) -> tuple[range, set[int]]:
    values = dict(arg[2:].split("=") for arg in argv)
    low, high = int(values.pop("min-worker-port")), int(values.pop("max-worker-port"))
    return range(low, high + 1), {int(port) for port in values.values()}


def test_a_worker_range_never_holds_the_heads_port_or_a_component(tmp_path, monkeypatch):
    head = 54811
    # the port draws: the head's, then a draw whose hundred holds the head's port, then one
    # whose hundred holds node 1's components, then free ones
    draws = chain([head, 54850, 41000], count(41010), [0])
    monkeypatch.setattr(nodes, "free_port", lambda: next(draws))
    cluster = nodes.LocalRayCluster(tmp_path)
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


def test_a_cluster_of_its_own_folder_removes_it_and_names_no_node_yet(monkeypatch):
    with nodes.LocalRayCluster() as cluster:
        root, temp = cluster.root, cluster.temp
        assert root.is_dir() and temp.is_dir() and cluster.nodes == {}
        assert cluster.address == f"127.0.0.1:{cluster.port}"
        assert cluster.env["RAY_AUTH_MODE"] == "token" and len(cluster.env["RAY_AUTH_TOKEN"]) == 32
        assert "RAY_ADDRESS" not in cluster.env
    assert not root.exists() and not temp.exists()
    cluster.stop()  # again: nothing


def test_without_the_ray_command_a_node_does_not_start(tmp_path, monkeypatch):
    monkeypatch.setattr(nodes, "ray_command", lambda: None)
    with nodes.LocalRayCluster(tmp_path) as cluster:
        with pytest.raises(RuntimeError, match="no `ray` command: install the ray extra"):
            cluster.start_nodes(2)
        assert cluster.nodes == {}
    assert tmp_path.is_dir()  # a folder it was given stays (the nodes' logs)


def test_descendants_finds_children_and_grandchildren():
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(parent.stdout.readline())
        assert nodes.descendants(parent.pid) == [grandchild]
        assert nodes.descendants(grandchild) == []
    finally:
        for pid in (grandchild, parent.pid):
            os.kill(pid, signal.SIGKILL)
        parent.wait()


def test_nodes_after_the_head_get_their_own_interpreter_and_environment(tmp_path, monkeypatch):
    started = []

    class Started:
        def __init__(self, argv, **options):
            started.append((argv, options["env"]))
            self.pid = 0

        def poll(self):
            return None

    monkeypatch.setattr(nodes.subprocess, "Popen", Started)
    monkeypatch.setattr(nodes.LocalRayCluster, "wait_for", lambda self, count: None)
    monkeypatch.setenv("PYTHONPATH", "/somewhere/checkout")
    cluster = nodes.LocalRayCluster(tmp_path)
    try:
        cluster.start_nodes(3, cpus=2, python="/other/python", env={"PYTHONPATH": None, "X": "1"})
    finally:
        shutil.rmtree(cluster.temp, ignore_errors=True)
    assert sorted(cluster.nodes) == ["head", "node2", "node3"]
    (head, head_env), *others = started
    assert head[0] == str(nodes.ray_command()) and "--head" in head and "--num-cpus=2" in head
    assert head_env["PYTHONPATH"] == "/somewhere/checkout" and "X" not in head_env
    for argv, env in others:
        assert argv[0] == "/other/python" and f"--address={cluster.address}" in argv
        assert "PYTHONPATH" not in env and env["X"] == "1"
        assert env["RAY_AUTH_TOKEN"] == head_env["RAY_AUTH_TOKEN"]
