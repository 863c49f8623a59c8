"""Cross-play: how well models cooperate with themselves and with each other.

For a set of models, :func:`run_pairings` evaluates every task of a suite (or the tasks
named) under three conditions, each an ordinary :func:`~llm_marl_envs.evaluation.evaluate.evaluate`
run in its own folder (so each one resumes on its own):

* **solo**: one model in every seat of the task's fully observed variant (``solo_kwargs`` in
  the suite, e.g. the maze's ``variant: full``, where a single player sees all walls and the
  treasure), as in "The Collaboration Gap" (Davidson et al., 2025, arXiv:2511.02687). Tasks
  without such a variant have no solo condition.
* **homogeneous pairs**: the model in every seat of the ordinary, partially observed task
  (two copies of itself cooperating).
* **heterogeneous pairs**: model A in seat 0 and model B in seat 1 (seats cycle, so in a
  4-player Donor game A holds seats 0 and 2), and the reverse order.

From the per-item scores (each task's primary metric on 0..1) it reports, per task:

* the **cross-play matrix** (row: the model in seat 0, column: the model in seat 1; the
  diagonal is the homogeneous pairs), each cell a mean with the 95% interval task scores get
  (Wilson for 0/1 outcomes, else the bootstrap at least one item's swing wide:
  :func:`~llm_marl_envs.evaluation.stats.score_interval`), so 0 of 16 reads [0, 0.194], not
  a certain [0, 0];
* each model's **collaboration gap**: homogeneous pair minus solo, paired by item (same seeds,
  same rows), with a paired bootstrap interval at least one item's swing (1/n) wide;
  negative means the model does worse when the task is split between two copies of itself
  than when one copy sees everything;
* each pair's **seat-order effect**: (A first, B second) minus (B first, A second), paired by
  item: who leads matters when it is far from 0 ("relay inference": the stronger agent leads).

Everything is written to ``crossplay.json`` in the output folder, with every item's score
(``per_item``) so that the table can be recomputed without playing again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.config import EvalConfig
from llm_marl_envs.evaluation.evaluate import EvalError, Team, evaluate
from llm_marl_envs.evaluation.run_folder import slug
from llm_marl_envs.evaluation.files import write_atomic
from llm_marl_envs.evaluation.metrics import normalise
from llm_marl_envs.evaluation.stats import (
    Interval,
    paired_difference,
    score_interval,
    stable_seed,
    widen,
)
from llm_marl_envs.evaluation.suite import Suite
from llm_marl_envs.policies import GenerationConfig

__all__ = ["crossplay", "run_pairings"]


def _slug(spec: str) -> str:
    return slug(spec, "model", sep="_")


def _scores(results: dict, task: str) -> dict[str, float]:
    """Item key -> the task's primary metric on 0..1, from a ``results.json``."""
    block = results["tasks"][task]
    primary = block["primary"]
    return {
        key: normalise(primary, values[primary])
        for key, values in block["per_item"].items()
        if values[primary] is not None
    }


def _solo_suite(suite: Suite, tasks: Sequence[str]) -> Suite | None:
    """The suite reduced to ``tasks`` that have a fully observed variant, in that variant."""
    from dataclasses import replace

    solo = [t.solo() for t in suite.tasks if t.name in tasks and t.solo() is not None]
    return replace(suite, tasks=tuple(solo)) if solo else None


def run_pairings(
    suite: Suite,
    models: Sequence[str],
    out_dir: str | Path,
    *,
    tasks: Sequence[str] | None = None,
    batch_size: int = 8,
    progress: bool | None = None,
    generation: GenerationConfig | None = None,
    write: Callable[[str], None] | None = None,
    executor: str | None = None,
    num_workers: int | None = None,
    server_options: Mapping[str, Any] | None = None,
    config: EvalConfig | None = None,
) -> dict:
    """Play solo, homogeneous and heterogeneous (both seat orders) conditions for ``models``
    on ``suite``; return (and write to ``<out_dir>/crossplay.json``) :func:`crossplay`.

    The settings, one by one or all at once as ``config``, are :func:`evaluate`'s
    (:class:`~llm_marl_envs.evaluation.config.EvalConfig`), but for ``entry``: each condition's
    results are named by its team."""
    config = EvalConfig.given(
        config,
        tasks=tasks,
        batch_size=batch_size,
        progress=progress,
        generation=generation,
        write=write,
        executor=executor,
        num_workers=num_workers,
        server_options=server_options,
    )
    models = list(dict.fromkeys(models))
    if len(models) < 1:
        raise EvalError("--pairings needs at least one model spec")
    names = list(config.tasks) if config.tasks else [t.name for t in suite.tasks]
    for name in names:
        suite.task(name)  # unknown names fail here, listing the suite's tasks
    out = Path(out_dir)
    plan = _conditions(suite, models, names)
    config.say(
        f"cross-play of {len(models)} model(s) on {suite.label} "
        f"({', '.join(names)}): {len(plan)} evaluations, each in {out}/<condition>/"
    )
    runs: dict[str, dict] = {}
    for number, (label, played, team, chosen) in enumerate(plan, 1):
        config.say(f"[{number}/{len(plan)}] {label}: {team.label}")
        condition = config.replace(tasks=chosen, entry=None)
        runs[label] = evaluate(played, team, out / label, config=condition)
    table = crossplay(suite, models, runs, names)
    write_atomic(out / "crossplay.json", json.dumps(table, indent=1) + "\n")
    return table


