"""The leaderboard: entries checked on the way in, verified by replay, built into a site.

A **board** is a folder (default ``./leaderboard``) of entries, one folder each:
``entries/<id>/results.json`` (an ``llm-marl eval`` result), ``entries/<id>/episodes/`` (its
per-episode records, gzipped) and, once verified, ``entries/<id>/verification.json``
(``verifications/<id>.json`` for a shipped entry; ``verification.key`` seals them). The
package ships entries of its own (``llm_marl_envs/evaluation/entries/``: random, scripted, the tiny
model and the embedded SmolLM2 on the ``lite`` suite) so a site can be built on day one.

* :func:`add_entry` refuses a result whose suite hash, env spec hashes or data hashes do not
  match this package's suite (the message names which), then replays every episode's
  recorded actions through this package's environments
  (:mod:`llm_marl_envs.evaluation.replay`) and scores the entry from the replay alone: a
  record or a score that differs refuses it, naming the task, item and field. What a
  submission may hold (complete tasks, no links, size limits, clean names) is checked by
  :mod:`llm_marl_envs.evaluation.submission`; shipped ids are protected.
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
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable
from contextlib import closing
from importlib import resources
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation import verification
from llm_marl_envs.evaluation.evaluate import (
    TaskRun,
    _episode_line,
    load_runs,
    slug,
)
from llm_marl_envs.evaluation.files import folder_flock, folder_lock, fsync_folder, write_atomic
from llm_marl_envs.evaluation.metrics import item_value, metric_info
from llm_marl_envs.evaluation.replay import episode_difference, first_difference, replay_task
from llm_marl_envs.evaluation.results import score
from llm_marl_envs.evaluation.stats import Interval, tie_ranks
from llm_marl_envs.evaluation.submission import (
    LeaderboardError,
    display_name,
    name_key,
    read_episodes,
    read_results,
)
from llm_marl_envs.evaluation.suite import (
    Suite,
    available_suites,
    data_hash,
    load_suite,
    packaged_version,
)
from llm_marl_envs.rollout.records import encode_record
from llm_marl_envs.policies import GenerationConfig
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

#: What a "verified" badge means, as the site states it.
VERIFICATION_RULE = (
    "verified: the entry's models were loaded and their weights hash to what its manifest "
    "claims, and a secret sample of its episodes, drawn from every task, was regenerated "
    "with the same actions and scores; the sample is sized so that if "
    f"{verification.FORGED_FRACTION:.0%} of the episodes were forged it would catch one with "
    f"probability >= {verification.POWER} (hypergeometric, however the forgeries are spread "
    "over the tasks); a file changed after verification loses the badge"
)


def shipped_entries() -> Path:
    """The folder of the entries that ship with the package."""
    return Path(str(resources.files("llm_marl_envs.evaluation") / "entries"))


def entries(board: str | Path | None = DEFAULT_BOARD, shipped: bool = True) -> dict[str, Path]:
    """Entry id -> folder: the shipped ones, then ``board``'s. A board entry never replaces or
    shadows a shipped one: one whose id is a shipped entry's (in any case) is left out."""
    found = _entry_folders(shipped_entries()) if shipped else {}
    protected = {entry_id.casefold() for entry_id in _entry_folders(shipped_entries())}
    added = Path(board) / "entries" if board else None
    if added is not None and added.resolve() == shipped_entries().resolve():
        added = None  # the package's own board (scripts/ship_leaderboard_entries.py)
    for entry_id, folder in _entry_folders(added).items():
        if entry_id.casefold() in protected:
            warnings.warn(f"{folder} left out: {entry_id!r} is a shipped entry's id", stacklevel=2)
        else:
            found[entry_id] = folder
    return found


#: An older, kept version's label among the packaged suites (``lite-v1``).
_VERSIONED = re.compile(r".+-v[0-9]+")

#: An entry folder's name: an id as :func:`~llm_marl_envs.evaluation.evaluate.slug` makes
#: it, not hidden (``.tmp-*``: an entry being written) and not ``*.tmp`` (what a killed
#: ``add`` of an older version left).
_ENTRY_NAME = re.compile(r"(?!.*\.tmp$)[A-Za-z0-9_+-][A-Za-z0-9_.+-]*")


