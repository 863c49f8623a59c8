"""The data of a leaderboard site: every entry read, checked and scored again, facts apart from claims.

:func:`build_board` reads each entry of one suite (shipped and on the board) through the
board's one reader (:func:`~llm_marl_envs.leaderboard.entry.open_entry`), applies the
rules ``add`` applies (:func:`~llm_marl_envs.leaderboard.rules.entry_problems`, the
entry's id, name and kind) and scores it again from its episode records, streamed; a folder
that breaks a rule or cannot be read is left out with a warning naming it, and never stops the
board. When two entries clash (names a visitor could not tell apart, the same content, or
the same episodes), the later one in the ledger's order
(:func:`~llm_marl_envs.leaderboard.rules.standing`) is left out; an entry's badge comes from
the ledger's events of its content (:mod:`~llm_marl_envs.leaderboard.ledger`).

**Only checked facts are shown as facts.** An entry's ``team`` is the seats its manifest
lists: what the replay used and a verification regenerated with; ``played_by`` names those
policies, with the model ids the verification loaded. ``manifest`` holds only what was
checked (the suite, each task's env spec hash, data hash and generation settings, and, once a
verification regenerated a secret sample with them, the seats and the models as it loaded
them); everything else a result says about itself (package version and commit, libraries,
hardware, batch size, wall time, tokens, dates, and an unverified entry's seats and models:
a replay checks what the actions score, not who wrote them) is kept apart under
``claimed``. The board's date
(``generated``) is the latest time the board itself (or the package) recorded an add or a
verification, never a date a submission wrote.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.metrics import item_value, metric_info
from llm_marl_envs.evaluation.results import item_values, score_items
from llm_marl_envs.evaluation.suite import Suite, load_suite, packaged_version
from llm_marl_envs.leaderboard import (
    copies,
    ledger as board_ledger,
    records as board_records,
    rules as board_rules,
    verify as verification,
)
from llm_marl_envs.leaderboard.entry import EntryFolder, LeaderboardError, open_entry
from llm_marl_envs.leaderboard.ranks import (  # unranked, INCOMPLETE: importable here, as before
    INCOMPLETE as INCOMPLETE,
    RANK_RULE,
    rank_entries,
    unranked as unranked,
)
from llm_marl_envs.registry import make

__all__ = ["TRANSCRIPT_EPISODES", "VERIFICATION_RULE", "build_board", "summary"]

#: Episodes per task shown in an entry's transcript pages (the first ones, in item order).
TRANSCRIPT_EPISODES = 20
#: Characters of transcript text kept per task (a transcript page stops near 4 MB anyway).
TRANSCRIPT_CHARS = 4_000_000

#: What a "verified" badge means, as the site states it.
VERIFICATION_RULE = (
    "verified: every episode's actions were replayed through this package's environments; the "
    "entry's models were loaded and their weights hash to what its manifest claims; and a "
    "secret sample of its episodes, drawn from every task, was regenerated with the same "
    "actions and scores. The sample is sized in score terms: any forgery that raises the "
    f"overall score by at least {verification.GAIN:.2f} is caught with probability at least "
    f"{verification.POWER} (each episode weighs its share of the overall score; the forger "
    "places the forged episodes where the sample misses them most often). A failed "
    "verification stays on the record until a maintainer overrides it with a reason. The record "
    "belongs to the entry's content (a digest of its episodes and what its score depends on), "
    "not its name or id: content changed after verification is another entry's, with none"
)
#: Display names of the policy specs that load no model (a model's name is its model id).
BASELINE_NAMES = {"scripted": "scripted players", "random": "random text"}
#: Manifest fields shown as claims (what a result says about itself and nobody checked).
CLAIMED = (
    "package",
    "libraries",
    "hardware",
    "batch_size",
    "wall_seconds",
    "tokens_generated",
    "started",
    "finished",
)
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


# --------------------------------------------------------------------------- the badge
def summary(trust: dict[str, Any]) -> str:
    """What the badge says: what was replayed and regenerated, in score terms; or why the
    entry is not verified; and the record's history (k of n verifications failed, overrides)."""
    replay = trust.get("replay")
    said = [f"{replay['replayed']}/{replay['episodes']} replayed" if replay else "not replayed"]
    if trust.get("weak"):
        sample = trust.get("sample") or {}
        said.append(
            f"{trust.get('regenerated')} regenerated, a sample too small for the badge (it "
            f"catches a forgery worth {_number(sample.get('gain'), 1.0):.2f} with probability "
            f"{_number(sample.get('power'), 0.0):.2f}; the badge needs one worth "
            f"{verification.GAIN:.2f} caught with probability {verification.POWER}): verify "
            "again without --sample or --gain"
        )
    elif trust["verified"] is None:
        said.append("not regenerated" + (f" ({trust['problems'][0]})" if trust["problems"] else ""))
    elif not trust["verified"]:
        problems = trust["problems"]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        said.append(f"unverified: {problems[0]}{more}")
    else:
        sample = trust.get("sample") or {}
        said.append(
            f"{trust.get('regenerated')} regenerated (a secret sample that catches any forgery "
            f"raising the overall score by {sample.get('gain', verification.GAIN):.2f} or more "
            f"with probability {float(sample.get('power', 0)):.2f})"
        )
    if trust.get("failed") or trust.get("verifications", 0) > 1:
        said.append(f"{trust['failed']} of {trust['verifications']} verifications failed")
    for override in trust.get("overrides") or []:
        said.append(f"overridden {override.get('at')}: {override.get('reason')}")
    return ", ".join(said)


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _trust(
    ledger: board_ledger.Ledger | Exception,
    entry_id: str,
    folder: Path,
    digest: str,
    hashes: dict,
) -> tuple[dict, list]:
    """The entry's badge (:func:`board_records.badge`) from the events the board's ledger
    holds for its content (``digest``), or, for a shipped entry the board never verified, the
    package's own record; and those events (for the board's date). ``ledger`` is the error
    that made the board's ledger untrusted, if it was."""
    shipped = board_rules.is_shipped(folder)
    if isinstance(ledger, Exception):
        trust = {"verified": False, "problems": [f"the board's ledger cannot be trusted: {ledger}"]}
        trust["summary"] = summary(trust)
        return trust, []
    events, bound = ledger.events(digest), None
    if not events and shipped:
        try:
            events = board_records.load(folder / "verification.json", entry_id, None, trusted=True)
            bound = hashes  # the package's record binds the files it verified
        except board_records.RecordError as error:
            trust = {"verified": False, "problems": [f"its record cannot be trusted: {error}"]}
            trust["summary"] = summary(trust)
            return trust, []
    trust = board_records.badge(events, bound, verification.POWER, verification.GAIN)
    if not events and not shipped:
        before = [e for d in ledger.labelled(entry_id) for e in ledger.events(d)]
        if any(e.get("event") == "verification" for e in before):
            files = [e.get("files") for e in before if isinstance(e.get("files"), dict)]
            what = board_records.changed(files[-1], hashes) if files else ""
            trust["verified"] = False
            trust["problems"] = [
                "changed since it was verified"
                + (f": {what}" if what else "")
                + " (the board's record follows the content it verified)"
            ]
        elif (folder / "verification.json").is_file():
            trust["problems"] = [
                "verified by an older version of the board (its verification.json is no longer "
                f"read): run llm-marl leaderboard verify {entry_id} again"
            ]
    trust["summary"] = summary(trust)
    return trust, events


