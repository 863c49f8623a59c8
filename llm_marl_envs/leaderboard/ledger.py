"""The board's ledger: what the board found of each entry, known by its content, in one chain.

An entry is known by a **digest of what is scored** (:func:`digest`): the suite (name,
version, hash), each task's env spec hash, data hash, generation settings and seats, the
manifest's model claims, and the sha256 of each task's episode lines. Nothing else goes in:
the entry's id, its display name and kind, its folder's name, the scores results.json states
(the board scores the episodes again) and every date are labels a submitter may change; the
digest stays. Two folders with the same digest are the same entry.

``<board>/ledger.jsonl`` is **append-only**: one line per event, written only by ``add``,
``verify`` and ``override`` under the board's lock:

    {"n": 7, "prev": "sha256:<hash of line 6>", "at": "...", "event": "added",
     "digest": "sha256:...", "entry": "<id when written>", "suite": "lite-v2",
     "fingerprints": {...}, "files": {...}, "replay": {...}, "seal": "hmac-sha256:..."}

Each line holds the sha256 of the line before it (``prev``; the first holds
:data:`GENESIS`), so no line can be edited, removed or moved without breaking every later
link; each is sealed with the board's key (:mod:`~llm_marl_envs.leaderboard.records`), so
only the key's holder can write one. ``<board>/ledger.head.json`` (sealed too) holds the
ledger's length and the hash of its last line: a ledger cut back to an earlier line (to drop a
failed verification) is refused. A line torn by a crash while it was being appended (never
counted in the head) is dropped at the next append.

What the ledger decides, from digests alone:

* **Precedence** (:meth:`Ledger.position`): an entry stands before another when its digest
  reached the ledger first (added or verified); entries the ledger has never seen come after,
  ordered by digest. Names, ids, folder names and dates cannot move it.
* **Duplicates and near-copies**: a digest already on the board, or episodes that share
  :data:`~llm_marl_envs.leaderboard.rules.COPY_SHARE` of their actions with an entry the
  ledger recorded (on the board or since removed), are refused at ``add`` and left out at
  ``build``.
* **Verification outcomes** (:meth:`Ledger.events`) belong to the digest: they follow an
  entry through a rename (a new id, name or folder), a removal and a re-add; a new entry
  under a reused id starts with none.

The head's hash and the ledger's length are shown on the site: a board rolled back whole
(ledger and head together, to an earlier state) shows a shorter ledger, or another head at
the same length, than any page published before. docs/leaderboard.md says what the board
guarantees and what it cannot.

A board made by an older version kept a sealed record per entry id (``records/<id>.json``);
its events are read into the ledger (each bound to the digest of the folder now at that id),
written out at the board's next ``add``, ``verify`` or ``override``; ``records/`` is then
left as it was and no longer read.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.files import write_atomic
from llm_marl_envs.leaderboard import records as board_records
from llm_marl_envs.core.bounded_json import BoundsError, loads

__all__ = [
    "GENESIS",
    "HEAD_FILE",
    "LEDGER_FILE",
    "Ledger",
    "LedgerError",
    "append",
    "digest",
    "read",
    "restart",
]

LEDGER_FILE = "ledger.jsonl"
HEAD_FILE = "ledger.head.json"
HEAD_FORMAT = "llm-marl-envs/board-ledger-head/1"
DIGEST_FORMAT = "llm-marl-envs/entry-digest/1"
#: The ``prev`` of the ledger's first line.
GENESIS = "sha256:" + "0" * 64
#: The largest ledger read (about 100,000 events of a lite entry), and the largest line.
MAX_LEDGER_BYTES = 512 * 2**20
MAX_LINE_BYTES = 16 * 2**20
#: Events that put a digest on the ledger (an override only ever follows one).
RECORDING = ("added", "verification")


class LedgerError(ValueError):
    """A ledger that is not the board's: a broken link, a line not sealed by the board's key,
    a head it does not reach, a missing file."""


# --------------------------------------------------------------------------- identity
def digest(entry: Any) -> str:
    """The digest of an open entry (:class:`~llm_marl_envs.leaderboard.entry.EntryFolder`)
    whose every task has been read: what it scores and who it says played (module
    docstring)."""
    results, suite = entry.results, entry.suite
    manifest = results["manifest"]
    missing = [task.name for task in entry.tasks() if task.name not in entry.contents]
    if missing:
        raise ValueError(f"the digest needs every task's episodes read first: {missing}")
    tasks = {}
    for name in sorted(entry.contents):
        block = manifest["tasks"].get(name) or {}
        tasks[name] = {
            "env_spec_hash": block.get("env_spec_hash"),
            "data_hash": block.get("data_hash"),
            "generation": block.get("generation"),
            "seats": block.get("seats"),
            "episodes": entry.contents[name],
        }
    body = {
        "format": DIGEST_FORMAT,
        "suite": {"name": suite.name, "version": suite.version, "hash": suite.hash()},
        "tasks": tasks,
        "policies": manifest.get("policies") or {},
    }
    return "sha256:" + hashlib.sha256(_canonical(body)).hexdigest()


def _canonical(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- the ledger
@dataclass
class Ledger:
    """The board's ledger as read and checked (:func:`read`): its lines in order, the hash of
    the last one (:data:`GENESIS` when empty), and whether it was read from an older board's
    records (``migrated``: not yet written as a ledger)."""

    lines: list[dict] = field(default_factory=list)
    head: str = GENESIS
    migrated: bool = False

    def __len__(self) -> int:
        return len(self.lines)

    def events(self, of: str | None) -> list[dict]:
        """Every event of the entry with digest ``of``, in order."""
        return [line for line in self.lines if of is not None and line.get("digest") == of]

    def position(self, of: str | None) -> int | None:
        """The line at which digest ``of`` reached the ledger (added or verified), or None."""
        for line in self.lines:
            if line.get("digest") == of and of is not None and line.get("event") in RECORDING:
                return int(line["n"])
        return None

    def label(self, of: str | None) -> str | None:
        """The id the ledger last recorded for digest ``of``."""
        labels = [line.get("entry") for line in self.events(of)]
        return str(labels[-1]) if labels else None

    def labelled(self, entry_id: str) -> list[str]:
        """The digests the ledger recorded under id ``entry_id`` (earliest first)."""
        found: list[str] = []
        for line in self.lines:
            if line.get("entry") == entry_id and line.get("digest") not in (None, *found):
                found.append(str(line["digest"]))
        return found

    def recorded(self) -> dict[str, dict]:
        """Digest -> what the ledger knows of it: ``position``, ``entry`` (its latest id),
        ``suite`` and ``fingerprints`` (from the latest line that holds them)."""
        known: dict[str, dict] = {}
        for line in self.lines:
            of = line.get("digest")
            if of is None:
                continue
            block = known.setdefault(
                of, {"position": None, "entry": None, "suite": None, "fingerprints": None}
            )
            if block["position"] is None and line.get("event") in RECORDING:
                block["position"] = int(line["n"])
            block["entry"] = line.get("entry")
            if isinstance(line.get("fingerprints"), dict):
                block["fingerprints"] = line["fingerprints"]
            if isinstance(line.get("suite"), str):
                block["suite"] = line["suite"]
        return known

    def shown(self) -> dict[str, Any]:
        """What the site publishes of the ledger: its length and head."""
        return {"length": len(self.lines), "head": self.head}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _key_needed(key: bytes | None) -> bytes:
    if key is None:
        raise LedgerError(
            "the board's key is not in the keys folder, so its ledger's seals cannot be checked "
            f"(set {board_records.KEYS_ENV} to the folder that holds it)"
        )
    return key


def _read_head(board: Path, key: bytes) -> dict | None:
    path = board / HEAD_FILE
    if not path.is_file():
        return None
    try:
        document = loads(path.read_bytes()[:65536], HEAD_FILE, max_values=64, max_depth=4)
    except (OSError, BoundsError) as error:
        raise LedgerError(f"{HEAD_FILE}: {error}") from None
    if not isinstance(document, dict) or document.get("format") != HEAD_FORMAT:
        raise LedgerError(f"{HEAD_FILE} is not a ledger head of this package")
    if not board_records.sealed(document, key):
        raise LedgerError(f"{HEAD_FILE} is not sealed by this board's key")
    if type(document.get("length")) is not int or document["length"] < 0:
        raise LedgerError(f"{HEAD_FILE} holds no length")
    return document


def read(board: str | Path, key: bytes | None) -> Ledger:
    """The board's ledger, every link and seal checked against ``key`` and its head; an older
    board's records read as a ledger (``migrated``); an empty ledger when the board has
    neither. Raises :class:`LedgerError` saying why it is not the board's."""
    board = Path(board)
    path = board / LEDGER_FILE
    if not path.exists():
        if (board / HEAD_FILE).exists():
            head = _read_head(board, _key_needed(key))
            if head and head["length"]:
                raise LedgerError(
                    f"{LEDGER_FILE} is gone (removed?), but its head says it held "
                    f"{head['length']} line(s)"
                )
        return _from_records(board, key)
    key = _key_needed(key)
    ledger, torn = _read_lines(path, key)
    head = _read_head(board, key)
    if head is None:
        if ledger.lines:
            raise LedgerError(f"{HEAD_FILE} is missing: the ledger's length cannot be checked")
        return ledger
    length = head["length"]
    if len(ledger.lines) < length:
        raise LedgerError(
            f"{LEDGER_FILE} holds {len(ledger.lines)} line(s), but its head says {length}: "
            "cut back (to drop a line?)"
        )
    at = ledger.lines[length - 1]["_hash"] if length else GENESIS
    if at != head.get("head"):
        raise LedgerError(f"line {length - 1} of {LEDGER_FILE} is not the one its head names")
    if torn is not None and torn < length:
        raise LedgerError(f"{LEDGER_FILE} line {torn} is cut short")
    for line in ledger.lines:
        line.pop("_hash")
    return ledger