def _entry_folders(folder: Path | None) -> dict[str, Path]:
    """The entries in ``folder``: sub-folders with a valid id and a ``results.json`` that holds
    a JSON object. Anything else (an entry being written under its temporary name, one a
    killed process left, a damaged ``results.json``: with a warning naming it) is no entry."""
    if folder is None or not folder.is_dir():
        return {}
    found = {}
    for e in sorted(folder.iterdir()):
        if not _ENTRY_NAME.fullmatch(e.name) or not (e / "results.json").is_file():
            continue
        try:
            _read(e)
        except LeaderboardError as error:
            warnings.warn(f"{e} left out: {error}", stacklevel=3)
            continue
        found[e.name] = e
    return found


def _read(folder: Path) -> dict:
    path = folder / "results.json"
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise LeaderboardError(f"{path} is not JSON ({error})") from None
    if not isinstance(results, dict):
        raise LeaderboardError(f"{path} is not an llm-marl eval result")
    return results


# --------------------------------------------------------------------------- add
def check_result(results: dict, folder: Path) -> tuple[Suite, list[str]]:
    """The suite of ``results`` after checking its hashes against this package's suite;
    returns it and the problems found (empty: the result may join). Every task with data rows
    must record the hash of the rows it read, and it must be this package's."""
    try:
        meta, manifest = results["suite"], results["manifest"]["tasks"]
        name, version, suite_hash = meta["name"], meta["version"], str(meta["hash"])
        named = list(results["tasks"])
        if not isinstance(results["tasks"], dict) or not isinstance(manifest, dict):
            raise TypeError("tasks and manifest.tasks are objects")
    except (KeyError, TypeError) as error:
        raise LeaderboardError(f"{folder}: not an llm-marl eval result ({error})") from None
    names = [n for n in available_suites() if not _VERSIONED.fullmatch(n)]
    if not isinstance(name, str) or name not in names:
        raise LeaderboardError(
            f"{folder}: suite {name!r} is not one of this package's ({', '.join(names)})"
        )
    # the version the result claims (the newest, or an older one the package keeps playable)
    suite = packaged_version(name, version) or load_suite(name)
    if suite.version != version or suite.hash() != suite_hash:
        problem = (
            f"suite {name}-v{version} hash {suite_hash[:19]} is not this package's "
            f"{suite.label} ({suite.hash()[:19]}); evaluate again with this version"
        )
        return suite, [problem]
    problems = []
    for task_name in named:
        if task_name not in {t.name for t in suite.tasks}:
            problems.append(f"task {task_name!r} is not a task of {suite.label}")
            continue
        task = suite.task(task_name)
        given = manifest.get(task_name)
        given = given if isinstance(given, dict) else {}
        if given.get("env_spec_hash") != task.spec_hash():
            problems.append(
                f"task {task_name}: env spec hash {str(given.get('env_spec_hash'))[:19]} differs "
                f"from {task.env}'s here ({task.spec_hash()[:19]}): another env version, "
                "arguments or generation settings"
            )
        problems += _data_problems(task, given.get("data_hash"))
    return suite, problems


def _data_problems(task, given: Any) -> list[str]:
    """Why ``given`` is not the hash of the data rows ``task`` plays here (none: it is)."""
    try:
        expected = data_hash(task)
    except Exception as error:  # a loader's own error (no network, no local copy): one line
        return [
            f"task {task.name}: its data cannot be read here to check the data hash "
            f"({type(error).__name__}: {str(error)[:80]})"
        ]
    if expected is None or given == expected:
        return []
    if given is None:
        return [
            f"task {task.name}: no data hash; a task with data rows records the hash of the "
            "rows it read (llm-marl eval writes it)"
        ]
    return [f"task {task.name}: the data rows differ from the ones this package reads"]


