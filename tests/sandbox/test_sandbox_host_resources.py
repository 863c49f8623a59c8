"""Kernel memory and host-wide resources (docs/sandbox.md: ``bounded_memory``,
``no_host_resources``, ``minimal_filesystem``), and the worker's exits.

Each program tries one way to take kernel memory that no rlimit counts, or a resource the
host shares, and reports what the kernel answered; the test asserts the refusal (or, for
locks, that the host's own locker is not blocked). Quantities are kept small (one semaphore,
one AIO event): the refusal is what is measured, not the damage.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sandbox_helpers import check_still_works

from llm_marl_envs.sandbox import SandboxLimits

REPO = Path(__file__).resolve().parents[2]
SANDBOX = REPO / "llm_marl_envs" / "sandbox"
pytestmark = pytest.mark.slow


def _guarantee(caps: dict, name: str) -> None:
    if not caps["guarantees"][name]:
        pytest.skip(f"{name} does not hold on this machine (mode {caps['mode']})")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_test{name}", SANDBOX / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- kernel memory
SYSV_IPC = """
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_ssize_t
IPC_PRIVATE, IPC_STAT = 0, 2

def f(x):
    buf = ctypes.create_string_buffer(256)
    calls = {
        "semget": lambda: libc.semget(IPC_PRIVATE, 1, 0o600),
        "semop": lambda: libc.semop(0, buf, 1),
        "semtimedop": lambda: libc.semtimedop(0, buf, 1, None),
        "semctl": lambda: libc.semctl(0, 0, IPC_STAT, buf),
        "msgget": lambda: libc.msgget(IPC_PRIVATE, 0o600),
        "msgsnd": lambda: libc.msgsnd(0, buf, 8, 0o4000),
        "msgrcv": lambda: libc.msgrcv(0, buf, 8, 0, 0o4000),
        "msgctl": lambda: libc.msgctl(0, IPC_STAT, buf),
        "shmget": lambda: libc.shmget(IPC_PRIVATE, 1 << 20, 0o600),
        "shmat": lambda: libc.shmat(0, None, 0),
        "shmctl": lambda: libc.shmctl(0, IPC_STAT, buf),
        "shmdt": lambda: libc.shmdt(buf),
    }
    answered = {}
    for name, call in calls.items():
        ctypes.set_errno(0)
        ret = call()
        answered[name] = "EPERM" if ret == -1 and ctypes.get_errno() == 1 else [ret, ctypes.get_errno()]
    return {name: v for name, v in answered.items() if v != "EPERM"}
