"""The leaderboard: entries checked on the way in, verified by replay, built into a site.

A **board** is a folder (default ``./leaderboard``) of entries, one folder each:
``entries/<id>/results.json`` (an ``llm-marl eval`` result), ``entries/<id>/episodes/`` (its
per-episode records, gzipped) and, once verified, ``entries/<id>/verification.json``. The
package ships entries of its own (``llm_marl_envs/evaluation/entries/``: random, scripted, the tiny
model and the embedded SmolLM2 on the ``lite`` suite) so a site can be built on day one.

* :func:`add_entry` refuses a result whose suite hash, env spec hashes or data hashes do not
  match this package's suite (the message names which), or whose scores do not follow from its
  episodes; the scores are recomputed from the episodes by this package.
* :func:`verify_entry` replays a random sample of a deterministic entry's episodes (greedy
  models, scripted and random policies) and marks it verified when each reproduces its actions
  and its score.
* :func:`build_board` assembles the entries (shipped and added) of one suite into the data of
  the site (overall and per-task tables with tie ranks, transcripts, manifests, cross-play);
  :func:`build` writes the static site with :func:`llm_marl_envs.evaluation.site.build_site`.

**Ranks.** An entry's rank is 1 + the number of entries whose 95% interval lies wholly above
its own (lower bound above its upper bound), the rule LMArena uses: an entry never ranks below
one it cannot be told apart from, and entries whose intervals overlap usually share a place.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import random
import shutil
import warnings
from collections.abc import Callable
from contextlib import closing
from importlib import resources
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.evaluate import load_episodes, load_runs, slug, task_policies
from llm_marl_envs.evaluation.metrics import item_value, metric_info
from llm_marl_envs.evaluation.results import score
from llm_marl_envs.evaluation.stats import Interval, tie_ranks
from llm_marl_envs.evaluation.suite import Suite, data_hash, load_suite
from llm_marl_envs.policies import ModelCache
from llm_marl_envs.policies.specs import not_replayable
from llm_marl_envs.registry import make

__all__ = [
    "DEFAULT_BOARD",
    "LeaderboardError",
    "add_entry",
    "build",
    "build_board",
    "entries",
    "shipped_entries",
    "verify_entry",
]

DEFAULT_BOARD = Path("leaderboard")
#: Episodes per task shown in an entry's transcript pages (the first ones, in item order).
TRANSCRIPT_EPISODES = 20


class LeaderboardError(ValueError):
    """A result that cannot join the board, or an entry that is not there."""


def shipped_entries() -> Path:
    """The folder of the entries that ship with the package."""
    return Path(str(resources.files("llm_marl_envs.evaluation") / "entries"))


def entries(board: str | Path | None = DEFAULT_BOARD, shipped: bool = True) -> dict[str, Path]:
    """Entry id -> folder: the shipped ones, then ``board``'s (an added entry with a shipped
    entry's id replaces it)."""
    found: dict[str, Path] = {}
    for root in ([shipped_entries()] if shipped else []) + ([Path(board)] if board else []):
        folder = root if root == shipped_entries() else root / "entries"
        if folder.is_dir():
            for entry in sorted(folder.iterdir()):
                if (entry / "results.json").is_file():
                    found[entry.name] = entry
    return found


