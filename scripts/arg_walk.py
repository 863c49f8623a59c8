"""The walk of one ``llm-marl eval`` argument: the package's functions its value passes through,
from the argparse result to where it is used (issue 51's measure of how settings travel).

    python scripts/arg_walk.py [--option batch-size|timeout|concurrency|retries] [--list]

Runs ``llm-marl eval`` on a one-episode suite under a trace, every seat an ``openai:`` seat of a
local policy server (an echo policy on 127.0.0.1), the option given a value nothing else uses
(7919, 7919.5). A *stop* is a package function (method
or not) called with that value in one of its parameters (``self`` left out), directly or inside
what carries it: the argparse namespace, a dict, a list, a dataclass (an ``EvalConfig``, a
``GenerationConfig``) or an object's attributes, three levels deep. Each function counts once,
however often it is called. The one episode makes the rollout's batch 1: ``--batch-size`` is
followed to where the engine sizes its batch.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = str(ROOT / "llm_marl_envs")
VALUES = {"batch-size": 7919, "timeout": 7919.5, "concurrency": 7919, "retries": 7919}
SUITE = """\
name: walk
version: 1
tasks:
  - name: gsm8k
    env: llm_marl_envs/GSM8K-v0
    kwargs: {data_source: bundled, split: test}
    rows: "0:1"
    metrics: [pass@1]
    primary: pass@1
"""


def holds(value, wanted, depth: int = 3, seen: set | None = None) -> bool:
    """Whether ``value`` is ``wanted`` or carries it (see the module's text)."""
    if type(value) is type(wanted) and value == wanted:
        return True
    if depth == 0 or isinstance(value, (str, bytes, int, float, bool, type(None))):
        return False
    seen = seen if seen is not None else set()
    if id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, dict):
        parts = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        parts = list(value)[:64]
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = [getattr(value, f.name, None) for f in dataclasses.fields(value)]
    elif isinstance(value, argparse.Namespace) or hasattr(value, "__dict__"):
        try:
            parts = list(vars(value).values())
        except TypeError:
            return False
    else:
        return False
    return any(holds(part, wanted, depth - 1, seen) for part in parts)


def walk(option: str) -> dict[str, list[str]]:
    """Files -> the functions of each that the option's value passes through."""
    from llm_marl_envs.cli import main
    from llm_marl_envs.policies import CallablePolicy
    from llm_marl_envs.policies.server import serve_policy

    wanted = VALUES[option]
    stops: dict[str, set[str]] = {}

    def tracer(frame, event, arg):
        if event != "call" or not frame.f_code.co_filename.startswith(PACKAGE):
            return None
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & 4) + bool(code.co_flags & 8)  # *args, **kwargs
        names = code.co_varnames[:count]
        params = [n for n in names if n != "self"]
        if any(holds(frame.f_locals.get(n), wanted) for n in params):
            where = str(Path(code.co_filename).relative_to(ROOT))
            stops.setdefault(where, set()).add(code.co_qualname)
        return None

    server = serve_policy(CallablePolicy(lambda observation, info: "Answer: 1"), model_name="walk")
    with server, tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / "walk.yaml"
        suite.write_text(SUITE, encoding="utf-8")
        argv = ["eval", str(suite), "--policy", f"openai:{server.url}#walk"]
        argv += ["--out", f"{folder}/out"]
        argv += ["--no-progress", f"--{option}", str(wanted)]
        threading.settrace(tracer)
        sys.settrace(tracer)
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                main(argv)
        finally:
            sys.settrace(None)
            threading.settrace(None)
    return {where: sorted(names) for where, names in sorted(stops.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--option", choices=sorted(VALUES), default="batch-size")
    parser.add_argument("--list", action="store_true", help="list the stops")
    args = parser.parse_args()
    stops = walk(args.option)
    total = sum(len(names) for names in stops.values())
    print(f"--{args.option}: {total} stops in {len(stops)} files")
    if args.list:
        for where, names in stops.items():
            print(f"  {where}: {', '.join(names)}")


if __name__ == "__main__":
    main()
