"""``llm-marl eval``: the benchmark's subcommand.

``llm-marl eval SUITE (--policy SPEC | --team SEAT=SPEC ... | --pairings SPEC ...) [--tasks NAME ...] [--out DIR]``
    Plays a frozen evaluation suite (``lite``, ``full``, an older version such as ``lite-v1``,
    or a suite YAML file) with one policy in every seat or a team (a spec per seat index or
    agent name), with a progress bar per task; writes per-episode JSONL and ``results.json``
    (scores with 95% bootstrap intervals and a manifest). Run the same command again to resume
    a stopped evaluation.
    ``--pairings A B ...`` plays cross-play instead (:mod:`llm_marl_envs.evaluation.pairings`):
    solo, homogeneous and heterogeneous pairs in both seat orders, into ``crossplay.json``.
The option groups it shares with its siblings are in :mod:`llm_marl_envs.cli.options`; the
board's own subcommand, ``llm-marl leaderboard``, is :mod:`llm_marl_envs.cli.leaderboard`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_marl_envs.cli.options import (
    add_batch_size_option,
    add_executor_options,
    add_placement_options,
    add_server_options,
    executor_options,
    placement,
    server_options,
)
from llm_marl_envs.policies.specs import POLICY_SPECS
from llm_marl_envs.registry import parse_assignments

__all__ = ["add_eval_parser", "crossplay_summary", "os_error", "run_eval", "summary"]


def add_eval_parser(sub) -> None:
    """The ``eval`` subcommand's parser, added to ``sub`` (the ``llm-marl`` subparsers)."""
    p_eval = sub.add_parser(
        "eval",
        help="evaluate a policy or a team on a frozen benchmark suite",
        description="Play a frozen evaluation suite and write scored, resumable results.",
    )
    p_eval.add_argument(
        "suite",
        help="a packaged suite (lite, full: the newest versions; lite-v1, full-v1: older ones) or a suite YAML file",
    )
    who = p_eval.add_mutually_exclusive_group(required=True)
    who.add_argument("--policy", help=f"the policy of every seat: {', '.join(POLICY_SPECS)}")
    who.add_argument(
        "--team",
        nargs="+",
        metavar="SEAT=SPEC",
        help="a policy per seat: 0=SPEC 1=SPEC (seats cycle, so two specs alternate) and/or "
        "AGENT=SPEC",
    )
    who.add_argument(
        "--pairings",
        nargs="+",
        metavar="SPEC",
        help="cross-play of these models: solo, homogeneous and heterogeneous pairs in both "
        "seat orders; a matrix, collaboration gaps and seat-order effects per task",
    )
    p_eval.add_argument("--tasks", nargs="+", metavar="NAME", help="only these tasks")
    p_eval.add_argument(
        "--out", default=None, help="output folder (default: results/<suite>-<team>)"
    )
    p_eval.add_argument("--name", default=None, help="the entry's name (default: the team)")
    add_batch_size_option(p_eval, "episodes played in lockstep per task (a task's items x samples)")
    p_eval.add_argument(
        "--data",
        nargs="+",
        metavar="TASK=PATH",
        help="read a task's data from a local copy in the Hub's schema (the full suite)",
    )
    add_placement_options(p_eval)
    add_server_options(p_eval)
    p_eval.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_executor_options(p_eval)


def run_eval(args: argparse.Namespace) -> int:
    """``llm-marl eval``: 0 when done, 130 on Ctrl-C (the finished episodes are kept)."""
    from llm_marl_envs.evaluation.config import EvalConfig
    from llm_marl_envs.evaluation.evaluate import Team, evaluate
    from llm_marl_envs.evaluation.run_folder import RESULTS_FILE, slug
    from llm_marl_envs.evaluation.suite import load_suite
    from llm_marl_envs.policies import GenerationConfig
    from llm_marl_envs.policies.generation import resolve_batch_size

    args.batch_size = resolve_batch_size(args.batch_size, args.device)  # cross-play's too
    suite = load_suite(args.suite)
    if args.data:
        suite = suite.with_data_sources(
            {k: str(v) for k, v in parse_assignments(args.data, "--data").items()}
        )
    config = EvalConfig(  # built once, passed whole
        tasks=args.tasks,
        batch_size=args.batch_size,
        progress=False if args.no_progress else None,
        entry=args.name,
        generation=GenerationConfig(**placement(args)),  # the suite sets the rest, per task
        server_options=server_options(args, args.batch_size),
        **executor_options(args),
    )
    if args.pairings:
        return _run_pairings(args, suite, config)
    team = Team.parse(args.policy, args.team)
    out = Path(args.out or f"results/{suite.label}-{slug(team.label, 'team', sep='_')}")
    status, results = _resumable(out, lambda: evaluate(suite, team, out, config=config))
    if status is not None:
        return status
    print(summary(results))
    print(f"results: {out / RESULTS_FILE}")
    return 0


