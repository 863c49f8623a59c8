"""Linux isolation primitives for the sandbox worker (stdlib + ctypes; loaded by file path).

Namespaces via ``unshare(2)``, mounts via ``mount(2)``, ``pivot_root(2)`` and ``prctl(2)``
through ctypes, because ``os.unshare`` only exists from Python 3.12 and ``mount`` not at all.
Everything here degrades: :func:`setup_isolation` tries each layer and reports what is in
force, and :func:`guarantees` turns that into the promises ``docs/sandbox.md`` lists.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import json
import os
import platform
import signal
import stat
import sys
import sysconfig

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x8000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
DEVICES = ("null", "zero", "full", "random", "urandom")
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_libc = ctypes.CDLL(None, use_errno=True)


def _ok(ret: int) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def prctl(option: int, arg: int) -> None:
    _ok(
        _libc.prctl(
            option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        )
    )


def unshare(flags: int) -> None:
    _ok(_libc.unshare(ctypes.c_int(flags)))


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
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


def tmp_inodes(size: int) -> int:
    """Inodes of an attempt's tmpfs: one per 4 KiB of its ``size``, from 256 to 16384.

    An empty file costs no data block but about 2 KiB of kernel memory that no limit counts
    (300,000 of them took 600 MiB); every tmpfs here has ``nr_inodes`` (docs/sandbox.md).
    """
    return max(256, min(size // 4096, 16384))


def tmp_options(size: int) -> str:
    return f"size={size},nr_inodes={tmp_inodes(size)},mode=1777"


# The attempt's writable tmpfs: no devices, no set-uid, nothing executable (not even ld.so's
# mmap of a file written there).
TMP_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC
# A read-only, empty tmpfs that covers a path (a dataset, site-packages).
COVER_OPTIONS = "mode=0555,size=4k,nr_inodes=16"


def private_mounts(size: int) -> None:
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    try:
        mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    except OSError:
        pass  # reported by the probe as readonly_root = False
    for path in PRIVATE_DIRS:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", TMP_FLAGS, tmp_options(size))


def fresh_tmp(size: int, plan: dict) -> None:
    """A new private tmpfs on ``/tmp`` of the minimal root, for one attempt.

    Parts of the root that live below ``/tmp`` on the host (a virtual environment in
    ``/tmp``, as in a fresh-clone CI run) would be covered by it: they are bound again into
    the new tmpfs, read-only, with the same symlinks.
    """
    mount("tmpfs", "/tmp", "tmpfs", TMP_FLAGS, tmp_options(size))
    for path in [*plan["dirs"], *plan["files"]]:
        if not _under(path, ["/tmp"]):
            continue
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        if os.path.isdir(_placed(path)):
            os.makedirs(path, 0o755, exist_ok=True)
        else:
            with open(path, "a"):
                pass
        mount(_placed(path), path, None, MS_BIND | MS_REC)  # covers inside come along
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for link, target in plan["links"].items():
        if _under(link, ["/tmp"]) and not os.path.lexists(link):
            os.makedirs(os.path.dirname(link), 0o755, exist_ok=True)
            os.symlink(target, link)


KEEP = "/.below-tmp"  # where the root keeps its parts that belong below the attempt's /tmp


def _placed(path: str) -> str:
    """Where the minimal root holds ``path``: below /tmp, each attempt's tmpfs would cover it."""
    return KEEP + path if _under(path, ["/tmp"]) else path


def _needed_paths(extra: list[str]) -> list[str]:
    """Directories the interpreter reads from: sys.path, its prefixes, binary and library."""
    paths = {
        os.path.realpath(p)
        for p in [*sys.path, sys.prefix, sys.exec_prefix, *extra]
        if p and os.path.isdir(p)
    }
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
    it), plus the directories in ``extra``. Each path in ``hide`` (e.g. a dataset with the
    answers) is covered by an empty, read-only tmpfs (a directory) or ``/dev/null`` (a file).
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
        mount("tmpfs", blocker, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k,nr_inodes=1024")
        for path, fd in zip(roots, fds, strict=True):
            os.makedirs(path, mode=0o755, exist_ok=True)
            mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            os.close(fd)
    for path in hide:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, COVER_OPTIONS)
        elif os.path.isfile(path):
            mount("/dev/null", path, None, MS_BIND)


