"""What ``llm-marl leaderboard add``, ``verify`` and ``build`` cost, side by side with the code
of another git revision (``--baseline REV``, default ``0ea8ccb``: the board before issue 49).

One honest lite evaluation (the scripted players with a random GSM8K pioneer) is made once;
then, for each code tree in turn and ``--repeats`` times, each command runs in a fresh process
(wall time of the command itself, imports excluded; peak resident set, ``VmHWM``):

* **add**: the evaluation added to a fresh board (every episode replayed, the board's checks
  and its record, or ledger, written);
* **verify**: that entry verified on a sample of 4 episodes (the replay of every episode,
  the rules, the record: the regeneration of 4 scripted/random episodes is cheap);
* **build**: the site of the board and the shipped entries (every entry read, checked and
  scored again; the pages written).

Both trees must play the same suite version (the evaluation is made by this tree's suite and
must be the baseline's newest too), so compare with a revision on the same lite version.

    PYTHONPATH=. python benchmarks/leaderboard_costs.py [--baseline REV] [--repeats 3]

About three minutes on 2 cores; writes ``docs/benchmarks/leaderboard_costs.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from leaderboard_child import (  # noqa: E402
    REPO,
    TEAM,
    baseline_tree,
    remove_baseline_tree,
    run_command,
)

from llm_marl_envs.evaluation.evaluate import Team, evaluate  # noqa: E402
from llm_marl_envs.evaluation.suite import load_suite  # noqa: E402

COMMANDS = ("add", "verify", "build")


def run(code: Path, argv: list[str], keys: Path) -> dict:
    """``llm-marl ARGV`` in a fresh process importing the package from ``code``."""
    keys_env = {"LLM_MARL_BOARD_KEYS": str(keys), "HOME": str(keys.parent)}
    outcome, stderr = run_command(code, argv, keys_env)
    if outcome["status"] not in (0, None):
        raise SystemExit(f"{' '.join(argv)} failed under {code}: {stderr.strip()[-400:]}")
    return {"seconds": outcome["seconds"], "peak_mib": outcome["peak_kib"] / 1024}


def one_round(code: Path, honest: Path, scratch: Path, label: str, n: int) -> dict:
    board, keys = scratch / f"board-{label}-{n}", scratch / f"keys-{label}-{n}"
    keys.mkdir()
    return {
        "add": run(
            code, ["leaderboard", "add", str(honest), "--board", str(board), "--id", "x"], keys
        ),
        "verify": run(
            code, ["leaderboard", "verify", "x", "--board", str(board), "--sample", "4"], keys
        ),
        "build": run(
            code,
            [
                "leaderboard",
                "build",
                "--board",
                str(board),
                "--out",
                str(scratch / f"site-{label}-{n}"),
            ],
            keys,
        ),
    }


def markdown(report: dict) -> str:
    rows = [
        "# `leaderboard add`, `verify` and `build`: cost against the code before",
        "",
        "Written by `benchmarks/leaderboard_costs.py`. Each command runs in a fresh process "
        f"({report['repeats']} repeats, the trees alternating; wall time of the command, imports "
        f"excluded; peak resident set): *now* is this tree, *baseline* the code of "
        f"`{report['baseline']}` ({report['machine']}, 2 cores shared with other work). One "
        "honest lite evaluation (scripted players, a random GSM8K pioneer); `verify` on a "
        "sample of 4 episodes; `build` of that board with the shipped entries.",
        "",
        "| command | now: median s (range) | baseline: median s (range) | now / baseline | "
        "peak MiB now / baseline |",
        "|---|---:|---:|---:|---:|",
    ]
    for command in COMMANDS:
        now, old = report["now"][command], report["baseline_runs"][command]
        rows.append(
            f"| {command} | {now['median']:.2f} ({min(now['seconds']):.2f}-{max(now['seconds']):.2f}) "
            f"| {old['median']:.2f} ({min(old['seconds']):.2f}-{max(old['seconds']):.2f}) "
            f"| {now['median'] / old['median']:.2f}x | {now['peak_mib']:.0f} / {old['peak_mib']:.0f} |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="0ea8ccb", help="a git revision to compare with")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="leaderboard-costs-"))
    try:
        honest = scratch / "honest"
        team = Team.parse(None, TEAM)
        evaluate(load_suite("lite"), team, honest, progress=False, write=lambda line: None)
        old = baseline_tree(args.baseline, scratch)
        runs: dict[str, dict[str, list]] = {"now": {}, "baseline": {}}
        for n in range(args.repeats):
            for label, code in (("now", REPO), ("baseline", old)):
                for command, outcome in one_round(code, honest, scratch, label, n).items():
                    runs[label].setdefault(command, []).append(outcome)
                print(n, label, {c: round(o[-1]["seconds"], 2) for c, o in runs[label].items()})
    finally:
        remove_baseline_tree(scratch)
        shutil.rmtree(scratch, ignore_errors=True)

    def summary(outcomes: list[dict]) -> dict:
        seconds = [round(o["seconds"], 3) for o in outcomes]
        peak = max(o["peak_mib"] for o in outcomes)
        return {
            "seconds": seconds,
            "median": statistics.median(seconds),
            "peak_mib": round(peak, 1),
        }

    report = {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "baseline": args.baseline,
        "repeats": args.repeats,
        "now": {c: summary(runs["now"][c]) for c in COMMANDS},
        "baseline_runs": {c: summary(runs["baseline"][c]) for c in COMMANDS},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "leaderboard_costs.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "leaderboard_costs.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
