"""Speed of the leaderboard statistics (``llm_marl_envs.evaluation.stats``) on 100,000 episodes.

Times, with the defaults (95% level, 2,000 resamples):

* ``bootstrap_mean`` on 100,000 pass/fail (0/1) outcomes: the multinomial-counts path;
* ``bootstrap_mean`` on 100,000 continuous rewards (standard normal): the chunked
  index-resampling path, the worst case;
* ``paired_difference`` of two entries over 100,000 shared episode keys (``"task/seed"``),
  with continuous scores, so the differences take the index path too;
* ``tie_ranks`` of 100 entries' intervals.

Each row is the best of ``--repeats`` runs (wall time, ``time.perf_counter``); the peak memory
the call allocates is measured in a separate, untimed run with ``tracemalloc`` (numpy reports
its buffers to it).

Target (issue 19): bootstrap statistics for 100,000 episodes in under 2 s on the 2-core CPU
machine. Results go to ``docs/benchmarks/bench_stats.md`` and ``.json``.

Usage: ``python benchmarks/bench_stats.py [--episodes 100000] [--repeats 5] [--out docs/benchmarks/bench_stats.md]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from llm_marl_envs.evaluation.stats import (
    LEVEL,
    RESAMPLES,
    Interval,
    bootstrap_mean,
    paired_difference,
    tie_ranks,
)

TARGET_SECONDS = 2.0


def best_of(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """The fastest of ``repeats`` calls, in seconds, and the last call's result."""
    best = float("inf")
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_mib(fn: Callable[[], object]) -> float:
    """Peak memory allocated during one call, in MiB (``tracemalloc``; untimed)."""
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def workloads(episodes: int, entries: int) -> list[tuple[str, str, Callable[[], object], bool]]:
    """(name, what the input is, call, whether the 2 s target applies)."""
    outcomes = (np.random.default_rng(0).random(episodes) < 0.3).astype(float)
    rewards = np.random.default_rng(1).normal(size=episodes)
    keys = [f"task{i % 50}/seed{i}" for i in range(episodes)]
    rng = np.random.default_rng(2)
    difficulty = rng.random(episodes)
    a = dict(zip(keys, (difficulty + rng.normal(0.02, 0.05, episodes)).tolist(), strict=True))
    b = dict(zip(keys, difficulty.tolist(), strict=True))
    centres = np.random.default_rng(3).random(entries)
    intervals = [Interval(float(c), float(c) - 0.05, float(c) + 0.05, 1000) for c in centres]
    return [
        (
            "bootstrap_mean",
            f"{episodes:,} pass/fail outcomes (0/1)",
            lambda: bootstrap_mean(outcomes),
            True,
        ),
        (
            "bootstrap_mean",
            f"{episodes:,} continuous rewards (normal)",
            lambda: bootstrap_mean(rewards),
            True,
        ),
        (
            "paired_difference",
            f"{episodes:,} shared keys, continuous scores",
            lambda: paired_difference(a, b),
            True,
        ),
        ("tie_ranks", f"{entries} entries", lambda: tie_ranks(intervals), False),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=100, help="entries for tie_ranks")
    parser.add_argument("--repeats", type=int, default=5, help="runs per row; the best counts")
    parser.add_argument("--out", default="docs/benchmarks/bench_stats.md")
    args = parser.parse_args()

    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    rows = []
    for name, data, call, targeted in workloads(args.episodes, args.entries):
        call()  # warm up (first-call allocations)
        seconds, result = best_of(call, args.repeats)
        peak = peak_mib(call)
        met = ("yes" if seconds < TARGET_SECONDS else "NO") if targeted else "-"
        rows.append(
            {
                "function": name,
                "input": data,
                "seconds": float(f"{seconds:.4g}"),
                "peak_mib": round(peak, 1),
                "target_seconds": TARGET_SECONDS if targeted else None,
                "met": met,
                "result": str(result) if isinstance(result, Interval) else None,
            }
        )
        print(f"{name:<18} {data:<42} {seconds * 1000:9.3g} ms  peak {peak:6.1f} MiB  {met}")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "episodes": args.episodes,
                "entries": args.entries,
                "repeats": args.repeats,
                "level": LEVEL,
                "resamples": RESAMPLES,
                "machine": machine,
                "python": platform.python_version(),
                "numpy": np.__version__,
                "rows": rows,
            },
            indent=1,
        )
        + "\n"
    )
    lines = [
        "# Speed of the leaderboard statistics",
        "",
        "Measured by `python benchmarks/bench_stats.py`: the functions of "
        "`llm_marl_envs.evaluation.stats` with their defaults (95% percentile bootstrap, "
        f"{RESAMPLES:,} resamples, seed 0), best of {args.repeats} runs after a warm-up. Peak "
        "memory: what one call allocates, from `tracemalloc` in a separate untimed run. Raw "
        "figures: `bench_stats.json`.",
        "",
        f"Machine: {machine}, CPU only, Python {platform.python_version()}, "
        f"numpy {np.__version__}.",
        "",
        "| function | input | milliseconds | peak memory, MiB | target | met |",
        "|---|---|---:|---:|---|---|",
    ]
    for row in rows:
        target = f"< {row['target_seconds'] * 1000:,.0f} ms" if row["target_seconds"] else "-"
        lines.append(
            f"| `{row['function']}` | {row['input']} | {row['seconds'] * 1000:.3g} | "
            f"{row['peak_mib']:.1f} | {target} | {row['met']} |"
        )
    lines += [
        "",
        "Pass/fail outcomes take the multinomial path (2,000 draws of counts over the 2 distinct "
        "values), so their cost hardly depends on the number of episodes. Continuous values "
        "take the index path: 2,000 x 100,000 resampled indices, drawn about a million at a "
        "time, so the memory stays bounded whatever the number of episodes. "
        "`paired_difference` adds building the differences from two dicts to the same "
        "bootstrap. `tie_ranks` sorts the lower (or upper) bounds once and counts with a "
        "binary search, O(m log m).",
        "",
    ]
    out.write_text("\n".join(lines))
    print(f"wrote {out} and {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
