"""Sandbox fork-server ("zygote") and the processes it forks. Stdlib only; run as a script.

One zygote per worker slot, started by :mod:`llm_marl_envs.sandbox.pool` with a scrubbed
environment. Process tree for one program where the OS allows it (root)::

    zygote  root, own network + IPC namespace; pre-imported; reads programs, never runs one
    ├─ S    spawner, forked at start-up (before the key or any program): enters the minimal
    │  │    root (pivot_root) and forks one attempt per request; never holds a program
    │  └─ P1  new PID + mount + IPC namespace, a fresh size-limited tmpfs on /tmp
    │     └─ U  init of that PID namespace (its death kills everything in it): own /proc,
    │           slot uid, rlimits, seccomp; reads ITS program from T, loads it, answers calls
    └─ T    per program: trusted test runner (_runner.py); reads setup + tests, asks S for
            attempts, sends each its program, kills them, and writes the result to the zygote

U answers calls with plain data only (_codec.py); the asserts run in T. Frames to the parent
are HMAC-signed with a key the parent sends on stdin after S exists.
"""

from __future__ import annotations

import builtins
import fcntl
import hashlib
import hmac
import importlib.util
import io
import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
    del sys.path[0]  # never let the sandbox folder shadow a stdlib module


def _load(name: str):
    if f"_llm_marl_sandbox{name}" in sys.modules:
        return sys.modules[f"_llm_marl_sandbox{name}"]
    spec = importlib.util.spec_from_file_location(
        f"_llm_marl_sandbox{name}", os.path.join(_HERE, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


codec = _load("_codec")

iso = _load("_isolation")
seccomp = _load("_seccomp")
unshare, mount, prctl, die_with_parent = iso.unshare, iso.mount, iso.prctl, iso.die_with_parent
_probe, _private_mounts = iso.probe, iso.private_mounts
CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC = iso.CLONE_NEWNS, iso.CLONE_NEWPID, iso.CLONE_NEWIPC
MS_NOSUID, MS_NODEV, MS_NOEXEC = iso.MS_NOSUID, iso.MS_NODEV, iso.MS_NOEXEC
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 4, 36, 38
WORKDIR = "/tmp/work"
SIGPENDING = 64  # RLIMIT_SIGPENDING of an attempt
PREIMPORT = (
    "typing",
    "math",
    "re",
    "collections",
    "itertools",
    "functools",
    "heapq",
    "bisect",
    "string",
    "random",
    "copy",
    "hashlib",
    "fractions",
    "decimal",
    "statistics",
    "operator",
    "datetime",
    "json",
    "textwrap",
    "enum",
    "dataclasses",
    "cmath",
)


def ctl(fd: int, *words: object) -> None:
    os.write(fd, (" ".join(map(str, words)) + "\n").encode())


def short(error: BaseException, limit: int = 300) -> str:
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - hostile __str__
        text = "<unprintable>"
    return text[:limit]


# --------------------------------------------------------------------------- one attempt
def _rmtree(path: str) -> None:
    def fix(func, target, _exc) -> None:
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)


def _sweep_uid(uid: int) -> None:
    """Kill every process of ``uid`` (from a helper that becomes that uid)."""
    for _ in range(3):
        _probe(lambda: (os.setgid(uid), os.setuid(uid), os.kill(-1, signal.SIGKILL)))


def spawner(sock: socket.socket, ctl_w: int, caps: dict, plan: dict | None, status_w: int) -> None:
    """S: forked once, before any program exists; forks one attempt per request from a T.

    S never receives program text (each U reads its own from T after it is sandboxed), so
    nothing U inherits from S's memory is another program, test or result.
    """
    die_with_parent()
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    status = "none"
    if plan is not None:
        try:
            unshare(CLONE_NEWNS)
            iso.enter_root(plan)
            status = "ok"
        except BaseException as error:  # noqa: BLE001 - reported, attempts degrade
            status = "fail " + short(error, 200).replace("\n", " ")
    caps = {**caps, "minimal_filesystem": status == "ok", "root_plan": plan}
    codec.write_all(status_w, status.encode())
    os.close(status_w)
    while True:
        try:
            head, fds, _, _ = socket.recv_fds(sock, 4, 4)
            if len(head) < 4:
                head += codec.read_exact(sock.fileno(), 4 - len(head))
            req = json.loads(codec.read_exact(sock.fileno(), int.from_bytes(head, "big")))
        except (OSError, EOFError, ValueError):
            os._exit(0)
        attempt = req["attempt"]
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                attempt_main(attempt, fds, ctl_w, req, caps)
            except BaseException as error:  # noqa: BLE001
                detail = short(error, 100).replace("\n", " ")
                try:
                    ctl(ctl_w, "fail", attempt, type(error).__name__, detail)
                except BaseException:  # noqa: BLE001, S110 - exiting anyway
                    pass
            finally:
                os._exit(1)  # never the interpreter's shutdown (atexit) in a forked child
        for fd in fds:
            os.close(fd)
        del req
        os.waitpid(pid, 0)
        ctl(ctl_w, "dead", attempt)


def attempt_main(attempt: int, fds: list[int], ctl_w: int, req: dict, caps: dict) -> None:
    """P1: new PID + mount namespaces and private mounts, then U as their init; or degraded."""
    die_with_parent()
    if caps["pid_namespace"]:
        unshare(CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWIPC if caps["ipc_namespace"] else 0))
        size = int(req["limits"]["file_size_bytes"])
        if caps["minimal_filesystem"]:  # "/" is the read-only minimal root already
            iso.fresh_tmp(size, caps["root_plan"])
        else:
            _private_mounts(size)
        pid = os.fork()
        if pid == 0:
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            os.mkdir(WORKDIR, 0o700)
            if caps["setuid"]:
                os.chown(WORKDIR, caps["uid"], caps["gid"])
            untrusted_main(fds, req, caps, WORKDIR)
        for fd in fds:
            os.close(fd)
        ctl(ctl_w, "pid", attempt, pid)
        # U is the init of its PID namespace: once it is reaped, the kernel has killed and
        # reaped everything else in the namespace, and the tmpfs mounts are gone with it.
        _, status = os.waitpid(pid, 0)
        ctl(ctl_w, "exit", attempt, status)
        os._exit(0)
    workdir = tempfile.mkdtemp(prefix="llm-marl-sandbox-")
    try:
        if caps["setuid"]:
            os.chown(workdir, caps["uid"], caps["gid"])
        pid = os.fork()
        if pid == 0:
            os.setsid()
            untrusted_main(fds, req, caps, workdir)
        for fd in fds:
            os.close(fd)
        ctl(ctl_w, "group", attempt, pid)
        _, status = os.waitpid(pid, 0)
        ctl(ctl_w, "exit", attempt, status)
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        if caps["setuid"]:
            _sweep_uid(caps["uid"])
    finally:
        _rmtree(workdir)
    os._exit(0)


