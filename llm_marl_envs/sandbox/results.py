"""Plain dataclasses for sandbox limits and results; all of them round-trip through JSON."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["ProgramResult", "SandboxLimits", "TestResult", "clean_program_text"]

#: Default whole-program time budget, in multiples of the per-test timeout.
PROGRAM_TIMEOUT_FACTOR = 4.0
#: ``SandboxLimits.on_timeout`` and ``SandboxLimits.stdout_errors`` values.
ON_TIMEOUT = ("kill", "raise")
STDOUT_ERRORS = ("backslashreplace", "strict")
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def clean_program_text(text: str) -> str:
    """Text a program produced, made safe for logs, ``infos`` and the next prompt.

    Terminal escape sequences are removed whole, ``\\r\\n`` and lone ``\\r`` become ``\\n``, and
    every other control character (C0, DEL, C1) and bidirectional override is dropped; tab
    and newline stay. Lone surrogates become U+FFFD.
    """
    if text.isprintable():
        return text
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return "".join(
        "\ufffd" if "\ud800" <= ch <= "\udfff" else ch
        for ch in text
        if ch in "\t\n" or (unicodedata.category(ch) != "Cc" and ch not in _BIDI)
    )


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one program.

    Attributes:
        timeout: Wall-clock seconds per test (and for loading the program). A test that runs
            past it is stopped, its whole process tree killed, and it counts as timed out.
        memory_bytes: Address-space limit (``RLIMIT_AS``) of the untrusted process.
        max_output_bytes: Bytes of stdout + stderr the program may write in total; past it the
            process is killed and the running test fails with ``OutputLimitExceeded``.
        file_size_bytes: Largest file the program may write (``RLIMIT_FSIZE``); also the size
            of its private tmpfs (``/tmp``, the only writable place, not executable) where
            namespaces work, so files and memory together stay within ``memory_bytes +
            file_size_bytes``. That tmpfs has one inode per 4 KiB of it (256 to 16384), which
            bounds the kernel memory of its files and extended attributes too.
        max_processes: Processes + threads of the sandbox uid (``RLIMIT_NPROC``). The default
            1 forbids ``fork`` and threads; only enforced where the sandbox can switch uid.
        max_open_files: ``RLIMIT_NOFILE``.
        cpu_seconds: CPU-time limit (``RLIMIT_CPU``) per process; ``None`` derives it from
            the timeout and the number of tests.
        program_timeout: Wall-clock seconds for the whole program: loading it (and reloading
            after crashes) and all its tests. When it is spent, the running test times out
            and the rest fail as ``NotRun`` (``ProgramResult.budget_exceeded``). ``None``
            means ``4 * timeout``, so one program never costs more than four test timeouts.
        max_reply_bytes: Largest encoded return value the trusted runner accepts from the
            program; a larger one fails the test as ``ProtocolError``.
        on_timeout: What a test that runs past ``timeout`` does to the program. ``"kill"``
            (default): its process tree is killed and the next test reloads the program
            (module state starts afresh). ``"raise"``: the timeout is raised inside the
            program, as an ``Exception`` (a ``signal.alarm`` handler would), and the same
            process goes on with the next test, its state kept; only a program that does not
            come back within ``timeout_grace`` seconds (it swallowed the exception, or
            blocks signals) is killed. The test counts as timed out either way.
        timeout_grace: Seconds a program has to come back after its in-program timeout
            (``on_timeout="raise"``); between 0 and 5.
        stdout_errors: How the program's ``sys.stdout`` encodes what cannot be UTF-8 (lone
            surrogates): ``"backslashreplace"`` (default: printing never fails) or
            ``"strict"`` (``UnicodeEncodeError`` in the program, as a UTF-8 terminal gives).
            ``sys.stderr`` always uses ``"backslashreplace"``, as Python's own does.
    """

    timeout: float = 3.0
    memory_bytes: int = 1 << 30
    max_output_bytes: int = 1 << 16
    file_size_bytes: int = 1 << 24
    max_processes: int = 1
    max_open_files: int = 64
    cpu_seconds: float | None = None
    program_timeout: float | None = None
    max_reply_bytes: int = 1 << 20
    on_timeout: str = "kill"
    timeout_grace: float = 1.0
    stdout_errors: str = "backslashreplace"

    def __post_init__(self) -> None:
        if self.on_timeout not in ON_TIMEOUT:
            raise ValueError(f"on_timeout must be one of {ON_TIMEOUT}, got {self.on_timeout!r}")
        if self.stdout_errors not in STDOUT_ERRORS:
            raise ValueError(
                f"stdout_errors must be one of {STDOUT_ERRORS}, got {self.stdout_errors!r}"
            )
        if not 0 < self.timeout_grace <= 5:
            raise ValueError(f"timeout_grace must be in (0, 5] seconds, got {self.timeout_grace!r}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be positive, got {self.timeout!r}")
        if self.program_timeout is not None and not self.program_timeout > 0:
            raise ValueError(f"program_timeout must be positive, got {self.program_timeout!r}")
        for name in (
            "memory_bytes",
            "max_output_bytes",
            "file_size_bytes",
            "max_processes",
            "max_open_files",
            "max_reply_bytes",
        ):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")

    @property
    def budget(self) -> float:
        """The whole-program time budget in force (``program_timeout`` or its default)."""
        if self.program_timeout is not None:
            return float(self.program_timeout)
        return PROGRAM_TIMEOUT_FACTOR * self.timeout

    def to_dict(self) -> dict[str, Any]:
        """The limits as a JSON-ready dict."""
        return asdict(self)


