"""Hostile programs: each scores 0 passed tests, and the sandbox keeps working after it.

Every hostile program defines ``f``; the test asserts a value that ``f`` cannot compute
honestly, so a pass would mean the attack worked. After each one, a correct program must
still pass and no process may be left behind.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

import pytest
from sandbox_helpers import assert_no_leftovers, check_still_works

from llm_marl_envs.sandbox import SandboxLimits, SandboxPool, default_hidden_paths

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # hostile programs, each up to its time budget
QUICK = SandboxLimits(timeout=1.0)
TEST = ["assert candidate(1) == 'expected-7f3a'", "assert candidate(2) == 'expected-7f3a'"]


def run_hostile(
    pool: SandboxPool, program: str, tests: list[str] = TEST, limits: SandboxLimits = QUICK
):
    result = pool.run(program, tests, "f", limits=limits)
    assert result.tests_passed == 0, result
    assert not any(t.passed for t in result.tests)
    check_still_works(pool)
    assert_no_leftovers(pool)
    return result


HOSTILE = {
    "infinite_loop": "def f(x):\n    while True:\n        pass\n",
    "recursion": "def f(x):\n    return f(x)\n",
    "deep_recursion_segfault": (
        "import sys\nsys.setrecursionlimit(10**8)\ndef f(x):\n    return f(x + 1)\n"
    ),
    "memory_bomb": "def f(x):\n    a = []\n    while True:\n        a.append(bytearray(10**7))\n",
    "huge_alloc": "def f(x):\n    return ' ' * 10**11\n",
    "sys_exit": "import sys\ndef f(x):\n    sys.exit(0)\n",
    "os_exit": "import os\ndef f(x):\n    os._exit(0)\n",
    "top_level_exit": "import os\nos._exit(0)\ndef f(x):\n    return 1\n",
    "raise_system_exit": "def f(x):\n    raise SystemExit(0)\n",
    "keyboard_interrupt": "def f(x):\n    raise KeyboardInterrupt\n",
    "custom_exception": ("class Pass(Exception):\n    pass\ndef f(x):\n    raise Pass('passed')\n"),
    "abort": "import os\ndef f(x):\n    os.abort()\n",
    "huge_output": "def f(x):\n    while True:\n        print('x' * 10000)\n",
    "huge_output_top_level": "print('y' * 10**7)\ndef f(x):\n    return 1\n",
    "busy_threads": (
        "import threading\ndef spin():\n    while True:\n        pass\n"
        "def f(x):\n    for _ in range(8):\n        threading.Thread(target=spin,"
        " daemon=True).start()\n    while True:\n        pass\n"
    ),
    "fork_bomb": (
        "import os\ndef f(x):\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n"
    ),
    "big_file": "def f(x):\n    open('big', 'wb').write(b'0' * 10**9)\n    return 0\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_program_scores_zero(pool, isolated, name):
    result = run_hostile(pool, HOSTILE[name])
    if name in ("infinite_loop", "fork_bomb"):  # fork() fails: RLIMIT_NPROC is 1 by default
        assert result.timeouts >= 1 and result.tests[0].timed_out
    if name == "busy_threads":  # so does starting a thread
        assert result.tests[0].error_type == "RuntimeError"
    if name.startswith("huge_output"):
        assert len(result.output) <= 4096
        assert "OutputLimitExceeded" in (result.error_type, result.tests[0].error_type)


def test_fork_bomb_with_processes_allowed_is_contained(pool, isolated):
    limits = SandboxLimits(timeout=1.0, max_processes=32)
    result = run_hostile(pool, HOSTILE["fork_bomb"], limits=limits)
    assert result.timeouts >= 1


def test_busy_threads_with_threads_allowed_are_killed(pool, isolated):
    limits = SandboxLimits(timeout=0.5, max_processes=16)
    run_hostile(pool, HOSTILE["busy_threads"], limits=limits)


@pytest.mark.parametrize(
    "body",
    [
        "class Liar:\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\ndef f(x):\n    return Liar()\n",
        "class Truthy:\n    def __bool__(self):\n        return True\n    __eq__ = lambda s, o: s\n"
        "def f(x):\n    return Truthy()\n",
        "class I(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\ndef f(x):\n    return I(0)\n",
        "class S(str):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = str.__hash__\ndef f(x):\n    return S('')\n",
        "class L(list):\n    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return L()\n",
        "class Liar:\n    def __eq__(self, other):\n        return True\n"
        "def f(x):\n    return [Liar()]\n",
        "def f(x):\n    return f\n",
    ],
    ids=["eq", "bool", "int_subclass", "str_subclass", "list_subclass", "nested", "function"],
)
def test_fake_equality_is_an_untrusted_return_type(pool, body):
    result = run_hostile(pool, body)
    assert result.tests[0].error_type == "UntrustedReturnType"


@pytest.mark.parametrize(
    "body",
    [
        # patch the builtins and the assertion machinery the harness could rely on
        "import builtins\nclass Never(Exception):\n    pass\nbuiltins.AssertionError = Never\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.len = lambda x: 0\n"
        "def f(x):\n    return 0\n",
        # patch modules the tests might import
        "import math, sys\nmath.fabs = lambda x: 0\nsys.modules['json'] = None\n"
        "def f(x):\n    return 0\n",
        # print fake pass markers and fake result frames
        "import json, sys\nfor i in range(3):\n    print(json.dumps({'status': 'ok', 'passed': True, "
        "'tests_passed': 99, 'k': 'ret', 'v': 'expected-7f3a'}))\n"
        "sys.stdout.flush()\ndef f(x):\n    print('PASSED')\n    return 0\n",
        # write forged messages straight into every open descriptor
        "import os, json\nmsg = json.dumps({'k': 'ready'}).encode()\n"
        "for fd in range(3, 64):\n    try:\n        os.write(fd, len(msg).to_bytes(4, 'big') + msg)\n"
        "    except OSError:\n        pass\ndef f(x):\n    os._exit(0)\n",
        # hunt for the tests (and the expected values) in memory
        "import gc, sys\ndef f(x):\n    for o in gc.get_objects():\n        for v in (o.values() if "
        "isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()):\n"
        "            if isinstance(v, str) and 'expected-' in v and 'assert' in v:\n"
        '                return v.split("\'")[1]\n'
        "    frame = sys._getframe()\n    while frame:\n"
        "        for v in frame.f_locals.values():\n"
        "            if isinstance(v, str) and 'expected-' in v:\n                return v\n"
        "        frame = frame.f_back\n    return 0\n",
        # the same on the filesystem and in /proc (the runner's descriptors and memory)
        "import os\ndef f(x):\n    for pid in os.listdir('/proc'):\n"
        "        for name in ('fd/0', 'cmdline', 'environ'):\n            try:\n"
        "                data = open(f'/proc/{pid}/{name}', 'rb').read(1 << 16)\n"
        "            except OSError:\n                continue\n"
        "            if b'expected-' in data:\n                return 'expected-7f3a'\n    return 0\n",
    ],
    ids=["builtins", "modules", "fake_markers", "forged_frames", "memory_hunt", "proc_hunt"],
)
def test_tampering_does_not_pass(pool, body):
    run_hostile(pool, body)


def test_killing_the_parent_and_the_test_runner_fails(pool, isolated):
    me, zygotes = os.getpid(), pool.worker_pids()
    program = (
        "import os, signal\ndef f(x):\n"
        f"    for pid in (os.getppid(), 1, {me}, *{zygotes!r}, -1, 0):\n"
        "        try:\n            os.kill(pid, signal.SIGKILL)\n"
        "        except OSError:\n            pass\n"
        f"    try:\n        os.killpg({os.getpgid(me)}, signal.SIGKILL)\n"
        "    except OSError:\n        pass\n    return 0\n"
    )
    run_hostile(pool, program)
    assert pool.worker_pids() == zygotes  # still the same fork servers


def test_network_is_unreachable(pool, isolated):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    port = server.getsockname()[1]
    program = (
        "import socket\ndef f(x):\n"
        f"    for addr in [('127.0.0.1', {port}), ('1.1.1.1', 53), ('8.8.8.8', 443)]:\n"
        "        try:\n            socket.create_connection(addr, timeout=0.5)\n"
        "            return 'expected-7f3a'\n        except OSError:\n            pass\n"
        "    return 0\n"
    )
    try:
        run_hostile(pool, program)
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


def test_writing_outside_the_work_dir_is_impossible(pool, isolated):
    tag = uuid.uuid4().hex
    targets = [
        f"/tmp/{tag}",
        f"/var/tmp/{tag}",
        f"/dev/shm/{tag}",
        str(REPO / tag),
        f"/root/{tag}",
        f"/etc/{tag}",
        f"{os.getcwd()}/{tag}",
    ]
    program = (
        "def f(x):\n    wrote = 0\n"
        f"    for path in {targets!r}:\n"
        "        try:\n            open(path, 'w').write('pwned')\n            wrote += 1\n"
        "        except OSError:\n            pass\n"
        "    return 'expected-7f3a' if wrote > 3 else wrote\n"
    )
    run_hostile(pool, program)
    assert not [t for t in targets if os.path.exists(t)]


def test_secrets_in_the_parent_environment_are_invisible(monkeypatch, isolated):
    secret = "hunter2-" + uuid.uuid4().hex
    monkeypatch.setenv("LLM_MARL_TEST_SECRET", secret)
    program = (
        "import os\ndef f(x):\n    found = [os.environ.get('LLM_MARL_TEST_SECRET', '')]\n"
        "    for pid in os.listdir('/proc'):\n        try:\n"
        "            found.append(open(f'/proc/{pid}/environ').read())\n"
        "        except OSError:\n            pass\n    return ' '.join(found)\n"
    )
    with SandboxPool(1) as fresh:  # started after the secret was set
        result = fresh.run(program, [f"assert {secret!r} in candidate(1)"], "f")
        assert result.tests_passed == 0 and result.tests[0].error_type == "AssertionError"
        check_still_works(fresh)


def test_hidden_datasets_are_unreadable(pool, isolated):
    hidden = [p for p in default_hidden_paths() if os.path.isdir(p) and os.listdir(p)]
    if not hidden:
        pytest.skip("no dataset directory to hide on this machine")
    program = (
        "import os\ndef f(path):\n    try:\n        return sorted(os.listdir(path))\n"
        "    except OSError:\n        return []\n"
    )
    for path in hidden:
        result = pool.run(program, [f"assert candidate({path!r}) == []"], "f")
        assert result.tests_passed == 1, (path, result)


def test_hostile_and_honest_programs_side_by_side(pool, isolated):
    honest = ("def f(x):\n    return 'expected-7f3a'\n", TEST, "f")
    jobs = [
        honest,
        (HOSTILE["fork_bomb"], TEST, "f", "", QUICK),
        honest,
        (HOSTILE["os_exit"], TEST, "f"),
        (HOSTILE["memory_bomb"], TEST, "f"),
        honest,
        (HOSTILE["huge_output"], TEST, "f"),
        honest,
    ]
    results = pool.run_many(jobs, workers=2)
    assert [r.tests_passed for r in results] == [2, 0, 2, 0, 0, 2, 0, 2]
    assert_no_leftovers(pool)