def untrusted_main(fds: list[int], req: dict, caps: dict, workdir: str, _exit=os._exit) -> None:
    """U: drop everything, then load the program and answer calls. Never returns.

    Every way out is ``_exit`` (bound before the program exists, so a program that replaces
    ``os._exit`` or ``BaseException`` does not change it): an exception from :func:`serve`
    (a closed reply pipe, a patched codec) never unwinds into the spawner's code or the
    interpreter's shutdown (atexit handlers, tracebacks on the program's stdout).
    """
    try:
        if os.getsid(0) != os.getpid():
            os.setsid()  # no process group shared with a trusted process
        os.chdir(workdir)
        devnull = os.open("/dev/null", os.O_RDONLY)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (devnull, fds[2], fds[0], fds[1])]
        for target, fd in zip(
            (0, 1, 2, 3, 4), (high[0], high[1], high[1], high[2], high[3]), strict=True
        ):
            os.dup2(fd, target)
        os.closerange(5, 1 << 16)
        limits = req["limits"]
        rl = [
            (resource.RLIMIT_AS, int(limits["memory_bytes"])),
            (resource.RLIMIT_FSIZE, int(limits["file_size_bytes"])),
            (resource.RLIMIT_NOFILE, int(limits["max_open_files"]) + 5),
            (resource.RLIMIT_CPU, int(req["cpu_seconds"]) + 1),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_MSGQUEUE, 0),
            (resource.RLIMIT_MEMLOCK, 0),
            # queued signals and POSIX timers are kernel memory (~100k of them by default)
            (resource.RLIMIT_SIGPENDING, SIGPENDING),
        ]
        if caps["setuid"]:
            rl.append((resource.RLIMIT_NPROC, int(limits["max_processes"])))
        for which, value in rl:
            resource.setrlimit(which, (value, value))
        if caps["setuid"]:
            os.setgroups([])
            os.setresgid(caps["gid"], caps["gid"], caps["gid"])
            os.setresuid(caps["uid"], caps["uid"], caps["uid"])
        die_with_parent()  # after the uid switch, which clears it
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if caps["syscall_filter"]:  # last: it also forbids clearing the parent-death signal
            seccomp.install(
                seccomp.build(
                    allow_processes=int(limits["max_processes"]) > 1,
                    pid_namespace=caps["pid_namespace"],
                    own_pid=os.getpid(),
                )
            )
    except BaseException:  # noqa: BLE001
        _exit(71)
    try:
        req = {**req, **json.loads(codec.read_frame(3))}  # the program, from T
    except (EOFError, ValueError):
        _exit(72)
    status = 73  # serve() raised: the program broke the worker's own code or pipes
    try:
        serve(req)
        status = 0
    finally:
        _exit(status)


