"""A board's key, the seal, the badge rule, and the per-entry record format.

* **The key** (:func:`board_key`): made at the board's first ``add`` or ``verify`` (mode
  0600), kept outside every board, in :func:`keys_folder` (``LLM_MARL_BOARD_KEYS``, else
  ``~/.config/llm_marl_envs/board-keys/``), as ``<board id>.key``; the board holds only its
  public id (``board.id``). No ``.gitignore`` line, negated or forgotten, can publish it, and
  a keys folder inside a git work tree is refused. A board made by an older version, its key
  in ``<board>/verification.key``, has the key moved out the first time it is read. The lock
  ``.board.lock`` (which holds nothing: no host, no process) and half-written entries are
  listed in the ``.gitignore`` the board writes for itself. Whoever holds the key can seal
  anything: keep it with the maintainer.
* **The seal** (:func:`seal`, :func:`sealed`): an HMAC-SHA256 of a document under the key;
  every line of the board's ledger (:mod:`~llm_marl_envs.leaderboard.ledger`) carries one.
* **The badge** (:func:`badge`): what the site shows of an entry from its events. A failed
  verification **sticks** (the entry shows unverified, "k of n verifications failed", however
  many later verifications pass) until a maintainer records an ``override`` with a stated
  reason; a verification on a sample weaker than the board's guarantee earns no badge.
* **The record format** ``{"format": "llm-marl-envs/board-record/1", "entry", "events",
  "seal"?}``: the shipped entries carry theirs in their own folder (``verification.json``,
  unsealed: the package's files are trusted as such; only
  ``scripts/ship_leaderboard_entries.py`` writes them). A board made by an older version kept
  one per entry, sealed, in ``records/<id>.json`` with a sealed index
  (``records/.index.json``); :func:`load` still reads them, so that the ledger takes them
  over (:func:`~llm_marl_envs.leaderboard.ledger.read`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.files import write_atomic
from llm_marl_envs.core.bounded_json import BoundsError, loads

__all__ = [
    "FORMAT",
    "GITIGNORE",
    "BOARD_ID_FILE",
    "KEY_FILE",
    "RecordError",
    "badge",
    "board_key",
    "changed",
    "ensure_board",
    "keys_folder",
    "load",
    "new_event",
    "record_path",
    "seal",
    "sealed",
    "write",
]

FORMAT = "llm-marl-envs/board-record/1"
INDEX_FORMAT = "llm-marl-envs/board-record-index/1"
#: The records' index: a name no entry id can take (an id never starts with a dot), so an entry
#: called ``index`` has a record of its own (it overwrote the index when the index was
#: ``index.json``, which an older board still has until its next write).
INDEX_FILE = ".index.json"
LEGACY_INDEX_FILE = "index.json"
#: Where an older version kept a board's key, inside the board (moved out when read).
KEY_FILE = "verification.key"
#: The board's public id, which names its key in :func:`keys_folder`.
BOARD_ID_FILE = "board.id"
#: What a board keeps out of version control: its lock, half-written entries (and an older
#: version's key, until it is moved out).
GITIGNORE = ("verification.key", ".board.lock", "entries/.tmp-*")
#: The environment variable naming the folder of boards' keys.
KEYS_ENV = "LLM_MARL_BOARD_KEYS"
#: The largest record file read (about 2,000 verifications of a lite entry).
MAX_RECORD_FILE_BYTES = 64 * 2**20


class RecordError(ValueError):
    """A record that is not the board's (unsealed, edited, another entry's, not JSON)."""


def now() -> str:
    """The time of an event, as every event records it (UTC, to the second)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"event": kind, "at": now(), **fields}


# --------------------------------------------------------------------------- the board
def ensure_board(board: Path) -> None:
    """Make ``board`` (if need be) with its ``.gitignore`` listing :data:`GITIGNORE`; a
    ``.gitignore`` that exists gets the lines it lacks appended."""
    board.mkdir(parents=True, exist_ok=True)
    path = board / ".gitignore"
    have = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    missing = [line for line in GITIGNORE if line not in have]
    if missing:
        head = (
            []
            if have
            else ["# written by llm-marl leaderboard: the board's key and lock stay private"]
        )
        text = "\n".join(have + head + missing) + "\n"
        write_atomic(path, text)


