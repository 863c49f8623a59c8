"""A real Ray cluster of separate ``ray start`` processes on this machine.

:class:`LocalRayCluster` starts a head and more nodes, each a ``ray start --block`` process
group of its own with its own temp folder and free ports (dashboard off, token
authentication set explicitly), so that a driver joins it by address as it would join a
cluster of machines, and a node can be lost (:meth:`~LocalRayCluster.kill`) as a machine is.
It ends only the processes it started (never ``ray stop``). It is a context manager, and the
``ray_cluster`` / ``ray_cluster_factory`` fixtures of :mod:`llm_marl_envs.testing.fixtures`.
It needs the ``ray`` extra (``pip install 'llm-marl-envs[ray]'``) and Linux (``/proc``).

>>> from llm_marl_envs.testing import LocalRayCluster  # doctest: +SKIP
>>> with LocalRayCluster().start_nodes(2) as cluster:  # doctest: +SKIP
...     rollout(env_id, policies, episodes=8, executor=RayExecutor(2, address=cluster.address))
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = ["LocalRayCluster", "descendants", "free_port", "ray_command"]

#: Seconds a node has to join before :meth:`LocalRayCluster.start` gives up.
START_SECONDS = 120
#: Where the nodes' Ray temp folders go. A node's plasma store listens on an AF_UNIX socket
#: under ``<temp>/session_<date>_<pid>/sockets/``, and such a path may be 107 bytes at most:
#: a pytest-xdist worker's ``tmp_path`` (``/tmp/pytest-of-root/pytest-3/popen-gw1/...``) is
#: already too deep for it, so the temp folders get a short root of their own.
SHORT_ROOT = "/tmp"


def ray_command() -> Path | None:
    """The ``ray`` command beside this interpreter, else the one on ``PATH``; None: no Ray."""
    beside = Path(sys.executable).with_name("ray")
    if beside.exists():
        return beside
    found = shutil.which("ray")
    return Path(found) if found else None


def free_port() -> int:
    """A TCP port free on ``127.0.0.1`` now (the system's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """The process ids below ``pid`` (children, theirs, ...), read from ``/proc`` (Linux)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _merged(base: Mapping[str, str], more: Mapping[str, str | None] | None) -> dict[str, str]:
    """``base`` with ``more`` over it (a value None removes the variable)."""
    merged = dict(base)
    for key, value in (more or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


class LocalRayCluster:
    """A head and more nodes, each a ``ray start --block`` process group of its own.

    Args:
        root: A folder for the nodes' logs (their Ray temp folders go to a short folder of
            their own under :data:`SHORT_ROOT`, removed by :meth:`stop`); None: a new temp
            folder, removed by :meth:`stop` too.
        fast_health_checks: The head declares a node dead after about 2 s without an
            answer (Ray's default is about 15 s), so tests see a lost node quickly.

    ``address`` is the head's ``HOST:PORT``; ``env`` the environment its processes run with
    (give it to a driver process: it holds the cluster's auth token); ``nodes`` the node
    processes by name. As a context manager it stops the cluster on exit.
    """

    def __init__(self, root: Path | str | None = None, fast_health_checks: bool = True) -> None:
        self._own_root = root is None
        root = tempfile.mkdtemp(prefix="ray-cluster-") if root is None else root
        self.root, self.port = Path(root), free_port()
        self.temp = Path(tempfile.mkdtemp(prefix="ray-", dir=SHORT_ROOT))
        self.address = f"127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(16),
            "RAY_USAGE_STATS_ENABLED": "0",
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        if fast_health_checks:
            self.env["RAY_health_check_period_ms"] = "500"
            self.env["RAY_health_check_failure_threshold"] = "4"
        self.env.pop("RAY_ADDRESS", None)
        self.nodes: dict[str, subprocess.Popen] = {}
        self._taken: set[int] = set()  # ports given to components already

    def _ports(self) -> list[str]:
        """Free ports for a node's components, none inside its workers' range (nor the head's
        port), so no two components of the cluster ask for the same one."""
        low = self._worker_range()
        taken = set(range(low, low + 100)) | {self.port} | self._taken

        def port() -> int:
            while (chosen := free_port()) in taken:
                pass
            taken.add(chosen)
            return chosen

        names = ["node-manager", "object-manager", "runtime-env-agent", "dashboard-agent-grpc"]
        names += ["dashboard-agent-listen", "metrics-export"]
        chosen = [f"--{name}-port={port()}" for name in names]
        self._taken |= taken
        return [*chosen, f"--min-worker-port={low}", f"--max-worker-port={low + 99}"]

    def _worker_range(self) -> int:
        """The first of 100 free ports for a node's workers: a range that holds neither the
        head's port nor a port given to another component of the cluster (Ray refuses to start
        a node whose worker range overlaps its GCS port, and a random range did once in CI)."""
        given = self._taken | {self.port}
        while True:
            low = free_port() // 100 * 100
            if not any(low <= port < low + 100 for port in given):
                return low

    def start_nodes(
        self,
        count: int = 2,
        *,
        cpus: int = 1,
        python: str | None = None,
        env: Mapping[str, str | None] | None = None,
    ) -> LocalRayCluster:
        """Start a head and ``count - 1`` more nodes (``node2``, ``node3``, ...) of ``cpus``
        CPUs each, and return the cluster; ``python`` and ``env``: the interpreter and the
        environment variables of the nodes after the head (see :meth:`start`). When one does
        not join, the cluster is stopped and the error raised."""
        try:
            for index in range(count):
                name, other = ("head", False) if index == 0 else (f"node{index + 1}", True)
                self.start(
                    name, python=python if other else None, cpus=cpus, env=env if other else None
                )
        except BaseException:
            self.stop()
            raise
        return self

    def start(
        self,
        name: str,
        python: str | None = None,
        cpus: int = 1,
        env: Mapping[str, str | None] | None = None,
    ) -> None:
        """Start a node (the head first) with ``cpus`` CPUs and wait until it has joined;
        ``python``: the interpreter its workers run (the node's own environment), this one's
        by default; ``env``: environment variables of this node's processes over the
        cluster's ``env`` (None removes one: ``{"PYTHONPATH": None}``)."""
        head = not self.nodes
        command = ray_command()
        if command is None and python is None:
            raise RuntimeError("no `ray` command: install the ray extra (llm-marl-envs[ray])")
        argv = [str(command)]
        if python is not None:  # the ray command of that environment
            argv = [python, "-c", "import sys; from ray.scripts.scripts import main; main()"]
        argv += ["start", "--block", f"--num-cpus={cpus}", "--disable-usage-stats"]
        argv += [f"--temp-dir={self.temp / name}"]
        if head:
            argv += ["--head", f"--port={self.port}", "--include-dashboard=false"]
        else:
            argv += [f"--address={self.address}"]
        argv += ["--node-ip-address=127.0.0.1", *self._ports()]
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 - kept by the process
        self.nodes[name] = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_merged(self.env, env),
            cwd=self.root,  # (a worker finds modules in its node's working directory)
            start_new_session=True,
        )
        self.wait_for(len(self.nodes))

    def wait_for(self, count: int) -> None:
        """Until ``count`` nodes are alive (asked by a driver process of its own)."""
        code = (
            "import ray, sys; ray.init(address=sys.argv[1], logging_level='error'); "
            "print(sum(n['Alive'] for n in ray.nodes()))"
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            for name, process in self.nodes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited: {self.log(name)}")
            try:
                probe = subprocess.run(
                    [sys.executable, "-c", code, self.address],
                    env=self.env,
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
            except subprocess.TimeoutExpired:
                continue
            if probe.returncode == 0 and probe.stdout.strip().splitlines()[-1:] == [str(count)]:
                return
            time.sleep(1)
        raise RuntimeError(f"the cluster did not reach {count} nodes: {self.log('head')}")

    def log(self, name: str) -> str:
        """The last 3,000 characters node ``name`` wrote."""
        return (self.root / f"{name}.log").read_text(errors="replace")[-3000:]

    def kill(self, name: str) -> None:
        """End all of a node's processes at once, as a lost machine ends them: its raylet
        and the rest of its process group, and its workers (each in a session of its own,
        they would go on serving calls for a while without their raylet)."""
        process = self.nodes.pop(name)
        family = descendants(process.pid)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in family:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait(timeout=30)

    def stop(self) -> None:
        """Kill every node (the head last) and remove the nodes' temp folders; again: nothing."""
        for name in list(self.nodes)[::-1]:
            self.kill(name)
        shutil.rmtree(self.temp, ignore_errors=True)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