# --------------------------------------------------------------------------- the minimal root
def _loaded_files(packages: list[str]) -> list[str]:
    """Files the interpreter maps once every standard extension module (and ``packages``) is
    imported: shared libraries, the dynamic loader, locale data. Found in a throw-away child."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            devnull = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):  # stdout is the zygote's frame stream: nothing may reach it
                os.dup2(devnull, fd)
            for directory in _dynload_dirs():
                for name in sorted(os.listdir(directory)):
                    if name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
                        try:
                            __import__(name.split(".")[0])
                        except BaseException:  # noqa: BLE001, S110 - e.g. _tkinter without Tk
                            pass
            for name in packages:
                try:
                    __import__(name)
                except BaseException:  # noqa: BLE001, S110 - reported when the program imports it
                    pass
            with open("/proc/self/maps") as maps:
                files = sorted(
                    {
                        parts[5]
                        for line in maps
                        if len(parts := line.split()) == 6 and parts[5].startswith("/")
                    }
                )
            data = json.dumps(files).encode()
            while data:
                data = data[os.write(write_fd, data) :]
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b"[]")


def _dynload_dirs() -> list[str]:
    return sorted(
        {
            os.path.realpath(p)
            for p in sys.path
            if os.path.basename(p) == "lib-dynload" and os.path.isdir(p)
        }
    )


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _package_paths(names: list[str]) -> list[str]:
    """Directories (or single files) of importable packages, plus their vendored ``.libs``."""
    import importlib.util

    paths = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ValueError(f"package {name!r} is not importable here")
        if spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                paths.append(os.path.realpath(location))
                vendored = os.path.realpath(location) + ".libs"
                if os.path.isdir(vendored):
                    paths.append(vendored)
        elif spec.origin and os.path.isfile(spec.origin):
            paths.append(os.path.realpath(spec.origin))
    return paths


def _package_aliases(names: list[str]) -> dict[str, str]:
    """Each package folder's path as the import system finds it (sys.path's spelling) ->
    its real path, where the two differ."""
    import importlib.util

    aliases = {}
    for name in names:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            alias, real = os.path.abspath(location), os.path.realpath(location)
            if alias != real:
                aliases[alias] = real
    return aliases


def plan_root(packages: list[str] = (), hide: list[str] = ()) -> dict:
    """What the program's filesystem will hold, as host paths (see :func:`enter_root`).

    Read-only: the standard library (its ``site-packages`` covered), the extension modules,
    the shared libraries and data files they map, the interpreter binary, the packages named
    in ``packages``; empty: ``/tmp`` (a fresh tmpfs per attempt), ``/proc`` (the attempt's
    own), ``/dev`` with null, zero, full, random and urandom. Nothing else: no datasets, no
    home directories, no ``/run`` or host ``/tmp``, no sockets.
    """
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    dirs = [
        stdlib,
        *_dynload_dirs(),
        *(p for p in _package_paths(list(packages)) if os.path.isdir(p)),
    ]
    dirs = sorted({d for d in dirs if not _under(d, [x for x in dirs if x != d])})
    files = {p for p in _package_paths(list(packages)) if os.path.isfile(p)}
    files.add(os.path.realpath(sys.executable))
    for path in _loaded_files(list(packages)):
        real = os.path.realpath(path)
        if os.path.isfile(real) and not _under(real, dirs):
            files.add(real)
    if os.path.isfile("/etc/ld.so.cache"):
        files.add("/etc/ld.so.cache")
    links = {}
    for entry in os.scandir("/"):  # /lib -> usr/lib and friends on merged-/usr systems
        if entry.is_symlink():
            links[entry.path] = os.readlink(entry.path)
    by_dir: dict[str, set[str]] = {}
    for path in files:
        by_dir.setdefault(os.path.dirname(path), set()).add(path)
    for directory, members in by_dir.items():  # libffi.so.8 -> libffi.so.8.1.2
        for entry in os.scandir(directory):
            if entry.is_symlink() and os.path.realpath(entry.path) in members:
                links[entry.path] = os.readlink(entry.path)
    if os.path.realpath(sys.executable) != os.path.abspath(sys.executable):
        links[os.path.abspath(sys.executable)] = os.path.realpath(sys.executable)
    # a package found through a symlinked folder (a venv that is a link, a site-packages
    # on a linked path): the import system looks where sys.path says, so that path leads to
    # the bound real folder too
    for alias, real in _package_aliases(list(packages)).items():
        if not _under(alias, dirs + sorted(links)):
            links[alias] = real
    cover = sorted(
        {
            os.path.join(stdlib, name)
            for name in ("site-packages", "dist-packages")
            if os.path.isdir(os.path.join(stdlib, name))
        }
        | {os.path.realpath(h) for h in hide if _under(os.path.realpath(h), dirs + sorted(files))}
    )
    return {"dirs": dirs, "files": sorted(files), "links": links, "cover": cover}


def _bind_readonly(source: str, target: str) -> None:
    mount(source, target, None, MS_BIND)
    flags = os.statvfs(source).f_flag  # keep the source's own (possibly locked) flags
    extra = sum(
        ms
        for st, ms in (
            (os.ST_NOEXEC, MS_NOEXEC),
            (os.ST_NOATIME, MS_NOATIME),
            (os.ST_NODIRATIME, MS_NODIRATIME),
            (os.ST_RELATIME, MS_RELATIME),
        )
        if flags & st
    )
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | extra)


def enter_root(plan: dict, staging: str = "/tmp") -> None:
    """Build the minimal root of ``plan`` on a tmpfs and make it this process's ``/``.

    Runs in the spawner after ``unshare(CLONE_NEWMOUNT)``: the host tree is detached from its
    namespace afterwards, so every attempt forked from it sees only the minimal root. Every
    source is opened before the staging tmpfs covers ``staging``, so sources below it (a
    virtual environment in ``/tmp``) are still reached.
    """
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    sources = {
        path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in [*plan["dirs"], *plan["files"]]
    }
    try:
        _build_root(plan, staging, sources)
    finally:
        for fd in sources.values():
            os.close(fd)
    os.chdir(staging)
    _ok(_libc.syscall(ctypes.c_long(PIVOT_ROOT[platform.machine()]), b".", b"."))
    _ok(_libc.umount2(b".", ctypes.c_int(MNT_DETACH)))
    os.chdir("/")


def _build_root(plan: dict, staging: str, sources: dict[str, int]) -> None:
    mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=16384")
    os.umask(0o022)

    def at(path: str) -> str:
        return staging + path

    def make_file(path: str) -> None:
        os.makedirs(os.path.dirname(at(path)), 0o755, exist_ok=True)
        with open(at(path), "a"):
            pass

    for directory in plan["dirs"]:
        os.makedirs(at(_placed(directory)), 0o755, exist_ok=True)
        _bind_readonly(f"/proc/self/fd/{sources[directory]}", at(_placed(directory)))
    for path in plan["files"]:
        make_file(_placed(path))
        _bind_readonly(f"/proc/self/fd/{sources[path]}", at(_placed(path)))
    for link, target in sorted(plan["links"].items()):
        if not os.path.lexists(at(link)):
            os.makedirs(os.path.dirname(at(link)), 0o755, exist_ok=True)
            os.symlink(target, at(link))
    for name in ("tmp", "proc", "dev"):
        os.makedirs(at("/" + name), 0o755, exist_ok=True)
    for name in DEVICES:
        make_file("/dev/" + name)
        mount("/dev/" + name, at("/dev/" + name), None, MS_BIND)
        mount(None, at("/dev/" + name), None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, at("/dev/" + name))
    for path in map(_placed, plan["cover"]):
        if os.path.isdir(at(path)):
            mount("tmpfs", at(path), "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, COVER_OPTIONS)
        elif os.path.isfile(at(path)):
            mount("/dev/null", at(path), None, MS_BIND)
    mount(None, staging, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _seccomp_works(seccomp, pid_namespace: bool) -> bool:
    """Install the filter in a throw-away child and check that it refuses a socket."""

    def check() -> None:
        import socket

        program = seccomp.build(
            allow_processes=False, pid_namespace=pid_namespace, own_pid=os.getpid()
        )
        if program is None:
            raise OSError("no filter for this machine")
        seccomp.install(program)
        try:
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()
        except PermissionError:
            return
        raise OSError("the filter let a socket through")

    return probe(check)


def setup_isolation(uid: int, mode: str, hide: list[str] = (), seccomp=None) -> dict:
    """Enter the zygote's namespaces and find out what each attempt can use.

    ``minimal_filesystem`` is settled later, when the spawner has entered the root that
    :func:`plan_root` describes.
    """
    caps = {
        "mode": "none",
        "isolation": mode,
        "root": os.geteuid() == 0,
        "network_namespace": False,
        "ipc_namespace": False,
        "pid_namespace": False,
        "mount_namespace": False,
        "readonly_root": False,
        "private_tmp": False,
        "proc_remounted": False,
        "minimal_filesystem": False,
        "syscall_filter": False,
        "setuid": False,
        "uid": os.geteuid(),
        "gid": os.getegid(),
        "nproc_enforced": False,
        "no_new_privs": True,
        "hidden_paths": [],
        "warnings": [],
    }
    if mode == "none":
        caps["warnings"].append("isolation disabled (isolation='none')")
        caps["guarantees"] = guarantees(caps)
        return caps
    if caps["root"]:
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
            caps.update(
                pid_namespace=True, mount_namespace=True, private_tmp=True, proc_remounted=True
            )
            try:
                expose_interpreter(list(hide))
                caps["hidden_paths"] = [p for p in hide if os.path.exists(p)]
            except OSError as error:
                caps["warnings"].append(f"cannot arrange the file view ({error.strerror})")
            caps["readonly_root"] = probe(
                lambda: (
                    unshare(CLONE_NEWNS),
                    mount(None, "/", None, MS_REC | MS_PRIVATE),
                    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY),
                )
            )
        else:
            caps["warnings"].append(
                "no PID/mount namespaces (needs CAP_SYS_ADMIN): "
                "process-group kill and a host temporary directory instead; files a program "
                "writes to world-writable host directories (/tmp, /var/tmp, /dev/shm) persist, "
                "unbounded, and later programs can read them"
            )
        if probe(lambda: (os.setgroups([]), os.setgid(uid), os.setuid(uid))):
            caps.update(setuid=True, uid=uid, gid=uid, nproc_enforced=True)
        else:
            caps["warnings"].append("cannot switch to the sandbox uid")
        blocker = _blocker(os.path.realpath(os.__file__))
        if caps["setuid"] and not caps["mount_namespace"] and blocker is not None:
            caps["warnings"].append(
                f"the interpreter lives under {blocker}, which the sandbox uid cannot enter: "
                "a program that imports a standard-library module the fork server did not "
                "pre-import (such as gzip) fails to load and scores 0"
            )
    else:
        caps["warnings"].append(
            "not root: no namespaces, no uid switch, RLIMIT_NPROC not "
            "enforced; the program can read the files, the environment and "
            "the memory of processes of your uid"
        )
    if seccomp is not None and _seccomp_works(seccomp, caps["pid_namespace"]):
        caps["syscall_filter"] = True
    else:
        caps["warnings"].append(
            f"no seccomp filter on this machine ({platform.machine()}): "
            "sockets, memfds, SysV IPC, AIO, inotify, host locks and new namespaces are not refused"
        )
    full = all(caps[k] for k in ("network_namespace", "pid_namespace", "mount_namespace", "setuid"))
    caps["mode"] = (
        "full" if full else ("partial" if caps["network_namespace"] or caps["setuid"] else "none")
    )
    caps["guarantees"] = guarantees(caps)
    return caps


GUARANTEES = {
    "no_inherited_memory": "a program's memory holds no other program, test or result",
    "minimal_filesystem": "the program sees only the interpreter, the standard library and "
    "its own working directory, and cannot execute a file it wrote (needs root with "
    "CAP_SYS_ADMIN)",
    "no_sockets": "no socket of any family can be created (needs seccomp)",
    "no_survivors": "no process of the program outlives the attempt or its owner (needs a PID "
    "namespace and seccomp)",
    "bounded_memory": "memory is bounded by RLIMIT_AS plus one tmpfs limited in size and "
    "inodes: no memfd, no SysV shared memory, semaphores or message queues (needs seccomp and "
    "a mount namespace)",
    "no_host_resources": "no host-wide resource is taken or watched: no AIO context, no "
    "inotify or fanotify, no lock on a shared file, no sync of the host's disks (needs "
    "seccomp)",
    "isolated_processes": "the program cannot see, signal, trace or read your processes "
    "(needs a PID namespace and a separate uid)",
}


def guarantees(caps: dict) -> dict[str, bool]:
    """Which of :data:`GUARANTEES` hold under ``caps``."""
    seccomp = caps["syscall_filter"]
    return {
        "no_inherited_memory": True,  # the spawner design, in every mode
        "minimal_filesystem": caps["minimal_filesystem"],
        "no_sockets": seccomp,
        "no_survivors": seccomp and caps["pid_namespace"],
        "bounded_memory": seccomp and caps["minimal_filesystem"],
        "no_host_resources": seccomp,
        "isolated_processes": caps["pid_namespace"] and caps["setuid"],
    }
