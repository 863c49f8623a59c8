"""Ray on a real two-node cluster (issue 40): a head and a second node started as separate
``ray start`` processes on this machine (their own temp dirs and free ports, dashboard off,
token authentication set explicitly), and drivers that join them as a user's would, in their
own processes. The tests end only the processes they started (never ``ray stop``).

Checked: the workers land on both nodes and the records equal the local executor's; a node
lost mid-rollout on a full cluster costs its episodes, not the run (the records still equal
the local run's), and so does one lost while the workers start; a head that stopped is one
line when the next command starts, a cluster that stops mid-run ends it within seconds; a
node whose Python environment lacks this package is one line naming the fix, and that fix
(a runtime_env with the repository as working_dir) works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the ray extra")

from llm_marl_envs.testing import LocalRayCluster as Cluster  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(ray_cluster):
    """A head and a second node (the ``ray_cluster`` fixture of llm_marl_envs.testing)."""
    return ray_cluster


def _environment_without_the_package(root: Path) -> str:
    """A Python environment with this one's libraries (Ray among them) but not this package:
    a new venv whose path holds our site-packages as a plain entry, so that the editable
    install's hook (a .pth file there) never runs. Returns its interpreter."""
    import site
    import venv

    venv.create(root, with_pip=False, symlinks=True)
    python = root / "bin" / "python"
    theirs = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(theirs, "borrowed.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return str(python)


@pytest.fixture
def cluster_with_a_bare_node(ray_cluster_factory, tmp_path_factory):
    """A head with this package and a second node whose environment lacks it (nor does a
    PYTHONPATH that brings a source checkout to the head reach it)."""
    root = tmp_path_factory.mktemp("bare")
    python = _environment_without_the_package(root / "bare-env")
    bare = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    probe = subprocess.run(
        [python, "-c", "import ray; import llm_marl_envs"],
        capture_output=True,
        text=True,
        cwd=root,
        env=bare,
    )
    assert "No module named 'llm_marl_envs'" in probe.stderr, probe.stderr[-2000:]
    return ray_cluster_factory(2, python=python, env={"PYTHONPATH": None})


_DRIVER = r"""
import json, sys, time
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.registry import make
from llm_marl_envs.rollout import rollout
from llm_marl_envs.rollout.ray.executor import RayExecutor

env_id, episodes, address, workers = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
pace = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
start_delay = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0


def slow_start(first=[True]):  # the env; each worker's first copy is slow to make
    if first:
        first.pop()
        time.sleep(start_delay)
    return make(env_id)


def paced(agent):
    inner = scripted_policy(env_id, agent)

    def act(observation, info):
        if pace:
            print("playing", file=sys.stderr, flush=True)
            time.sleep(pace)
        return inner(observation, info)

    return act


policies = {a: paced(a) for a in make(env_id).possible_agents}
executor = None
if address != "local":
    executor = RayExecutor(workers, address=address, keep_workers=True)
from llm_marl_envs.rollout import RolloutError
try:
    print("starting", file=sys.stderr, flush=True)
    result = rollout(slow_start if start_delay else env_id, policies, episodes=episodes,
                     batch_size=4, seed=3, progress=False, executor=executor or "local")
except RolloutError as error:
    print(f"stopped: {error}", flush=True)
    sys.exit(1)
import ray
nodes = sorted({ray.get(w.node.remote()) for w in executor.live_workers}) if executor else []
live = len(executor.live_workers) if executor else 0
failures = executor.failures if executor else 0
print(json.dumps({"episodes": [e.to_dict() for e in result.episodes], "nodes": nodes,
                  "failures": failures, "live": live}))
"""


def _drive(cluster: Cluster, env_id: str, episodes: int, address: str, workers: int = 2):
    run = subprocess.run(
        [sys.executable, "-c", _DRIVER, env_id, str(episodes), address, str(workers)],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _driver_until(cluster: Cluster, said: str, *args: str) -> subprocess.Popen:
    """The driver script started on ``cluster`` with ``args`` (env id, episodes, address,
    workers, pace, start delay), once it has said ``said`` on stderr (``starting``: the
    rollout begins; ``playing``: the first turn, the workers started)."""
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, *args],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in driver.stderr:
        if line.startswith(said):
            break
    return driver


def _played(episodes: list[dict]) -> list[dict]:
    """The records without timings and policy names, sorted by episode."""
    keep = []
    for episode in sorted(episodes, key=lambda e: e["episode"]):
        episode = {k: v for k, v in episode.items() if "second" not in k and k != "policies"}
        episode["turns"] = [
            {k: v for k, v in turn.items() if "second" not in k} for turn in episode["turns"]
        ]
        keep.append(episode)
    return keep


def test_workers_land_on_both_nodes_and_records_equal_the_local_run(cluster):
    env_id = "llm_marl_envs/DonorGame-v0"
    remote = _drive(cluster, env_id, 8, cluster.address)
    local = _drive(cluster, env_id, 8, "local")
    assert len(remote["nodes"]) == 2  # one worker per node: each has one CPU
    assert _played(remote["episodes"]) == _played(local["episodes"])


def test_a_node_lost_mid_rollout_costs_its_episodes_not_the_run(cluster, tmp_path):
    """The cluster is full (one worker per CPU): the lost node's worker cannot be replaced,
    so its episodes are replayed on the head's worker; the records equal the local run's."""
    env_id, episodes = "llm_marl_envs/MazeCollab-v0", 24
    driver = _driver_until(cluster, "playing", env_id, str(episodes), cluster.address, "2", "0.02")
    time.sleep(1)
    assert driver.poll() is None, "the rollout ended before the node was lost"
    cluster.kill("node2")
    out, err = driver.communicate(timeout=600)
    said = "\n".join(line for line in err.splitlines() if line != "playing")
    assert driver.returncode == 0, said[-4000:]
    remote = json.loads(out.strip().splitlines()[-1])
    local = _drive(cluster, env_id, episodes, "local")
    assert remote["failures"] >= 1 and remote["live"] == 1  # not replaced: its machine is gone
    assert _played(remote["episodes"]) == _played(local["episodes"])


def test_a_node_lost_while_the_workers_start_costs_its_worker_not_the_run(cluster):
    """Each worker's first env copy takes 8 s; the second node is lost 3 s after the rollout
    began: its worker dies (or waits for a place that is gone) and the rollout goes on with
    the head's worker, with a warning, to the local run's records."""
    env_id, episodes = "llm_marl_envs/MazeCollab-v0", 8
    args = (env_id, str(episodes), cluster.address, "2", "0", "8")
    driver = _driver_until(cluster, "starting", *args)
    time.sleep(3)
    assert driver.poll() is None, "the rollout ended before the node was lost"
    cluster.kill("node2")
    out, err = driver.communicate(timeout=600)
    assert driver.returncode == 0, err[-4000:]
    assert "1 of 2 Ray workers were lost while starting" in err, err[-4000:]
    remote = json.loads(out.strip().splitlines()[-1])
    local = _drive(cluster, env_id, episodes, "local")
    assert remote["failures"] == 1 and remote["live"] == 1
    for episode in remote["episodes"]:  # a function, not the id, named the env
        assert episode.pop("env_id") == "MazeCollab-v0"
    for episode in local["episodes"]:
        assert episode.pop("env_id") == "llm_marl_envs/MazeCollab-v0"
    assert _played(remote["episodes"]) == _played(local["episodes"])


def test_a_stopped_head_is_one_line_for_the_next_command(cluster, tmp_path):
    cluster.stop()
    argv = [sys.executable, "-m", "llm_marl_envs.cli", "rollout", "llm_marl_envs/DonorGame-v0"]
    argv += ["--policy", "scripted", "--episodes", "2", "--no-progress", "--executor", "ray"]
    run = subprocess.run(
        [*argv, "--ray-address", cluster.address],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert f"cannot reach the Ray cluster at {cluster.address}" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr


def test_a_cluster_stopped_mid_rollout_ends_it_in_seconds_keeping_the_episodes(cluster):
    """Ray's own client waits a minute for a stopped head; the rollout stops within seconds
    in one line that keeps the finished episodes."""
    env_id = "llm_marl_envs/MazeCollab-v0"
    driver = _driver_until(cluster, "playing", env_id, "200", cluster.address, "2", "0.02")
    time.sleep(2)
    assert driver.poll() is None, "the rollout ended before the cluster stopped"
    cluster.stop()
    stopped = time.monotonic()
    out, _ = driver.communicate(timeout=300)
    took = time.monotonic() - stopped
    assert driver.returncode == 1
    said = [line for line in out.splitlines() if line.startswith("stopped:")]
    assert len(said) == 1 and "the Ray cluster stopped" in said[0]
    assert "finished episode(s) kept" in said[0]
    assert took < 30, f"the rollout took {took:.0f} s to stop"


def _cli_rollout(cluster: Cluster, out: Path, *more: str) -> subprocess.CompletedProcess:
    """``llm-marl rollout`` as a user runs it, from a folder of its own (a driver's working
    directory is on its workers' path: the repository's would hand them the package)."""
    argv = [sys.executable, "-m", "llm_marl_envs.cli", "rollout", "llm_marl_envs/MazeCollab-v0"]
    argv += ["--policy", "scripted", "--episodes", "6", "--seed", "4", "--no-progress"]
    argv += ["--out", str(out), *more]
    return subprocess.run(
        argv, env=cluster.env, cwd=out.parent, capture_output=True, text=True, timeout=600
    )


def test_a_node_without_the_package_is_one_line_that_names_the_fix(
    cluster_with_a_bare_node, tmp_path
):
    cluster = cluster_with_a_bare_node
    ray = ["--executor", "ray", "--num-workers", "2", "--ray-address", cluster.address]
    run = _cli_rollout(cluster, tmp_path / "episodes.jsonl", *ray)
    said = run.stdout + run.stderr
    assert run.returncode == 1, said[-3000:]
    assert "a Ray node cannot import llm_marl_envs: install llm-marl-envs[ray]" in run.stdout
    assert "runtime_env" in run.stdout and "Traceback" not in said


def test_a_runtime_env_brings_the_package_to_a_node_without_it(cluster_with_a_bare_node, tmp_path):
    """The documented fix for a source checkout, taken: ``--ray-runtime-env`` with the
    repository as the ``working_dir`` (Ray uploads it, less what .gitignore names); the
    rollout runs on both nodes and writes the local run's records."""
    import llm_marl_envs

    cluster = cluster_with_a_bare_node
    runtime = tmp_path / "runtime_env.yaml"
    runtime.write_text(f"working_dir: {Path(llm_marl_envs.__file__).parent.parent}\n")
    ray = ["--executor", "ray", "--num-workers", "2", "--ray-address", cluster.address]
    remote = tmp_path / "remote" / "episodes.jsonl"
    local = tmp_path / "local" / "episodes.jsonl"
    remote.parent.mkdir()
    local.parent.mkdir()
    run = _cli_rollout(cluster, remote, *ray, "--ray-runtime-env", str(runtime))
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert _cli_rollout(cluster, local).returncode == 0

    def played(path: Path) -> list[dict]:
        return _played([json.loads(line) for line in path.read_text().splitlines()])

    assert played(remote) == played(local)


def test_an_eval_stopped_with_its_cluster_resumes_on_a_new_one_to_the_local_results(
    ray_cluster_factory, tmp_path
):
    """``llm-marl eval`` on a two-node cluster; the cluster stops mid-run: one line with the
    resume hint, the finished episodes kept. The same command on a brand-new cluster (another
    port) resumes, and the results and record files equal a local run's, byte for byte."""
    out = tmp_path / "eval"
    argv = [sys.executable, "-m", "llm_marl_envs.cli", "eval", "lite", "--policy", "tiny"]
    argv += ["--tasks", "maze", "gsm8k", "--batch-size", "1", "--no-progress"]
    first = ray_cluster_factory(2)
    try:
        ray = ["--executor", "ray", "--ray-address", first.address]
        driver = subprocess.Popen(
            [*argv, "--out", str(out), *ray],
            env=first.env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while driver.poll() is None and time.monotonic() < deadline:  # some episodes written
            if sum(p.read_text().count("\n") for p in out.glob("episodes/*.jsonl*")) >= 3:
                break
            time.sleep(0.2)
        assert driver.poll() is None, "the eval ended before the cluster stopped"
        first.stop()
        said, err = driver.communicate(timeout=300)
    finally:
        first.stop()
    assert driver.returncode == 1, (said + err)[-3000:]
    assert "the Ray cluster stopped" in said and "run the same command to resume" in said, err[
        -3000:
    ]
    assert "Traceback" not in said + err

    second = ray_cluster_factory(2)
    try:
        ray = ["--executor", "ray", "--ray-address", second.address]
        run = subprocess.run(
            [*argv, "--out", str(out), *ray],
            env=second.env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        second.stop()
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert "maze: done earlier (16 episodes)" in run.stderr  # kept, not played again

    local = tmp_path / "local"
    run = subprocess.run(
        [*argv, "--out", str(local)], env=second.env, cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    results = [json.loads((folder / "results.json").read_text()) for folder in (out, local)]
    assert results[0]["tasks"] == results[1]["tasks"]
    for task in ("maze", "gsm8k"):
        name = f"episodes/{task}.jsonl"
        assert (out / name).read_bytes() == (local / name).read_bytes()