def _read_lines(path: Path, key: bytes) -> tuple[Ledger, int | None]:
    """The ledger's lines, each link and seal checked (each keeps its ``_hash`` for the head
    check), and the number of a last line torn by a crash (None: no such line)."""
    try:
        if path.stat().st_size > MAX_LEDGER_BYTES:
            raise LedgerError(f"{LEDGER_FILE} is over {MAX_LEDGER_BYTES:,} bytes")
        handle = open(path, "rb")
    except OSError as error:
        raise LedgerError(f"{LEDGER_FILE} cannot be read ({error})") from None
    ledger, prev = Ledger(), GENESIS
    with handle:
        for n, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b"")):
            if not raw.endswith(b"\n"):
                if len(raw) > MAX_LINE_BYTES:
                    raise LedgerError(f"{LEDGER_FILE} line {n} is over {MAX_LINE_BYTES:,} bytes")
                ledger.head = prev
                return ledger, n  # torn by a crash: never reached the head
            line = _line(raw[:-1], n, prev, key)
            prev = line["_hash"] = _hash(raw[:-1])
            ledger.lines.append(line)
    ledger.head = prev
    return ledger, None


def _line(raw: bytes, n: int, prev: str, key: bytes) -> dict:
    where = f"{LEDGER_FILE} line {n}"
    try:
        line = loads(raw, where, max_values=10_000_000, max_depth=32)
    except BoundsError as error:
        raise LedgerError(str(error)) from None
    if not isinstance(line, dict) or line.get("n") != n or type(line.get("n")) is not int:
        raise LedgerError(f"{where} is not line {n} of a board ledger (a line removed or moved?)")
    if line.get("prev") != prev:
        raise LedgerError(f"{where} does not follow the line before it (a line edited or removed?)")
    if not board_records.sealed(line, key):
        raise LedgerError(f"{where} is not sealed by this board's key")
    if not isinstance(line.get("event"), str):
        raise LedgerError(f"{where} names no event")
    return line


