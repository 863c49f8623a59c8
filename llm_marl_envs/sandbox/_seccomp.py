"""A seccomp-BPF filter for the untrusted process (stdlib + ctypes; loaded by file path).

The filter is a deny list on top of the namespaces, uid switch and rlimits: it removes the
system calls that reach outside the sandbox or hold resources the rlimits do not count.

* ``socket``, ``socketpair``, every address family (EPERM): no network, no UNIX, netlink or
  vsock channel, whatever the mount view.
* ``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag (EPERM): no new user (or other)
  namespace from inside. ``clone3`` (ENOSYS): its flags live in memory a filter cannot read;
  glibc falls back to ``clone``.
* ``clone``/``fork``/``vfork`` of a new process when ``max_processes == 1`` (EAGAIN, the
  answer ``RLIMIT_NPROC`` gives); threads stay governed by the rlimit.
* ``prctl(PR_SET_PDEATHSIG, ...)``: the parent-death signal set by the sandbox stays.
  ``setsid``, ``setpgid``: the program stays in the process group the sandbox kills.
* ``memfd_create``, ``memfd_secret``, and all of SysV IPC (shared memory, semaphores, message
  queues: ``shm*``, ``sem*``, ``msg*``): memory outside ``RLIMIT_AS``. A semaphore set or a
  queue is kernel memory that no rlimit counts (hundreds of MiB in a second).
* Host-wide resources: ``io_setup`` (the host's AIO quota, ``fs.aio-max-nr``), ``inotify_init``,
  ``inotify_init1`` and ``fanotify_init`` (they would report the host's own opens of the
  read-only binds), ``fcntl(F_NOTIFY)`` (dnotify, the same) and ``fcntl(F_SETLEASE)``,
  ``sync`` and ``syncfs`` (flush the host's disks). ``flock`` and the
  locking ``fcntl`` commands (``F_SETLK``, ``F_SETLKW``, ``F_OFD_SETLK``, ``F_OFD_SETLKW``)
  are no-ops that succeed: a lock on a read-only bind would lock the host's file.
* io_uring, ``bpf``, ``perf_event_open``, ``userfaultfd``, the keyring calls: kernel
  interfaces that bypass or widen the above. ``ptrace``, ``process_vm_readv/writev``,
  ``pidfd_getfd``: no reading or steering other processes.
* ``mount`` and the new mount API, ``umount2``, ``pivot_root``, ``chroot``, module and kexec
  calls: they already need privileges; denied for defence in depth.
* ``kill(-1, ...)``; without a PID namespace, every signal aimed outside the program's own
  process group.

Calls from another ABI (x32, i386's ``int 0x80``, or a foreign architecture) kill the process,
so each denial holds on every ABI the kernel offers. Supported machines:
x86_64 and aarch64; elsewhere :func:`build` returns ``None`` and the sandbox reports the filter
as missing.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
LD_ABS_W, JEQ, JGE, JSET = 0x20, 0x15, 0x35, 0x45
RET = 0x06
CLONE_THREAD = 0x00010000
CLONE_NEW_ANY = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
PR_SET_PDEATHSIG = 1
X32_BIT = 0x40000000

# Audit architecture and syscall numbers per machine (linux/audit.h, the syscall tables).
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "socket": 41,
            "socketpair": 53,
            "clone": 56,
            "fork": 57,
            "vfork": 58,
            "clone3": 435,
            "unshare": 272,
            "setns": 308,
            "prctl": 157,
            "setsid": 112,
            "setpgid": 109,
            "memfd_create": 319,
            "memfd_secret": 447,
            "shmget": 29,
            "semget": 64,
            "semop": 65,
            "semctl": 66,
            "semtimedop": 220,
            "msgget": 68,
            "msgsnd": 69,
            "msgrcv": 70,
            "msgctl": 71,
            "shmat": 30,
            "shmctl": 31,
            "shmdt": 67,
            "io_setup": 206,
            "inotify_init": 253,
            "inotify_init1": 294,
            "fanotify_init": 300,
            "sync": 162,
            "syncfs": 306,
            "flock": 73,
            "fcntl": 72,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "pidfd_getfd": 438,
            "pidfd_open": 434,
            "pidfd_send_signal": 424,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "name_to_handle_at": 303,
            "open_by_handle_at": 304,
            "kill": 62,
            "tkill": 200,
            "tgkill": 234,
            "rt_sigqueueinfo": 129,
            "rt_tgsigqueueinfo": 297,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "socket": 198,
            "socketpair": 199,
            "clone": 220,
            "clone3": 435,
            "unshare": 97,
            "setns": 268,
            "prctl": 167,
            "setsid": 157,
            "setpgid": 154,
            "memfd_create": 279,
            "memfd_secret": 447,
            "shmget": 194,
            "semget": 190,
            "semop": 193,
            "semctl": 191,
            "semtimedop": 192,
            "msgget": 186,
            "msgsnd": 189,
            "msgrcv": 188,
            "msgctl": 187,
            "shmat": 196,
            "shmctl": 195,
            "shmdt": 197,
            "io_setup": 0,
            "inotify_init1": 26,
            "fanotify_init": 262,
            "sync": 81,
            "syncfs": 267,
            "flock": 32,
            "fcntl": 25,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "pidfd_getfd": 438,
            "pidfd_open": 434,
            "pidfd_send_signal": 424,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "name_to_handle_at": 264,
            "open_by_handle_at": 265,
            "kill": 129,
            "tkill": 130,
            "tgkill": 131,
            "rt_sigqueueinfo": 138,
            "rt_tgsigqueueinfo": 240,
        },
    ),
}
DENIED = (
    "socket",
    "socketpair",
    "unshare",
    "setns",
    "setsid",
    "setpgid",
    "memfd_create",
    "memfd_secret",
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "io_setup",
    "inotify_init",
    "inotify_init1",
    "fanotify_init",
    "sync",
    "syncfs",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "name_to_handle_at",
    "open_by_handle_at",
)
# Calls only some machines have (aarch64 has no inotify_init, fork or vfork).
LEGACY = ("inotify_init", "fork", "vfork")
# Without a PID namespace the program could name your processes: signals stay inside it.
OUTSIDE_ONLY = ("tkill", "pidfd_open", "pidfd_send_signal")
ARG0_LOW = 16  # offsetof(struct seccomp_data, args[0]), little-endian low word
ARG1_LOW = 24  # args[1]
# fcntl commands that take a POSIX or open-file-description lock (asm-generic/fcntl.h).
F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW = 6, 7, 37, 38
# fcntl commands refused: directory notification (dnotify, inotify's ancestor) and leases.
F_SETLEASE, F_NOTIFY = 1024, 1026


def _insn(code: int, k: int = 0, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _ret(value: int) -> bytes:
    return _insn(RET, value)


def _errno(code: int) -> bytes:
    return _ret(RET_ERRNO | code)


def _block(nr: int, body: list[bytes]) -> list[bytes]:
    """``if syscall == nr: body`` (body must end in a return)."""
    return [_insn(JEQ, nr, 0, len(body)), *body]


def _arg0_in(allowed: list[int], otherwise: int) -> list[bytes]:
    """Allow when the first argument's low word is one of ``allowed``, else ``otherwise``."""
    body = [_insn(LD_ABS_W, ARG0_LOW)]
    for i, value in enumerate(allowed):
        body.append(_insn(JEQ, value, len(allowed) - i, 0))
    return [*body, _errno(otherwise), _ret(RET_ALLOW)]


