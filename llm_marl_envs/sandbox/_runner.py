"""Trusted test runner (process T of _worker.py). Stdlib only; loaded by the worker script.

The tests and the trusted ``setup`` run here, never in the untrusted process U. ``candidate``
is a proxy: each call sends its arguments to U over a pipe and returns U's answer decoded by
_codec into fresh builtin objects (or raises). Whatever U does - exit, print, patch its own
builtins, return objects with a rigged ``__eq__`` - it can only influence the values the
proxy returns, and the verdict of every test is made here.

Timeouts (``SandboxLimits.on_timeout``): with ``"kill"`` a test past its time kills U, and
the next test loads the program afresh. With ``"raise"`` the time left of the test travels
with each call, U raises :class:`TimeoutException` inside the program when it runs out
(:class:`InProgramAlarm`, the only part of this file that runs in U), and the same U goes on
with the next test; U is killed only when it does not answer within ``timeout_grace``
seconds after the test's deadline.
"""

from __future__ import annotations

import array
import builtins
import json
import math
import os
import random
import select
import signal
import socket
import sys
import time

codec = sys.modules["_llm_marl_sandbox_codec"]

OUTPUT_KEEP = 4096  # bytes of program output kept for the result
INTERNAL_WAIT = 10.0  # seconds for the sandbox's own bookkeeping (never reached in practice)


class Fault(BaseException):
    """A sandbox verdict on a test; BaseException so ``except Exception`` in tests misses it."""

    error_type = "SandboxFault"
    kill = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


def _verdict(name: str, error_type: str, kill: bool = False) -> type[Fault]:
    return type(name, (Fault,), {"error_type": error_type, "kill": kill})


Timeout = _verdict("Timeout", "Timeout")
BudgetSpent = _verdict("BudgetSpent", "Timeout")  # the program's whole time budget
Crashed = _verdict("Crashed", "CandidateCrashed")
UntrustedReturn = _verdict("UntrustedReturn", "UntrustedReturnType")
BadArgument = _verdict("BadArgument", "UnsupportedArgument")
Aborted = _verdict("Aborted", "CandidateAborted")  # SystemExit, KeyboardInterrupt, ...
ProtocolError = _verdict("ProtocolError", "ProtocolError", kill=True)
OutputLimit = _verdict("OutputLimit", "OutputLimitExceeded", kill=True)


class TimeoutException(Exception):
    """The in-program timeout of ``on_timeout="raise"``, raised inside the program by U's
    alarm; an ``Exception``, like the one a ``signal.alarm`` handler raises in a runner that
    executes the program in its own process (the MAGRPO authors')."""


