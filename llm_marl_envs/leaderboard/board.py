"""The leaderboard: entries checked on the way in, verified by replay, built into a site.

A **board** is a folder (default ``./leaderboard``):

* ``entries/<id>/``: one folder per entry, ``results.json`` and ``episodes/<task>.jsonl.gz``
  (an ``llm-marl eval`` result as ``add`` re-wrote it, or a folder a maintainer placed there
  from a pull request);
* ``ledger.jsonl`` and ``ledger.head.json``: what the board found when it checked each
  entry (``add``, every ``verify``, every ``override``), known by the digest of its content,
  in one append-only, hash-chained ledger sealed with the board's key
  (:mod:`~llm_marl_envs.leaderboard.ledger`);
* ``board.id``: the board's public id, which names its sealing key, kept outside the board
  (:func:`~llm_marl_envs.leaderboard.records.keys_folder`);
* ``.board.lock``, listed in the ``.gitignore`` the board writes.

The package ships entries of its own (``llm_marl_envs/leaderboard/entries/``: random, scripted,
the tiny model, the embedded SmolLM2 and a CORY-trained pair on the ``lite`` suite).

**One reader, one set of rules.** Every command reads an entry folder through
:func:`~llm_marl_envs.leaderboard.entry.open_entry` (the files, their limits, the plan)
and applies the same rules (:func:`entry_problems`): the suite and its hash, each task's env
spec hash, data hash and generation settings, seats for every agent, the entry's id, name
and kind. ``add`` applies them to a submission; ``verify`` and ``build`` apply them again to
whatever is in the board's folder, so a folder placed there by hand meets the same rules.

* :func:`add_entry` replays every episode's recorded actions through this package's
  environments and scores the entry from the replay alone (a record or a score that differs
  refuses it, naming the task, item and field); refuses a name a visitor could not tell from
  another entry's (:mod:`~llm_marl_envs.leaderboard.names`) and episodes equal to another
  entry's; writes the entry and records the add.
* :func:`verify_entry` replays it again, checks its models and regenerates a secret sample
  sized in score terms (:mod:`~llm_marl_envs.leaderboard.verify`); every verification is
  kept in the entry's record and a failure sticks until :func:`override_entry`.
* :func:`~llm_marl_envs.leaderboard.standings.build_board` assembles the site's data and
  :func:`build` writes the static site.

The rules and the listing live in :mod:`~llm_marl_envs.leaderboard.rules`, the board's
memory in :mod:`~llm_marl_envs.leaderboard.ledger` (its key and badge rule in
:mod:`~llm_marl_envs.leaderboard.records`); their public names are importable
from here too.

**Ranks.** An entry's rank is 1 + the number of entries whose 95% interval lies wholly above
its own (lower bound above its upper bound), the rule LMArena uses.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from pathlib import Path

from llm_marl_envs.evaluation import run_folder
from llm_marl_envs.evaluation.run_folder import slug
from llm_marl_envs.evaluation.files import (
    folder_flock,
    folder_lock,
    fsync_folder,
    remove_stale,
    staging_folder,
)
from llm_marl_envs.evaluation.suite import Suite
from llm_marl_envs.leaderboard import (
    ledger as board_ledger,
    records as board_records,
    verify as verification,
)
from llm_marl_envs.leaderboard.entry import (
    EntryFolder,
    LeaderboardError,
    display_name,
    open_entry,
)
from llm_marl_envs.leaderboard.copies import COPY_SHARE, clash, copy_of, identity, prints
from llm_marl_envs.leaderboard.rescore import (  # replay_entry: re-exported
    replay_entry,
    score_problems,
    write_synced,
)
from llm_marl_envs.leaderboard.rules import (  # re-exported: the board's public names
    DEFAULT_BOARD as DEFAULT_BOARD,
    board_meta as board_meta,
    check_result as check_result,
    entries,
    entry_folders,
    entry_problems,
    kind_problem,
    name_taken,
    played_by as played_by,
    plays_a_model,
    read_ledger,
    same_play as same_play,
    seats,
    shipped_entries,
    standing,
)
from llm_marl_envs.leaderboard.standings import (  # re-exported: the site's rule texts
    TRANSCRIPT_EPISODES as TRANSCRIPT_EPISODES,
    VERIFICATION_RULE as VERIFICATION_RULE,
    build_board,
)
from llm_marl_envs.policies import GenerationConfig
from llm_marl_envs.policies.specs import not_replayable

__all__ = [
    "DEFAULT_BOARD",
    "LeaderboardError",
    "add_entry",
    "build",
    "build_board",
    "check_result",
    "entries",
    "entry_problems",
    "override_entry",
    "replay_entry",
    "same_play",
    "shipped_entries",
    "verify_entry",
]

#: Seconds an ``add``, ``verify`` or ``override`` waits for another one writing to the board.
BOARD_WAIT = 120.0


# --------------------------------------------------------------------------- add
def add_entry(
    result_dir: str | Path,
    board: str | Path = DEFAULT_BOARD,
    *,
    entry_id: str | None = None,
    name: str | None = None,
    kind: str | None = None,
) -> Path:
    """Check the evaluation in ``result_dir``, replay every episode's actions, and copy it into
    ``board`` as an entry scored from the replay; returns the entry's folder. ``kind``:
    ``model``, ``baseline`` or ``trained`` (default: ``model`` when a seat plays a model, else
    ``baseline``). Raises :class:`LeaderboardError` naming each mismatch (task, item and
    field)."""
    folder, board = Path(result_dir), Path(board)
    refused = f"{folder} cannot join the board: "
    # the folder the user named, through any link in its path; nothing inside it is followed
    with open_entry(folder.resolve()) as entry:
        problems = entry_problems(entry)
        name = display_name(name or entry.results.get("entry") or "")
        kind = kind or ("model" if plays_a_model(entry.results) else "baseline")
        problems += [p for p in [kind_problem(kind, entry.results)] if p]
        if problems:
            raise LeaderboardError(refused + "; ".join(problems))
        requested = entry_id or name
        entry_id = _new_id(requested, name, board)  # refused early, before the replay
        with ExitStack() as stack:
            tmp = stack.enter_context(_staging(board, requested))
            block = {"id": entry_id, "name": name, "kind": kind}
            replay, others = _write_replayed(entry, tmp, folder, board, block)
            written = identity(tmp)
            if written is None:
                raise LeaderboardError(f"{refused}the entry written for it cannot be read back")
            with _board_lock(board):
                _new_id(requested, name, board)  # again: another add may have taken it
                ledger = _ledger(board, entry_id)
                late = {i: identity(f) for i, f in entries(board).items() if i not in others}
                problem = clash(ledger, written, {**others, **late})
                if problem:
                    raise LeaderboardError(f"{folder} cannot join the board: {problem}")
                target = board / "entries" / entry_id
                os.rename(tmp, target)  # the board is locked and the id free
                fsync_folder(target.parent)
                event = board_records.new_event(
                    "added",
                    replay=replay,
                    files=written.hashes,
                    fingerprints=written.fingerprints,
                    suite=written.suite,
                )
                _append(board, entry_id, target, event, written.digest)
    return target


def _write_replayed(
    entry: EntryFolder, tmp: Path, folder: Path, board: Path, block: dict
) -> tuple[dict, dict]:
    """Replay ``entry`` (from ``folder``) into the staging folder ``tmp`` and write its
    ``results.json`` there, scored from the replay, with the ``board`` block (id, name, kind);
    returns the replay's count and the identities of ``board``'s entries its episodes were
    found to copy none of. Raises :class:`LeaderboardError` when an episode or a score does
    not follow from the replay, or the episodes are another entry's."""
    refused = f"{folder} cannot join the board: "
    rescored, replay, differ = replay_entry(entry, tmp)
    if differ:
        shown = differ[:3] + ([f"and {len(differ) - 3} more"] if len(differ) > 3 else [])
        raise LeaderboardError(
            f"{refused}{len(differ)} episode(s) do not replay: " + "; ".join(shown)
        )
    problems = score_problems(entry.results, rescored)
    if problems:
        raise LeaderboardError(refused + "; ".join(problems))
    others = {i: identity(f) for i, f in entries(board).items()}
    copied = copy_of(entry.suite.label, entry.fingerprints, prints(others))
    if copied:
        raise LeaderboardError(_copy_message(folder, copied))
    stored = {key: entry.results.get(key) for key in ("schema", "entry", "team", "suite")}
    stored["manifest"] = entry.results["manifest"]
    stored.update({key: rescored[key] for key in ("complete", "overall", "tasks")})
    stored["board"] = block
    write_synced(tmp / run_folder.RESULTS_FILE, json.dumps(stored, indent=1) + "\n")
    fsync_folder(tmp / run_folder.EPISODES_DIR)
    fsync_folder(tmp)
    return replay, others


