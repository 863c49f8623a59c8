"""Shared set-up of the trainer tests, and the kill -9 helpers of their fault-injection tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

# The trainers import their shared skeleton as ``training``, as ``python baselines/cory.py`` lets
# them (Python puts a script's folder first on sys.path); the tests load them by path, so they
# put that folder there the same way.
BASELINES = str(Path(__file__).resolve().parents[2] / "baselines")
if BASELINES not in sys.path:
    sys.path.insert(0, BASELINES)


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


# Runs a trainer script (argv[2:]) as __main__ and kills its own process with SIGKILL right
# after the n-th os.fsync (argv[1]): the trainers fsync only inside a checkpoint write, so this
# lands a kill -9 at a chosen step of one, with no test hook in the trainers. runpy does not
# put the script's folder on sys.path: the child puts it there, as ``python script.py`` does.
KILL_AT_FSYNC = """
import os, runpy, signal, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[2])))
target, calls, fsync = int(sys.argv[1]), [0], os.fsync
def fsync_then_maybe_die(fd):
    fsync(fd)
    calls[0] += 1
    if calls[0] == target:
        os.kill(os.getpid(), signal.SIGKILL)
os.fsync = fsync_then_maybe_die
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _child_env() -> dict[str, str]:
    """One thread (the in-process reference runs use one: same floating-point sums), offline."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        env[flag] = "1"
    return env


def _at_fsync(script: Path, argv: list[str], n: int, cwd: Path) -> None:
    """Run ``script argv`` in a child process killed by SIGKILL right after its n-th fsync."""
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AT_FSYNC, str(n), str(script), *argv],
        cwd=cwd,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, f"not killed at fsync {n}:\n{proc.stderr[-3000:]}"


def _after_progress(
    script: Path, argv: list[str], metrics: Path, lines: int, delay: float, cwd: Path
) -> int:
    """Run ``script argv`` in a child process; once ``metrics`` has ``lines`` lines, wait
    ``delay`` seconds and kill it with SIGKILL. Returns its exit status (-9 if killed)."""
    proc = subprocess.Popen(
        [sys.executable, str(script), *argv],
        cwd=cwd,
        env=_child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            text = metrics.read_text() if metrics.exists() else ""
            if text.count("\n") >= lines:
                time.sleep(delay)
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.02)
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _signal_after_progress(
    script: Path, argv: list[str], metrics: Path, lines: int, sig: int, cwd: Path
) -> subprocess.CompletedProcess:
    """Run ``script argv`` in a child process; once ``metrics`` has ``lines`` lines, send it
    ``sig`` (SIGTERM as a scheduler does, SIGINT as Ctrl-C does) and let it end by itself.
    Returns its exit status and output."""
    proc = subprocess.Popen(
        [sys.executable, str(script), *argv],
        cwd=cwd,
        env=_child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 300
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            text = metrics.read_text() if metrics.exists() else ""
            if text.count("\n") >= lines:
                proc.send_signal(sig)
                break
            time.sleep(0.02)
        out, err = proc.communicate(timeout=300)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _twice(script: Path, argv: list[str], out: Path, fsync: int, delay: float) -> None:
    """Kill -9 a run inside a checkpoint write (after its ``fsync``-th fsync), then its
    ``--resume`` ``delay`` seconds after it has logged an iteration past the first run's."""
    _at_fsync(script, argv, fsync, cwd=out.parent)
    logged = len((out / "metrics.jsonl").read_text().splitlines())
    _after_progress(
        script, [*argv, "--resume"], out / "metrics.jsonl", logged + 1, delay, cwd=out.parent
    )


@pytest.fixture(scope="session")
def kill9() -> SimpleNamespace:
    """A real trainer process killed with SIGKILL, with one torch thread (as the in-process runs
    it is compared with): ``kill9.at_fsync(script, argv, n, cwd)`` inside a checkpoint write,
    ``kill9.after_progress(script, argv, metrics, lines, delay, cwd)`` at a time, and
    ``kill9.twice(script, argv, out, fsync, delay)`` one after the other;
    ``kill9.signal_after_progress(script, argv, metrics, lines, sig, cwd)`` a SIGTERM or SIGINT
    once ``lines`` iterations are logged (the trainer then saves and exits by itself); and
    ``kill9.selected(request, name)``: whether the requesting module's test ``name`` will run."""
    return SimpleNamespace(
        at_fsync=_at_fsync,
        after_progress=_after_progress,
        twice=_twice,
        selected=_selected,
        signal_after_progress=_signal_after_progress,
    )


def _selected(request: pytest.FixtureRequest, name: str) -> bool:
    return any(
        item.module is request.module and item.name == name for item in request.session.items
    )


@pytest.fixture(scope="module")
def background():
    """One worker thread for a module's child processes (joined at the module's end): started
    early, they run on the second core while the module's in-process tests run on the first."""
    with ThreadPoolExecutor(1) as pool:
        yield pool