# --------------------------------------------------------------------------- one entry
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


def _chars(transcript: dict) -> int:
    return sum(len(t["observation"]) + len(t["action"]) for t in transcript["turns"])


def _scored(entry: EntryFolder, transcripts: int) -> dict:
    """The entry's scores recomputed from its episode records (streamed, in plan order; the
    scores in ``results.json`` are not read), and its first ``transcripts`` episodes per
    task (within :data:`TRANSCRIPT_CHARS`)."""
    per_task, kept = {}, {}
    team = board_rules.seats(entry.results)
    for task in entry.tasks():
        per_item: dict[str, dict] = {}
        shown, chars, group = [], 0, []
        for item, sample, record in entry.episodes(task):
            if len(shown) < transcripts and chars < TRANSCRIPT_CHARS:
                shown.append(_transcript(item, sample, record, task))
                chars += _chars(shown[-1])
            group.append(record)
            if sample == task.samples - 1:
                per_item[item.key] = item_values(task, group)
                group = []
        per_task[task.name] = (per_item, team[task.name])
        kept[task.name] = shown
    rescored = score_items(entry.suite, per_task, entry=str(entry.results.get("entry")), team=None)
    tasks = {
        name: {
            "team": block["team"],
            "metrics": block["metrics"],
            "score": block["score"],
            "played": block["items"] * block["samples"],
            "complete": True,
            "episodes": kept[name],
        }
        for name, block in rescored["tasks"].items()
    }
    played = sum(block["played"] for block in tasks.values())
    expected = sum(len(task.items) * task.samples for task in entry.suite.tasks)
    return {
        "overall": rescored["overall"],
        "complete": rescored["complete"],
        "items": {"played": played, "expected": expected},
        "tasks": tasks,
    }