def serve(req: dict) -> None:
    """U: run the program's top level, then answer calls of the entry point on fd 3/4."""

    def stream(errors: str) -> io.TextIOWrapper:
        raw = io.FileIO(1, "w", closefd=False)
        return io.TextIOWrapper(raw, encoding="utf-8", errors=errors, write_through=True)

    out = stream(req["limits"].get("stdout_errors", "backslashreplace"))
    err = out if out.errors == "backslashreplace" else stream("backslashreplace")  # as Python's
    sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__ = out, err, out, err
    sys.stdin = sys.__stdin__ = open(0, closefd=False)  # noqa: SIM115 - /dev/null, kept open
    sys.modules["random"].seed()  # a fresh interpreter's random state, not the zygote's
    write_all, frame, to_wire = codec.write_all, codec.frame, codec.to_wire
    dumps, exc_name = json.dumps, (lambda e: type(e).__name__[:80])

    def send(obj: dict) -> None:
        try:
            out.flush()
        except BaseException:  # noqa: BLE001, S110 - the program may have broken its stdout
            pass
        write_all(4, frame(dumps(obj).encode()))

    try:
        code = compile(req["program"], "<program>", "exec")
    except BaseException as error:  # noqa: BLE001
        send({"k": "syntax", "type": exc_name(error), "msg": short(error)})
        return
    namespace = {"__name__": "__sandbox__", "__builtins__": builtins}
    try:
        exec(code, namespace)  # noqa: S102 - this is the sandbox
        fn = namespace.get(req["entry_point"])
        if not callable(fn):
            raise NameError(f"entry point {req['entry_point']!r} is not a defined function")
    except BaseException as error:  # noqa: BLE001
        send({"k": "load", "type": exc_name(error), "msg": short(error)})
        return
    send({"k": "ready"})
    alarm = (
        _load("_runner").InProgramAlarm() if req["limits"].get("on_timeout") == "raise" else None
    )
    while True:
        try:
            args, kwargs, *seconds = codec.loads(codec.read_frame(3))
        except EOFError:
            return
        try:
            value = fn(*args, **kwargs) if alarm is None else alarm.call(fn, args, kwargs, *seconds)
            try:
                reply = {"k": "ret", "v": to_wire(value)}
            except (codec.WireError, RecursionError) as error:
                reply = {"k": "bad", "msg": short(error)}
        except BaseException as error:  # noqa: BLE001
            reply = {"k": "raise", "type": exc_name(error), "msg": short(error)}
            if alarm is not None and isinstance(error, alarm.exception):
                reply = {"k": "timeout"}
        if alarm is not None and alarm.fired:
            reply["alarm"] = True
        try:
            send(reply)
        except (ValueError, RecursionError) as error:  # unencodable payload
            send({"k": "bad", "msg": short(error)})


# --------------------------------------------------------------------------- zygote
def runner_process(
    req: dict, result_w: int, spawn_sock: socket.socket, ctl_r: int, caps: dict
) -> None:
    """T: read the tests (only this process ever holds them) and run them."""
    status = 1
    try:
        die_with_parent()
        tests_req = json.loads(codec.read_frame(0))
        # T holds only trusted code, but it decodes what U sends: bound what that can cost.
        resource.setrlimit(resource.RLIMIT_AS, (_address_space() + RUNNER_MEMORY,) * 2)
        devnull = os.open("/dev/null", os.O_WRONLY)
        os.dup2(devnull, 1)  # prints in trusted tests must not reach the zygote's result stream
        os.close(devnull)
        runner = _load("_runner")
        result = runner.Runner(req, tests_req, caps, spawn_sock, ctl_r).run()
        codec.write_all(result_w, codec.frame(json.dumps(result).encode()))
        status = 0
    finally:
        os._exit(status)


