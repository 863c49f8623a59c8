"""Linux isolation primitives for the sandbox worker (stdlib + ctypes; loaded by file path).

Namespaces via ``unshare(2)``, mounts via ``mount(2)`` and ``prctl(2)`` through ctypes, because
``os.unshare`` only exists from Python 3.12 and ``mount`` not at all. Everything here degrades:
:func:`setup_isolation` tries each layer and reports what is in force.
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
import sysconfig

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x8000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
_libc = ctypes.CDLL(None, use_errno=True)


def _ok(ret: int) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def prctl(option: int, arg: int) -> None:
    _ok(_libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                    ctypes.c_ulong(0)))


def unshare(flags: int) -> None:
    _ok(_libc.unshare(ctypes.c_int(flags)))


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    _ok(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)))


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (and exit now if it already has)."""
    parent = os.getppid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def probe(fn) -> bool:
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def private_mounts(size: int) -> None:
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    try:
        mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    except OSError:
        pass  # reported by the probe as readonly_root = False
    for path in PRIVATE_DIRS:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")


def _needed_paths(extra: list[str]) -> list[str]:
    """Directories the interpreter reads from: sys.path, its prefixes, binary and library."""
    paths = {os.path.realpath(p) for p in [*sys.path, sys.prefix, sys.exec_prefix, *extra]
             if p and os.path.isdir(p)}
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and os.path.isdir(libdir):
        paths.add(os.path.realpath(libdir))
    return sorted(paths)


def _blocker(path: str) -> str | None:
    """The top-most ancestor of ``path`` that other users cannot traverse, if any."""
    current = ""
    for part in path.strip("/").split("/")[:-1]:
        current += "/" + part
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
    return None


def expose_interpreter(hide: list[str], extra: list[str] = ()) -> None:
    """Enter a new mount namespace where any uid can reach the interpreter, minus ``hide``.

    A Python installed under a private home (``/root/.pyenv``, mode 700) is unreadable by an
    unprivileged uid. Each such blocking directory is covered by an empty tmpfs, and only the
    interpreter's own directories are bind-mounted back (which also hides everything else in
    it), plus the directories in ``extra``. Each path in ``hide`` (e.g. a dataset with the answers) is covered by an empty,
    read-only tmpfs (a directory) or ``/dev/null`` (a file).
    """
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    needed = _needed_paths(list(extra))
    for blocker in sorted({b for p in needed if (b := _blocker(p))}, key=len):
        if not os.path.exists(blocker):  # covered by an earlier, shorter blocker
            continue
        keep = [p for p in needed if p.startswith(blocker + "/")]
        roots = [p for p in keep if not any(p.startswith(q + "/") for q in keep)]
        fds = [os.open(p, os.O_PATH) for p in roots]
        mount("tmpfs", blocker, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for path, fd in zip(roots, fds, strict=True):
            os.makedirs(path, mode=0o755, exist_ok=True)
            mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            os.close(fd)
    for path in hide:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=0555,size=4k")
        elif os.path.isfile(path):
            mount("/dev/null", path, None, MS_BIND)


def setup_isolation(uid: int, mode: str, hide: list[str] = ()) -> dict:
    """Enter the zygote's namespaces and find out what each attempt can use."""
    caps = {"mode": "none", "root": os.geteuid() == 0, "network_namespace": False,
            "ipc_namespace": False, "pid_namespace": False, "mount_namespace": False,
            "readonly_root": False, "private_tmp": False, "proc_remounted": False,
            "setuid": False, "uid": os.geteuid(), "gid": os.getegid(),
            "nproc_enforced": False, "no_new_privs": True, "hidden_paths": [],
            "warnings": []}
    if mode != "none" and caps["root"]:
        try:
            unshare(CLONE_NEWNET | CLONE_NEWIPC)
            caps["network_namespace"] = caps["ipc_namespace"] = True
        except OSError as error:
            caps["warnings"].append(f"no network namespace ({error.strerror})")

        def ns() -> None:
            unshare(CLONE_NEWPID | CLONE_NEWNS)
            private_mounts(1 << 20)
            if not probe(lambda: mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)):
                os._exit(3)

        if probe(ns):
            caps.update(pid_namespace=True, mount_namespace=True, private_tmp=True,
                        proc_remounted=True)
            try:
                expose_interpreter(list(hide))
                caps["hidden_paths"] = [p for p in hide if os.path.exists(p)]
            except OSError as error:
                caps["warnings"].append(f"cannot arrange the file view ({error.strerror})")
            caps["readonly_root"] = probe(lambda: (unshare(CLONE_NEWNS), mount(
                None, "/", None, MS_REC | MS_PRIVATE), mount(
                None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY)))
        else:
            caps["warnings"].append("no PID/mount namespaces: process-group kill and a host "
                                    "temporary directory instead")
        if probe(lambda: (os.setgroups([]), os.setgid(uid), os.setuid(uid))):
            caps.update(setuid=True, uid=uid, gid=uid, nproc_enforced=True)
        else:
            caps["warnings"].append("cannot switch to the sandbox uid")
    elif mode != "none":
        caps["warnings"].append("not root: no namespaces, no uid switch, RLIMIT_NPROC not "
                                "enforced; the program can use the network and signal or read "
                                "processes of your uid")
    else:
        caps["warnings"].append("isolation disabled (isolation='none')")
    full = all(caps[k] for k in ("network_namespace", "pid_namespace", "mount_namespace",
                                 "setuid"))
    caps["mode"] = "full" if full else ("partial" if caps["network_namespace"] or caps["setuid"]
                                        else "none")
    return caps


