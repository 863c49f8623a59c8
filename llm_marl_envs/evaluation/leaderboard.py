"""The leaderboard: entries checked on the way in, verified by replay, built into a site.

A **board** is a folder (default ``./leaderboard``) of entries, one folder each:
``entries/<id>/results.json`` (an ``llm-marl eval`` result), ``entries/<id>/episodes/`` (its
per-episode records, gzipped) and, once verified, ``entries/<id>/verification.json``
(``verifications/<id>.json`` for a shipped entry; ``verification.key`` seals them). The
package ships entries of its own (``llm_marl_envs/evaluation/entries/``: random, scripted, the tiny
model and the embedded SmolLM2 on the ``lite`` suite) so a site can be built on day one.

* :func:`add_entry` refuses a result whose suite hash, env spec hashes or data hashes do not
  match this package's suite (the message names which), or whose scores do not follow from its
  episodes; the scores are recomputed from the episodes by this package.
* :func:`verify_entry` loads a deterministic entry's models (greedy models, scripted and
  random policies), checks their weights against the manifest and regenerates a secret,
  stratified sample of its episodes sized by a stated power
  (:mod:`llm_marl_envs.evaluation.verification`); the verification is bound to the entry's
  files by their hashes and sealed with the board's key, so :func:`build_board` shows it only
  while both hold. A shipped entry verified on a board is written to that board, never into
  the installed package.
* :func:`build_board` assembles the entries (shipped and added) of one suite into the data of
  the site (overall and per-task tables with tie ranks, transcripts, manifests, cross-play);
  :func:`build` writes the static site with :func:`llm_marl_envs.evaluation.site.build_site`.

**Ranks.** An entry's rank is 1 + the number of entries whose 95% interval lies wholly above
its own (lower bound above its upper bound), the rule LMArena uses: an entry never ranks below
one it cannot be told apart from, and entries whose intervals overlap usually share a place.
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation import verification
from llm_marl_envs.evaluation.evaluate import load_episodes, load_runs, slug
from llm_marl_envs.evaluation.metrics import item_value, metric_info
from llm_marl_envs.evaluation.results import score
from llm_marl_envs.evaluation.stats import Interval, tie_ranks
from llm_marl_envs.evaluation.suite import Suite, data_hash, load_suite
from llm_marl_envs.policies.specs import not_replayable

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

#: What a "verified" badge means, as the site states it.
VERIFICATION_RULE = (
    "verified: the entry's models were loaded and their weights hash to what its manifest "
    "claims, and a secret sample of its episodes, drawn from every task, was regenerated "
    "with the same actions and scores; the sample is sized so that if "
    f"{verification.FORGED_FRACTION:.0%} of the episodes were forged it would catch one with "
    f"probability >= {verification.POWER} (hypergeometric, however the forgeries are spread "
    "over the tasks); a file changed after verification loses the badge"
)


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
    sample: int | None = None,
    secret: int | None = None,
    write: Callable[[str], None] = print,
) -> dict:
    """Verify an entry of a deterministic team (:func:`~llm_marl_envs.evaluation.verification.
    verify_folder`: its models loaded and checked against the manifest, a secret stratified
    sample of ``sample`` episodes regenerated, default the size of the stated power); write the
    verification, sealed with the board's key, into ``board`` (a shipped entry's goes to
    ``<board>/verifications/<id>.json``: the installed package is never written) and return
    it (``verified`` is true when the models match and every sampled episode reproduced)."""
    if board is None:
        raise LeaderboardError("verify writes into a board folder: give one (--board)")
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
    result = verification.verify_folder(
        folder, suite, results, sample=sample, secret=secret, write=write
    )
    path = verification_path(board, entry, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    sealed = verification.seal(result, verification.board_key(Path(board), create=True))
    path.write_text(json.dumps(sealed, indent=1) + "\n", encoding="utf-8")
    return sealed


def verification_path(board: str | Path | None, entry_id: str, folder: Path) -> Path:
    """Where ``board`` keeps an entry's verification: in the entry's folder, or
    ``<board>/verifications/<id>.json`` for a shipped entry (the package is not written)."""
    if board is not None and folder.parent == shipped_entries():
        return Path(board) / "verifications" / f"{entry_id}.json"
    return folder / "verification.json"


def _trust(board: str | Path | None, entry_id: str, folder: Path, results: dict) -> dict:
    """The entry's verification as ``build`` shows it (:func:`verification.check`: the board's
    sealed one, else a shipped entry's own), with the badge's ``summary``."""
    path = verification_path(board, entry_id, folder)
    key = verification.board_key(Path(board)) if board is not None else None
    if path.is_file() or folder.parent != shipped_entries():
        trust = verification.check(path, folder, key)
    else:
        trust = verification.check(folder / "verification.json", folder, None, shipped=True)
    trust["summary"] = verification.summary(trust, results.get("board", {}).get("replay"))
    return trust


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
        rows.append((entry_id, folder, results, _trust(board, entry_id, folder, results)))
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
    for entry_id, folder, results, trust in rows:
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
                "verified": trust["verified"],
                "verification": {k: v for k, v in trust.items() if k != "models"},
                "overall": dict(results["overall"]) if results.get("overall") else None,
                "tasks": task_blocks,
                "manifest": _shown_manifest(results.get("manifest", {}), trust),
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
        "verification_rule": VERIFICATION_RULE,
        "tasks": tasks,
        "entries": sorted(built, key=lambda e: (e["overall"] or {}).get("rank", 10**9)),
        "crossplay": crossplay,
    }


def _shown_manifest(manifest: dict, trust: dict) -> dict:
    """The manifest as the site shows it: its models are the ones verification loaded (their
    ids and weights hashes from the weights); an unverified entry's claims are marked so."""
    if trust["verified"]:
        return {**manifest, "policies": trust["models"]}
    claims = manifest.get("policies", {})
    return {**manifest, "policies": {s: {**c, "unverified": True} for s, c in claims.items()}}


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