class InProgramAlarm:
    """U's side of ``on_timeout="raise"``: one alarm per call, for the time the test has left.

    ``fired`` tells T that the alarm went off during the call, even when the program caught
    the exception and returned a value: the test's one alarm is then spent.
    """

    exception = TimeoutException

    def __init__(self) -> None:
        self.fired = False

    def call(self, fn, args: list, kwargs: dict, seconds: float = 0.0) -> object:
        self.fired = False
        signal.signal(signal.SIGALRM, self._ring)  # re-installed per call: the program may not
        if seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return fn(*args, **kwargs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _ring(self, _signum: int, _frame: object) -> None:
        self.fired = True
        raise TimeoutException("Code execution timed out")


class Internal(Exception):
    """The sandbox itself misbehaved; the program is reported as an internal error."""


class CandidateError(Exception):
    """The candidate raised an exception whose type is not a builtin exception."""


def short(error: BaseException, limit: int = 300) -> str:
    text = error.message if isinstance(error, Fault) else str(error)
    return (text or type(error).__name__)[:limit]


def wait_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        try:
            return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
        except ValueError:
            return f"killed by signal {os.WTERMSIG(status)}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


class Runner:
    """Runs one program's tests against attempts of U, spawned on request by S."""

    def __init__(
        self, req: dict, tests_req: dict, caps: dict, cmd: socket.socket, ctl_r: int
    ) -> None:
        self.limits = req["limits"]
        self.seq = int(req["seq"])
        # S gets only what it needs to start an attempt; the program goes to U directly.
        self.attempt_req = {k: req[k] for k in ("limits", "cpu_seconds")}
        self.program_frame = codec.frame(
            json.dumps({k: req[k] for k in ("program", "entry_point")}).encode()
        )
        self.timeout = float(self.limits["timeout"])
        self.budget = float(req["program_timeout"])
        self.budget_end = math.inf
        self.max_reply = int(self.limits["max_reply_bytes"])
        self.entry_point = str(req["entry_point"])
        self.tests = list(tests_req["tests"])
        self.setup = str(tests_req.get("setup", ""))
        self.max_timeouts = int(tests_req["max_timeouts"])
        self.raise_timeouts = self.limits.get("on_timeout", "kill") == "raise"
        self.grace = float(self.limits.get("timeout_grace", 1.0))
        self.alarm_spent = False  # on_timeout="raise": this test's alarm already went off in U
        self.caps, self.cmd, self.ctl_r = caps, cmd, ctl_r
        self.ctl_buf = b""
        self.events: dict[int, dict[str, str]] = {}
        self.poller = select.poll()
        self.poller.register(ctl_r, select.POLLIN)
        self.attempt, self.alive, self.in_call, self.armed = 0, False, False, False
        self.output, self.output_total, self.enforce_output = bytearray(), 0, False
        self.pending: Fault | None = None
        self.crashed = self.budget_exceeded = False
        self.outbox = bytearray()
        self.deadline = 0.0
        signal.signal(signal.SIGALRM, self._alarm)

    # ------------------------------------------------------------------ faults and timers
    def _fault(self, fault: Fault) -> Fault:
        if self.pending is None:
            self.pending = fault
        if isinstance(fault, (Crashed, OutputLimit)):
            self.crashed = True
        return fault

    def _alarm(self, _signum: int, _frame: object) -> None:
        if self.armed:
            self.armed = False
            raise self._fault(self._timeout_fault())

    def _timeout_fault(self) -> Fault:
        if time.monotonic() >= self.budget_end - 1e-3:
            self.budget_exceeded = True
            return BudgetSpent(f"the program's time budget of {self.budget:g} s is spent")
        return Timeout(f"test exceeded {self.timeout:g} s")

    def _arm(self, seconds: float) -> None:
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, max(1e-3, seconds))

    def _deadline(self, start: float) -> float:
        """When a wait that starts now must end: the per-test timer or the program budget."""
        return min(start + self.timeout, self.budget_end)

    def _disarm(self) -> None:
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    # ------------------------------------------------------------------ attempts of U
    def spawn(self) -> None:
        self.attempt = self.attempt + 1 if self.attempt else self.seq * 100_000 + 1
        call_r, self.call_w = os.pipe()
        self.reply_r, reply_w = os.pipe()
        self.out_r, out_w = os.pipe()
        request = codec.frame(json.dumps({**self.attempt_req, "attempt": self.attempt}).encode())
        fds = [call_r, reply_w, out_w]
        sent = self.cmd.sendmsg(
            [request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        )
        self.cmd.sendall(request[sent:])
        for fd in (call_r, reply_w, out_w):
            os.close(fd)
        for fd in (self.reply_r, self.out_r):
            os.set_blocking(fd, False)
            self.poller.register(fd, select.POLLIN)
        os.set_blocking(self.call_w, False)
        self.reply_buf, self.reply_eof, self.out_open = bytearray(), False, True
        self.reply_overflow = False
        self.outbox = bytearray()
        self._send(self.program_frame)  # U reads it once it is sandboxed
        self.events[self.attempt] = {}
        self.alive = True

    def _read_ctl(self) -> None:
        data = os.read(self.ctl_r, 4096)
        if not data:
            raise Internal("control pipe closed")
        self.ctl_buf += data
        *lines, self.ctl_buf = self.ctl_buf.split(b"\n")
        for line in lines:
            kind, attempt, *rest = line.decode().split(" ", 2) + [""]
            self.events.setdefault(int(attempt), {})[kind] = rest[0]

    def _read_out(self) -> None:
        try:
            data = os.read(self.out_r, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self.poller.unregister(self.out_r)
            self.out_open = False
            return
        self.output_total += len(data)
        if len(self.output) < OUTPUT_KEEP:
            self.output += data[: OUTPUT_KEEP - len(self.output)]
        if self.enforce_output and self.output_total > int(self.limits["max_output_bytes"]):
            raise self._fault(
                OutputLimit(f"more than {self.limits['max_output_bytes']} bytes of output")
            )

    def _read_reply(self) -> None:
        try:
            data = os.read(self.reply_r, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self.poller.unregister(self.reply_r)
            self.reply_eof = True
        elif self.reply_overflow:
            return  # the attempt is being killed: drain without holding anything
        elif len(self.reply_buf) + len(data) > self.max_reply + 4:
            self.reply_overflow, self.reply_buf = True, bytearray()
            raise self._fault(ProtocolError(f"reply larger than {self.max_reply} bytes"))
        else:
            self.reply_buf += data

    def _send(self, data: bytes) -> None:
        """Queue bytes for U; :meth:`_poll` writes them as the pipe takes them (never blocks)."""
        if not self.outbox:
            self.poller.register(self.call_w, select.POLLOUT)
        self.outbox += data
        self._flush()

    def _flush(self) -> None:
        try:
            written = os.write(self.call_w, self.outbox)
        except BlockingIOError:
            return
        except BrokenPipeError:  # U is gone: the reply stream's EOF reports it
            written = len(self.outbox)
        del self.outbox[:written]
        if not self.outbox:
            self.poller.unregister(self.call_w)

    def _poll(self, timeout: float) -> None:
        for fd, _ in self.poller.poll(max(0, math.ceil(timeout * 1000))):
            if fd == self.ctl_r:
                self._read_ctl()
            elif self.alive and fd == self.reply_r:
                self._read_reply()
            elif self.alive and fd == self.out_r:
                self._read_out()
            elif self.alive and fd == self.call_w and self.outbox:
                self._flush()

    def _wait_event(self, *kinds: str) -> str:
        end = time.monotonic() + INTERNAL_WAIT
        events = self.events[self.attempt]
        while not any(k in events for k in kinds):
            if time.monotonic() > end:
                raise Internal(f"no {'/'.join(kinds)} from attempt {self.attempt}")
            self._poll(end - time.monotonic())
        return next(k for k in kinds if k in events)

    def _reap(self) -> None:
        """Wait until every process of the attempt is gone, then close its pipes."""
        self.enforce_output = False
        was_armed, self.armed = self.armed, False  # no Timeout half-way through the clean-up
        try:
            self._wait_event("dead")
            while self.out_open:
                self._read_out()
            for fd in (self.reply_r, self.out_r, self.call_w):
                try:
                    self.poller.unregister(fd)
                except KeyError:
                    pass
            self.outbox = bytearray()
            for fd in (self.call_w, self.reply_r, self.out_r):
                os.close(fd)
            self.alive = False
        finally:
            if was_armed:
                self._arm(max(0.001, self.deadline - time.monotonic()))
        if "fail" in self.events[self.attempt]:
            raise Internal(f"sandbox set-up failed: {self.events[self.attempt]['fail']}")

    def kill(self) -> None:
        """SIGKILL the attempt's whole process tree and wait until it is gone."""
        if not self.alive:
            return
        events = self.events[self.attempt]
        self.enforce_output = False
        self._poll(0)  # read pending control messages: never signal a pid already reaped
        if not ("exit" in events or "dead" in events or "fail" in events):
            kind = self._wait_event("pid", "group", "exit", "dead", "fail")
            if kind in ("pid", "group"):
                try:
                    (os.kill if kind == "pid" else os.killpg)(int(events[kind]), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._reap()

    def exit_text(self) -> str:
        status = self.events[self.attempt].get("exit")
        return "the candidate process " + (wait_text(int(status)) if status else "died")

    def wait_message(self, deadline: float) -> dict:
        """Next message from U, or a Fault (Timeout, Crashed, OutputLimit, ProtocolError)."""
        while True:
            data = codec.unframe(self.reply_buf)
            if data is not None:
                try:
                    message = json.loads(data)
                except ValueError:
                    message = None
                if type(message) is not dict or type(message.get("k")) is not str:
                    raise self._fault(ProtocolError("malformed message from the candidate"))
                return message
            if self.reply_eof:
                self._reap()
                raise self._fault(Crashed(self.exit_text()))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._fault(self._timeout_fault())
            self._poll(remaining)

    # ------------------------------------------------------------------ the candidate proxy
    def call(self, args: tuple, kwargs: dict) -> object:
        if not self.alive:
            raise self._fault(Crashed("the candidate process is no longer running"))
        wire = (args, kwargs)
        if self.raise_timeouts:  # U keeps the test's time; T waits for it, plus a grace
            self._disarm()
            now = time.monotonic()
            if now >= self.deadline and not self.alarm_spent:
                self.alarm_spent = True  # the test's alarm goes off here, before the call
                raise self._fault(self._timeout_fault())
            wire = (args, kwargs, 0.0 if self.alarm_spent else self.deadline - now)
            wait_until = max(self.deadline, now) + self.grace
        else:
            wait_until = self.deadline
        try:
            payload = codec.frame(codec.dumps(wire))
        except codec.WireError as error:
            raise self._fault(BadArgument(f"argument not plain data: {error}")) from None
        self.in_call, self.enforce_output = True, True
        self._send(payload)
        try:
            message = self.wait_message(wait_until)
        except MemoryError:  # a reply too costly to hold: the candidate's fault, not ours
            self.reply_buf = bytearray()
            raise self._fault(ProtocolError("reply too large to decode")) from None
        self.in_call = False
        if self.raise_timeouts:
            self._after_alarmed_call(message)
        kind = message["k"]
        if kind == "ret":
            try:
                return codec.from_wire(message.get("v"))
            except codec.WireError as error:
                raise self._fault(UntrustedReturn(str(error))) from None
            except MemoryError:
                raise self._fault(ProtocolError("reply too large to decode")) from None
        if kind == "bad":
            raise self._fault(UntrustedReturn(str(message.get("msg"))[:300]))
        if kind == "raise":
            name, text = message.get("type"), str(message.get("msg", ""))[:300]
            cls = getattr(builtins, name, None) if isinstance(name, str) else None
            if isinstance(cls, type) and issubclass(cls, Exception):
                try:
                    return_error: BaseException = cls(text)
                except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError's signature
                    return_error = CandidateError(f"{name}: {text}")
                raise return_error
            if isinstance(cls, type) and issubclass(cls, BaseException):
                raise self._fault(Aborted(f"the candidate raised {name}"))
            raise CandidateError(f"{str(name)[:80]}: {text}")
        raise self._fault(ProtocolError(f"unexpected message {kind[:40]!r}"))

    def _after_alarmed_call(self, message: dict) -> None:
        """``on_timeout="raise"``: U's timeout is this test's; otherwise T's timer takes over
        the time the test has left (none if U's alarm went off and the program caught it)."""
        self.alarm_spent |= message.get("alarm") is True or message["k"] == "timeout"
        if message["k"] == "timeout":
            raise self._fault(self._timeout_fault())
        if not self.alarm_spent:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.alarm_spent = True
                raise self._fault(self._timeout_fault())
            self._arm(left)

    def make_candidate(self):
        call = self.call

        def candidate(*args, **kwargs):
            return call(args, kwargs)

        candidate.__name__ = candidate.__qualname__ = self.entry_point
        return candidate

    def load(self) -> tuple[str, str, str] | None:
        """Spawn U if needed and wait for its program to load; (status, type, msg) on failure."""
        if not self.alive:
            self.spawn()
        self.pending, self.enforce_output = None, True
        try:
            message = self.wait_message(self._deadline(time.monotonic()))
        except Fault as fault:
            self.kill()
            status = "load_timeout" if isinstance(fault, (Timeout, BudgetSpent)) else "load_error"
            return status, fault.error_type, short(fault)
        finally:
            self.pending = None
        kind = message["k"]
        if kind == "ready":
            return None
        self.kill()
        status = "syntax_error" if kind == "syntax" else "load_error"
        return status, str(message.get("type"))[:80], str(message.get("msg", ""))[:300]

    # ------------------------------------------------------------------ the tests
    def run(self) -> dict:
        n = len(self.tests)
        tests = [
            {
                "index": i,
                "passed": False,
                "timed_out": False,
                "error_type": None,
                "message": "",
                "duration": 0.0,
            }
            for i in range(n)
        ]
        out = {
            "status": "ok",
            "tests": tests,
            "tests_total": n,
            "tests_run": 0,
            "tests_passed": 0,
            "timeouts": 0,
            "crashed": False,
            "stopped_early": False,
            "budget_exceeded": False,
            "error_type": None,
            "message": "",
            "output": "",
        }
        random.seed(0)  # trusted tests that use the global random module stay reproducible
        try:
            self.budget_end = time.monotonic() + self.budget  # loads and tests, not setup
            self.spawn()  # U loads the program while the tests compile here
            self._run(tests, out)
        except Internal as error:
            out.update(status="internal_error", error_type="SandboxError", message=str(error))
            for t in tests:
                t.update(passed=False, error_type=t["error_type"] or "SandboxError")
        finally:
            try:
                self.kill()
            except Internal:
                pass
        out["tests_passed"] = sum(t["passed"] for t in tests)
        out["crashed"] = self.crashed
        out["budget_exceeded"] = self.budget_exceeded
        out["output"] = bytes(self.output).decode("utf-8", "replace")
        return out

    def _run(self, tests: list[dict], out: dict) -> None:
        base = {"__name__": "__sandbox_tests__", "__builtins__": builtins}
        try:
            self._arm(self.timeout)
            try:
                exec(compile(self.setup, "<setup>", "exec"), base)  # noqa: S102 - trusted
            finally:
                self._disarm()
        except BaseException as error:  # noqa: BLE001
            self._fail_from(tests, 0, type(error).__name__, f"setup failed: {short(error)}")
            out.update(status="setup_error", error_type=type(error).__name__, message=short(error))
            return
        # The entry point's own name is the candidate too (some tests call it by name).
        base["candidate"] = base[self.entry_point] = self.make_candidate()
        codes: list = []
        for i, source in enumerate(self.tests):
            try:
                codes.append(compile(source, f"<test {i}>", "exec"))
            except (SyntaxError, ValueError) as error:
                codes.append(error)
        failure = self.load()
        if failure:
            out.update(status=failure[0], error_type=failure[1], message=failure[2])
            self._fail_from(tests, 0, failure[1], failure[2])
            return
        for i, code in enumerate(codes):
            result = tests[i]
            if out["timeouts"] >= self.max_timeouts or time.monotonic() >= self.budget_end:
                out["stopped_early"] = True
                why = (
                    f"{self.max_timeouts} tests timed out"
                    if out["timeouts"] >= self.max_timeouts
                    else f"the program's time budget of {self.budget:g} s is spent"
                )
                self.budget_exceeded |= out["timeouts"] < self.max_timeouts
                result.update(error_type="NotRun", message=f"not run: {why}")
                continue
            if isinstance(code, BaseException):
                result.update(error_type="TestSyntaxError", message=short(code))
                continue
            if not self.alive:
                failure = self.load()
                if failure and self.budget_exceeded:
                    out["stopped_early"] = True
                    self._fail_from(tests, i, "NotRun", f"not run: {failure[2]}")
                    return
                if failure:
                    self._fail_from(tests, i, failure[1], f"reloading the program: {failure[2]}")
                    return
            out["tests_run"] += 1
            self.pending, self.in_call, self.alarm_spent = None, False, False
            start = time.monotonic()
            self.deadline = self._deadline(start)
            error: BaseException | None = None
            try:
                self._arm(self.deadline - start)
                try:
                    exec(code, dict(base))  # noqa: S102 - trusted test code
                finally:
                    self._disarm()
            except BaseException as raised:  # noqa: BLE001
                error = raised
            error = self.pending or error  # a fault swallowed by the test still fails it
            if error is None:
                result["passed"] = True
            else:
                if isinstance(error, Fault) and (error.kill or self.in_call):
                    self.kill()
                timed_out = isinstance(error, (Timeout, BudgetSpent))
                out["timeouts"] += timed_out
                result.update(
                    timed_out=timed_out,
                    message=short(error),
                    error_type=getattr(error, "error_type", type(error).__name__),
                )
            self.in_call = False
            result["duration"] = round(time.monotonic() - start, 6)

    @staticmethod
    def _fail_from(tests: list[dict], start: int, error_type: str, message: str) -> None:
        for t in tests[start:]:
            t.update(passed=False, error_type=error_type, message=message)
