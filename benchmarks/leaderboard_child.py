"""What the two leaderboard benchmarks share: one ``llm-marl`` command in a fresh process that
imports the package from a given code tree only, and the baseline tree of another revision.

:func:`run_command` runs ``llm-marl ARGV`` as :data:`CHILD` (its environment: the tree on
``PYTHONPATH``, offline, a bare ``PATH``, plus what the caller adds; a timeout of 15 minutes)
and refuses an outcome whose package came from outside that tree. Used by
``leaderboard_limits.py`` (``add`` of each hostile case) and ``leaderboard_costs.py`` (``add``,
``verify`` and ``build``); not a benchmark itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The team of the honest lite evaluation both benchmarks start from: the scripted players
#: with a random GSM8K pioneer (a team no shipped entry plays).
TEAM = {"0": "scripted", "pioneer_0": "random"}
#: Runs ``llm-marl ARGV`` (a leaderboard command) with the package found on PYTHONPATH (the
#: editable install's finder removed, so the baseline's tree is the one imported) and prints,
#: last, its outcome and peak resident set: ``VmHWM`` of this process image (``ru_maxrss`` would count the
#: benchmark's own memory, inherited at the fork).
CHILD = (
    "import json, sys, time\n"
    "sys.meta_path[:] = [f for f in sys.meta_path\n"
    "    if not str(getattr(f, '__module__', '')).startswith('__editable__')]\n"
    "import llm_marl_envs\n"
    "from llm_marl_envs.cli import main\n"
    "start = time.perf_counter()\n"
    "try:\n"
    "    status = main(sys.argv[1:])\n"
    "except SystemExit as stop:\n"
    "    status = stop.code\n"
    "except BaseException as error:\n"
    "    status = f'{type(error).__name__}: {str(error)[:120]}'\n"
    "seconds = time.perf_counter() - start\n"
    "status_lines = open('/proc/self/status').read().splitlines()\n"
    "peak = next(int(line.split()[1]) for line in status_lines if line.startswith('VmHWM'))\n"
    "print(json.dumps({'status': status, 'seconds': seconds, 'peak_kib': peak,\n"
    "                  'code': llm_marl_envs.__file__}))\n"
)


def run_command(code: Path, argv: list[str], env: dict[str, str] | None = None) -> tuple[dict, str]:
    """``llm-marl ARGV`` in a fresh process importing the package from ``code`` (``env``: more
    environment variables): its outcome (``status``, ``seconds``, ``peak_kib``) and its
    stderr. Exits when the child imported the package from outside ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        capture_output=True,
        text=True,
        env={
            "PYTHONPATH": str(code),
            "HF_HUB_OFFLINE": "1",
            "PATH": "/usr/bin:/bin",
            **(env or {}),
        },
        cwd=code,
        timeout=900,
    )
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if not outcome.pop("code").startswith(str(code)):
        raise SystemExit(f"the child imported llm_marl_envs from outside {code}")
    return outcome, done.stderr


def baseline_tree(revision: str, scratch: Path) -> Path:
    """A checkout of ``revision`` (a git worktree in ``scratch``)."""
    tree = scratch / "baseline"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), revision],
        check=True,
        capture_output=True,
    )
    return tree


def remove_baseline_tree(scratch: Path) -> None:
    """Remove the worktree :func:`baseline_tree` made in ``scratch`` (if it did)."""
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "remove", "--force", str(scratch / "baseline")],
        capture_output=True,
    )