@contextmanager
def _staging(board: Path, requested: str):
    """The hidden folder an ``add`` fills (:func:`~llm_marl_envs.evaluation.files.
    staging_folder`), made and locked under the board's lock, after the folders killed adds
    left are removed: no other add can take a folder being filled for a stale one."""
    if not _package_board(board):
        board_records.ensure_board(board)
    (board / "entries").mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        with _board_lock(board):
            remove_stale(board / "entries", ".tmp-*")
            prefix = f".tmp-{slug(requested, 'entry')[:40]}-"
            tmp = stack.enter_context(staging_folder(board / "entries", prefix))
        yield tmp


def _copy_message(folder: Path, other: str) -> str:
    return (
        f"{folder} cannot join the board: its episodes are entry {other!r}'s (the same actions "
        f"for at least {COPY_SHARE:.0%} of its items); one evaluation is one entry"
    )


def _package_board(board: Path) -> bool:
    """Whether ``board`` is the package's own (scripts/ship_leaderboard_entries.py)."""
    return board.resolve() == shipped_entries().parent.resolve()


def _append(board: Path, entry_id: str, folder: Path, event: dict, digest: str) -> None:
    """Append ``event`` of the entry with content ``digest`` (the board's lock held): to the
    board's ledger, sealed; for the package's own board, to the entry's
    ``verification.json``, unsealed."""
    if _package_board(board):
        path = folder / "verification.json"
        try:
            events = board_records.load(path, entry_id, None, trusted=True)
        except board_records.RecordError:  # an older format: the record starts again
            events = []
        board_records.write(path, entry_id, [*events, event], None)
        return
    key = board_records.board_key(board, create=True)
    try:
        board_ledger.append(board, key, [{**event, "digest": digest, "entry": entry_id}])
    except board_ledger.LedgerError as error:
        raise LeaderboardError(_untrusted(entry_id, error)) from None


