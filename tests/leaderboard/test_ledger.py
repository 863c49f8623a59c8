"""The board's ledger (issue 49, step 2): entries known by a digest of what is scored, and an
append-only, hash-chained, sealed ledger that decides precedence, duplicates and where a
verification's outcome belongs. Attacks by class: identity (names, ids, folders, dates) and
the ledger's own files (edited, removed, moved, cut back, spliced, rolled back)."""

from __future__ import annotations

import gzip
import json
import re
import shutil

import pytest
from board_helpers import ledger_of

from llm_marl_envs.leaderboard import ledger as board_ledger, records as board_records
from llm_marl_envs.leaderboard.rules import identity, shipped_entries, standing

KEY = b"k" * 64


def event(kind: str, digest: str | None, entry: str = "e", **fields) -> dict:
    return {"event": kind, "digest": digest, "entry": entry, **fields}


@pytest.fixture
def board(tmp_path):
    board = tmp_path / "board"
    board.mkdir()
    board_ledger.append(board, KEY, [event("added", "sha256:a", "first")])
    board_ledger.append(board, KEY, [event("verification", "sha256:a", "first", verified=False)])
    board_ledger.append(board, KEY, [event("added", "sha256:b", "second")])
    return board


def lines(board):
    return (board / board_ledger.LEDGER_FILE).read_bytes().splitlines(keepends=True)


def write(board, rows):
    (board / board_ledger.LEDGER_FILE).write_bytes(b"".join(rows))


# --------------------------------------------------------------------------- the chain
def test_the_chain_reads_back_with_its_head(board):
    ledger = board_ledger.read(board, KEY)
    assert [line["n"] for line in ledger.lines] == [0, 1, 2]
    assert ledger.lines[0]["prev"] == board_ledger.GENESIS
    assert ledger.position("sha256:a") == 0 and ledger.position("sha256:b") == 2
    assert [e["event"] for e in ledger.events("sha256:a")] == ["added", "verification"]
    assert ledger.shown() == {"length": 3, "head": ledger.head}
    head = json.loads((board / board_ledger.HEAD_FILE).read_text())
    assert head["length"] == 3 and head["head"] == ledger.head


@pytest.mark.parametrize(
    ("attack", "words"),
    [
        ("edit", "line 1 is not sealed"),  # a failure turned into a pass
        ("remove middle", "line 1 is not line 1"),
        ("swap", "line 0 is not line 0"),
        ("cut back", "holds 2 line(s), but its head says 3"),
        ("remove head", "ledger.head.json is missing"),
        ("remove ledger", "is gone (removed?)"),
        ("other key", "line 0 is not sealed by this board's key"),
        ("resealed line, same key, broken link", "does not follow the line before it"),
    ],
)
def test_a_ledger_changed_by_hand_is_refused_naming_the_line(board, attack, words):
    rows = lines(board)
    if attack == "edit":
        line = json.loads(rows[1])
        line["verified"] = True
        rows[1] = json.dumps(line).encode() + b"\n"
        write(board, rows)
    elif attack == "remove middle":
        write(board, [rows[0], rows[2]])
    elif attack == "swap":
        write(board, [rows[1], rows[0], rows[2]])
    elif attack == "cut back":
        write(board, rows[:2])
    elif attack == "remove head":
        (board / board_ledger.HEAD_FILE).unlink()
    elif attack == "remove ledger":
        (board / board_ledger.LEDGER_FILE).unlink()
    elif attack == "other key":
        other = board.parent / "other"
        board_ledger.append(other, b"x" * 64, [event("added", "sha256:a", "first")])
        write(board, [lines(other)[0], *rows[1:]])
    else:  # a key holder's line whose link is wrong (written around the lock)
        line = json.loads(rows[2])
        line.pop("seal")
        line["prev"] = board_ledger.GENESIS
        rows[2] = json.dumps(board_records.seal(line, KEY)).encode() + b"\n"
        write(board, rows)
    with pytest.raises(board_ledger.LedgerError, match=re.escape(words)):
        board_ledger.read(board, KEY)
    with pytest.raises(board_ledger.LedgerError):
        board_ledger.append(board, KEY, [event("verification", "sha256:a", verified=True)])


def test_a_line_torn_by_a_crash_is_dropped_at_the_next_append(board):
    rows = lines(board)
    write(board, [*rows, b'{"n": 3, "prev": "sha'])  # the process died mid-write
    assert len(board_ledger.read(board, KEY)) == 3
    ledger = board_ledger.append(board, KEY, [event("verification", "sha256:b", verified=True)])
    assert len(ledger) == 4 and len(board_ledger.read(board, KEY)) == 4
    assert lines(board)[:3] == rows


def test_the_seals_cannot_be_checked_without_the_key(board):
    with pytest.raises(board_ledger.LedgerError, match="key is not in the keys folder"):
        board_ledger.read(board, None)


def test_a_whole_rollback_is_a_valid_ledger_but_a_shorter_one(board):
    """What files alone cannot tell: ledger and head put back together to an earlier state.
    The head and length the site published before show it."""
    before = {
        n: (board / n).read_bytes() for n in (board_ledger.LEDGER_FILE, board_ledger.HEAD_FILE)
    }
    published = board_ledger.read(board, KEY).shown()
    board_ledger.append(board, KEY, [event("verification", "sha256:b", verified=False)])
    later = board_ledger.read(board, KEY).shown()
    for name, data in before.items():
        (board / name).write_bytes(data)
    now = board_ledger.read(board, KEY).shown()
    assert now == published and now["length"] < later["length"]


def test_a_ledger_holds_only_what_the_bounds_allow(board):
    rows = lines(board)
    write(board, [*rows, b"[" * 100 + b"]" * 100 + b"\n"])
    with pytest.raises(board_ledger.LedgerError, match="line 3"):
        board_ledger.read(board, KEY)