def add_entry(
    result_dir: str | Path,
    board: str | Path = DEFAULT_BOARD,
    *,
    entry_id: str | None = None,
    name: str | None = None,
    kind: str = "model",
) -> Path:
    """Check the evaluation in ``result_dir``, replay every episode's actions, and copy it into
    ``board`` as an entry scored from the replay; returns the entry's folder. Raises
    :class:`LeaderboardError` naming each mismatch (task, item and field)."""
    folder = Path(result_dir)
    results = read_results(folder)
    suite, problems = check_result(results, folder)
    if problems:
        raise LeaderboardError(f"{folder} cannot join the board: " + "; ".join(problems))
    name = display_name(name or results.get("entry") or "")
    board = Path(board)
    requested = entry_id or name
    entry_id = _new_id(requested, name, board)  # refused early, before the replay
    episodes = read_episodes(folder, suite)
    problems = plan_problems(suite, results, episodes)
    if problems:
        raise LeaderboardError(f"{folder} cannot join the board: " + "; ".join(problems))
    rescored, problems = replayed_scores(suite, results, episodes)
    if problems:
        raise LeaderboardError(f"{folder} cannot join the board: " + "; ".join(problems))
    entry = {key: results.get(key) for key in ("schema", "entry", "team", "suite", "manifest")}
    entry.update({key: rescored[key] for key in ("complete", "overall", "tasks")})
    entry["board"] = {"id": entry_id, "name": name, "kind": kind}
    (board / "entries").mkdir(parents=True, exist_ok=True)
    with _board_lock(board):
        _new_id(requested, name, board)  # again: another add may have taken it meanwhile
        return _write_entry(board / "entries" / entry_id, suite, entry, episodes)


#: Seconds an ``add`` or ``verify`` waits for another one writing to the same board.
BOARD_WAIT = 120.0


def _board_lock(board: Path):
    """The board's lock (:func:`~llm_marl_envs.evaluation.files.folder_lock`): one process
    at a time publishes an entry or a verification (or makes the board's key)."""
    board.mkdir(parents=True, exist_ok=True)
    if board.resolve() == shipped_entries().parent.resolve():
        return folder_flock(board)  # the package's own board: no lock file in the package
    return folder_lock(
        board,
        ".board.lock",
        "another llm-marl leaderboard add or verify",
        "try again when it is done",
        wait=BOARD_WAIT,
    )


def plan_problems(suite: Suite, results: dict, episodes: dict) -> list[str]:
    """Where a result's tasks differ from the suite's frozen plan: a task that
    ``results.json`` lists without an episodes file or the reverse, or whose items x samples
    are not the suite's (the episodes files themselves are checked by
    :func:`~llm_marl_envs.evaluation.submission.read_episodes`)."""
    problems = []
    listed = results.get("tasks") if isinstance(results.get("tasks"), dict) else {}
    for task in suite.tasks:
        block = listed.get(task.name)
        if block is None and task.name in episodes:
            problems.append(f"task {task.name} has episodes but results.json does not list it")
        elif block is not None and task.name not in episodes:
            problems.append(
                f"task {task.name}: listed in results.json but it has no episodes file "
                f"(episodes/{task.name}.jsonl)"
            )
        elif block is not None:
            block = block if isinstance(block, dict) else {}
            claimed = (block.get("items"), block.get("samples"))
            if claimed != (len(task.items), task.samples):
                problems.append(
                    f"task {task.name}: results.json scores {claimed[0]!r} items x "
                    f"{claimed[1]!r} samples; the suite's plan is {len(task.items)} x "
                    f"{task.samples}"
                )
    return problems


def replayed_scores(suite: Suite, results: dict, episodes: dict) -> tuple[dict, list[str]]:
    """The scores of ``episodes`` (task -> (item, sample, record)) recomputed from their
    replay (:mod:`llm_marl_envs.evaluation.replay`), and where the submission differs from it:
    an episode (task, item, sample and field) or a score of ``results``."""
    runs, problems = _replayed_runs(suite, results, episodes)
    if problems:
        shown = problems[:3] + ([f"and {len(problems) - 3} more"] if len(problems) > 3 else [])
        return {}, [f"{len(problems)} episode(s) do not replay: " + "; ".join(shown)]
    rescored = score(suite, runs, entry=str(results.get("entry")), team=None)
    for name in sorted(set(results["tasks"]) | set(rescored["tasks"])):
        found = first_difference(
            results["tasks"].get(name), rescored["tasks"].get(name), f"tasks.{name}"
        )
        if found:
            problems.append(f"task {name}: the scores do not follow from its episodes ({found})")
    for key in ("overall", "complete"):
        found = first_difference(results.get(key), rescored[key], key)
        if found:
            problems.append(f"{key}: the score does not follow from the episodes ({found})")
    return rescored, problems


