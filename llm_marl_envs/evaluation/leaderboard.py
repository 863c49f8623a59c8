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
from llm_marl_envs.policies import GenerationConfig, ModelCache
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
    generation: GenerationConfig | None = None,
) -> dict:
    """Replay ``sample`` randomly chosen episodes of a deterministic entry, with the models
    where ``generation`` says (device, dtype; default ``"auto"``: an entry made on the CPU in
    float32 replays exactly there); write and return ``verification.json`` (``verified`` is true
    when every one reproduced its actions and score)."""
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
                policies = task_policies(models, task, env, seats, seed, generation)
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
def _transcript(line: dict, task) -> dict:
    record = line["record"]
    value = item_value(task.primary, [record], task)
    return {
        "key": f"{line['key']}" + (f" sample {line['sample']}" if task.samples > 1 else ""),
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


def build_board(
    suite_name: str = "lite",
    board: str | Path | None = DEFAULT_BOARD,
    *,
    shipped: bool = True,
    transcripts: int = TRANSCRIPT_EPISODES,
) -> dict[str, Any]:
    """The site's data (see :func:`llm_marl_envs.evaluation.site.build_site`) for the entries of
    one suite: shipped and added ones whose results match this package's suite."""
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
    tasks = [
        {
            "name": t.name,
            "env": t.env,
            "primary": t.primary,
            "metrics": list(t.metrics),
            "higher_is_better": {m: metric_info(m)[0].higher_is_better for m in t.metrics},
            "description": t.description,
        }
        for t in suite.tasks
    ]
    built = []
    for entry_id, folder, results, verified in rows:
        task_blocks = {}
        for name, block in results["tasks"].items():
            task = suite.task(name)
            path = folder / "episodes" / f"{name}.jsonl.gz"
            if not path.exists():
                path = folder / "episodes" / f"{name}.jsonl"
            shown = load_episodes(path)[:transcripts] if path.exists() else []
            task_blocks[name] = {
                "team": block["team"],
                "metrics": block["metrics"],
                "episodes": [_transcript(line, task) for line in shown],
            }
        meta = results.get("board", {})
        built.append(
            {
                "id": entry_id,
                "name": meta.get("name", results["entry"]),
                "team": results["team"],
                "kind": meta.get("kind", "model"),
                "verified": verified,
                "overall": dict(results["overall"]) if results.get("overall") else None,
                "tasks": task_blocks,
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
            "rank = 1 + the number of entries whose 95% bootstrap interval lies wholly above "
            "this entry's (lower bound above its upper bound), LMArena's rule: an entry never "
            "ranks below one it cannot be told apart from"
        ),
        "tasks": tasks,
        "entries": sorted(built, key=lambda e: (e["overall"] or {}).get("rank", 10**9)),
        "crossplay": crossplay,
    }


def _rank(built: list[dict], tasks: list[dict]) -> None:
    """Tie ranks overall and per task (primary metric), in place."""
    scored = [e for e in built if e["overall"]]
    ranks = tie_ranks([Interval.from_dict(e["overall"]) for e in scored])
    for entry, rank in zip(scored, ranks, strict=True):
        entry["overall"]["rank"] = rank
    for task in tasks:
        have = [
            e
            for e in built
            if (e["tasks"].get(task["name"]) or {}).get("metrics", {}).get(task["primary"])
        ]
        ranks = tie_ranks(
            [
                Interval.from_dict(e["tasks"][task["name"]]["metrics"][task["primary"]])
                for e in have
            ],
            higher_is_better=task["higher_is_better"][task["primary"]],
        )
        for entry, rank in zip(have, ranks, strict=True):
            entry["tasks"][task["name"]]["rank"] = rank


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