def _read(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- add
def check_result(results: dict, folder: Path) -> tuple[Suite, list[str]]:
    """The suite of ``results`` after checking its hashes against this package's suite;
    returns it and the problems found (empty: the result may join)."""
    if results.get("schema") != "llm-marl-envs/results/1":
        raise LeaderboardError(f"{folder}: not an llm-marl eval result (schema)")
    meta = results["suite"]
    suite = load_suite(meta["name"])
    problems = []
    if suite.version != meta["version"] or suite.hash() != meta["hash"]:
        problems.append(
            f"suite {meta['name']}-v{meta['version']} hash {meta['hash'][:19]} is not this "
            f"package's {suite.label} ({suite.hash()[:19]}); evaluate again with this version"
        )
        return suite, problems
    manifest = results.get("manifest", {}).get("tasks", {})
    for name in results["tasks"]:
        task = suite.task(name)
        given = manifest.get(name, {})
        if given.get("env_spec_hash") != task.spec_hash():
            problems.append(
                f"task {name}: env spec hash {str(given.get('env_spec_hash'))[:19]} differs "
                f"from {task.env}'s here ({task.spec_hash()[:19]}): another env version, "
                "arguments or generation settings"
            )
        if given.get("data_hash") is not None and task.kwargs.get("data_source") == "bundled":
            if given["data_hash"] != data_hash(task):  # bundled rows can be checked here
                problems.append(f"task {name}: the data rows differ from the packaged ones")
    return suite, problems


def add_entry(
    result_dir: str | Path,
    board: str | Path = DEFAULT_BOARD,
    *,
    entry_id: str | None = None,
    name: str | None = None,
    kind: str = "model",
) -> Path:
    """Check the evaluation in ``result_dir`` and copy it into ``board`` as an entry; returns
    the entry's folder. Raises :class:`LeaderboardError` naming each mismatch."""
    folder = Path(result_dir)
    if not (folder / "results.json").is_file():
        raise LeaderboardError(f"no results.json in {folder}: run llm-marl eval first")
    results = _read(folder)
    suite, problems = check_result(results, folder)
    if not problems:
        assignments = {k: v["team"] for k, v in results["tasks"].items()}
        rescored = score(
            suite, load_runs(suite, folder, assignments), entry=results["entry"], team=None
        )
        for task, block in results["tasks"].items():
            if rescored["tasks"].get(task, {}).get("metrics") != block["metrics"]:
                problems.append(f"task {task}: the scores do not follow from its episodes")
    if problems:
        raise LeaderboardError(f"{folder} cannot join the board: " + "; ".join(problems))
    entry_id = slug(entry_id or name or results["entry"], "entry")
    target = Path(board) / "entries" / entry_id
    if target.exists():
        raise LeaderboardError(f"the board already has an entry {entry_id!r}; choose --id")
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "episodes").mkdir(parents=True)
    for source in sorted((folder / "episodes").iterdir()):
        if source.name.endswith(".jsonl"):  # gzipped, byte-identical for the same file
            packed = gzip.compress(source.read_bytes(), mtime=0)
            (tmp / "episodes" / (source.name + ".gz")).write_bytes(packed)
        elif source.name.endswith((".meta.json", ".jsonl.gz")):
            shutil.copy2(source, tmp / "episodes" / source.name)
    results["board"] = {"id": entry_id, "name": name or results["entry"], "kind": kind}
    (tmp / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    tmp.rename(target)
    return target


# --------------------------------------------------------------------------- verify
def _deterministic(results: dict) -> str | None:
    """Why an entry cannot be replayed exactly (None: it can)."""
    for name, task in results["manifest"]["tasks"].items():
        if task["generation"].get("do_sample"):
            return f"task {name} samples its answers"
        for spec in task["seats"].values():
            why = not_replayable(spec)
            if why:
                return f"task {name} has {why}"
    return None


def verify_entry(
    entry: str,
    board: str | Path = DEFAULT_BOARD,
    *,
    sample: int = 8,
    seed: int = 0,
    write: Callable[[str], None] = print,
) -> dict:
    """Replay ``sample`` randomly chosen episodes of a deterministic entry; write and return
    ``verification.json`` (``verified`` is true when every one reproduced its actions and
    score)."""
    from llm_marl_envs.rollout import rollout

    found = entries(board)
    if entry not in found:
        raise LeaderboardError(f"no entry {entry!r}; entries: {', '.join(found) or 'none'}")
    folder = found[entry]
    results = _read(folder)
    suite, problems = check_result(results, folder)
    if problems:
        raise LeaderboardError(f"{entry}: " + "; ".join(problems))
    why = _deterministic(results)
    if why:
        raise LeaderboardError(f"{entry} cannot be verified by replay: {why}")
    pool: list[tuple[str, dict]] = []
    for task in results["tasks"]:
        pool += [(task, line) for line in load_episodes(folder / "episodes" / f"{task}.jsonl.gz")]
    chosen = random.Random(seed).sample(pool, min(sample, len(pool)))
    batch = results["manifest"].get("batch_size", 8)
    models = ModelCache()
    checks = []
    try:
        for task_name in sorted({t for t, _ in chosen}):
            task = suite.task(task_name)
            lines = [line for t, line in chosen if t == task_name]
            seats = results["manifest"]["tasks"][task_name]["seats"]
            index = [t.name for t in suite.tasks].index(task_name)
            seed = suite.raw.get("seed", 0) * 1_000 + index
            with closing(make(task.env, **task.kwargs)) as env:
                policies = task_policies(models, task, env, seats, seed)
            played = rollout(
                task.env,
                policies,
                seeds=[line["seed"] for line in lines],
                reset_options=[line["options"] for line in lines],
                batch_size=batch,
                env_kwargs=task.kwargs,
                progress=False,
            )
            for line, record in zip(lines, played.episodes, strict=True):
                before = [t.action for t in line["record"].turns]
                after = [t.action for t in record.turns]
                value = item_value(task.primary, [line["record"]], task)
                again = item_value(task.primary, [record], task)
                checks.append(
                    {
                        "task": task_name,
                        "key": line["key"],
                        "sample": line["sample"],
                        "actions_match": before == after,
                        "score": value,
                        "replayed_score": again,
                    }
                )
                write(
                    f"  {task_name} {line['key']}: "
                    + ("reproduced" if before == after and value == again else "DIFFERS")
                )
    finally:
        models.close()
    reproduced = sum(c["actions_match"] and c["score"] == c["replayed_score"] for c in checks)
    import llm_marl_envs

    verification = {
        "verified": reproduced == len(checks) and bool(checks),
        "sampled": len(checks),
        "reproduced": reproduced,
        "seed": seed,
        "package_version": llm_marl_envs.__version__,
        "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "episodes": checks,
    }
    (folder / "verification.json").write_text(json.dumps(verification, indent=1) + "\n")
    return verification


# --------------------------------------------------------------------------- build
#: Display names of the policy specs that load no model (a model's name is its model id).
BASELINE_NAMES = {"scripted": "scripted players", "random": "random text"}


def _transcript(item, sample: int, record, task) -> dict:
    value = item_value(task.primary, [record], task)
    return {
        "key": f"{item.key}" + (f" sample {sample}" if task.samples > 1 else ""),
        "score": value,
        "turns": [
            {
                "agent": t.agent,
                "observation": t.observation,
                "action": t.action,
                "reward": t.reward,
                "format_error": t.format_error,
            }
            for t in record.turns
        ],
    }


def _task_display(task) -> dict:
    """What the site shows of a task: its metrics, their directions, ranges (the interval
    bars' scales) and caveats (secondary metrics that do not measure quality)."""
    infos = {m: metric_info(m)[0] for m in task.metrics}
    return {
        "name": task.name,
        "env": task.env,
        "primary": task.primary,
        "metrics": list(task.metrics),
        "higher_is_better": {m: info.higher_is_better for m, info in infos.items()},
        "bounds": {m: [info.low, info.high] for m, info in infos.items()},
        "caveats": {m: info.caveat for m, info in infos.items() if info.caveat},
        "expected": len(task.items) * task.samples,
        "description": task.description,
    }


def _scored_entry(suite: Suite, folder: Path, results: dict, transcripts: int) -> dict:
    """An entry's scores recomputed from its episode records (the intervals, task scores and
    overall stored in ``results.json`` are not read), whether it played every item of the
    suite, and its first ``transcripts`` episodes per task."""
    assignments = {name: block["team"] for name, block in results["tasks"].items()}
    runs = load_runs(suite, folder, assignments)
    rescored = score(suite, runs, entry=results["entry"], team=None)
    tasks = {}
    for run in runs:
        block = rescored["tasks"][run.task.name]
        tasks[run.task.name] = {
            "team": block["team"],
            "metrics": block["metrics"],
            "score": block["score"],
            "played": len(run.episodes),
            "complete": block["items"] == len(run.task.items),
            "episodes": [_transcript(*e, run.task) for e in run.episodes[:transcripts]],
        }
    played = sum(block["played"] for block in tasks.values())
    expected = sum(len(task.items) * task.samples for task in suite.tasks)
    complete = len(tasks) == len(suite.tasks) and all(b["complete"] for b in tasks.values())
    return {
        "overall": rescored["overall"],
        "complete": complete,
        "items": {"played": played, "expected": expected},
        "tasks": tasks,
    }


def build_board(
    suite_name: str = "lite",
    board: str | Path | None = DEFAULT_BOARD,
    *,
    shipped: bool = True,
    transcripts: int = TRANSCRIPT_EPISODES,
) -> dict[str, Any]:
    """The site's data (see :func:`llm_marl_envs.evaluation.site.build_site`) for the entries of
    one suite: shipped and added ones whose results match this package's suite, scored again
    from their episode records."""
    from llm_marl_envs.evaluation.site import rank_order

    suite = load_suite(suite_name)
    rows = []
    for entry_id, folder in entries(board, shipped).items():
        results = _read(folder)
        if results["suite"]["name"] != suite.name:
            continue
        _, problems = check_result(results, folder)
        if problems:  # measured on another version of the suite: not comparable
            warnings.warn(f"entry {entry_id} left out: {'; '.join(problems)}", stacklevel=2)
            continue
        verification = folder / "verification.json"
        verified = (
            json.loads(verification.read_text())["verified"] if verification.exists() else None
        )
        rows.append((entry_id, folder, results, verified))
    tasks = [_task_display(t) for t in suite.tasks]
    built = []
    for entry_id, folder, results, verified in rows:
        meta = results.get("board", {})
        built.append(
            {
                "id": entry_id,
                "name": meta.get("name", results["entry"]),
                "team": results["team"],
                "kind": meta.get("kind", "model"),
                "verified": verified,
                **_scored_entry(suite, folder, results, transcripts),
                "manifest": results.get("manifest", {}),
            }
        )
    _rank(built, tasks)
    crossplay = {}
    for root in ([shipped_entries()] if shipped else []) + ([Path(board)] if board else []):
        path = root / f"crossplay-{suite.label}.json"
        if path.is_file():
            crossplay.update(json.loads(path.read_text()))
    return {
        "title": f"llm_marl_envs leaderboard: suite {suite.label}",
        "suite": {"name": suite.name, "version": suite.version, "hash": suite.hash()},
        "generated": max((e["manifest"].get("finished", "") for e in built), default=""),
        "rank_rule": (
            "rank = 1 + the number of entries whose 95% interval lies wholly above "
            "this entry's (lower bound above its upper bound), LMArena's rule: an entry never "
            "ranks below one it cannot be told apart from; entries that did not play every "
            "item of the suite are not ranked"
        ),
        "tasks": tasks,
        "entries": rank_order(built, lambda e: e["overall"]),
        "crossplay": _crossplay_display(suite, crossplay, built),
    }


def _rank(built: list[dict], tasks: list[dict]) -> None:
    """Tie ranks overall and per task (primary metric), in place, among the entries that
    played every item (overall: of every task); the others stay unranked."""
    scored = [e for e in built if e["overall"] and e["complete"]]
    ranks = tie_ranks([Interval.from_dict(e["overall"]) for e in scored])
    for entry, rank in zip(scored, ranks, strict=True):
        entry["overall"]["rank"] = rank
    for task in tasks:
        name, primary = task["name"], task["primary"]
        have = [
            e
            for e in built
            if (e["tasks"].get(name) or {}).get("complete")
            and e["tasks"][name]["metrics"].get(primary)
        ]
        ranks = tie_ranks(
            [Interval.from_dict(e["tasks"][name]["metrics"][primary]) for e in have],
            higher_is_better=task["higher_is_better"][primary],
        )
        for entry, rank in zip(have, ranks, strict=True):
            entry["tasks"][name]["rank"] = rank


def _model_names(built: list[dict]) -> dict[str, str]:
    """Policy spec -> display name: a model's id as its policy describes it in a manifest
    (without the parenthesised details), or the baselines' names."""
    names = dict(BASELINE_NAMES)
    for entry in built:
        for spec, described in (entry["manifest"].get("policies") or {}).items():
            model_id = (described or {}).get("model_id")
            if model_id:
                names.setdefault(spec, model_id.split(" (")[0])
    return names


def _crossplay_display(suite: Suite, crossplay: dict, built: list[dict]) -> dict:
    """The cross-play blocks with the models' display names and each side's seats: seats
    cycle (:class:`~llm_marl_envs.evaluation.evaluate.Team`), so the row model holds the
    even-numbered seats and the column model the odd ones (a 4-player Donor game: 0 and 2,
    1 and 3)."""
    names = _model_names(built)
    shown = {}
    for name, block in crossplay.items():
        task = suite.task(name) if name in {t.name for t in suite.tasks} else None
        extra = {"names": {m: names.get(m, m) for m in block["models"]}}
        if task is not None:
            with closing(make(task.env, **task.kwargs)) as env:
                agents = list(env.possible_agents)
            extra["seat_groups"] = [agents[0::2], agents[1::2]]
        shown[name] = {**block, **extra}
    return shown


def build(
    out: str | Path = "leaderboard-site",
    *,
    suite_name: str = "lite",
    board: str | Path | None = DEFAULT_BOARD,
    shipped: bool = True,
) -> Path:
    """Write the static site of ``suite_name``'s entries to ``out``; returns its index.html."""
    from llm_marl_envs.evaluation.site import build_site

    data = build_board(suite_name, board, shipped=shipped)
    if not data["entries"]:
        raise LeaderboardError(
            f"no entries for suite {suite_name}: add one with llm-marl leaderboard add DIR"
        )
    return build_site(data, out)
