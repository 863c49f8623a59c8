"""The rules every leaderboard command applies to an entry folder, and the board's listing.

``leaderboard add`` applies these rules to a submission; ``verify`` and ``build`` apply them
again to whatever is in the board's folder, so a folder placed there by hand (the
pull-request route) meets the same rules as one that came through ``add``:

* **the suite** (one of this package's, name and version, with its hash), each task's env spec
  hash, data hash and generation settings (:func:`check_result`), and the tasks and seats
  (results.json, the manifest and the episodes files list the same tasks; each task's seats
  name a policy for each of its agents): :func:`entry_problems`;
* **the entry's id, name and kind** (:func:`board_meta`): the ``board`` block an entry's
  ``results.json`` holds names the folder's own id (a byte copy under another id is refused),
  a name a visitor can read (:mod:`~llm_marl_envs.leaderboard.names`), and a kind its seats
  allow (``model`` and ``trained`` need a model in some seat: :func:`kind_problem`);
* **no clash** with an entry before it in the ledger's order (:func:`standing`): a name a
  visitor could not tell apart from another entry's (:func:`name_taken`), the same content
  (its :class:`Identity`'s digest), or, for at least :data:`COPY_SHARE` of its episodes, the
  same actions for the same item as an entry on the board or one the ledger recorded
  (:func:`clash`, :func:`copy_of`: :mod:`~llm_marl_envs.leaderboard.copies`).

The team an entry shows is the seats its manifest lists (:func:`seats`, :func:`played_by`):
what the replay used and a verification regenerated with, never ``results.json``'s own
``team`` line.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from contextlib import closing
from importlib import resources
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.run_folder import RESULTS_FILE
from llm_marl_envs.evaluation.suite import Suite, Task, data_hash, packaged_version
from llm_marl_envs.leaderboard import ledger as board_ledger, records as board_records

# An entry's identity by its content and the rule against copies live in copies.py; their
# names stay importable from here, where they were.
from llm_marl_envs.leaderboard.copies import (
    COPY_SHARE as COPY_SHARE,
    Identity as Identity,
    clash as clash,
    copy_of as copy_of,
    fingerprints as fingerprints,
    identity as identity,
    prints as prints,
)
from llm_marl_envs.leaderboard.entry import (
    EntryFolder,
    LeaderboardError,
    claimed_suite,
    display_name,
    open_entry,
    same_name,
)
from llm_marl_envs.leaderboard.schema import KINDS
from llm_marl_envs.registry import make

__all__ = [
    "DEFAULT_BOARD",
    "board_meta",
    "check_result",
    "clash",
    "copy_of",
    "entries",
    "entry_problems",
    "fingerprints",
    "identity",
    "kind_problem",
    "name_taken",
    "played_by",
    "same_play",
    "seats",
    "shipped_entries",
]

DEFAULT_BOARD = Path("leaderboard")

#: Policy specs that load no model (a ``model`` or ``trained`` entry needs a seat that does).
NOT_MODELS = ("scripted", "random", "human")


def shipped_entries() -> Path:
    """The folder of the entries that ship with the package."""
    return Path(str(resources.files("llm_marl_envs.leaderboard") / "entries"))


# --------------------------------------------------------------------------- listing
#: An entry folder's name: an id as :func:`~llm_marl_envs.evaluation.run_folder.slug` makes
#: it, not hidden (``.tmp-*``: an entry being written) and not ``*.tmp``.
_ENTRY_NAME = re.compile(r"(?!.*\.tmp$)[A-Za-z0-9_+-][A-Za-z0-9_.+-]*")


def entries(board: str | Path | None = DEFAULT_BOARD, shipped: bool = True) -> dict[str, Path]:
    """Entry id -> folder: the shipped ones, then ``board``'s (folders with an id's name and a
    ``results.json``; what is in them is checked by whoever reads them). A board entry never
    replaces or shadows a shipped one: one whose id is a shipped entry's (in any case) is left
    out, with a warning."""
    found = entry_folders(shipped_entries()) if shipped else {}
    protected = {entry_id.casefold() for entry_id in entry_folders(shipped_entries())}
    added = Path(board) / "entries" if board else None
    if added is not None and added.resolve() == shipped_entries().resolve():
        added = None  # the package's own board (scripts/ship_leaderboard_entries.py)
    for entry_id, folder in entry_folders(added).items():
        if entry_id.casefold() in protected:
            warnings.warn(f"{folder} left out: {entry_id!r} is a shipped entry's id", stacklevel=2)
        else:
            found[entry_id] = folder
    return found


def entry_folders(folder: Path | None) -> dict[str, Path]:
    """Entry id -> folder of the entries in ``folder`` (an ``entries/`` folder; none when it is
    missing): the sub-folders with an id's name and a ``results.json``, by name."""
    if folder is None or not folder.is_dir():
        return {}
    return {
        e.name: e
        for e in sorted(folder.iterdir())
        if _ENTRY_NAME.fullmatch(e.name) and (e / RESULTS_FILE).is_file()
    }