def _untrusted(entry_id: str, error: Exception) -> str:
    return (
        f"{entry_id}: the board's ledger cannot be trusted ({error}); a maintainer who knows why "
        f"can set it aside and start a new one: llm-marl leaderboard override {entry_id} "
        "--reason TEXT"
    )


def _ledger(board: Path, entry_id: str) -> board_ledger.Ledger:
    """The board's ledger, or a one-line refusal saying why it is not the board's and how a
    maintainer starts a new one."""
    try:
        return read_ledger(board)
    except board_ledger.LedgerError as error:
        raise LeaderboardError(_untrusted(entry_id, error)) from None


def _board_lock(board: Path):
    """The board's lock: one process at a time publishes an entry or writes a record (or makes
    the board's key). The lock file holds nothing (the board may be published)."""
    board.mkdir(parents=True, exist_ok=True)
    if _package_board(board):
        return folder_flock(board)  # the package's own board: no lock file in the package
    board_records.ensure_board(board)
    return folder_lock(
        board,
        ".board.lock",
        "another llm-marl leaderboard add, verify or override",
        "try again when it is done",
        wait=BOARD_WAIT,
        note=False,
    )


def _new_id(requested: str, name: str, board: Path) -> str:
    """A free entry id from ``requested``, after checking that ``name`` is free too (no entry,
    shipped or on the board, shows a name a visitor could not tell from it)."""
    entry_id = slug(requested, "entry")
    if entry_id.startswith("."):
        raise LeaderboardError(f"an entry id cannot start with '.' ({entry_id!r}); choose --id")
    if entry_id.endswith(".tmp"):
        raise LeaderboardError(f"an entry id cannot end with '.tmp' ({entry_id!r}); choose --id")
    if entry_id.casefold() in {e.casefold() for e in entries(None)}:
        raise LeaderboardError(
            f"{entry_id!r} is the id of an entry shipped with the package; choose another --id"
        )
    taken = {e.casefold() for e in entry_folders(board / "entries")}
    if entry_id.casefold() in taken or (board / "entries" / entry_id).exists():
        raise LeaderboardError(f"the board already has an entry {entry_id!r}; choose --id")
    other = name_taken(name, entries(board))
    if other is not None:
        raise LeaderboardError(
            f"the name {name!r} cannot be told apart from entry {other!r}'s; give the entry "
            "another --name"
        )
    return entry_id


# --------------------------------------------------------------------------- verify
def _deterministic(suite: Suite, results: dict) -> str | None:
    """Why an entry cannot be replayed exactly (None: it can)."""
    for name, task_seats in seats(results).items():
        if suite.task(name).generation_settings().get("do_sample"):
            return f"task {name} samples its answers"
        for spec in task_seats.values():
            why = not_replayable(spec)
            if why:
                return f"task {name} has {why}"
    return None


def check_entry(board: Path | None, entry_id: str, folder: Path) -> tuple[str, str]:
    """Open the entry in ``folder`` and apply every rule ``add`` applies (the reader's limits,
    :func:`entry_problems`, its id, name and kind, a name no other entry shows, episodes no
    other entry has); its name and kind, or a :class:`LeaderboardError` naming the first rule
    it breaks."""
    with open_entry(folder) as entry:
        problems = entry_problems(entry)
        if problems:
            raise LeaderboardError(f"{entry_id}: " + "; ".join(problems))
        name, kind = board_meta(entry, entry_id)
    return name, kind