def _replayed_runs(suite: Suite, results: dict, episodes: dict) -> tuple[list[TaskRun], list]:
    """Each present task's replayed episodes as a :class:`TaskRun` (seats from the manifest),
    and the episodes whose replay differs from their record."""
    runs, problems = [], []
    for task in (t for t in suite.tasks if t.name in episodes):
        played = []
        for (item, sample, record), again in zip(
            episodes[task.name], replay_task(task, episodes[task.name]), strict=True
        ):
            found = episode_difference(record, again)
            if found:
                problems.append(f"task {task.name}, item {item.key} sample {sample}: {found}")
            played.append((item, sample, again))
        seats = (results["manifest"]["tasks"].get(task.name) or {}).get("seats") or {}
        runs.append(TaskRun(task, played, 0.0, None, seats))
    return runs, problems


def _new_id(requested: str, name: str, board: Path) -> str:
    """A free entry id from ``requested``, after checking that ``name`` is free too."""
    entry_id = slug(requested, "entry")
    if entry_id.startswith("."):
        raise LeaderboardError(f"an entry id cannot start with '.' ({entry_id!r}); choose --id")
    if entry_id.endswith(".tmp"):
        raise LeaderboardError(f"an entry id cannot end with '.tmp' ({entry_id!r}); choose --id")
    if entry_id.casefold() in {e.casefold() for e in entries(None)}:
        raise LeaderboardError(
            f"{entry_id!r} is the id of an entry shipped with the package; choose another --id"
        )
    taken = {e.casefold() for e in _entry_folders(board / "entries")}
    if entry_id.casefold() in taken or (board / "entries" / entry_id).exists():
        raise LeaderboardError(f"the board already has an entry {entry_id!r}; choose --id")
    for other, folder in entries(board).items():
        results = _read(folder)
        shown = (results.get("board") or {}).get("name") or results.get("entry")
        if name_key(str(shown)) == name_key(name):
            raise LeaderboardError(
                f"the name {name!r} is entry {other!r}'s; give the entry another --name"
            )
    return entry_id


def _write_entry(target: Path, suite: Suite, entry: dict, episodes: dict) -> Path:
    """Write the entry's results and its episodes (re-encoded from the checked records,
    gzipped) to ``target``, whole or not at all: into a hidden folder of a name unique to this
    process (``.tmp-<id>-<pid>-<random>``, never listed by :func:`entries`), every file
    ``fsync``-ed, then renamed to ``target`` in one step. Called with the board locked, so a
    hidden folder found here is one a killed ``add`` left: it is removed."""
    parent = target.parent
    for stale in parent.glob(".tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name[:40]}-{os.getpid()}-", dir=parent))
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide the entry from other readers
    try:
        (tmp / "episodes").mkdir()
        for task_name, played in episodes.items():
            task = suite.task(task_name)
            lines = [
                _episode_line(
                    task, item, sample, encode_record(record).decode("utf-8").rstrip("\n")
                )
                for item, sample, record in played
            ]
            packed = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0)
            _write_synced(tmp / "episodes" / f"{task_name}.jsonl.gz", packed)
            given = entry["manifest"]["tasks"][task_name]
            meta = {"wall_seconds": given.get("wall_seconds"), "data_hash": data_hash(task)}
            _write_synced(tmp / "episodes" / f"{task_name}.meta.json", json.dumps(meta) + "\n")
        _write_synced(tmp / "results.json", json.dumps(entry, indent=1) + "\n")
        fsync_folder(tmp / "episodes")
        fsync_folder(tmp)
        os.rename(tmp, target)  # the board is locked and the id free: target does not exist
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_folder(parent)
    return target