def keys_folder() -> Path:
    """Where boards' keys are kept: ``$LLM_MARL_BOARD_KEYS``, else
    ``$XDG_CONFIG_HOME/llm_marl_envs/board-keys`` (``~/.config/...``). Refused, in one line,
    inside a git work tree (a ``git add`` there could publish a key)."""
    named = os.environ.get(KEYS_ENV)
    if named:
        folder = Path(named).expanduser()
    else:
        config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
        folder = Path(config) / "llm_marl_envs" / "board-keys"
    folder = folder.absolute()
    for parent in (folder, *folder.parents):
        if (parent / ".git").exists():
            raise RecordError(
                f"the boards' keys folder {folder} is inside the git work tree {parent}, where a "
                f"commit could publish a key: set {KEYS_ENV} to a folder outside any repository"
            )
    return folder


def _board_id(board: Path, create: bool) -> str | None:
    """The board's public id (``board.id``: 32 hex digits); made when ``create`` and absent."""
    path = Path(board) / BOARD_ID_FILE
    text = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
    if len(text) == 32 and all(c in "0123456789abcdef" for c in text):
        return text
    if not create:
        return None
    ensure_board(Path(board))
    text = secrets.token_hex(16)
    write_atomic(path, text + "\n")
    return text


def _write_key(path: Path, key: str) -> None:
    """``key`` at ``path``, mode 0600, whole or not at all (never over an existing one)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(key + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)  # fails if another process made it first: theirs is kept
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _read_key(path: Path) -> bytes:
    return path.read_text(encoding="utf-8").strip().encode() if path.is_file() else b""


def board_key(board: Path, create: bool = False) -> bytes | None:
    """The board's sealing key, kept in :func:`keys_folder` under the board's id; made when
    ``create`` and absent (0600, whole or not at all). An older board's
    ``<board>/verification.key`` is moved there first."""
    board = Path(board)
    legacy = board / KEY_FILE
    old = _read_key(legacy)
    board_id = _board_id(board, create or bool(old))
    if board_id is None:
        return None
    path = keys_folder() / f"{board_id}.key"
    if old:
        _write_key(path, old.decode())
        legacy.unlink(missing_ok=True)
    elif legacy.exists():  # left empty by an older version killed making it
        legacy.unlink(missing_ok=True)
    key = _read_key(path)
    if not key and create:
        _write_key(path, secrets.token_hex(32))
        key = _read_key(path)
    return key or None


def _mac(document: Mapping[str, Any], key: bytes) -> str:
    body = {k: v for k, v in document.items() if k != "seal"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def seal(document: dict, key: bytes) -> dict:
    """``document`` with its seal (an HMAC of everything else under the board's key)."""
    return {**document, "seal": _mac(document, key)}


def sealed(document: Mapping[str, Any], key: bytes | None) -> bool:
    return key is not None and hmac.compare_digest(str(document.get("seal")), _mac(document, key))


# --------------------------------------------------------------------------- records
def record_path(board: Path, entry_id: str) -> Path:
    return Path(board) / "records" / f"{entry_id}.json"


def _read_json(path: Path) -> tuple[bytes, Any]:
    try:
        if path.stat().st_size > MAX_RECORD_FILE_BYTES:
            raise RecordError(f"{path.name} is over {MAX_RECORD_FILE_BYTES:,} bytes")
        data = path.read_bytes()
        return data, loads(data, path.name, max_values=10_000_000, max_depth=32)
    except (OSError, BoundsError) as error:
        raise RecordError(str(error)) from None


def _index(records: Path, key: bytes | None) -> dict[str, dict] | None:
    """The sealed index of the board's records (entry id -> its record's event count and
    sha256); None when the board has none yet."""
    path = records / INDEX_FILE
    if not path.is_file():
        legacy = records / LEGACY_INDEX_FILE
        if not legacy.is_file():
            return None
        _, document = _read_json(legacy)
        if not isinstance(document, dict) or document.get("format") != INDEX_FORMAT:
            return None  # an entry called "index"'s record, not an older board's index
        path = legacy
    else:
        _, document = _read_json(path)
    if not isinstance(document, dict) or document.get("format") != INDEX_FORMAT:
        raise RecordError(f"{INDEX_FILE} is not a record index of this package")
    if not sealed(document, key):
        raise RecordError(f"the board's {INDEX_FILE} is not sealed by this board's key")
    entries = document.get("entries")
    return entries if isinstance(entries, dict) else {}


def _indexed(path: Path, entry_id: str, data: bytes | None, key: bytes | None) -> None:
    """Refuse a record the board's index does not list as it is (or a listed one that is
    gone): a removed, rolled back or hand-made record."""
    index = _index(path.parent, key)
    if index is None:
        if data is not None:
            raise RecordError(f"the board's {INDEX_FILE} is missing: {path.name} cannot be checked")
        return
    listed = index.get(entry_id)
    if data is None:
        if listed:
            raise RecordError(
                f"the board's index lists a record of {listed.get('events')} event(s) for it, but "
                f"{path.name} is gone (removed?)"
            )
        return
    if not isinstance(listed, dict) or listed.get("sha256") != _sha256(data):
        raise RecordError(
            f"{path.name} is not the record the board last wrote (its index says otherwise: "
            "removed, rolled back, or put there by hand)"
        )


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _drop_legacy_index(records: Path) -> None:
    """Remove an older board's ``index.json`` once :data:`INDEX_FILE` holds the index (never
    the record of an entry called ``index``)."""
    legacy = records / LEGACY_INDEX_FILE
    if not legacy.is_file():
        return
    try:
        _, document = _read_json(legacy)
    except RecordError:
        return
    if isinstance(document, dict) and document.get("format") == INDEX_FORMAT:
        legacy.unlink()


def load(path: Path, entry_id: str, key: bytes | None, *, trusted: bool = False) -> list[dict]:
    """The events of the record at ``path`` (empty when there is none), or a
    :class:`RecordError` saying why it is not the board's record of ``entry_id``: not JSON,
    another format, another entry's, or (unless ``trusted``: the package's own files) not
    sealed by ``key``, or not the one the board's index lists (removed, rolled back, made by
    hand)."""
    if not path.is_file():
        if not trusted:
            _indexed(path, entry_id, None, key)
        return []
    data, document = _read_json(path)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise RecordError(f"{path.name} is not a board record of this package ({FORMAT})")
    if document.get("entry") != entry_id:
        raise RecordError(f"{path.name} is the record of entry {str(document.get('entry'))[:80]!r}")
    if not trusted and not sealed(document, key):
        raise RecordError(f"{path.name} is not sealed by this board's key")
    if not trusted:
        _indexed(path, entry_id, data, key)
    events = document.get("events")
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise RecordError(f"{path.name} holds no list of events")
    return events


def write(path: Path, entry_id: str, events: list[dict], key: bytes | None) -> dict:
    """Write the record of ``entry_id`` (sealed with ``key``, and listed in the board's sealed
    index; unsealed when None: the package's own files), atomically; returns the document.
    Called with the board's lock held."""
    document = {"format": FORMAT, "entry": entry_id, "events": events}
    if key is not None:
        document = seal(document, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    if key is not None:
        try:
            index = _index(path.parent, key) or {}
        except RecordError:  # an index that is not the board's: made again from what is written
            index = {}
        index[entry_id] = {"events": len(events), "sha256": _sha256(data)}
        listing = seal({"format": INDEX_FORMAT, "entries": dict(sorted(index.items()))}, key)
        write_atomic(path, data)
        write_atomic(path.parent / INDEX_FILE, json.dumps(listing, indent=1) + "\n")
        _drop_legacy_index(path.parent)
    else:
        write_atomic(path, data)
    return document


# --------------------------------------------------------------------------- the badge
def badge(
    events: list[dict], hashes: Mapping[str, str] | None, power: float = 0.0, gain: float = 1.0
) -> dict[str, Any]:
    """What the site shows of an entry whose files hash to ``hashes`` (None: events the
    board's ledger bound to the entry's content digest, which no file change keeps), from its
    record's events: ``verified`` (True, False, or None when never verified), ``problems``, the latest
    verification's numbers, ``replay`` (from the latest event that replayed these very files:
    an ``add`` or a verification), and the history: ``verifications``, ``failed`` (k of n),
    ``overrides``.

    The rule: verified when the latest verification passed, binds these files and had a
    sample of at least ``power`` against a forgery worth at most ``gain`` (a smaller sample,
    ``verify --sample N``, or one sized for a larger forgery, ``verify --gain 0.5``, leaves
    the entry unbadged: ``verified`` None, ``weak`` True), and no verification since the latest
    override failed; a failure sticks until an override."""
    verifications = [e for e in events if e.get("event") == "verification"]
    overrides = [e for e in events if e.get("event") == "override"]
    failed = [e for e in verifications if e.get("verified") is not True]
    sticking = _sticking(events)
    shown: dict[str, Any] = {
        "verified": None,
        "problems": [],
        "replay": _last_replay(events, hashes),
        "verifications": len(verifications),
        "failed": len(failed),
        "overrides": [{"at": o.get("at"), "reason": o.get("reason")} for o in overrides],
    }
    if not verifications:
        return shown
    latest = verifications[-1]
    for key in ("regenerated", "sample", "models", "secret_seed", "at"):
        shown[key] = latest.get(key)
    differ = "" if hashes is None else changed(latest.get("files"), hashes)
    if sticking:
        first = sticking[0]
        why = (first.get("problems") or ["it did not reproduce"])[0]
        since = " since the latest override" if overrides else ""
        shown.update(
            verified=False,
            problems=[
                f"a verification{since} failed ({first.get('at')}: {why}); a failure stands "
                "until a maintainer overrides it with a reason",
                *[p for e in sticking for p in e.get("problems", [])][1:],
            ],
        )
    elif differ:
        shown.update(verified=False, problems=["changed since it was verified: " + differ])
    elif not _strong(latest.get("sample"), power, gain):
        shown["weak"] = True  # passed, on a sample too small for the board's guarantee
    else:
        shown["verified"] = True
    return shown


def _sticking(events: list[dict]) -> list[dict]:
    """The failed verifications since the latest override (all of them when there is none):
    a failure sticks until an override."""
    last_override = max(
        (i for i, e in enumerate(events) if e.get("event") == "override"), default=-1
    )
    return [
        e
        for i, e in enumerate(events)
        if i > last_override and e.get("event") == "verification" and e.get("verified") is not True
    ]


def _last_replay(events: list[dict], hashes: Mapping[str, str] | None) -> dict | None:
    """The ``replay`` of the latest event (an add or a verification) that replayed files
    hashing to ``hashes`` (None: any files)."""
    replayed = [
        e
        for e in events
        if e.get("event") in ("added", "verification")
        and (hashes is None or e.get("files") == dict(hashes))
        and isinstance(e.get("replay"), dict)
    ]
    return replayed[-1]["replay"] if replayed else None


def _strong(sample: Any, power: float, gain: float) -> bool:
    """Whether a verification's sample meets the board's guarantee: a forgery worth ``gain``
    (or more) caught with probability ``power`` (or more). Its power was computed at its own
    gain; a larger forgery is easier to catch, so one sized for a gain above ``gain`` says
    nothing of the guarantee."""
    sample = sample if isinstance(sample, dict) else {}
    try:
        its_power, its_gain = float(sample.get("power") or 0.0), float(sample.get("gain") or 1.0)
    except (TypeError, ValueError):
        return False
    return its_power >= power and its_gain <= gain


def changed(recorded: Any, now: Mapping[str, str]) -> str:
    recorded = recorded if isinstance(recorded, dict) else {}
    names = (set(recorded) ^ set(now)) | {f for f in now if recorded.get(f) != now[f]}
    return ", ".join(sorted(names))
