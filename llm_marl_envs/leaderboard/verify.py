"""Verification of a leaderboard entry: a secret sample regenerated, sized in score terms.

An entry's scores follow from its recorded actions (``leaderboard add`` replays them); a
verification ties the actions to the claimed models. :func:`verify_entry_folder` reads the
entry through the board's one reader (:func:`~llm_marl_envs.leaderboard.entry.
open_entry`), so the episodes it regenerates are the episodes that are scored, and does four
things:

* **Replay.** Every episode's recorded actions are played again through this package's
  environments (:mod:`llm_marl_envs.leaderboard.replay`, as ``add`` does), streamed a chunk at
  a time: the count goes on the badge ("114/114 replayed"), and an episode that does not
  replay makes the entry unverified.
* **Models.** It loads every model the entry's seats name and recomputes each one's identity
  from the loaded weights (``policy.describe()``: model id, Hub revision and
  ``weights_sha256``). A seat's spec carries its revision (``hf:org/model@<commit sha>``), so
  the verifier loads the revision the entry played. The manifest's claims must match: the
  weights hash is the pin. A model that cannot be loaded, a claim without a weights hash or a
  claim that differs makes the entry unverified, naming the mismatch; nothing is regenerated
  then.
* **A secret sample, sized in score terms.** One episode of task ``t`` weighs
  ``w_t = 1 / (T * items_t * samples_t)`` of the overall score (the mean of ``T`` task scores
  on 0..1; :func:`episode_weights`), so forging it raises the overall score by at most ``w_t``.
  The sample (``n_t`` of task ``t``'s ``N_t`` episodes, drawn without replacement by a
  generator seeded with ``secrets.randbits(64)`` at verify time, recorded afterwards) is sized
  so that **any forgery that raises the overall score by at least** ``X`` (:data:`GAIN`, 0.02)
  **is caught with probability at least** ``p`` (:data:`POWER`, 0.95): against a forger who
  knows the allocation and places ``k_t`` forged episodes to be missed most often,

      power = 1 - max { prod_t C(N_t - k_t, n_t) / C(N_t, n_t) : sum_t k_t w_t >= X }

  (:func:`llm_marl_envs.leaderboard.sampling.catch_power`, exact or conservative). Heavier
  episodes (smaller tasks) are drawn more densely: on lite (v2, v3) every arXiv episode (1/35 of the
  overall score each) is regenerated.
* **Regeneration.** The sampled episodes are played again with the entry's seats (each task's
  seed, the episode's seed and reset options); each must give the same actions and score.

The result is an event of the entry's board record
(:mod:`~llm_marl_envs.leaderboard.records`): the sha256 of every file the reader read and
the fingerprint of every task's actions, the models, the sample and its power, each sampled
episode's check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import closing
from typing import Any

from llm_marl_envs.evaluation.evaluate import task_policies
from llm_marl_envs.evaluation.metrics import item_value
from llm_marl_envs.evaluation.suite import Suite, Task
from llm_marl_envs.leaderboard.entry import EntryFolder, Episode
from llm_marl_envs.leaderboard.records import (  # where they live now; importable here
    KEY_FILE as KEY_FILE,
    board_key as board_key,
    seal as seal,
)
from llm_marl_envs.leaderboard.replay import replay_stream
from llm_marl_envs.leaderboard.sampling import allocate, catch_power, draw, worst_forgery
from llm_marl_envs.policies import GenerationConfig, ModelCache
from llm_marl_envs.registry import make

__all__ = [
    "GAIN",
    "POWER",
    "allocation",
    "episode_weights",
    "verify_entry_folder",
]

#: The smallest rise of the overall score (0..1) a verification is sized to catch ...
GAIN = 0.02
#: ... and the probability it catches any forgery that raises the score that much.
POWER = 0.95


# --------------------------------------------------------------------------- the sample
def _per_sample_share(task: Task) -> float:
    """The largest change one of an item's samples makes to the item's 0..1 value: 1/samples
    for a mean over samples (every metric here but pass@k), k/samples for pass@k (one correct
    sample of n lifts the unbiased estimator from 0 to k/n)."""
    if task.samples == 1:
        return 1.0
    metric = task.primary
    if metric.startswith("pass@"):
        k = int(metric.partition("@")[2] or 1)
        return min(1.0, k / task.samples)
    return 1.0 / task.samples


def episode_weights(tasks: list[Task]) -> dict[str, float]:
    """Each task's weight of one episode in the overall score of an entry that plays
    ``tasks``: ``share / (T * items)`` (:func:`_per_sample_share`)."""
    count = len(tasks)
    return {t.name: _per_sample_share(t) / (count * len(t.items)) for t in tasks}


def allocation(
    tasks: list[Task], sample: int | None = None, gain: float = GAIN, power: float = POWER
) -> dict[str, Any]:
    """The sample of an entry playing ``tasks``: ``per_task`` draws meeting ``power`` against
    a forgery worth ``gain`` (or, with ``sample``, that many draws spread to catch such a
    forgery as often as they can), with the power they have and the forgery that is missed
    most often (``worst``)."""
    sizes = {t.name: len(t.episode_plan()) for t in tasks}
    weights = episode_weights(tasks)
    if sample is None:
        drawn = allocate(sizes, weights, gain, power)
    else:
        drawn = _fixed(sizes, weights, gain, min(sample, sum(sizes.values())))
    return {
        "episodes": sum(sizes.values()),
        "size": sum(drawn.values()),
        "per_task": drawn,
        "weights": {name: round(w, 6) for name, w in weights.items()},
        "gain": gain,
        "power": round(catch_power(sizes, weights, drawn, gain), 4),
        "worst": worst_forgery(sizes, weights, drawn, gain),
    }


def _fixed(sizes: Mapping[str, int], weights: Mapping[str, float], gain: float, n: int):
    """``n`` draws spread greedily: one per task first (while ``n`` allows, heaviest episodes
    first), then each next draw where it raises the power most."""
    drawn = dict.fromkeys(sizes, 0)
    for task in sorted(sizes, key=lambda t: -weights[t])[:n]:
        drawn[task] = 1
    while sum(drawn.values()) < n:
        best = max(
            (t for t in sizes if drawn[t] < sizes[t]),
            key=lambda t: (
                catch_power(sizes, weights, {**drawn, t: drawn[t] + 1}, gain),
                weights[t],
            ),
        )
        drawn[best] += 1
    return drawn


# --------------------------------------------------------------------------- models
def _model_problems(claimed: Mapping[str, dict], loaded: Mapping[str, dict]) -> list[str]:
    """How the manifest's model claims differ from the models loaded for the same seats."""
    problems = [
        f"the manifest names model {spec!r}, which no seat plays"
        for spec in claimed
        if spec not in loaded
    ]
    for spec, model in loaded.items():
        claim = claimed.get(spec) or {}
        for field in ("model_id", "revision", "weights_sha256"):
            if claim.get(field) != model.get(field):
                problems.append(
                    f"model {spec}: the manifest claims {field} {claim.get(field)!r}, "
                    f"the loaded model has {model.get(field)!r}"
                )
    return problems


