"""``SandboxLimits.on_timeout="raise"``, ``stdout_errors="strict"`` and ``packages``: the runner
options the authors' exact harness uses (issue 32; ``docs/sandbox.md``)."""

from __future__ import annotations

import importlib.util
import time

import pytest

from llm_marl_envs.sandbox import SandboxLimits, SandboxPool

# Hangs on its second call only; the counter lives in the program, so it survives a timeout
# only if the program does.
SECOND_CALL_HANGS = (
    "calls = [0]\n"
    "def f(x):\n"
    "    calls[0] += 1\n"
    "    if calls[0] == 2:\n"
    "        while True:\n"
    "            pass\n"
    "    return x\n"
)
FIVE = [f"assert candidate({i}) == {i}" for i in range(5)]
RAISE = SandboxLimits(timeout=0.4, on_timeout="raise")


def _errors(result) -> list:
    return [t.error_type for t in result.tests]


def test_kill_reloads_the_program_and_its_state(pool):
    result = pool.run(SECOND_CALL_HANGS, FIVE, "f", limits=SandboxLimits(timeout=0.4))
    assert _errors(result) == [None, "Timeout", None, "Timeout", None]  # the counter restarts


def test_raise_keeps_the_program_and_its_state(pool):
    result = pool.run(SECOND_CALL_HANGS, FIVE, "f", limits=RAISE)
    assert _errors(result) == [None, "Timeout", None, None, None]
    assert result.timeouts == 1 and not result.crashed


def test_the_timeout_is_an_exception_inside_the_program(pool):
    caught = (
        "def f(x):\n"
        "    try:\n"
        "        while True:\n"
        "            pass\n"
        "    except Exception as error:\n"
        "        return type(error).__name__ + ': ' + str(error)\n"
    )
    test = "assert candidate(0) == 'TimeoutException: Code execution timed out'"
    result = pool.run(caught, [test, "assert candidate(1) == 0"], "f", limits=RAISE)
    # Caught and returned: the test goes on with the value, as in an in-process runner.
    assert _errors(result) == [None, "AssertionError"]


def test_the_time_is_the_tests_not_each_calls(pool):
    slow = "import time\ndef f(x):\n    time.sleep(0.25)\n    return x\n"
    two_calls = "assert candidate(1) == 1 and candidate(2) == 2"
    result = pool.run(slow, [two_calls, "assert candidate(3) == 3"], "f", limits=RAISE)
    assert _errors(result) == ["Timeout", None]  # 0.25 + 0.25 s > 0.4 s for one test


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    [
        # catches the timeout and spins on
        "    while True:\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            pass\n",
        # refuses the alarm altogether
        "    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "    while True:\n        pass\n",
    ],
)
def test_a_program_that_does_not_come_back_is_killed_after_the_grace(pool, body):
    limits = SandboxLimits(timeout=0.4, on_timeout="raise", timeout_grace=0.5)
    start = time.monotonic()
    result = pool.run(f"def f(x):\n{body}", ["candidate(1)", "candidate(2)"], "f", limits=limits)
    assert result.tests[0].timed_out and result.tests[0].error_type == "Timeout"
    assert result.tests[1].error_type in ("Timeout", "NotRun")
    assert time.monotonic() - start < 6  # two tests, each at most timeout + grace (+ reload)


def test_a_program_raising_the_sandboxes_timeout_only_fails_its_own_tests(pool):
    forged = (
        "import sys\n"
        "def f(x):\n"
        "    raise sys.modules['_llm_marl_sandbox_runner'].TimeoutException('forged')\n"
    )
    result = pool.run(forged, FIVE, "f", limits=RAISE)
    assert result.tests_passed == 0 and result.timeouts == 3  # then the rest are not run
    assert _errors(result)[3:] == ["NotRun", "NotRun"]


SURROGATE = 'def f(x):\n    print("\\ud83d")\n    return x\n'


def test_strict_stdout_fails_on_a_lone_surrogate(pool):
    lenient = pool.run(SURROGATE, ["assert candidate(1) == 1"], "f")
    strict = pool.run(
        SURROGATE, ["assert candidate(1) == 1"], "f", limits=SandboxLimits(stdout_errors="strict")
    )
    assert lenient.tests_passed == 1 and "\\ud83d" in lenient.output
    assert strict.tests_passed == 0 and "UnicodeEncodeError" in strict.tests[0].message


def test_strict_stdout_keeps_stderr_lenient_as_python_does(pool):
    program = 'import sys\ndef f(x):\n    sys.stderr.write("\\ud83d")\n    print("ok \\u2713")\n    return x\n'
    result = pool.run(
        program, ["assert candidate(1) == 1"], "f", limits=SandboxLimits(stdout_errors="strict")
    )
    assert result.tests_passed == 1 and "ok \u2713" in result.output


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("on_timeout", "restart", "on_timeout must be one of"),
        ("stdout_errors", "ignore", "stdout_errors must be one of"),
        ("timeout_grace", 0, "timeout_grace must be in"),
        ("timeout_grace", 60, "timeout_grace must be in"),
    ],
)
def test_bad_options_are_one_line_errors(field, value, message):
    with pytest.raises(ValueError, match=message):
        SandboxLimits(**{field: value})


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="numpy is not installed")
def test_packages_are_importable_and_read_only():
    program = (
        "def f(x):\n"
        "    import os, numpy as np\n"
        "    try:\n"
        "        open(os.path.join(os.path.dirname(np.__file__), 'planted.py'), 'w')\n"
        "        return -1\n"
        "    except OSError:\n"
        "        return int(np.asarray([x, 1]).sum())\n"
    )
    limits = SandboxLimits(timeout=10, memory_bytes=4 << 30)
    with SandboxPool(1, packages=["numpy"]) as with_numpy, SandboxPool(1) as plain:
        shown = with_numpy.run(program, ["assert candidate(1) == 2"], "f", limits=limits)
        hidden = plain.run(program, ["assert candidate(1) == 2"], "f", limits=limits)
    assert shown.tests_passed == 1
    assert hidden.tests_passed == 0 and "numpy" in hidden.tests[0].message