@dataclass
class TestResult:
    """Outcome of one test.

    Attributes:
        index: Position of the test in the list given to ``run_tests``.
        passed: True only when the trusted test runner saw the test complete without error.
        timed_out: The test ran past ``SandboxLimits.timeout``.
        error_type: ``None`` when passed, else e.g. ``"AssertionError"``, ``"Timeout"``,
            ``"CandidateCrashed"``, ``"UntrustedReturnType"``, ``"NotRun"``.
        message: Short human-readable detail (at most a few hundred characters).
        duration: Wall-clock seconds the test took.
    """

    __test__ = False  # not a pytest test class

    index: int
    passed: bool = False
    timed_out: bool = False
    error_type: str | None = None
    message: str = ""
    duration: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestResult:
        """Rebuild from :meth:`to_dict` output (unknown keys are ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class ProgramResult:
    """Outcome of one program and its tests.

    Attributes:
        status: ``"ok"`` (the program loaded and its tests ran), ``"syntax_error"``,
            ``"load_error"`` (its top level raised or the entry point is missing),
            ``"load_timeout"``, ``"setup_error"`` (the trusted ``setup`` raised), or
            ``"internal_error"`` (the sandbox itself failed; no test counts as passed).
        tests: One :class:`TestResult` per test, in order.
        tests_total: Number of tests given.
        tests_run: Tests that were started.
        tests_passed: Tests that passed.
        timeouts: Tests that timed out.
        crashed: The untrusted process died unexpectedly at least once (exit, signal, limit).
        stopped_early: ``max_timeouts`` was reached, or the time budget spent, and the
            remaining tests were not run.
        budget_exceeded: The program used up ``SandboxLimits.program_timeout``.
        wall_time: Seconds from dispatch to result, as measured by the caller's process.
        error_type: For a program-level failure, the exception type name.
        message: For a program-level failure, a short detail.
        output: The beginning of what the program wrote to stdout/stderr (decoded, capped).
    """

    status: str
    tests: list[TestResult] = field(default_factory=list)
    tests_total: int = 0
    tests_run: int = 0
    tests_passed: int = 0
    timeouts: int = 0
    crashed: bool = False
    stopped_early: bool = False
    budget_exceeded: bool = False
    wall_time: float = 0.0
    error_type: str | None = None
    message: str = ""
    output: str = ""

    @property
    def all_passed(self) -> bool:
        """True when there is at least one test and every test passed."""
        return self.tests_total > 0 and self.tests_passed == self.tests_total

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        return asdict(self)

    def to_json(self) -> str:
        """The result as a JSON string."""
        return json.dumps(self.to_dict())

    def cleaned(self) -> ProgramResult:
        """This result with every program-made text passed through :func:`clean_program_text`."""
        for test in self.tests:
            test.message = clean_program_text(test.message)
            test.error_type = test.error_type and clean_program_text(test.error_type)
        self.message = clean_program_text(self.message)
        self.error_type = self.error_type and clean_program_text(self.error_type)
        self.output = clean_program_text(self.output)
        return self

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProgramResult:
        """Rebuild from :meth:`to_dict` output (unknown keys are ignored)."""
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["tests"] = [TestResult.from_dict(t) for t in data.get("tests", [])]
        return cls(**kwargs)
