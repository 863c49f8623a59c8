#!/usr/bin/env python3
"""The project's Python environments, built from committed lock files with uv.

Every environment the project builds has one lock file under ``locks/``, resolved by
``uv pip compile`` from the package's own ranges (setup.cfg) and ``constraints.txt`` for
CPython 3.11 on Linux x86-64, the platform CI tests:

    main       .venv            the package with all extras and the dev tools
    verl       .stacks/verl     verl 0.9 and the transformers line it allows (<5.11)
    verifiers  .stacks/verifiers verifiers 0.4 (openai <3)

    python3 scripts/envs.py sync NAME          build or update NAME's environment from its lock
    python3 scripts/envs.py lock [--upgrade] [NAME ...]
                                               re-resolve the locks (keeps pins unless --upgrade)
    python3 scripts/envs.py check-latest       resolve the ranges without the locks, build a
                                               scratch environment from that and run the quick
                                               tests there (outside CI)

``make setup``, ``make stacks``, ``make lock`` and ``make check-latest`` call it. uv comes
from ``$UV``, else ``.tools/bin/uv`` (installed there with pip at the version pinned below
the first time). uv does not read pip's configuration: the find-links folders pip is
configured with (where a machine keeps its CPU build of torch) are handed to uv; where none
holds one, torch comes from PyTorch's CPU index (uv's ``--torch-backend cpu``). Standard
library only: this runs before any environment exists.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UV_VERSION = "0.13.9"
TOOLS = REPO / ".tools"
LOCKS = REPO / "locks"
#: What the locks are resolved for (CI's machines); another interpreter gets a warning.
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-manylinux_2_28"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass(frozen=True)
class Env:
    name: str
    venv: str
    extras: str
    why: str

    @property
    def lock(self) -> Path:
        return LOCKS / f"{self.name}.txt"

    def requirements(self) -> str:
        # pip is locked too: the tests build wheels with it and verifiers' wheelhouse
        # downloads with it.
        return f"-e .[{self.extras}]\npip\n"


ENVS = {
    env.name: env
    for env in (
        Env("main", ".venv", "all,dev", "the package with all extras and the dev tools"),
        Env(
            "verl",
            ".stacks/verl",
            "data,train,code,sentiment,ray,integrations,skyrl,verl,dev",
            "verl 0.9 (transformers <5.11) beside every other integration",
        ),
        Env(
            "verifiers",
            ".stacks/verifiers",
            "data,train,code,sentiment,verifiers,dev",
            "verifiers 0.4 (openai <3)",
        ),
    )
}


def say(text: str) -> None:
    print(f"envs: {text}", flush=True)


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=REPO, check=True, **kwargs)


def uv() -> str:
    """The uv to run: ``$UV``, else the pinned one in ``.tools`` (installed with pip once)."""
    if os.environ.get("UV"):
        return os.environ["UV"]
    binary = TOOLS / "bin" / "uv"
    if binary.is_file():
        done = subprocess.run([binary, "--version"], capture_output=True, text=True)
        if done.stdout.split()[1:2] == [UV_VERSION]:
            return str(binary)
    say(f"installing uv {UV_VERSION} into {TOOLS.relative_to(REPO)}/ with pip")
    shutil.rmtree(TOOLS, ignore_errors=True)
    run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        + ["--root-user-action=ignore"]
        + ["--target", TOOLS, f"uv=={UV_VERSION}"]
    )
    return str(binary)


def pip_find_links() -> list[str]:
    """The find-links folders pip is configured with here (its config files and
    ``$PIP_FIND_LINKS``): uv does not read pip's configuration."""
    found = os.environ.get("PIP_FIND_LINKS", "").split()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    )
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith(".find-links"):
            found += value.strip().strip("'\"").split()
    return [path for path in dict.fromkeys(found) if path]


def torch_source() -> list[str]:
    """uv's options that find the CPU build of torch (``2.13.0+cpu``, which PyPI does not
    carry): pip's find-links folders where one holds such a wheel (this project's machines
    keep it there), else uv's PyTorch CPU index for the PyTorch packages alone."""
    links = pip_find_links()
    options = [option for path in links for option in ("--find-links", path)]
    if any(Path(path).is_dir() and any(Path(path).glob("torch-*+cpu-*.whl")) for path in links):
        return options
    say(f"no find-links folder of pip's holds a CPU build of torch: {TORCH_CPU_INDEX} gives it")
    return [*options, "--torch-backend", "cpu"]


def compile_lock(env: Env, out: Path, upgrade: bool) -> None:
    argv = [uv(), "pip", "compile", "-", "-c", "constraints.txt", "-o", out, "--quiet"]
    argv += ["--python-version", PYTHON_VERSION, "--python-platform", PLATFORM]
    argv += ["--custom-compile-command", "make lock", *torch_source()]
    if upgrade:
        argv.append("--upgrade")
    run(argv, input=env.requirements(), text=True)