def _run_pairings(args: argparse.Namespace, suite, config) -> int:
    from llm_marl_envs.evaluation.pairings import run_pairings

    out = Path(args.out or f"results/{suite.label}-crossplay")
    status, table = _resumable(out, lambda: run_pairings(suite, args.pairings, out, config=config))
    if status is not None:
        return status
    print(crossplay_summary(table))
    print(f"cross-play: {out / 'crossplay.json'}")
    return 0


def _resumable(out: Path, play: Callable[[], Any]) -> tuple[int | None, Any]:
    """``(None, play())``, or the exit status of an evaluation stopped by Ctrl-C (130) or a
    failing rollout (1), whose finished episodes stay in ``out`` for the same command to
    resume."""
    from llm_marl_envs.rollout.engine import RolloutError, RolloutInterrupted
    from llm_marl_envs.rollout.executors import ExecutorLostError

    try:
        return None, play()
    except (RolloutInterrupted, KeyboardInterrupt):
        print(
            f"eval stopped: interrupted (Ctrl-C); finished episodes are kept in {out}; "
            "run the same command to resume"
        )
        return 130, None
    except (RolloutError, ExecutorLostError) as error:  # a policy, or the Ray cluster
        print(f"eval stopped: {error}; run the same command to resume")
        return 1, None
    except OSError as error:  # disk full, a read-only folder: finished episodes are kept
        if isinstance(error, FileNotFoundError):
            raise
        print(f"eval stopped: {os_error(error)}; run the same command to resume")
        return 1, None


def os_error(error: OSError) -> str:
    """A failed write as one line: the file and the reason (disk full, read-only, ...)."""
    where = f" {error.filename}" if error.filename else ""
    reason = error.strerror or str(error) or type(error).__name__
    return f"cannot write{where}: {reason} (free some space or fix the folder's permissions)"


def _cell(value: dict | None) -> str:
    if value is None:
        return "-"
    return f"{value['mean']:+.3f} [{value['lo']:+.3f}, {value['hi']:+.3f}]"


def crossplay_summary(table: dict) -> str:
    """Each task's cross-play matrix, collaboration gaps and seat-order effects, as text."""
    lines = []
    for task, block in table.items():
        models = block["models"]
        lines += [
            "",
            f"{task} ({block['primary']} on 0..1; row: seat 0 {block['seats'][0]}, "
            f"column: seat 1 {block['seats'][-1]})",
        ]
        width = max(len(m) for m in models)
        for model, row in zip(models, block["matrix"], strict=True):
            cells = "  ".join(_cell(v).strip() for v in row)
            lines.append(f"  {model.ljust(width)}  {cells}")
        for model, gap in block["gap"].items():
            lines.append(f"  collaboration gap {model}: {_cell(gap)} (pair - solo)")
        for pair, effect in block["seat_order"].items():
            first, second = pair.split("|")
            lines.append(f"  seat order {first} first vs {second} first: {_cell(effect)}")
    return "\n".join(lines).lstrip("\n")


def summary(results: dict) -> str:
    """The scores of a result as a small table (task, primary metric, mean [lo, hi], n)."""
    rows = [("task", "metric", "mean", "95% interval", "n")]
    for name, task in results["tasks"].items():
        value = task["metrics"][task["primary"]]
        if value is None:
            rows.append((name, task["primary"], "-", "-", "0"))
            continue
        rows.append(
            (
                name,
                task["primary"],
                f"{value['mean']:.3f}",
                f"[{value['lo']:.3f}, {value['hi']:.3f}]",
                str(value["n"]),
            )
        )
    overall = results.get("overall")
    if overall:
        rows.append(
            (
                "overall",
                "score 0..1",
                f"{overall['mean']:.3f}",
                f"[{overall['lo']:.3f}, {overall['hi']:.3f}]",
                str(overall["n"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return f"{results['entry']} on {results['suite']['name']}-v{results['suite']['version']}\n" + (
        "\n".join(line.rstrip() for line in lines)
    )