def verify_entry(
    entry: str,
    board: str | Path = DEFAULT_BOARD,
    *,
    sample: int | None = None,
    secret: int | None = None,
    write: Callable[[str], None] = print,
    generation: GenerationConfig | None = None,
    gain: float = verification.GAIN,
    server_options: dict | None = None,
) -> dict:
    """Verify an entry of a deterministic team (:func:`~llm_marl_envs.leaderboard.verify.
    verify_entry_folder`: every episode replayed, its models loaded and checked against the
    manifest, a secret stratified sample regenerated, sized to catch a forgery worth ``gain``
    of the overall score with probability 0.95, or ``sample`` episodes; the models where
    ``generation`` says) and append the verification to the entry's board record (sealed; a
    shipped entry's record goes to the board too: the installed package is never written).
    Returns the verification; ``verified`` is true when it passed (the badge also needs every
    earlier verification since the latest override to have passed)."""
    if board is None:
        raise LeaderboardError("verify writes into a board folder: give one (--board)")
    board = Path(board)
    found = entries(board)
    if entry not in found:
        raise LeaderboardError(f"no entry {entry!r}; entries: {', '.join(found) or 'none'}")
    folder = found[entry]
    name, _ = check_entry(board, entry, folder)
    _unique(board, entry, folder, name)
    with open_entry(folder) as opened:
        why = _deterministic(opened.suite, opened.results)
        if why:
            raise LeaderboardError(f"{entry} cannot be verified by replay: {why}")
        secret = secrets.randbits(64) if secret is None else secret
        event = verification.verify_entry_folder(
            opened,
            sample=sample,
            secret=secret,
            write=write,
            generation=generation,
            gain=gain,
            server_options=server_options,
        )
        digest = board_ledger.digest(opened)  # of the very bytes the verification read
    event = board_records.new_event(
        "verification", suite=opened.suite.label, **{k: v for k, v in event.items() if k != "event"}
    )
    with _board_lock(board):
        _append(board, entry, folder, event, digest)
    return event


def _unique(board: Path, entry_id: str, folder: Path, name: str) -> None:
    """Refuse to verify an entry whose ledger cannot be trusted, or whose name, content or
    episodes an entry before it already has (or an entry the ledger recorded that is no
    longer on the board: :func:`_clash`)."""
    ledger = _ledger(board, entry_id)  # refused now, before any work, if not the board's
    found = {i: (f, identity(f)) for i, f in entries(board).items() if i != entry_id}
    mine = identity(folder, strict=True)
    found[entry_id] = (folder, mine)

    def standing_of(entry: str) -> tuple:
        folder, known = found[entry]
        return standing(ledger, entry, folder, known.digest if known else None)

    before = {
        i: f for i, f in found.items() if i != entry_id and standing_of(i) < standing_of(entry_id)
    }
    other = name_taken(name, {i: f for i, (f, _) in before.items()})
    if other is not None:
        raise LeaderboardError(
            f"{entry_id}: its name {name!r} cannot be told apart from entry {other!r}'s"
        )
    on_board = {known.digest for _, known in found.values() if known is not None}
    problem = clash(ledger, mine, {i: k for i, (_, k) in before.items()}, on_board, entry_id)
    if problem:
        raise LeaderboardError(f"{entry_id}: {problem}")


def override_entry(entry: str, board: str | Path = DEFAULT_BOARD, *, reason: str) -> dict:
    """Record a maintainer's override of the failed verifications of an entry's content (its
    digest): the failures stay on the ledger and on the site, and the badge follows the
    verifications after it. When the ledger itself cannot be trusted, it is set aside (kept,
    renamed) and a new one starts with this override, its reason saying so."""
    board = Path(board)
    found = entries(board)
    if entry not in found:
        raise LeaderboardError(f"no entry {entry!r}; entries: {', '.join(found) or 'none'}")
    reason = " ".join(str(reason).split())
    if not reason or len(reason) > 500:
        raise LeaderboardError("--reason must say why, in 1 to 500 characters")
    known = identity(found[entry], strict=True)
    event = board_records.new_event("override", reason=reason, digest=known.digest, entry=entry)
    with _board_lock(board):
        key = board_records.board_key(board, create=True)
        try:
            written = board_ledger.append(board, key, [event])
        except board_ledger.LedgerError as error:
            event["reason"] = f"{reason} (the ledger was set aside: {error})"
            written = board_ledger.restart(board, key, event)
    return written.lines[-1]


# --------------------------------------------------------------------------- build
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
    from llm_marl_envs.leaderboard.site.pages import build_site

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