def model_name(described: Any) -> str:
    """What the site calls a loaded model (a policy's ``describe()``): its id without the
    parenthesised details, and where its weights came from unless that was the package or the
    Hub: a local folder is shown as one, whatever its name looks like (a folder named
    ``Qwen2.5-72B@<sha>`` is not that Hub model), and a model whose source was not recorded
    says so ("" when there is no id)."""
    described = described if isinstance(described, dict) else {}
    model_id = str(described.get("model_id") or "")
    name = model_id.split(" (")[0]
    if not name:
        return ""
    source = described.get("source")
    if source == "local folder":
        return f"local folder {name}"
    if source in ("hub", "package", "checkpoint") or "revision" in described:
        return name
    if " (" in model_id or name.startswith("ckpt:"):  # the package's own, a trained checkpoint
        return name
    return f"{name} (where it was loaded from is not recorded)"


def _played_by(results: dict, trust: dict) -> list[dict]:
    """Each policy of the entry's seats, with the model a verification loaded for it
    (:func:`model_name`)."""
    models = (trust.get("models") or {}) if trust.get("verified") else {}
    shown = []
    for spec in board_rules.played_by(results):
        described = model_name(models.get(spec))
        shown.append({"spec": spec, **({"model_id": described} if described else {})})
    return shown


def _checked_manifest(entry: EntryFolder, trust: dict) -> tuple[dict, dict]:
    """The manifest split into what was checked and what is only claimed (module docstring)."""
    manifest = entry.results["manifest"]
    tasks = {
        task.name: {
            "env": task.env,
            "env_spec_hash": task.spec_hash(),
            "data_hash": manifest["tasks"][task.name].get("data_hash"),
            "samples": task.samples,
            "generation": task.generation_settings(),
        }
        for task in entry.tasks()
    }
    seats = {task.name: dict(manifest["tasks"][task.name]["seats"]) for task in entry.tasks()}
    verified = bool(trust.get("verified"))
    if verified:  # a regeneration with these seats reproduced a secret sample of the episodes
        for name, block in tasks.items():
            block["seats"] = seats[name]
    suite = entry.suite
    checked = {
        "suite": {"name": suite.name, "version": suite.version, "hash": suite.hash()},
        "tasks": tasks,
        "policies": (trust.get("models") or {}) if verified else {},
    }
    claimed = {key: manifest[key] for key in CLAIMED if key in manifest}
    if not verified:  # a replay checks what the actions score, not who wrote them
        claimed["seats"] = seats
        claimed["policies"] = manifest.get("policies", {})
    return checked, claimed


def _row(
    suite: Suite,
    ledger: board_ledger.Ledger | Exception,
    entry_id: str,
    folder: Path,
    transcripts: int,
) -> dict | str | None:
    """The board row of one entry; None when it belongs to another suite, ``"v<N>"`` when to
    another kept version of this one. Raises :class:`LeaderboardError` (or an ``OSError``)
    when the folder breaks a rule."""
    with open_entry(folder) as entry:
        claimed = entry.results["suite"]
        if claimed["name"] != suite.name:
            return None
        if claimed["version"] != suite.version and packaged_version(suite.name, claimed["version"]):
            return f"{suite.name}-v{claimed['version']}"
        problems = board_rules.entry_problems(entry)
        if problems:
            raise LeaderboardError("; ".join(problems))
        name, kind = board_rules.board_meta(entry, entry_id)
        scored = _scored(entry, transcripts)
        known = copies.Identity(
            suite.label,
            board_ledger.digest(entry),
            dict(entry.fingerprints),
            dict(entry.hashes),
        )
        trust, events = _trust(ledger, entry_id, folder, known.digest, known.hashes)
        checked, claims = _checked_manifest(entry, trust)
        return {
            "id": entry_id,
            "name": name,
            "kind": kind,
            "team": board_rules.seats(entry.results),
            "played_by": _played_by(entry.results, trust),
            "verified": trust["verified"],
            "verification": {k: v for k, v in trust.items() if k != "models"},
            **scored,
            "manifest": checked,
            "claimed": claims,
            "digest": known.digest,
            "_identity": known,
            "_times": [str(e.get("at")) for e in events if _TIME.fullmatch(str(e.get("at")))],
        }


# --------------------------------------------------------------------------- the board
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


