"""Behaviour of run_tests / run_many: verdicts, timeouts, load failures, clean-up, fallback."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest
from sandbox_helpers import (
    ADD,
    ADD_TESTS,
    FAST,
    assert_no_leftovers,
    check_still_works,
    descendants,
    processes_of_uids,
)

import llm_marl_envs.sandbox.pool as pool_module
from llm_marl_envs.sandbox import (
    ProgramResult,
    SandboxLimits,
    SandboxPool,
    default_uid_base,
    run_many,
    run_tests,
)

LOOP = "def f(x):\n    while True:\n        pass\n"
REPO = Path(__file__).resolve().parents[2]
ISOLATION = REPO / "llm_marl_envs" / "sandbox" / "_isolation.py"


def test_run_tests_reports_each_test(pool):
    result = pool.run(ADD, ADD_TESTS + ["assert candidate(2, 2) == 5", "x = candidate(1)"], "add")
    assert result.status == "ok"
    assert [t.passed for t in result.tests] == [True, True, False, False]
    assert result.tests[2].error_type == "AssertionError"
    assert result.tests[3].error_type == "TypeError"
    assert (result.tests_total, result.tests_run, result.tests_passed) == (4, 4, 2)
    assert not result.crashed and result.wall_time > 0
    assert ProgramResult.from_dict(json.loads(result.to_json())) == result


def test_setup_names_and_entry_point_name_are_visible_to_tests(pool):
    setup = "import math\nEXPECTED = 3\ndef add(a, b):\n    '''stub'''\n"
    tests = [
        "assert candidate(1, 2) == EXPECTED",
        "assert add(1, 2) == math.floor(3.5)",
        "assert candidate(1, 2) == helper",
    ]
    program = ADD + "helper = 3\n"
    result = pool.run(program, tests, "add", setup=setup)
    assert [t.passed for t in result.tests] == [True, True, False]
    assert result.tests[2].error_type == "NameError"  # program globals stay in the sandbox


def test_candidate_exceptions_keep_builtin_types_only(pool):
    program = (
        "class Custom(Exception):\n    pass\ndef f(x):\n    if x == 0:\n"
        "        raise ValueError('zero')\n    raise Custom('c')\n"
    )
    tests = [
        "try:\n    candidate(0)\nexcept ValueError as e:\n    assert str(e) == 'zero'",
        "try:\n    candidate(1)\nexcept ValueError:\n    pass",
        "candidate(1)",
    ]
    result = pool.run(program, tests, "f")
    assert [t.passed for t in result.tests] == [True, False, False]
    assert result.tests[1].error_type == result.tests[2].error_type == "CandidateError"


def test_syntax_and_load_errors(pool):
    result = pool.run("def add(a, b) return a", ADD_TESTS, "add")
    assert result.status == "syntax_error" and result.error_type == "SyntaxError"
    assert result.tests_passed == result.tests_run == 0
    result = pool.run("raise RuntimeError('top')\n" + ADD, ADD_TESTS, "add")
    assert (result.status, result.error_type) == ("load_error", "RuntimeError")
    result = pool.run(ADD, ADD_TESTS, "missing")
    assert (result.status, result.error_type) == ("load_error", "NameError")
    result = pool.run(ADD, ["assert (", "assert candidate(1, 1) == 2"], "add")
    assert [t.error_type for t in result.tests] == ["TestSyntaxError", None]
    result = pool.run(ADD, ADD_TESTS, "add", setup="raise ValueError('bad setup')")
    assert result.status == "setup_error" and result.tests_passed == 0


def test_timeouts_are_reported_and_the_tree_is_killed(pool):
    program = LOOP + "def g(x):\n    return x\n"
    tests = ["assert candidate(1) == 1"]
    result = pool.run(program, tests, "f", limits=SandboxLimits(timeout=0.3))
    assert result.timeouts == 1 and result.tests[0].timed_out
    assert result.tests[0].error_type == "Timeout" and not result.tests[0].passed
    result = pool.run("while True:\n    pass\n", tests, "f", limits=SandboxLimits(timeout=0.3))
    assert result.status == "load_timeout" and result.tests_passed == 0
    check_still_works(pool)
    assert_no_leftovers(pool)


def test_max_timeouts_stops_the_remaining_tests(pool):
    program = "def f(x):\n    while x:\n        pass\n    return 0\n"
    tests = [
        "assert candidate(0) == 0",
        "candidate(1)",
        "assert candidate(0) == 0",
        "candidate(1)",
        "candidate(1)",
        "assert candidate(0) == 0",
    ]
    result = pool.run(program, tests, "f", limits=SandboxLimits(timeout=0.25), max_timeouts=2)
    assert [t.passed for t in result.tests] == [True, False, True, False, False, False]
    assert [t.timed_out for t in result.tests] == [False, True, False, True, False, False]
    assert [t.error_type for t in result.tests][4:] == ["NotRun", "NotRun"]
    assert result.stopped_early and result.timeouts == 2 and result.tests_run == 4


def test_a_crash_fails_one_test_and_the_next_test_gets_a_fresh_process(pool):
    program = "import os\ndef f(x):\n    if x < 0:\n        os._exit(0)\n    return x\n"
    tests = ["assert candidate(1) == 1", "assert candidate(-1) == -1", "assert candidate(2) == 2"]
    result = pool.run(program, tests, "f")
    assert [t.passed for t in result.tests] == [True, False, True]
    assert result.tests[1].error_type == "CandidateCrashed" and result.crashed
    assert "exited with status 0" in result.tests[1].message


def test_state_persists_between_calls_within_one_process(pool):
    program = "calls = []\ndef f(x):\n    calls.append(x)\n    return len(calls)\n"
    result = pool.run(program, ["assert candidate(0) == 1", "assert candidate(0) == 2"], "f")
    assert result.tests_passed == 2


def test_run_many_keeps_order_and_accepts_tuples_and_dicts():
    jobs = []
    for i in range(6):
        program = f"def f(x):\n    return x + {i}\n"
        jobs.append(
            (program, [f"assert candidate(1) == {i + 1}"], "f")
            if i % 2
            else {
                "program": program,
                "tests": [f"assert candidate(1) == {i + 1}"],
                "entry_point": "f",
            }
        )
    results = run_many(jobs, workers=2)
    assert [r.tests_passed for r in results] == [1] * 6
    assert run_tests(ADD, ADD_TESTS, "add").tests_passed == 2
    with pytest.raises(ValueError):
        run_many([{"program": ADD}])


def test_output_is_captured_and_capped(pool):
    program = "print('hello from the top')\ndef f(x):\n    print('x' * 100)\n    return x\n"
    result = pool.run(program, ["assert candidate(1) == 1"], "f")
    assert result.tests_passed == 1 and result.output.startswith("hello from the top\nxxx")


def test_work_dirs_are_private_and_removed(pool, caps):
    before = set(os.listdir(tempfile.gettempdir()))
    program = (
        "import os\ndef f(x):\n    open('data.txt', 'w').write('x' * 1000)\n"
        "    os.mkdir('sub')\n    return os.getcwd()\n"
    )
    result = pool.run(program, ["assert isinstance(candidate(1), str)"], "f")
    assert result.tests_passed == 1
    after = set(os.listdir(tempfile.gettempdir()))
    assert not [name for name in after - before if name.startswith("llm-marl-sandbox-")]
    if caps["private_tmp"]:
        assert not Path("/tmp/work").exists()


def test_capabilities_describe_the_isolation(caps):
    for key in (
        "mode",
        "network_namespace",
        "pid_namespace",
        "setuid",
        "nproc_enforced",
        "warnings",
    ):
        assert key in caps
    if os.geteuid() == 0:
        assert caps["setuid"] and caps["uid"] >= default_uid_base()


def test_degraded_mode_warns_once_and_still_works():
    pool_module._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SandboxPool(1, isolation="none") as degraded:
            assert degraded.capabilities()["mode"] == "none"
            check_still_works(degraded)
            result = degraded.run(LOOP, ["candidate(1)"], "f", limits=SandboxLimits(timeout=0.3))
            assert result.timeouts == 1
            check_still_works(degraded)
            assert_no_leftovers(degraded)
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "isolation disabled" in messages[0]


SCRIPT = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    from llm_marl_envs.sandbox import (SandboxError, SandboxLimits, SandboxPool, capabilities,
                                       run_tests)
    caps = capabilities()
    good = run_tests("def f(x):\\n    return x\\n", ["assert candidate(2) == 2"], "f")
    loop = run_tests("def f(x):\\n    while True: pass\\n", ["candidate(1)"], "f",
                     limits=SandboxLimits(timeout=0.3))
    sock = run_tests("import socket\\ndef f(x):\\n    socket.socket()\\n", ["candidate(1)"], "f")
try:
    SandboxPool(1, isolation="strict").capabilities()
    strict = "ran"
except SandboxError as error:
    strict = str(error)
print(json.dumps({"caps": caps, "good": good.tests_passed, "loop": loop.timeouts,
                  "sock": sock.tests[0].error_type, "strict": strict,
                  "warnings": [str(w.message) for w in caught]}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a non-root interpreter")
@pytest.mark.slow
def test_non_root_fallback_runs_and_warns():
    def become_nobody() -> None:
        # The interpreter may live under a private home (/root/.pyenv): expose it first, as
        # the fork servers do for the sandbox uid, then drop root.
        spec = importlib.util.spec_from_file_location("_iso", ISOLATION)
        iso = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(iso)
        iso.expose_interpreter([], extra=[str(REPO)])
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)

    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        preexec_fn=become_nobody,
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["caps"]["mode"] == "none" and not report["caps"]["root"]
    assert report["good"] == 1 and report["loop"] == 1
    assert len(report["warnings"]) == 1 and "not root" in report["warnings"][0]
    # seccomp needs no privilege: even here no socket can be made
    assert report["caps"]["guarantees"]["no_sockets"] and report["sock"] == "PermissionError"
    missing = [k for k, held in report["caps"]["guarantees"].items() if not held]
    assert "minimal_filesystem" in missing and "isolated_processes" in missing
    assert report["strict"].startswith("isolation='strict' refused: ")
    assert all(name in report["strict"] for name in missing)


def test_fast_limits_fixture_is_sane():
    assert FAST.timeout == 1.0


@pytest.mark.slow
def test_a_fork_server_killed_from_outside_is_replaced():
    with SandboxPool(1) as own:
        check_still_works(own)
        (old,) = own.worker_pids()
        os.kill(old, signal.SIGKILL)
        time.sleep(0.2)
        check_still_works(own)
        assert own.worker_pids() != [old]
        assert_no_leftovers(own)


PARENT = """
from llm_marl_envs.sandbox import SandboxLimits, SandboxPool
pool = SandboxPool(1)
pool.run("def f(x):\\n    while True: pass\\n", ["candidate(1)"], "f",
         limits=SandboxLimits(timeout=60))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="identifies the sandbox by its uid (root only)")
@pytest.mark.slow
def test_killing_the_parent_leaves_no_process_behind():
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    sandbox_uid = range(default_uid_base(parent.pid), default_uid_base(parent.pid) + 64)
    try:
        deadline = time.monotonic() + 30
        while not processes_of_uids(sandbox_uid):  # the looping program is running
            assert time.monotonic() < deadline and parent.poll() is None
            time.sleep(0.05)
        tree = descendants(parent.pid)
        assert tree
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 10
    while processes_of_uids(sandbox_uid) or [p for p in tree if Path(f"/proc/{p}").exists()]:
        assert time.monotonic() < deadline, "processes survived their parent"
        time.sleep(0.05)