def is_shipped(folder: Path) -> bool:
    """Whether ``folder`` is an entry that ships with the package."""
    return folder.parent == shipped_entries()


# --------------------------------------------------------------------------- the rules
def check_result(results: dict, folder: Path) -> tuple[Suite, list[str]]:
    """The suite ``results`` claims (one of this package's, name and version) and why it
    cannot join that suite's board: a suite hash, an env spec hash, a data hash or generation
    settings that are not this package's (empty: it may)."""
    suite, problem = claimed_suite(results, folder)
    if problem:
        return suite, [problem]
    problems = []
    manifest = results["manifest"]["tasks"]
    for name in results["tasks"]:
        if name not in {t.name for t in suite.tasks}:
            problems.append(f"task {name!r} is not a task of {suite.label}")
            continue
        task, given = suite.task(name), manifest.get(name) or {}
        if given.get("env_spec_hash") != task.spec_hash():
            problems.append(
                f"task {name}: env spec hash {str(given.get('env_spec_hash'))[:19]} differs "
                f"from {task.env}'s here ({task.spec_hash()[:19]}): another env version, "
                "arguments or generation settings"
            )
        elif given.get("generation") != task.generation_settings():
            problems.append(
                f"task {name}: the manifest's generation settings are not the suite's "
                f"({task.generation_settings()})"
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


def _seat_problems(entry: EntryFolder) -> list[str]:
    """Tasks listed in results.json, in the manifest and by episodes files must agree, and
    each task's seats must name a policy for each of its agents."""
    results, problems = entry.results, []
    listed, manifest = set(results["tasks"]), set(results["manifest"]["tasks"])
    for task in entry.suite.tasks:
        name = task.name
        if (name in listed) != (name in entry.files):
            problems.append(
                f"task {name}: listed in results.json but it has no episodes file "
                f"(episodes/{name}.jsonl)"
                if name in listed
                else f"task {name} has episodes but results.json does not list it"
            )
        elif name in listed and name not in manifest:
            problems.append(f"task {name}: the manifest does not list it")
        elif name in listed:
            block = results["tasks"][name]
            claimed = (block.get("items"), block.get("samples"))
            if claimed != (len(task.items), task.samples):
                problems.append(
                    f"task {name}: results.json scores {claimed[0]!r} items x {claimed[1]!r} "
                    f"samples; the suite's plan is {len(task.items)} x {task.samples}"
                )
            seats = results["manifest"]["tasks"][name]["seats"]
            agents = _agents(task)
            if set(seats) != set(agents):
                problems.append(
                    f"task {name}: the manifest's seats ({', '.join(sorted(seats))}) are not "
                    f"the task's agents ({', '.join(agents)})"
                )
    if manifest - {t.name for t in entry.suite.tasks}:
        problems.append(f"the manifest lists tasks {sorted(manifest - listed)} it did not play")
    return problems


def _agents(task: Task) -> list[str]:
    with closing(make(task.env, **task.kwargs)) as env:
        return list(env.possible_agents)


def seats(results: dict) -> dict[str, dict[str, str]]:
    """Each task's seats (agent -> policy spec) as the manifest lists them: the team that a
    replay of the records and a verification's regeneration check."""
    return {name: dict(block["seats"]) for name, block in results["manifest"]["tasks"].items()}


def played_by(results: dict) -> list[str]:
    """The distinct policy specs of an entry's seats, in order of first appearance."""
    specs: list[str] = []
    for task_seats in seats(results).values():
        for spec in task_seats.values():
            if spec not in specs:
                specs.append(spec)
    return specs


def plays_a_model(results: dict) -> bool:
    """Whether some seat of the entry loads a model (a policy spec not in :data:`NOT_MODELS`)."""
    return any(spec not in NOT_MODELS for spec in played_by(results))


def kind_problem(kind: str, results: dict) -> str | None:
    """Why an entry of these seats cannot be of ``kind`` (None: it can): a ``model`` or
    ``trained`` entry has a model in some seat."""
    if kind not in KINDS:
        return f"kind {kind!r} is not one of {', '.join(KINDS)}"
    if kind in ("model", "trained") and not plays_a_model(results):
        return (
            f"kind {kind} needs a model in some seat; this team is "
            f"{', '.join(played_by(results))} (give --kind baseline)"
        )
    return None


def board_meta(entry: EntryFolder, entry_id: str) -> tuple[str, str]:
    """The entry's display name and kind, from the ``board`` block ``add`` writes (or, for an
    eval folder placed on a board by hand, its name and the kind its seats imply), checked as
    ``add`` checks them: a clean, visible name and a kind its seats allow."""
    results, folder = entry.results, entry.path
    block = results.get("board")
    if block is None:
        name = display_name(results.get("entry") or entry_id)
        return name, "model" if plays_a_model(results) else "baseline"
    if block["id"] != entry_id:
        raise LeaderboardError(
            f"{folder}: its results.json is entry {block['id'][:80]!r}, not {entry_id!r} "
            "(a copy of another entry); add it with llm-marl leaderboard add"
        )
    name = display_name(block["name"])
    if name != block["name"]:
        raise LeaderboardError(
            f"{folder}: its name {block['name'][:80]!r} holds characters a name cannot hold "
            "(control, format or invisible ones)"
        )
    problem = kind_problem(block["kind"], results)
    if problem:
        raise LeaderboardError(f"{folder}: {problem}")
    return name, block["kind"]


def entry_problems(entry: EntryFolder) -> list[str]:
    """Every rule an entry's folder breaks (empty: none), as ``add``, ``verify`` and ``build``
    apply them: the suite, hashes and generation settings (:func:`check_result`) and the
    tasks and seats."""
    _, problems = check_result(entry.results, entry.path)
    if entry.suite_problem:
        return [entry.suite_problem]
    return problems + _seat_problems(entry)


# --------------------------------------------------------------------------- names, order
def _shown_name(folder: Path, entry_id: str) -> str | None:
    """The name an entry shows (None: a folder that cannot be read)."""
    try:
        with open_entry(folder) as entry:
            return board_meta(entry, entry_id)[0]
    except (LeaderboardError, OSError):
        return None


def name_taken(name: str, others: Mapping[str, Path]) -> str | None:
    """The id of an entry among ``others`` whose name a visitor could not tell from ``name``
    (the same confusable skeleton: :func:`~llm_marl_envs.leaderboard.names.same_name`)."""
    for other, folder in others.items():
        shown = _shown_name(folder, other)
        if shown is not None and same_name(shown, name):
            return other
    return None


def read_ledger(board: Path | None) -> board_ledger.Ledger:
    """The board's ledger (:func:`~llm_marl_envs.leaderboard.ledger.read`; empty for no
    board), or a :class:`~llm_marl_envs.leaderboard.ledger.LedgerError` saying why it is not
    the board's."""
    if board is None:
        return board_ledger.Ledger()
    return board_ledger.read(board, board_records.board_key(Path(board)))


def standing(ledger: board_ledger.Ledger, entry_id: str, folder: Path, digest: str | None) -> tuple:
    """The key that orders entries by precedence (the later one gives way in a clash): the
    shipped entries, then the board's by the ledger line at which their content (``digest``)
    was first recorded, then content the ledger never saw, by digest. Of two folders with the
    same content, the one under the id the ledger last recorded for it comes first. Nothing a
    submitter can edit (a name, an id, a folder's name, a date) moves an entry."""
    if is_shipped(folder):
        return (0, 0, "", entry_id)
    position = ledger.position(digest)
    if position is not None:
        return (1, position, "" if ledger.label(digest) == entry_id else "~", entry_id)
    return (2, 0, digest or "~", entry_id)


def shipped_crossplay(suite: Suite) -> dict:
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