def _clash(row: dict, built: list[dict], ledger: Any, on_board: set[str]) -> str | None:
    """Why ``row`` cannot stand beside the rows already on the board (None: it can): a name a
    visitor could not tell apart, the same site page names, or content that is another
    entry's, a copy of it, or of one the ledger recorded (:func:`~llm_marl_envs.leaderboard.
    rules.clash`)."""
    from llm_marl_envs.leaderboard.names import same_name
    from llm_marl_envs.leaderboard.site.html import file_id

    for other in built:
        if same_name(other["name"], row["name"]):
            return f"its name cannot be told apart from entry {other['id']!r}'s"
        if file_id(other["id"]).casefold() == file_id(row["id"]).casefold():
            return f"its site pages would be named as entry {other['id']!r}'s"
    live = {o["id"]: o["_identity"] for o in built}
    ledger = ledger if isinstance(ledger, board_ledger.Ledger) else board_ledger.Ledger()
    return copies.clash(ledger, row["_identity"], live, on_board, row["id"])


def build_board(
    suite_name: str = "lite",
    board: str | Path | None = board_rules.DEFAULT_BOARD,
    *,
    shipped: bool = True,
    transcripts: int = TRANSCRIPT_EPISODES,
) -> dict[str, Any]:
    """The site's data (see :func:`llm_marl_envs.leaderboard.site.pages.build_site`) for the entries of
    one suite: shipped and added ones that meet the rules, scored again from their records."""
    from llm_marl_envs.leaderboard.site.pages import rank_order

    suite = load_suite(suite_name)
    try:
        ledger: board_ledger.Ledger | Exception = board_rules.read_ledger(
            Path(board) if board else None
        )
    except board_ledger.LedgerError as error:
        ledger = error
    rows, elsewhere = [], {}
    for entry_id, folder in board_rules.entries(board, shipped).items():
        try:
            row = _row(suite, ledger, entry_id, folder, transcripts)
        except (LeaderboardError, OSError, ValueError) as error:
            warnings.warn(f"entry {entry_id} ({folder}) left out: {error}", stacklevel=2)
            continue
        if isinstance(row, str):
            elsewhere[row] = elsewhere.get(row, 0) + 1
        elif row is not None:
            rows.append((row, folder))
    order = ledger if isinstance(ledger, board_ledger.Ledger) else board_ledger.Ledger()
    rows.sort(key=lambda r: board_rules.standing(order, r[0]["id"], r[1], r[0]["digest"]))
    on_board = {row["digest"] for row, _ in rows}
    built = []
    for row, folder in rows:
        clash = _clash(row, built, ledger, on_board)
        if clash:
            warnings.warn(f"entry {row['id']} ({folder}) left out: {clash}", stacklevel=2)
            continue
        built.append(row)
    times = [t for row in built for t in row.pop("_times")]
    for row in built:
        row.pop("_identity")
    tasks = [_task_display(t) for t in suite.tasks]
    rank_entries(built, tasks)
    crossplay = board_rules.shipped_crossplay(suite) if shipped else {}
    return {
        "title": f"llm_marl_envs leaderboard: suite {suite.label}",
        "suite": {"name": suite.name, "version": suite.version, "hash": suite.hash()},
        "generated": max(times, default=""),
        # the board's ledger as this page saw it: a later page shows a longer one
        "ledger": order.shown() if board else None,
        "rank_rule": RANK_RULE,
        "verification_rule": VERIFICATION_RULE,
        "tasks": tasks,
        "entries": rank_order(built, lambda e: e["overall"]),
        "crossplay": _crossplay_display(suite, crossplay, built),
        # entries measured on another kept version of the suite: label -> how many
        "other_versions": dict(sorted(elsewhere.items())),
    }


def _model_names(built: list[dict]) -> dict[str, str]:
    """Policy spec -> display name: a model's id as a verification loaded it (without the
    parenthesised details), or the baselines' names."""
    names = dict(BASELINE_NAMES)
    for entry in built:
        for spec, described in (entry["manifest"].get("policies") or {}).items():
            name = model_name(described)
            if name:
                names.setdefault(spec, name)
    return names


def _crossplay_display(suite: Suite, crossplay: dict, built: list[dict]) -> dict:
    """The cross-play blocks with the models' display names and each side's seats: seats
    cycle (:class:`~llm_marl_envs.evaluation.evaluate.Team`), so the row model holds the
    even-numbered seats and the column model the odd ones (a 4-player Donor game: 0 and 2,
    1 and 3)."""
    from contextlib import closing

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
