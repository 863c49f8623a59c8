"""What the evaluation harness costs on top of the bare rollout of the same episodes.

For each task of the ``lite`` suite it times, side by side in one run:

* **bare**: loading the policies and ``llm_marl_envs.rollout.rollout`` of the task's frozen
  episodes (the same seeds, reset options, policies, generation settings and batch size),
  writing its JSONL records;
* **harness**: ``llm_marl_envs.evaluation.evaluate.evaluate`` of that task into a fresh folder:
  the same rollout plus the run file, the progress plan, merging the records, hashing the
  data rows, scoring every metric with bootstrap intervals and the manifest (which hashes the
  model's weights).

Each is run ``--repeats`` times, alternating, and the fastest run counts. Policies: the
scripted players (no model: the harness's share is largest there, a worst case) and the
tiny test model (``--policy``). Target (issue 19): the harness adds at most 5% to the bare
rollout time. Results go to ``docs/benchmarks/eval_harness.md`` (and ``.json``).

Usage: ``python benchmarks/eval_harness.py [--policy scripted tiny] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import tempfile
import time
from contextlib import closing
from pathlib import Path

from llm_marl_envs.evaluation.evaluate import Team, _task_seed, evaluate, task_policies
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.policies import ModelCache
from llm_marl_envs.rollout import EpisodePlan, rollout

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.05

NOTES = """\
## Reading the tables

Both sides load the policies. The harness's own work is a fixed cost per evaluation: a few
milliseconds per task for the run and plan files, splicing the engine's record lines into
`episodes/<task>.jsonl`, hashing the data rows and the metrics with their bootstrap
intervals, plus the manifest's sha256 of each model's weights (about a second for the 135M
model's 540 MB, once per evaluation, not per task; here every run is a one-task evaluation,
so it is counted in full for each task). With the scripted players a bare rollout of a lite task takes 5-20 ms, so those
milliseconds are a large share; with a model, where the time goes into generation, they
vanish: the tiny test model, whose generation is very fast, shows a few percent over the
whole suite (per task the run-to-run noise of a 2-core machine is a few percent either way).
"""


def bare(suite, index: int, spec: str, scratch: Path) -> float:
    task = suite.tasks[index]
    import llm_marl_envs

    tick = time.perf_counter()  # from loading the model, as evaluate() does
    models = ModelCache()
    with closing(llm_marl_envs.make(task.env, **task.kwargs)) as env:
        seats = Team((spec,)).assign(env.possible_agents)
        policies = task_policies(models, task, env, seats, _task_seed(0, index))
    plan = task.episode_plan()
    rollout(
        task.env,
        policies,
        plan=EpisodePlan(
            seeds=[item.seed for item, _ in plan], reset_options=[item.options for item, _ in plan]
        ),
        batch_size=8,
        env_kwargs=task.kwargs,
        out=scratch / "bare.jsonl",
        progress=False,
    )
    seconds = time.perf_counter() - tick
    models.close()
    return seconds


def harness(suite, index: int, spec: str, scratch: Path) -> float:
    out = scratch / "harness"
    shutil.rmtree(out, ignore_errors=True)
    task = suite.tasks[index]
    tick = time.perf_counter()
    evaluate(suite, Team((spec,)), out, tasks=[task.name], progress=False, write=lambda _: None)
    return time.perf_counter() - tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", nargs="+", default=["scripted", "tiny"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", nargs="*", default=None, help="lite tasks (default: all)")
    parser.add_argument("--label", default="", help="a heading for this run in the page")
    parser.add_argument(
        "--render-only", action="store_true", help="rewrite the .md from the .json, no runs"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "eval_harness")
    args = parser.parse_args()
    if args.render_only:
        render(args.out)
        return
    suite = load_suite("lite")
    rows = []
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        for spec in args.policy:
            for index, task in enumerate(suite.tasks):
                if args.tasks and task.name not in args.tasks:
                    continue
                times = {"bare": [], "harness": []}
                for _ in range(args.repeats):
                    times["bare"].append(bare(suite, index, spec, scratch))
                    times["harness"].append(harness(suite, index, spec, scratch))
                b, h = min(times["bare"]), min(times["harness"])
                rows.append(
                    {
                        "policy": spec,
                        "task": task.name,
                        "episodes": len(task.episode_plan()),
                        "bare_s": b,
                        "harness_s": h,
                        "overhead": h / b - 1,
                        "added_ms": (h - b) * 1000,
                    }
                )
                print(f"{spec} {task.name}: bare {b:.2f} s, harness {h:.2f} s ({h / b - 1:+.1%})")
    for spec in args.policy:
        mine = [r for r in rows if r["policy"] == spec]
        b, h = sum(r["bare_s"] for r in mine), sum(r["harness_s"] for r in mine)
        rows.append(
            {
                "policy": spec,
                "task": "all",
                "episodes": sum(r["episodes"] for r in mine),
                "bare_s": b,
                "harness_s": h,
                "overhead": h / b - 1,
            }
        )
    data_file = args.out.with_suffix(".json")
    runs = json.loads(data_file.read_text()) if data_file.exists() else {}
    if isinstance(runs, list):  # the first version kept one run
        runs = {"": runs}
    runs[args.label] = rows
    data_file.write_text(json.dumps(runs, indent=1) + "\n")
    render(args.out)


def render(out: Path) -> None:
    runs = json.loads(out.with_suffix(".json").read_text())
    lines = [
        "# Evaluation harness overhead",
        "",
        f"`python benchmarks/eval_harness.py` on {platform.machine()}, "
        f"Python {platform.python_version()}: each task of the lite suite played by a bare "
        "`rollout` and by `evaluate` (the same episodes, policies and batch size; the fastest "
        "of `--repeats` alternating runs). Target (issue 19): the harness adds at most "
        f"{TARGET:.0%} to the bare rollout time.",
    ]
    for label, run in runs.items():
        lines += [
            "",
            *([f"## {label}", ""] if label else []),
            "| policy | task | episodes | bare s | harness s | overhead | added ms |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for r in run:
            lines.append(
                f"| {r['policy']} | {r['task']} | {r['episodes']} | {r['bare_s']:.2f} | "
                f"{r['harness_s']:.2f} | {r['overhead']:+.1%} | "
                f"{r.get('added_ms', (r['harness_s'] - r['bare_s']) * 1000):.0f} |"
            )
    lines += ["", NOTES.rstrip()]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