def build(
    *, allow_processes: bool, pid_namespace: bool, own_pid: int, machine: str | None = None
) -> bytes | None:
    """The filter program as raw ``sock_filter`` instructions, or None on another machine."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, nr = arch
    prog = [
        _insn(LD_ABS_W, 4),
        _insn(JEQ, audit_arch, 1, 0),
        _ret(RET_KILL_PROCESS),
        _insn(LD_ABS_W, 0),
    ]
    if audit_arch == ARCHES["x86_64"][0]:
        prog += [_insn(JGE, X32_BIT, 0, 1), _ret(RET_KILL_PROCESS)]
    for name in DENIED:
        if name in nr:  # LEGACY names only are missing somewhere (tested)
            prog += _block(nr[name], [_errno(errno.EPERM)])
    # Locks are no-ops that report success (errno 0: the call is not executed): a lock on a
    # read-only bind is a lock on the host's own file, and would block the host's lockers.
    prog += _block(nr["flock"], [_ret(RET_ERRNO | 0)])
    fcntl = [_insn(LD_ABS_W, ARG1_LOW)]
    for cmd in (F_NOTIFY, F_SETLEASE):
        fcntl += [_insn(JEQ, cmd, 0, 1), _errno(errno.EPERM)]
    locks = (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW)
    for i, cmd in enumerate(locks):
        fcntl.append(_insn(JEQ, cmd, len(locks) - i, 0))
    prog += _block(nr["fcntl"], [*fcntl, _ret(RET_ALLOW), _ret(RET_ERRNO | 0)])
    prog += _block(nr["clone3"], [_errno(errno.ENOSYS)])
    clone = [_insn(LD_ABS_W, ARG0_LOW), _insn(JSET, CLONE_NEW_ANY, 0, 1), _errno(errno.EPERM)]
    if allow_processes:
        clone.append(_ret(RET_ALLOW))
    else:
        clone += [_insn(JSET, CLONE_THREAD, 0, 1), _ret(RET_ALLOW), _errno(errno.EAGAIN)]
        for name in ("fork", "vfork"):
            if name in nr:
                prog += _block(nr[name], [_errno(errno.EAGAIN)])
    prog += _block(nr["clone"], clone)
    prog += _block(
        nr["prctl"],
        [
            _insn(LD_ABS_W, ARG0_LOW),
            _insn(JEQ, PR_SET_PDEATHSIG, 0, 1),
            _errno(errno.EPERM),
            _ret(RET_ALLOW),
        ],
    )
    if not pid_namespace:
        for name in OUTSIDE_ONLY:
            prog += _block(nr[name], [_errno(errno.EPERM)])
        me = own_pid & 0xFFFFFFFF
        prog += _block(nr["kill"], _arg0_in([0, me, -own_pid & 0xFFFFFFFF], errno.EPERM))
        for name in ("tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
            prog += _block(nr[name], _arg0_in([me], errno.EPERM))
    else:
        # kill(-1, sig) inside a PID namespace reaches only the namespace; still refused.
        prog += _block(
            nr["kill"],
            [
                _insn(LD_ABS_W, ARG0_LOW),
                _insn(JEQ, 0xFFFFFFFF, 0, 1),
                _errno(errno.EPERM),
                _ret(RET_ALLOW),
            ],
        )
    prog.append(_ret(RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(program: bytes) -> None:
    """Install ``program`` for this process and its future children (no_new_privs first)."""
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    for args in (
        (PR_SET_NO_NEW_PRIVS, 1, 0),
        (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog)),
    ):
        if (
            libc.prctl(
                ctypes.c_int(args[0]),
                ctypes.c_ulong(args[1]),
                ctypes.c_ulong(args[2]),
                ctypes.c_ulong(0),
                ctypes.c_ulong(0),
            )
            != 0
        ):
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