def _write_synced(path: Path, data: bytes | str) -> None:
    with open(path, "wb") as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        handle.flush()
        os.fsync(handle.fileno())


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
    generation: GenerationConfig | None = None,
) -> dict:
    """Verify an entry of a deterministic team (:func:`~llm_marl_envs.evaluation.verification.
    verify_folder`: its models loaded and checked against the manifest, a secret stratified
    sample of ``sample`` episodes regenerated, default the size of the stated power, with the
    models where ``generation`` says: device, dtype; default ``"auto"``, and an entry made on
    the CPU in float32 regenerates exactly there); write the
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
    if not problems:
        problems = plan_problems(suite, results, read_episodes(folder, suite))
    if problems:
        raise LeaderboardError(f"{entry}: " + "; ".join(problems))
    why = _deterministic(results)
    if why:
        raise LeaderboardError(f"{entry} cannot be verified by replay: {why}")
    result = verification.verify_folder(
        folder, suite, results, sample=sample, secret=secret, write=write, generation=generation
    )
    path = verification_path(board, entry, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _board_lock(Path(board)):  # one key per board, one writer per verification
        sealed = verification.seal(result, verification.board_key(Path(board), create=True))
        write_atomic(path, json.dumps(sealed, indent=1) + "\n")
    return sealed


def verification_path(board: str | Path | None, entry_id: str, folder: Path) -> Path:
    """Where ``board`` keeps an entry's verification: in the entry's folder, or
    ``<board>/verifications/<id>.json`` for a shipped entry (the package is not written)."""
    if board is not None and folder.parent == shipped_entries():
        return Path(board) / "verifications" / f"{entry_id}.json"
    return folder / "verification.json"


def _trust(board: str | Path | None, entry_id: str, folder: Path) -> dict:
    """The entry's verification as ``build`` shows it (:func:`verification.check`: the board's,
    sealed with its key; for a shipped entry the package's own unless the board verified it
    too), with the badge's ``summary``."""
    path = verification_path(board, entry_id, folder)
    if folder.parent == shipped_entries() and (board is None or not path.is_file()):
        trust = verification.check(folder / "verification.json", folder, None, shipped=True)
    else:
        trust = verification.check(path, folder, verification.board_key(Path(board)))
    trust["summary"] = verification.summary(trust)
    return trust


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
    overall stored in ``results.json`` are not read), whether it played every (item, sample)
    of the suite's plan exactly once (an entry that did not is shown unranked, marked
    incomplete), and its first ``transcripts`` episodes per task."""
    assignments = {name: block["team"] for name, block in results["tasks"].items()}
    runs = load_runs(suite, folder, assignments)
    rescored = score(suite, runs, entry=results["entry"], team=None, partial=True)
    tasks = {}
    for run in runs:
        block = rescored["tasks"][run.task.name]
        played = [(item.index, sample) for item, sample, _ in run.episodes]
        tasks[run.task.name] = {
            "team": block["team"],
            "metrics": block["metrics"],
            "score": block["score"],
            "played": len(run.episodes),
            "complete": run.task.plan_difference(played) is None,
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
    rows, elsewhere = [], {}
    for entry_id, folder in entries(board, shipped).items():
        results = _read(folder)
        claimed = results.get("suite")
        if not isinstance(claimed, dict) or claimed.get("name") != suite.name:
            continue
        if claimed.get("version") != suite.version and packaged_version(
            suite.name, claimed.get("version")
        ):
            label = f"{suite.name}-v{claimed.get('version')}"
            elsewhere[label] = elsewhere.get(label, 0) + 1
            continue  # an entry of another kept version: on that version's board
        _, problems = check_result(results, folder)
        if problems:  # measured on another version of the suite: not comparable
            warnings.warn(f"entry {entry_id} left out: {'; '.join(problems)}", stacklevel=2)
            continue
        rows.append((entry_id, folder, results, _trust(board, entry_id, folder)))
    tasks = [_task_display(t) for t in suite.tasks]
    built = []
    for entry_id, folder, results, trust in rows:
        meta = results.get("board", {})
        try:
            scored = _scored_entry(suite, folder, results, transcripts)
        except (ValueError, KeyError, TypeError, OSError) as error:  # a damaged entry folder
            warnings.warn(f"entry {entry_id} left out: {error}", stacklevel=2)
            continue
        built.append(
            {
                "id": entry_id,
                "name": meta.get("name", results["entry"]),
                "team": results["team"],
                "kind": meta.get("kind", "model"),
                "verified": trust["verified"],
                "verification": {k: v for k, v in trust.items() if k != "models"},
                **scored,
                "manifest": _shown_manifest(results.get("manifest", {}), trust),
            }
        )
    _rank(built, tasks)
    crossplay = _shipped_crossplay(suite) if shipped else {}
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
        "verification_rule": VERIFICATION_RULE,
        "tasks": tasks,
        "entries": rank_order(built, lambda e: e["overall"]),
        "crossplay": _crossplay_display(suite, crossplay, built),
        # entries measured on another kept version of the suite: label -> how many
        "other_versions": dict(sorted(elsewhere.items())),
    }


def _shown_manifest(manifest: dict, trust: dict) -> dict:
    """The manifest as the site shows it: its models are the ones verification loaded (their
    ids and weights hashes from the weights); an unverified entry shows none, its manifest's
    claims kept apart as ``claimed_policies``."""
    if trust["verified"]:
        return {**manifest, "policies": trust["models"]}
    return {**manifest, "policies": {}, "claimed_policies": manifest.get("policies", {})}


def _shipped_crossplay(suite: Suite) -> dict:
    """The cross-play that ships with the package. A cross-play file in a board folder is never
    read: cross-play cannot be added to a board (``add`` refuses it), so nothing unchecked
    overrides the shipped matrix."""
    path = shipped_entries() / f"crossplay-{suite.label}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    # a newer suite version without its own: the newest older version's cross-play, for the
    # tasks that version plays exactly as this one (the same games, so the same table)
    for version in range(suite.version - 1, 0, -1):
        older = packaged_version(suite.name, version)
        path = shipped_entries() / f"crossplay-{suite.name}-v{version}.json"
        if older is None or not path.is_file():
            continue
        table = json.loads(path.read_text(encoding="utf-8"))
        return {
            name: {**block, "measured_on": older.label}
            for name, block in table.items()
            if same_play(older, suite, name)
        }
    return {}


def same_play(one: Suite, other: Suite, task_name: str) -> bool:
    """Whether two suites play and score task ``task_name`` identically: the same env spec
    (registry entry, version, arguments, generation settings), the same items (seeds, rows,
    reset options) and samples, the same primary metric and scale, and the same fully observed
    variant for the solo condition."""
    names = {t.name for t in one.tasks} & {t.name for t in other.tasks}
    if task_name not in names:
        return False
    a, b = one.task(task_name), other.task(task_name)

    def played(task) -> tuple:
        solo = task.solo()
        return (
            task.spec_hash(),
            task.samples,
            task.primary,
            task.max_reward,
            [(i.index, i.key, i.seed, json.dumps(i.options, sort_keys=True)) for i in task.items],
            None if solo is None else solo.spec_hash(),
        )

    return played(a) == played(b)


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
    write: Callable[[str], None] | None = None,
) -> Path:
    """Write the static site of ``suite_name``'s entries to ``out``; returns its index.html.
    ``write`` gets a line naming the entries left for other versions' boards, if any."""
    from llm_marl_envs.evaluation.site import build_site

    data = build_board(suite_name, board, shipped=shipped)
    others = data.get("other_versions") or {}
    where = ", ".join(f"{n} of {label} (--suite {label})" for label, n in others.items())
    if not data["entries"]:
        label = f"{data['suite']['name']}-v{data['suite']['version']}"
        raise LeaderboardError(
            f"no entries for suite {label}: add one with llm-marl leaderboard add DIR"
            + (f"; entries of other versions are on their own boards: {where}" if where else "")
        )
    index = build_site(data, out)
    if where and write is not None:
        write(f"entries of other versions of the suite are on their own boards: {where}")
    return index