def _load_models(
    suite: Suite, results: dict, models: ModelCache, generation: GenerationConfig | None
) -> tuple[dict[str, dict], list[str]]:
    """Load every model of the entry's seats; their identities from the loaded weights, and
    the problems (a model that cannot be loaded, a claim that differs)."""
    for name, task in results["manifest"]["tasks"].items():
        try:
            with closing(make(suite.task(name).env, **suite.task(name).kwargs)) as env:
                task_policies(models, suite.task(name), env, task["seats"], 0, generation)
        except Exception as error:  # any failure to load leaves the model unchecked
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            return {}, [f"task {name}: a seat's model could not be loaded ({reason[:200]})"]
    loaded = models.describe()
    return loaded, _model_problems(results["manifest"].get("policies", {}), loaded)


# --------------------------------------------------------------------------- regeneration
def _regenerate(
    suite: Suite,
    results: dict,
    chosen: list[tuple[str, Episode]],
    models: ModelCache,
    write: Callable[[str], None],
    generation: GenerationConfig | None,
) -> list[dict]:
    """Play each chosen episode again with the entry's seats; one check per episode."""
    from llm_marl_envs.rollout import EpisodePlan, rollout

    checks = []
    names = [t.name for t in suite.tasks]
    for task_name in sorted({t for t, _ in chosen}):
        task = suite.task(task_name)
        episodes = [episode for t, episode in chosen if t == task_name]
        seats = results["manifest"]["tasks"][task_name]["seats"]
        seed = suite.raw.get("seed", 0) * 1_000 + names.index(task_name)  # as evaluate seeds
        with closing(make(task.env, **task.kwargs)) as env:
            policies = task_policies(models, task, env, seats, seed, generation)
        played = rollout(
            task.env,
            policies,
            plan=EpisodePlan(
                seeds=[episode.item.seed for episode in episodes],
                reset_options=[episode.item.options for episode in episodes],
            ),
            batch_size=results["manifest"]["batch_size"],
            env_kwargs=task.kwargs,
            progress=False,
        )
        for episode, record in zip(episodes, played.episodes, strict=True):
            check = {
                "task": task_name,
                "key": episode.item.key,
                "sample": episode.sample,
                "actions_match": [t.action for t in episode.record.turns]
                == [t.action for t in record.turns],
                "score": item_value(task.primary, [episode.record], task),
                "regenerated_score": item_value(task.primary, [record], task),
            }
            checks.append(check)
            said = "reproduced" if _ok(check) else "DIFFERS"
            write(f"  {task_name} {episode.item.key}: {said}")
    return checks