"""


def test_sysv_semaphores_and_message_queues_are_refused(pool, caps):
    """Round 3: 200 semget(IPC_PRIVATE, 32000) grew the host's slab by 400 MiB; 24,000
    msgget + msgsnd by 384 MiB. Every SysV IPC call is now EPERM (on a nonexistent id the
    kernel would say EINVAL, so EPERM is the filter's answer)."""
    _guarantee(caps, "bounded_memory")
    result = pool.run(SYSV_IPC, ["r = candidate(0)\nassert r == {}, r"], "f")
    assert result.tests_passed == 1, result.tests[0].message
    check_still_works(pool)


MANY_FILES = """
import errno, os

def f(limit):
    made, error = 0, None
    try:
        while made < limit:
            os.close(os.open(f"/tmp/work/{made}", os.O_CREAT | os.O_WRONLY, 0o600))
            made += 1
    except OSError as e:
        error = errno.errorcode.get(e.errno, str(e.errno))
    return [made, error, os.statvfs("/tmp").f_files]
"""


def test_empty_files_cannot_exhaust_kernel_memory(pool, isolated):
    """Round 3: 300k empty files in /tmp cost 596 MiB of kernel memory and no data block
    (``statvfs`` showed 3,085,510 inodes). /tmp now has one inode per 4 KiB of its size."""
    _guarantee(isolated, "bounded_memory")
    limits = SandboxLimits(timeout=20, file_size_bytes=1 << 24)
    inodes = _load("_isolation").tmp_inodes(limits.file_size_bytes)
    assert inodes == 4096
    test = f"made, error, total = candidate(40_000)\nassert total <= {inodes}, total\n"
    test += "assert error == 'ENOSPC' and 0 < made < total, (made, error)"
    result = pool.run(MANY_FILES, [test], "f", limits=limits)
    assert result.tests_passed == 1, result.tests[0].message


EVERY_TMPFS = """
def f(x):
    unbounded = []
    for line in open("/proc/self/mountinfo"):
        mount, _, sb = line.partition(" - ")
        fields, (fstype, _source, options) = mount.split(), sb.split()[:3]
        if fstype == "tmpfs" and fields[3] == "/":  # a tmpfs of its own, not a bind of one
            if "nr_inodes=" not in options or "size=" not in options:
                unbounded.append([fields[4], options])
    return unbounded
"""


def test_every_tmpfs_the_program_sees_has_an_inode_limit(pool, isolated):
    """The minimal root, the covers of site-packages and hidden paths, and /tmp."""
    _guarantee(isolated, "minimal_filesystem")
    result = pool.run(EVERY_TMPFS, ["r = candidate(0)\nassert r == [], r"], "f")
    assert result.tests_passed == 1, result.tests[0].message


POSIX_TIMERS = """
import ctypes

libc = ctypes.CDLL(None, use_errno=True)

def f(limit):
    timer, made = ctypes.c_void_p(), 0
    while made < limit and libc.timer_create(1, None, ctypes.byref(timer)) == 0:
        made += 1
    return [made, ctypes.get_errno()]
"""


def test_posix_timers_and_queued_signals_are_bounded(pool, caps):
    """Each POSIX timer holds a preallocated signal: kernel memory bounded only by
    RLIMIT_SIGPENDING (96,365 on the development machine, made in 3 s). An attempt gets 64."""
    _guarantee(caps, "bounded_memory")
    test = "made, error = candidate(20_000)\nassert made <= 64 and error == 11, (made, error)"
    result = pool.run(POSIX_TIMERS, [test], "f", limits=SandboxLimits(timeout=10))
    assert result.tests_passed == 1, result.tests[0].message


# --------------------------------------------------------------------------- host resources
HOST_WIDE = """
import ctypes, os

libc = ctypes.CDLL(None, use_errno=True)

def f(numbers):
    ctx = ctypes.c_ulong(0)
    root = os.open("/", os.O_RDONLY)
    calls = {
        "io_setup": lambda: libc.syscall(numbers["io_setup"], 1, ctypes.byref(ctx)),
        "inotify_init1": lambda: libc.inotify_init1(0),
        "fanotify_init": lambda: libc.fanotify_init(0x200, 0),  # FAN_REPORT_FID: no privilege
        "sync": lambda: libc.syscall(numbers["sync"]),
        "syncfs": lambda: libc.syncfs(root),
        "dnotify": lambda: libc.fcntl(root, 1026, 0x80000001),  # F_NOTIFY, DN_ACCESS|MULTISHOT
    }
    if numbers.get("inotify_init") is not None:
        calls["inotify_init"] = lambda: libc.syscall(numbers["inotify_init"])
    answered = {}
    for name, call in calls.items():
        ctypes.set_errno(0)
        ret = call()
        answered[name] = "EPERM" if ret == -1 and ctypes.get_errno() == 1 else [ret, ctypes.get_errno()]
    return {name: v for name, v in answered.items() if v != "EPERM"}
"""
NUMBERS = {
    "x86_64": {"io_setup": 206, "sync": 162, "inotify_init": 253},
    "aarch64": {"io_setup": 0, "sync": 81, "inotify_init": None},
}


@pytest.mark.skipif(os.uname().machine not in NUMBERS, reason="raw syscall numbers")
def test_aio_inotify_fanotify_and_sync_are_refused(pool, caps):
    """Round 3: two io_setup(32768) took the host's whole AIO quota; inotify on the read-only
    binds reported the host's own file opens (so would fanotify and dnotify's F_NOTIFY);
    sync()/syncfs() flushed the host's disks."""
    _guarantee(caps, "no_host_resources")
    numbers = NUMBERS[os.uname().machine]
    result = pool.run(HOST_WIDE, [f"r = candidate({numbers!r})\nassert r == {{}}, r"], "f")
    assert result.tests_passed == 1, result.tests[0].message
    check_still_works(pool)


LOCKS = """
import fcntl, os, struct

held = []

def f(paths):
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        held.append(fd)  # kept open: a real lock would outlive this call
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.fcntl(fd, 37, struct.pack("hhqqi4x", fcntl.F_RDLCK, 0, 0, 0, 0))  # F_OFD_SETLK
    return len(held)
"""
HOST_LOCKER = """
import fcntl, os, struct, sys
paths = [p for p in (os.path.realpath(os.__file__), os.path.realpath(sys.executable),
                     "/etc/ld.so.cache") if os.path.isfile(p)]
assert candidate(paths) == len(paths)  # the program's locks "succeed" (they are no-ops)
for path in paths:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if the program holds it
        query = struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0)
        for getlk in (fcntl.F_GETLK, 36):  # 36: F_OFD_GETLK
            kind = struct.unpack("hhqqi4x", fcntl.fcntl(fd, getlk, query))[0]
            assert kind == fcntl.F_UNLCK, (path, getlk, kind)
    finally:
        os.close(fd)
"""


def test_locks_on_shared_read_only_files_do_not_block_the_host(pool, caps):
    """Round 3: flock(LOCK_EX) on /etc/ld.so.cache, a stdlib file or the interpreter blocked
    the host's own flock. flock and the locking fcntl commands are no-ops that succeed; the
    trusted runner (outside the sandbox, the host's view) then locks the same files."""
    _guarantee(caps, "no_host_resources")
    result = pool.run(LOCKS, [HOST_LOCKER], "f")
    assert result.tests_passed == 1, result.tests[0].message


NOEXEC = """
import errno, mmap, os

def f(x):
    path = "/tmp/work/prog"
    with open(path, "wb") as h:
        h.write(b"\\x7fELF" + bytes(4092))
    os.chmod(path, 0o755)
    out = {"noexec": bool(os.statvfs("/tmp").f_flag & os.ST_NOEXEC)}
    try:
        os.execv(path, [path])
    except OSError as e:
        out["execv"] = errno.errorcode[e.errno]
    fd = os.open(path, os.O_RDONLY)
    try:
        mmap.mmap(fd, 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
        out["mmap"] = "mapped"
    except OSError as e:
        out["mmap"] = errno.errorcode[e.errno]
    return out
"""


def test_nothing_written_to_tmp_can_be_executed(pool, isolated):
    """Round 3 ran a static ELF from /tmp. /tmp is noexec now: execve says EACCES (not
    ENOEXEC, the answer for a bad binary on an executable mount), and ld.so's way in, an
    executable mapping of the file, is refused too."""
    _guarantee(isolated, "minimal_filesystem")
    expected = {"noexec": True, "execv": "EACCES", "mmap": "EPERM"}
    result = pool.run(NOEXEC, [f"r = candidate(0)\nassert r == {expected!r}, r"], "f")
    assert result.tests_passed == 1, result.tests[0].message


def test_the_filter_has_every_call_on_every_machine():
    """A denial missing from one machine's table would be a silent hole there."""
    seccomp = _load("_seccomp")
    for machine, (_, numbers) in seccomp.ARCHES.items():
        missing = [
            name
            for name in (*seccomp.DENIED, *seccomp.OUTSIDE_ONLY, "flock", "fcntl", "clone")
            if name not in numbers and name not in seccomp.LEGACY
        ]
        assert missing == [], (machine, missing)
        assert len(set(numbers.values())) == len(numbers), f"duplicate number on {machine}"
        for processes in (True, False):
            for pid_namespace in (True, False):
                program = seccomp.build(
                    allow_processes=processes,
                    pid_namespace=pid_namespace,
                    own_pid=1234,
                    machine=machine,
                )
                assert len(program) % 8 == 0 and len(program) // 8 < 4096


# --------------------------------------------------------------------------- worker exits
BREAKS_SERVE = """
import atexit, os
atexit.register(os.write, 1, b"ATEXIT-RAN")
os._exit = lambda code: None  # the worker must not depend on the program's os module
os.close(4)  # the reply pipe: serve() fails sending "ready"

def f(x):
    return x
"""


def test_a_failing_serve_exits_without_interpreter_shutdown(pool):
    """A serve() that raises used to unwind into the spawner's code and normal shutdown:
    the program's atexit handler ran and the worker's traceback reached its output."""
    result = pool.run(BREAKS_SERVE, ["assert candidate(1) == 1"], "f")
    assert result.tests_passed == 0
    assert result.crashed and result.status == "load_error", result
    assert "ATEXIT-RAN" not in result.output and "Traceback" not in result.output, result.output
    check_still_works(pool)


# --------------------------------------------------------------------------- the fallback
PARTIAL = """
import json, os, sys, uuid, warnings
warnings.simplefilter("always")
from llm_marl_envs.sandbox import SandboxPool
marker = sys.argv[1]
write = (f"def f(x):\\n    open({marker!r}, 'w').write('left behind')\\n    return 1\\n")
read = f"def f(x):\\n    return open({marker!r}).read()\\n"
with warnings.catch_warnings(record=True) as caught:
    with SandboxPool(1) as pool:
        caps = pool.capabilities()
        gzip = pool.run("import gzip\\ndef f(x):\\n    return x\\n", ["assert candidate(1) == 1"], "f")
        pool.run(write, ["assert candidate(0) == 1"], "f")
        later = pool.run(read, ["assert candidate(0) == 'left behind'"], "f")
print(json.dumps({"mode": caps["mode"], "warnings": [str(w.message) for w in caught],
                  "gzip": [gzip.status, gzip.error_type], "later": later.tests_passed}))
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and util-linux setpriv to drop CAP_SYS_ADMIN",
)
def test_the_fallback_warning_names_what_does_not_work():
    """Without CAP_SYS_ADMIN: files left in a world-writable host directory are read by a
    later program, and (with the interpreter under a private home) a stdlib module that is
    not pre-imported does not load. Both are true here, and the one warning says both."""
    marker = f"/tmp/llm-marl-persist-{uuid.uuid4().hex}"
    try:
        proc = subprocess.run(
            ["setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin"]
            + [sys.executable, "-c", PARTIAL, marker],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
            check=False,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        )
    finally:
        Path(marker).unlink(missing_ok=True)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["mode"] == "partial" and len(report["warnings"]) == 1
    warning = report["warnings"][0]
    assert report["later"] == 1  # the files persist between programs ...
    assert "persist" in warning and "/tmp" in warning  # ... and the warning says so
    private = _load("_isolation")._blocker(os.path.realpath(os.__file__))
    if private is None:
        assert report["gzip"][0] == "ok"
        assert "gzip" not in warning
    else:
        assert report["gzip"] == ["load_error", "ModuleNotFoundError"], report["gzip"]
        assert f"lives under {private}" in warning and "gzip" in warning