# --------------------------------------------------------------------------- identity
@pytest.fixture
def entry(tmp_path):
    folder = tmp_path / "entry"
    shutil.copytree(shipped_entries() / "random", folder)
    (folder / "verification.json").unlink()
    return folder


def edit_results(folder, edit):
    path = folder / "results.json"
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))


@pytest.mark.parametrize(
    "label",
    [
        lambda r: r.update(board={"id": "elsewhere", "name": "another name", "kind": "baseline"}),
        lambda r: r.update(entry="renamed"),
        lambda r: r["manifest"].update(finished="2030-01-01T00:00:00+00:00"),
        lambda r: r.update(overall={"mean": 1.0, "lo": 1.0, "hi": 1.0, "n": 1}),
    ],
    ids=["board block", "entry name", "a date", "stated scores"],
)
def test_the_digest_ignores_labels(entry, label):
    """An id, a name, a date or the scores results.json states are labels (the board scores
    the episodes again): the digest, and so the record, stays."""
    before = identity(entry, strict=True).digest
    edit_results(entry, label)
    (entry.parent / "moved").mkdir()
    moved = entry.rename(entry.parent / "moved" / "other-folder-name")
    assert identity(moved, strict=True).digest == before


@pytest.mark.parametrize(
    "content",
    [
        lambda f: edit_results(
            f, lambda r: r["manifest"]["tasks"]["maze"]["seats"].update(gnome_0="scripted")
        ),
        lambda f: edit_results(
            f, lambda r: r["manifest"].update(policies={"random": {"model_id": "x"}})
        ),
        lambda f: edit_results(
            f, lambda r: r["manifest"]["tasks"]["maze"].update(data_hash="sha256:0")
        ),
        "one episode line",
    ],
    ids=["seats", "model claims", "data hash", "one episode line"],
)
def test_the_digest_holds_what_is_scored_and_who_played(entry, content):
    before = identity(entry, strict=True).digest
    if content == "one episode line":
        path = entry / "episodes" / "maze.jsonl.gz"
        with gzip.open(path, "rt") as handle:
            rows = handle.read().splitlines()
        rows[0] = json.dumps(json.loads(rows[0]))  # the same values, other bytes
        with gzip.open(path, "wt") as handle:
            handle.write("\n".join(rows) + "\n")
    else:
        content(entry)
    after = identity(entry)
    assert after is None or after.digest != before


def test_precedence_follows_the_ledger_never_a_label(board, tmp_path):
    """Attack: rename an early entry (id, name, folder) or give a later one an id that sorts
    first: the order is the ledger's, by content."""
    ledger = board_ledger.read(board, KEY)
    folder = tmp_path / "f"
    assert standing(ledger, "zzz", folder, "sha256:a") < standing(ledger, "aaa", folder, "sha256:b")
    assert standing(ledger, "aaa", folder, "sha256:b") < standing(ledger, "000", folder, "sha256:c")
    # two folders with one content: the one under the id the ledger last recorded comes first
    assert standing(ledger, "first", folder, "sha256:a") < standing(
        ledger, "0-copy", folder, "sha256:a"
    )


# --------------------------------------------------------------------------- older boards
def test_an_older_boards_records_become_its_ledger_in_time_order(tmp_path, entry):
    """A board of the previous version (sealed records/<id>.json and their index) is read as a
    ledger, bound to the digest of the folder now at each id, written out at the next append;
    records/ is left as it was."""
    board = tmp_path / "old"
    shutil.copytree(entry, board / "entries" / "old-entry")
    key = board_records.board_key(board, create=True)
    first = {"event": "added", "at": "2026-11-01T00:00:00+00:00", "replay": {"replayed": 1}}
    failed = {"event": "verification", "at": "2026-11-03T00:00:00+00:00", "verified": False}
    gone = {"event": "added", "at": "2026-11-02T00:00:00+00:00"}
    board_records.write(
        board_records.record_path(board, "old-entry"), "old-entry", [first, failed], key
    )
    board_records.write(board_records.record_path(board, "removed"), "removed", [gone], key)
    records = sorted(p.name for p in (board / "records").iterdir())
    ledger = ledger_of(board)
    assert ledger.migrated and [(e["entry"], e["at"]) for e in ledger.lines] == [
        ("old-entry", first["at"]),
        ("removed", gone["at"]),
        ("old-entry", failed["at"]),
    ]
    digest = identity(board / "entries" / "old-entry", strict=True).digest
    assert [e["event"] for e in ledger.events(digest)] == ["added", "verification"]
    assert ledger.lines[1]["digest"] is None  # no folder: no content to bind
    board_ledger.append(board, key, [event("override", digest, "old-entry", reason="r")])
    written = ledger_of(board)
    assert not written.migrated and len(written) == 4
    assert sorted(p.name for p in (board / "records").iterdir()) == records


def test_a_ledger_is_read_within_its_bounds(board, monkeypatch):
    """Resources: a ledger over its size, or a line over its length, is refused before it is
    parsed (only the key's holder can write one: these guard against a file put there)."""
    monkeypatch.setattr(board_ledger, "MAX_LINE_BYTES", 64)
    with pytest.raises(board_ledger.LedgerError, match="line 0 is over 64 bytes"):
        board_ledger.read(board, KEY)
    monkeypatch.setattr(board_ledger, "MAX_LINE_BYTES", 2**20)
    monkeypatch.setattr(board_ledger, "MAX_LEDGER_BYTES", 100)
    with pytest.raises(board_ledger.LedgerError, match="is over 100 bytes"):
        board_ledger.read(board, KEY)