def append(board: str | Path, key: bytes, events: Iterable[Mapping[str, Any]]) -> Ledger:
    """Append ``events`` (each: ``event``, ``digest``, ``entry`` and its fields) to the
    board's ledger, with the board's lock held, after checking the ledger as it stands (an
    older board's records are written first); returns the ledger as written."""
    board = Path(board)
    board.mkdir(parents=True, exist_ok=True)
    ledger = read(board, key)
    path = board / LEDGER_FILE
    pending = [dict(line) for line in ledger.lines] if ledger.migrated else []
    if ledger.migrated:
        path.unlink(missing_ok=True)
        ledger = Ledger()
    _drop_torn(path, len(ledger.lines))
    prev = ledger.head
    with open(path, "ab") as handle:
        for event in [*pending, *events]:
            body = {k: v for k, v in event.items() if k not in ("n", "prev", "seal")}
            body.setdefault("at", _now())
            body.update(n=len(ledger.lines), prev=prev)
            line = board_records.seal(body, key)
            data = _canonical(line)
            handle.write(data + b"\n")
            prev = _hash(data)
            ledger.lines.append(line)
        handle.flush()
        os.fsync(handle.fileno())
    ledger.head = prev
    head = {"format": HEAD_FORMAT, "length": len(ledger.lines), "head": prev}
    write_atomic(board / HEAD_FILE, json.dumps(board_records.seal(head, key), indent=1) + "\n")
    return ledger