def sync(env: Env, lock: Path | None = None, venv: Path | None = None) -> None:
    """Build ``env``'s environment (or update it in place) to exactly its lock, then check it
    with ``pip check``."""
    lock = lock or env.lock
    venv = venv or REPO / env.venv
    if not lock.is_file():
        sys.exit(f"envs: {lock} is missing: run 'make lock' to write it")
    tool = uv()
    python = venv / "bin" / "python"
    if not python.is_file():
        run([tool, "venv", "--quiet", "--python", sys.executable, venv])
    found = run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if found != PYTHON_VERSION:
        say(
            f"warning: {venv.name} runs Python {found}; the locks are resolved for "
            f"{PYTHON_VERSION}, the version CI tests"
        )
    say(
        f"{env.name}: {venv.relative_to(REPO) if venv.is_relative_to(REPO) else venv} "
        f"from {lock.relative_to(REPO) if lock.is_relative_to(REPO) else lock}"
    )
    # --compile-bytecode, as pip does: without .pyc files every process (each test worker,
    # each command-line run and server a test starts) compiles what it imports anew, and
    # where PYTHONDONTWRITEBYTECODE is set it does so every time (torch and transformers took
    # 7.5 s to import instead of 3.6 s).
    sync = [tool, "pip", "sync", "--quiet", "--compile-bytecode", "--python", python, lock]
    run([*sync, *torch_source(), "--reinstall-package", "llm-marl-envs"])
    run([tool, "pip", "check", "--quiet", "--python", python])


def check_latest(names: list[str]) -> int:
    """Resolve each environment's ranges afresh; build the first one named and run its quick
    tests there (the scratch folder is removed when they pass, kept when they fail). Prints
    what moved against the locks. Returns pytest's exit status."""
    scratch = Path(tempfile.mkdtemp(prefix="llm-marl-latest-"))
    for name in names:
        env = ENVS[name]
        fresh = scratch / f"{name}.txt"
        try:
            compile_lock(env, fresh, upgrade=True)
        except subprocess.CalledProcessError:
            say(f"{name}: the ranges do not resolve today (uv's message above)")
            return 1
        moved = diff(env.lock, fresh)
        say(f"{name}: {len(moved)} pins move against {env.lock.relative_to(REPO)}")
        for line in moved:
            print(f"    {line}")
    first = ENVS[names[0]]
    venv = scratch / "venv"
    sync(first, scratch / f"{first.name}.txt", venv)
    say(f"quick tests in {venv} (resolved today, no locks)")
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run(
        [venv / "bin" / "python", "-m", "pytest", "-m", "not slow", "-n", "auto", "-q"],
        cwd=REPO,
        env=env,
    )
    if done.returncode == 0:
        shutil.rmtree(scratch, ignore_errors=True)
        say("the quick tests pass on the ranges resolved today")
    else:
        say(f"pytest exited {done.returncode}; the scratch environment is kept: {scratch}")
    return done.returncode


def pins(lock: Path) -> dict[str, str]:
    found = {}
    for line in lock.read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith((" ", "#")):
            found[name.strip().lower()] = version.split(";")[0].strip()
    return found


def diff(old: Path, new: Path) -> list[str]:
    before, after = pins(old) if old.is_file() else {}, pins(new)
    moved = [f"{n} {before.get(n, '-')} -> {after.get(n, '-')}" for n in sorted(before | after)]
    return [line for line in moved if line.split()[1] != line.split()[3]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_sync = sub.add_parser("sync", help="build or update an environment from its lock")
    p_sync.add_argument("name", choices=ENVS)
    p_lock = sub.add_parser("lock", help="re-resolve the lock files from the package's ranges")
    p_lock.add_argument("names", nargs="*", help=f"of {', '.join(ENVS)} (default: all)")
    p_lock.add_argument("--upgrade", action="store_true", help="newest versions, not the pins")
    p_latest = sub.add_parser("check-latest", help="quick tests on the ranges resolved today")
    p_latest.add_argument("names", nargs="*", help="resolved; the first is built and tested")
    args = parser.parse_args()
    if args.command != "sync":
        unknown = sorted(set(args.names) - set(ENVS))
        if unknown:
            parser.error(f"no environment named {', '.join(unknown)}: one of {', '.join(ENVS)}")
        args.names = args.names or list(ENVS)
    if args.command == "sync":
        sync(ENVS[args.name])
    elif args.command == "lock":
        LOCKS.mkdir(exist_ok=True)
        for name in args.names:
            say(f"resolving {ENVS[name].lock.relative_to(REPO)} ({ENVS[name].why})")
            compile_lock(ENVS[name], ENVS[name].lock, args.upgrade)
    else:
        return check_latest(args.names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
