"""Reaching a Ray cluster (issue 40): a head that does not answer, ``auto`` with no cluster, a
stale address file, bad ``--ray-*`` options and a node without the package are one line each,
never a hang or a traceback. No Ray instance is started here (the cluster is never reached)."""

from __future__ import annotations

import re
import socket
import time

import pytest

pytest.importorskip("ray", reason="the ray extra")

from llm_marl_envs.cli import main
from llm_marl_envs.cli.options import executor_options
from llm_marl_envs.rollout.ray.cluster import ClusterError, cluster_address, start_failure


def _dead_address() -> str:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def ray_tmp(tmp_path, monkeypatch):
    """Ray's temp dir (where ``ray start`` leaves the address file) in a scratch folder."""
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return tmp_path / "ray"


def test_no_address_and_no_cluster_starts_a_local_ray(ray_tmp):
    assert cluster_address(None) == (None, "a new local Ray")


def test_auto_with_no_cluster_is_one_line(ray_tmp):
    with pytest.raises(ClusterError, match="'auto' but no Ray cluster.*ray start --head"):
        cluster_address("auto")


@pytest.mark.parametrize("given", [None, "auto"])
def test_a_stale_address_file_is_named_not_waited_on(ray_tmp, given):
    """The head died and left its address behind: Ray would wait for it without end."""
    ray_tmp.mkdir()
    (ray_tmp / "ray_current_cluster").write_text(_dead_address())
    started = time.monotonic()
    with pytest.raises(ClusterError) as caught:
        cluster_address(given)
    assert time.monotonic() - started < 5
    said = str(caught.value)
    assert "cannot reach the Ray cluster at 127.0.0.1:" in said
    assert "ray_current_cluster" in said and "\n" not in said


def test_a_wrong_address_is_named_with_where_it_came_from(ray_tmp, monkeypatch):
    address = _dead_address()
    with pytest.raises(ClusterError, match=re.escape(f"at {address} (from --ray-address")):
        cluster_address(address)
    monkeypatch.setenv("RAY_ADDRESS", address)
    with pytest.raises(ClusterError, match=re.escape(f"at {address} (from RAY_ADDRESS)")):
        cluster_address(None)
    with pytest.raises(ClusterError, match="is not HOST:PORT"):
        cluster_address("head-without-port")


@pytest.mark.parametrize("command", ["rollout", "eval"])
def test_the_cli_stops_in_one_line_on_an_unreachable_head(ray_tmp, tmp_path, capsys, command):
    import ray

    address = _dead_address()
    if command == "rollout":
        argv = ["rollout", "llm_marl_envs/DonorGame-v0", "--policy", "scripted"]
        argv += ["--episodes", "2", "--no-progress"]
    else:
        argv = ["eval", "lite", "--policy", "scripted", "--tasks", "imdb", "--no-progress"]
        argv += ["--out", str(tmp_path / "eval")]
    assert main([*argv, "--executor", "ray", "--ray-address", address]) == 1
    out, err = capsys.readouterr()
    lines = [line for line in out.splitlines() if "stopped" in line]
    assert len(lines) == 1 and f"cannot reach the Ray cluster at {address}" in lines[0]
    assert "Traceback" not in out + err and "cannot write" not in out
    assert not ray.is_initialized()


def _args(**given):
    import argparse

    from llm_marl_envs.cli.options import _RAY_OPTIONS

    values = {name: None for name in _RAY_OPTIONS} | {"executor": "ray", "num_workers": None}
    return argparse.Namespace(**(values | given))


def test_cluster_options_make_the_executor(tmp_path):
    runtime = tmp_path / "env.yaml"
    runtime.write_text("pip: ['llm-marl-envs[ray]']\nenv_vars: {A: '1'}\n")
    executor = executor_options(
        _args(
            ray_address="10.0.0.5:6379",
            ray_runtime_env=str(runtime),
            ray_resources="CPU=2,GPU=0.5,node_tag=1",
            ray_start_timeout=30.0,
            ray_max_worker_failures=1,
            num_workers=3,
        )
    )["executor"]
    assert executor.address == "10.0.0.5:6379" and executor.num_workers == 3
    assert executor.cpus_per_worker == 2 and executor.start_timeout == 30
    assert executor.max_worker_failures == 1
    assert executor.actor_options == {
        "runtime_env": {"pip": ["llm-marl-envs[ray]"], "env_vars": {"A": "1"}},
        "num_gpus": 0.5,
        "resources": {"node_tag": 1.0},
    }
    as_json = executor_options(_args(ray_resources='{"CPU": 0.5}'))["executor"]
    assert as_json.cpus_per_worker == 0.5 and as_json.actor_options == {}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"ray_resources": "CPU=-1"}, "number >= 0"),
        ({"ray_resources": "CPU=lots"}, "number >= 0"),
        ({"ray_resources": "{not json"}, "not a JSON object"),
        ({"ray_runtime_env": "/nowhere/env.yaml"}, "no such file"),
        ({"ray_start_timeout": 0.0}, "must be positive"),
        ({"ray_max_worker_failures": -1}, "at least 0"),
        ({"executor": "local", "ray_address": "auto"}, "--ray-address apply to --executor ray"),
    ],
)
def test_bad_cluster_options_are_one_line(given, said):
    with pytest.raises(ValueError, match=said):
        executor_options(_args(**given))


def test_a_runtime_env_file_must_be_a_mapping(tmp_path):
    for text, said in [("- pip\n", "must hold a mapping"), ("a: [1\n", "not JSON or YAML")]:
        path = tmp_path / "env.yaml"
        path.write_text(text)
        with pytest.raises(ValueError, match=said):
            executor_options(_args(ray_runtime_env=str(path)))


def test_a_node_without_the_package_is_named_with_the_fix():
    error = ModuleNotFoundError("No module named 'llm_marl_envs'")
    said = str(start_failure(error, 2))
    assert "cannot import llm_marl_envs" in said and "install llm-marl-envs[ray]" in said
    assert "runtime_env" in said
    died = str(start_failure(RuntimeError("The actor died unexpectedly\nmore"), 2))
    assert died.startswith("a Ray worker died while 2 were starting") and "\n" not in died