def _drop_torn(path: Path, whole: int) -> None:
    """Cut the ledger after its first ``whole`` lines (a line torn by a crash)."""
    if not path.is_file():
        return
    with open(path, "rb+") as handle:
        end = 0
        for _ in range(whole):
            end += len(handle.readline(MAX_LINE_BYTES + 1))
        if handle.seek(0, os.SEEK_END) != end:
            handle.truncate(end)


def restart(board: str | Path, key: bytes, event: Mapping[str, Any]) -> Ledger:
    """Set a ledger that is not the board's aside (``ledger.set-aside-<time>.jsonl``, kept
    with its head; an older board's ``records/`` stays where it is, no longer read) and start
    a new one with ``event``, a maintainer's override, whose reason then names what was kept.
    Called with the board's lock held."""
    board = Path(board)
    stamp = _now().replace(":", "").replace("+0000", "Z")
    kept = []
    for name in (LEDGER_FILE, HEAD_FILE):
        if (board / name).exists():
            aside = board / name.replace("ledger", f"ledger.set-aside-{stamp}", 1)
            os.replace(board / name, aside)
            kept.append(aside.name)
    where = f"kept as {', '.join(kept)}" if kept else "records/ kept as it was"
    reason = f"{event.get('reason')} (the ledger that could not be trusted was {where})"
    (board / LEDGER_FILE).write_bytes(b"")  # a new, empty ledger: older records not read
    return append(board, key, [{**event, "reason": reason}])


# --------------------------------------------------------------------------- older boards
def _from_records(board: Path, key: bytes | None) -> Ledger:
    """An older board's per-id records (``records/<id>.json``) as a ledger: every event, in
    time order, bound to the digest of the folder now at that id (None when there is none)."""
    records = board / "records"
    paths = sorted(p for p in records.glob("*.json") if not p.name.startswith("."))
    if not paths:
        return Ledger()
    key = _key_needed(key)
    found: list[tuple[str, str, int, dict]] = []
    for path in paths:
        entry_id = path.stem
        try:
            events = board_records.load(path, entry_id, key)
        except board_records.RecordError as error:
            if path.name == board_records.LEGACY_INDEX_FILE and "not a board record" in str(error):
                continue  # an older board's index, not a record
            raise LedgerError(f"records/{path.name}: {error}") from None
        for i, event in enumerate(events):
            found.append((str(event.get("at")), entry_id, i, event))
    digests = {
        entry_id: _folder_digest(board / "entries" / entry_id) for _, entry_id, _, _ in found
    }
    lines = []
    for _, entry_id, _, event in sorted(found, key=lambda f: f[:3]):
        lines.append({**event, "digest": digests[entry_id], "entry": entry_id})
    return Ledger(lines=lines, migrated=True)


def _folder_digest(folder: Path) -> str | None:
    """The digest of the entry in ``folder`` (None: there is none, or it cannot be read)."""
    from llm_marl_envs.leaderboard.entry import LeaderboardError, open_entry

    if not folder.is_dir():
        return None
    try:
        with open_entry(folder) as entry:
            for task in entry.tasks():
                for _ in entry.episodes(task):
                    pass
            return digest(entry)
    except (LeaderboardError, OSError):
        return None
