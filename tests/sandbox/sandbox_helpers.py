"""Helpers shared by the sandbox tests: process accounting and a known-good program."""

from __future__ import annotations

import os
from pathlib import Path

from llm_marl_envs.sandbox import SandboxLimits, SandboxPool, default_uid_base

ADD = "def add(a, b):\n    return a + b\n"
ADD_TESTS = ["assert candidate(1, 2) == 3", "assert candidate(-1, 1) == 0"]
FAST = SandboxLimits(timeout=1.0)


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` (zombies included)."""
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        ppid = _status(pid).get("PPid")
        if ppid:
            children.setdefault(int(ppid), []).append(pid)
    found, stack = set(), [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def processes_of_uids(uids: range) -> list[int]:
    out = []
    for pid in all_pids():
        uid_line = _status(pid).get("Uid", "")
        if uid_line and any(int(u) in uids for u in uid_line.split()):
            out.append(pid)
    return out


def _is_worker(pid: int) -> bool:
    try:
        return b"_worker.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


#: Children of the test process that were there before the running test began (set by the
#: autouse fixture in conftest.py): a server another test in this pytest-xdist worker shares
#: for the whole run (a session fixture's), not this test's leftovers.
BEFORE_TEST: set[int] = set()


def children_of_this_process() -> set[int]:
    return {pid for pid in all_pids() if _status(pid).get("PPid") == str(os.getpid())}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "(ended)"


def assert_no_leftovers(pool: SandboxPool | None = None) -> None:
    """Only idle fork servers (each with its one spawner) remain; no sandbox uid runs.

    Children of the test process are the fork servers of every pool it started (and whatever
    was running before the test began); each idle fork server has exactly one descendant, its
    spawner.
    """
    children = children_of_this_process()
    strays = {pid: _cmdline(pid) for pid in children - BEFORE_TEST if not _is_worker(pid)}
    assert not strays, f"stray children: {strays}"
    children = {pid for pid in children if _is_worker(pid)}
    for zygote in children:
        below = descendants(zygote)
        assert len(below) == 1, f"stray processes under fork server {zygote}: {below}"
    if pool is not None:
        assert set(pool.worker_pids()) <= children
    base = default_uid_base()
    assert processes_of_uids(range(base, base + 64)) == []


def check_still_works(pool: SandboxPool) -> None:
    result = pool.run(ADD, ADD_TESTS, "add")
    assert result.status == "ok" and result.tests_passed == 2, result