RUNNER_MEMORY = 1 << 30  # bytes T may map beyond what it holds when it starts


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _await_result(result_r: int, deadline: float) -> dict | None:
    """T's result, or None if T dies, overruns, or the parent goes away (stdin hangs up)."""
    poller = select.poll()
    poller.register(result_r, select.POLLIN)
    poller.register(0, 0)  # only POLLHUP: frame bytes on stdin belong to T
    buffer = bytearray()
    while (remaining := deadline - time.monotonic()) > 0:
        for fd, event in poller.poll(max(1, int(remaining * 1000))):
            if fd == 0 and event & (select.POLLHUP | select.POLLERR):
                return None
            if fd == result_r:
                chunk = os.read(result_r, 1 << 16)
                if not chunk:
                    return None
                buffer += chunk
                data = codec.unframe(buffer)
                if data is not None:
                    return json.loads(data)
    return None


def main() -> None:
    """Zygote loop: one signed result frame per (program frame, tests frame) pair."""
    uid, mode = int(sys.argv[1]), sys.argv[2]
    config = json.loads(codec.read_frame(0))
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    _load("_runner")  # before the file view changes
    hide = config.get("hide_paths", [])
    caps = iso.setup_isolation(uid, mode, hide, seccomp)
    plan = None
    if caps["mount_namespace"] and caps["pid_namespace"]:
        try:
            plan = iso.plan_root(config.get("packages", []), hide)
        except (OSError, ValueError) as error:
            caps["warnings"].append(f"cannot plan the minimal filesystem ({short(error)})")
    for name in PREIMPORT:
        __import__(name)
    spawn_t, spawn_s = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ctl_r, ctl_w = os.pipe()
    status_r, status_w = os.pipe()
    spawner_pid = os.fork()
    if spawner_pid == 0:  # the spawner S: forked before the key or any program has been read
        try:
            spawn_t.close()
            os.close(ctl_r)
            os.close(status_r)
            spawner(spawn_s, ctl_w, caps, plan, status_w)
        finally:
            os._exit(1)
    spawn_s.close()
    os.close(ctl_w)
    os.close(status_w)
    root_status = os.read(status_r, 4096).decode()
    os.close(status_r)
    caps["minimal_filesystem"] = root_status == "ok"
    if plan is not None and root_status != "ok":
        caps["warnings"].append(f"cannot build the minimal filesystem ({root_status[5:]})")
    if caps["minimal_filesystem"]:
        caps["hidden_paths"] = sorted(set(caps["hidden_paths"]) | set(plan["cover"]))
    caps["guarantees"] = iso.guarantees(caps)
    key = bytes.fromhex(json.loads(codec.read_frame(0))["key"])

    def send(obj: dict) -> None:
        payload = json.dumps(obj).encode()
        mac = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
        codec.write_all(1, codec.frame(mac + payload))

    send({"kind": "ready", "capabilities": caps, "pid": os.getpid()})
    seq = 0
    while True:
        try:
            req = json.loads(codec.read_frame(0))
        except EOFError:
            return
        seq += 1
        req["seq"] = seq
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(result_r)
            runner_process(req, result_w, spawn_t, ctl_r, caps)
        os.close(result_w)
        result = _await_result(result_r, time.monotonic() + float(req["deadline"]))
        if result is None:
            try:
                os.kill(pid, signal.SIGKILL)  # its spawned attempts follow (PDEATHSIG chain)
            except OSError:
                pass
        os.waitpid(pid, 0)
        os.close(result_r)
        while True:  # reap orphans handed to us as subreaper
            try:
                done, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if done == 0:
                break
            if done == spawner_pid:
                result = None
        if result is None:
            send(
                {
                    "kind": "result",
                    "nonce": req["nonce"],
                    "status": "internal_error",
                    "error_type": "SandboxError",
                    "message": "test runner died or overran",
                }
            )
            return  # the stream may be out of step: let the parent start a fresh zygote
        result.update(kind="result", nonce=req["nonce"])
        send(result)


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # noqa: BLE001 - reported, then no interpreter shutdown either
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)