def _ok(check: dict) -> bool:
    return check["actions_match"] and check["score"] == check["regenerated_score"]


def _replay_and_draw(
    entry: EntryFolder, positions: set[tuple[str, int]]
) -> tuple[dict[str, int], list[str], list[tuple[str, Episode]]]:
    """Every episode replayed (streamed: one chunk held at a time), and the episodes at the
    drawn plan ``positions`` kept for regeneration."""
    differ, total, chosen = [], 0, []
    for task in entry.tasks():
        for position, (episode, _, found) in enumerate(replay_stream(task, entry.episodes(task))):
            if found:
                differ.append(
                    f"task {task.name}, item {episode.item.key} sample {episode.sample}: {found}"
                )
            if (task.name, position) in positions:
                chosen.append((task.name, episode))
            total += 1
    return {"replayed": total - len(differ), "episodes": total}, differ, chosen


def verify_entry_folder(
    entry: EntryFolder,
    *,
    sample: int | None = None,
    secret: int,
    write: Callable[[str], None] = print,
    generation: GenerationConfig | None = None,
    gain: float = GAIN,
    server_options: dict | None = None,
) -> dict:
    """The verification of the open entry ``entry`` (its rules already checked), as a board
    record event: every episode replayed; its models loaded and checked; a secret stratified
    sample regenerated (``sample`` episodes, default the size :func:`allocation` gives for
    ``gain``; ``secret``: the draw's seed; the models where ``generation`` says)."""
    import llm_marl_envs

    tasks = entry.tasks()
    plan = allocation(tasks, sample, gain)
    pool = {t.name: list(range(len(t.episode_plan()))) for t in tasks}
    positions = set(draw(pool, plan["per_task"], secret))
    replay, unreplayed, chosen = _replay_and_draw(entry, positions)
    models = ModelCache(server_options)
    try:
        loaded, problems = _load_models(entry.suite, entry.results, models, generation)
        checks = (
            []
            if problems
            else _regenerate(entry.suite, entry.results, chosen, models, write, generation)
        )
    finally:
        models.close()
    problems += unreplayed + [
        f"{c['task']} {c['key']} does not reproduce" for c in checks if not _ok(c)
    ]
    return {
        "event": "verification",
        "verified": not problems and bool(checks),
        "problems": problems,
        "secret_seed": secret,
        "sample": plan,
        "replay": replay,
        "regenerated": sum(map(_ok, checks)),
        "models": loaded,
        "files": dict(entry.hashes),
        "fingerprints": dict(entry.fingerprints),
        "package_version": llm_marl_envs.__version__,
        "episodes": checks,
    }
