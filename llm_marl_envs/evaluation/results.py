"""Scores and manifests of evaluation results (the ``results.json`` of ``llm-marl eval``).

**Scores.** For each task, every metric of the suite is computed per item (a frozen task
instance; :mod:`llm_marl_envs.evaluation.metrics`) and summarised by its mean with a 95%
interval over items and ``n`` (:func:`llm_marl_envs.evaluation.stats.score_interval` on the
metric's range: Wilson for 0/1 outcomes, else a bootstrap at least one item's swing wide). A
task's **score** is its primary metric on a 0..1 scale where 1 is best; the **overall** score
is the mean of the task scores, with an interval from a stratified bootstrap (items resampled
within each task, the task means averaged), so every task weighs the same whatever its number
of items, widened if need be to what the task scores' own intervals imply (their half-widths
combined in quadrature, divided by the number of tasks), so it does not collapse either.
Bootstrap seeds come from the suite hash, the task and the metric: the same records always
give the same numbers.

**Manifest.** What a result was measured with: package version (and git commit when run from
a checkout), the suite's hash, each env's spec hash and the hash of the data rows used, the
seeds, each seat's policy spec with the model id, dtype and a sha256 of its weights, the
generation settings, library versions, hardware, wall time and tokens generated.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import subprocess
from collections import defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from llm_marl_envs.evaluation.metrics import item_value, metric_info, normalise
from llm_marl_envs.evaluation.run_folder import RESULTS_SCHEMA
from llm_marl_envs.evaluation.stats import Interval, score_interval, stable_seed, widen
from llm_marl_envs.evaluation.suite import PlanError

__all__ = [
    "RESAMPLES",
    "item_values",
    "manifest",
    "overall_interval",
    "package_commit",
    "score",
    "score_items",
]

#: Bootstrap resamples for every interval of a result.
RESAMPLES = 2000
#: The schema id a result carries (:data:`~llm_marl_envs.evaluation.run_folder.RESULTS_SCHEMA`).
SCHEMA = RESULTS_SCHEMA


def _interval(values: list[float], seed: int, metric: str | None = None) -> dict[str, Any] | None:
    """The interval of ``metric``'s per-item values on its range (a task score's: 0..1)."""
    if not values:
        return None
    info = metric_info(metric)[0] if metric else None
    low, high = (info.low, info.high) if info else (0.0, 1.0)
    return score_interval(values, low, high, resamples=RESAMPLES, seed=seed).to_dict()


def overall_interval(
    task_scores: list[list[float]],
    seed: int,
    level: float = 0.95,
    task_intervals: list[Interval] | None = None,
) -> Interval:
    """Mean over tasks of each task's mean score, with a stratified percentile bootstrap
    interval (each task's items resampled on their own, then the task means averaged),
    widened to ``sqrt(sum of the task intervals' squared half-widths) / tasks`` on each side
    when ``task_intervals`` are given (module docstring)."""
    if not task_scores or any(len(v) == 0 for v in task_scores):
        raise ValueError("every task needs at least one scored item")
    rng = np.random.default_rng(seed)
    replicates = np.zeros(RESAMPLES)
    for values in task_scores:
        values = np.asarray(values, dtype=float)
        draws = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
        replicates += values[draws].mean(axis=1)
    replicates /= len(task_scores)
    mean = float(np.mean([np.mean(v) for v in task_scores]))
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(replicates, [tail, 100 - tail])
    n = sum(len(v) for v in task_scores)
    interval = Interval(mean, float(min(lo, mean)), float(max(hi, mean)), n)
    if not task_intervals:
        return interval
    half = np.sqrt(sum((i.width / 2) ** 2 for i in task_intervals)) / len(task_intervals)
    return widen(interval, float(2 * half), 0.0, 1.0)


def score(suite, runs, *, entry: str, team, partial: bool = False) -> dict[str, Any]:
    """The scores of finished task runs (:class:`~llm_marl_envs.evaluation.evaluate.TaskRun`).
    A run whose episodes are not each (item, sample) of its task's frozen plan exactly once is
    refused (:class:`~llm_marl_envs.evaluation.suite.PlanError`, naming the task): a score
    of some of the items is not the suite's score. ``partial=True`` scores it anyway (the
    site shows a damaged board entry that way: unranked, marked incomplete)."""
    per_task = {}
    for run in runs:
        task = run.task
        problem = task.plan_difference((item.index, sample) for item, sample, _ in run.episodes)
        if problem and not partial:
            raise PlanError(f"task {task.name} cannot be scored: {problem}")
        by_item: dict[int, list] = defaultdict(list)
        for item, _, record in run.episodes:
            by_item[item.index].append(record)
        items = {item.index: item for item in task.items}
        per_item = {
            items[i].key: item_values(task, records) for i, records in sorted(by_item.items())
        }
        per_task[task.name] = (per_item, run.assignment)
    return score_items(suite, per_task, entry=entry, team=team)


def item_values(task, records: list) -> dict[str, float | None]:
    """Every metric of ``task`` for one item, from its episodes' records (its samples)."""
    return {m: item_value(m, records, task) for m in task.metrics}


def score_items(
    suite, per_task: dict[str, tuple[dict[str, dict], dict]], *, entry: str, team
) -> dict[str, Any]:
    """The scores of a result from each task's per-item metric values (item key -> metric ->
    value, :func:`item_values`) and seat assignment, in suite order: what :func:`score`
    computes from records, for a caller that reads the records one at a time."""
    suite_hash = suite.hash()
    tasks: dict[str, Any] = {}
    scores: list[list[float]] = []
    score_intervals: list[Interval] = []
    for task in (t for t in suite.tasks if t.name in per_task):
        per_item, assignment = per_task[task.name]
        metrics = {
            m: _interval(
                [v[m] for v in per_item.values() if v[m] is not None],
                stable_seed(suite_hash, task.name, m),
                m,
            )
            for m in task.metrics
        }
        normalised = [
            normalise(task.primary, v[task.primary])
            for v in per_item.values()
            if v[task.primary] is not None
        ]
        tasks[task.name] = {
            "env": task.env,
            "description": task.description,
            "items": len(per_item),
            "samples": task.samples,
            "primary": task.primary,
            "metrics": metrics,
            "score": _interval(normalised, stable_seed(suite_hash, task.name, "score")),
            "team": assignment,
            "per_item": per_item,
        }
        if normalised:
            scores.append(normalised)
            score_intervals.append(Interval.from_dict(tasks[task.name]["score"]))
    complete = {t.name for t in suite.tasks} == set(tasks)
    overall = (
        overall_interval(
            scores, stable_seed(suite_hash, "overall"), task_intervals=score_intervals
        ).to_dict()
        if complete and len(scores) == len(tasks)  # partial results are not comparable
        else None
    )
    return {
        "schema": SCHEMA,
        "entry": entry,
        "team": team.describe() if team is not None else None,
        "suite": {"name": suite.name, "version": suite.version, "hash": suite_hash},
        "complete": complete,
        "overall": overall,
        "tasks": tasks,
    }


# --------------------------------------------------------------------------- manifest
@functools.lru_cache(maxsize=1)
def package_commit(here: Path | None = None) -> str | None:
    """The commit of this package's own checkout (with ``-dirty`` for local changes), when it
    runs from one (an editable install: the package folder sits at the top of a git work
    tree); None for an installed package, even one inside someone else's git work tree (a
    virtual environment in a user's repository), whose commit is not the package's."""
    here = (here or Path(__file__).resolve().parents[1]).resolve()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(here), *args],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()

    try:
        top = git("rev-parse", "--show-toplevel")
        if not top or Path(top).resolve() != here.parent:
            return None
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "") if commit else None


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in ("llm-marl-envs", "torch", "transformers", "numpy", "pettingzoo", "gymnasium"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def _hardware() -> dict[str, Any]:
    info: dict[str, Any] = {
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "system": platform.system(),
        "cpus": os.cpu_count(),
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info


def manifest(
    suite, team, runs, policies: dict[str, dict], run: dict, started: float
) -> dict[str, Any]:
    """Everything needed to say what a result measured and to check it (module docstring).
    ``policies``: model spec -> what the model policy says of itself
    (:meth:`~llm_marl_envs.policies.ModelCache.describe`)."""
    import llm_marl_envs

    tasks = {}
    for task_run in runs:
        task = task_run.task
        records = [record for _, _, record in task_run.episodes]
        tokens = sum(t.completion_tokens or 0 for r in records for t in r.turns)
        tasks[task.name] = {
            "env": task.env,
            "env_kwargs": task.kwargs,
            "env_spec_hash": task.spec_hash(),
            "data_hash": task_run.data_hash,
            "data_source": records[0].data_source if records else None,
            "items": [
                {"key": item.key, "seed": item.seed, **(item.options or {})} for item in task.items
            ],
            "samples": task.samples,
            "generation": task.generation_settings(),
            "seats": task_run.assignment,
            "wall_seconds": round(task_run.wall_seconds, 3),
            "tokens_generated": tokens,
        }
    finished = _dt.datetime.now(_dt.timezone.utc)
    return {
        "package": {
            "name": "llm-marl-envs",
            "version": llm_marl_envs.__version__,
            "commit": package_commit(),
        },
        "suite": {**run["suite"], "source": suite.source, "seed": suite.raw.get("seed", 0)},
        "tasks": tasks,
        "team": team.describe(),
        "policies": policies,
        "batch_size": run["batch_size"],
        "libraries": _versions(),
        "hardware": _hardware(),
        "wall_seconds": round(sum(t["wall_seconds"] for t in tasks.values()), 3),
        "tokens_generated": sum(t["tokens_generated"] for t in tasks.values()),
        "started": _dt.datetime.fromtimestamp(started, _dt.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "finished": finished.isoformat(timespec="seconds"),
    }