def _conditions(
    suite: Suite, models: list[str], names: list[str]
) -> list[tuple[str, Suite, Team, list[str] | None]]:
    """The evaluations of cross-play, in order: (label, suite, team, tasks) for each model's
    solo condition (where tasks have one) and each (model, partner) pair."""
    solo_suite = _solo_suite(suite, names)
    plan: list[tuple[str, Suite, Team, list[str] | None]] = []
    for model in models:
        if solo_suite is not None:
            plan.append((f"solo/{_slug(model)}", solo_suite, Team((model,)), None))
        for partner in models:
            team = Team((model,)) if partner == model else Team((model, partner))
            plan.append((f"pair/{_slug(model)}__{_slug(partner)}", suite, team, names))
    return plan


def crossplay(suite: Suite, models: Sequence[str], runs: dict[str, dict], tasks: Sequence[str]):
    """Cross-play matrix, collaboration gaps and seat-order effects per task (module
    docstring) from the ``results.json`` of each condition, keyed as :func:`run_pairings`
    names them (``solo/<model>``, ``pair/<seat 0 model>__<seat 1 model>``)."""
    suite_hash = suite.hash()
    table: dict[str, Any] = {}
    for task in tasks:

        def seeded(*parts: str, task: str = task) -> int:
            return stable_seed(suite_hash, task, *parts)

        pair = {
            (a, b): _scores(runs[f"pair/{_slug(a)}__{_slug(b)}"], task)
            for a in models
            for b in models
        }
        matrix = [
            [
                _score(pair[a, b].values(), seeded("cell", a, b)) if pair[a, b] else None
                for b in models
            ]
            for a in models
        ]
        solo, gap, alone = {}, {}, {}
        for model in models:
            result = runs.get(f"solo/{_slug(model)}")
            if result is None or task not in result["tasks"]:
                continue
            alone[model] = _scores(result, task)
            solo[model] = _score(alone[model].values(), seeded("solo", model))
            gap[model] = _difference(pair[model, model], alone[model], seeded("gap", model))
        seat_order = {
            f"{a}|{b}": _difference(pair[a, b], pair[b, a], seeded("order", a, b))
            for i, a in enumerate(models)
            for b in models[i + 1 :]
        }
        block = suite.task(task)
        agents = _agents(block)
        table[task] = {
            "env": block.env,
            "primary": block.primary,
            "models": list(models),
            "seats": agents[:2],
            "matrix": matrix,
            "solo": solo,
            "gap": gap,
            "seat_order": seat_order,
            # every item's score, so the table can be recomputed without playing again
            "per_item": {
                "pairs": {f"{a}|{b}": pair[a, b] for a in models for b in models},
                "solo": alone,
            },
        }
    return table


def _score(values, seed: int) -> dict:
    """A cell's mean score (0..1) with the interval task scores get (Wilson for 0/1 outcomes,
    else the bootstrap at least one item's swing wide: ``stats.score_interval``)."""
    return score_interval(list(values), 0.0, 1.0, seed=seed).to_dict()


def _difference(a: dict, b: dict, seed: int) -> dict:
    """The paired difference ``a - b`` of two conditions' item scores, its bootstrap interval
    widened to at least one item's swing (``1 / n``) inside [-1, 1]: 16 identical pairs give
    [-0.031, +0.031], not a certain [0, 0]."""
    interval: Interval = paired_difference(a, b, seed=seed)
    return widen(interval, 1.0 / interval.n, -1.0, 1.0).to_dict()


def _agents(task) -> list[str]:
    import llm_marl_envs

    return list(llm_marl_envs.make(task.env, **task.kwargs).possible_agents)
