"""Identity attacks on a real board (issue 49, step 6): variants of the class, each tried with
the public commands and a text editor, as a dishonest submitter would. The board knows an
entry by its content; nothing a submitter names (an id, a name, a folder, a date, a file's
bytes) moves its place, splits its record or lends it another's."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
from board_helpers import events_of, ledger_of

from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard import ledger as board_ledger
from llm_marl_envs.leaderboard.board import (
    LeaderboardError,
    add_entry,
    build,
    build_board,
    override_entry,
    verify_entry,
)

TASKS = ["gsm8k", "maze"]
QUIET = {"write": lambda line: None}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    root = tmp_path_factory.mktemp("lite")
    for name, team in (
        ("first", {"0": "scripted", "1": "random"}),
        ("second", {"0": "random", "1": "scripted"}),
    ):
        evaluate(
            load_suite("lite"), Team.parse(None, team), root / name, tasks=TASKS, progress=False
        )
    return root


@pytest.fixture
def board(evaluated, tmp_path):
    board = tmp_path / "board"
    add_entry(evaluated / "first", board, entry_id="first", name="first team", kind="baseline")
    add_entry(evaluated / "second", board, entry_id="second", name="second team", kind="baseline")
    return board


def shown(board):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = build_board("lite", board, shipped=False)
    return [e["id"] for e in data["entries"]], [str(w.message) for w in caught], data


def edit_results(folder, edit):
    path = folder / "results.json"
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))


def test_renaming_the_earlier_entry_never_moves_precedence(board):
    """Round 3's attack: edit an early entry's name after others were verified, so that a
    later one's clash sends the victim out. The order is the ledger's, by content: the entry
    that arrived later gives way, whatever the names say now."""
    edit_results(
        board / "entries" / "second",
        lambda r: r["board"].update(name="first team"),  # the victim's name, on the later one
    )
    ids, said, _ = shown(board)
    assert ids == ["first"] and any(
        "entry second" in w and "cannot be told apart" in w for w in said
    )
    # and the other way round: the earlier entry takes the later one's name
    edit_results(board / "entries" / "second", lambda r: r["board"].update(name="second team"))
    edit_results(board / "entries" / "first", lambda r: r["board"].update(name="second team"))
    ids, said, _ = shown(board)
    assert ids == ["first"] and any("entry second" in w for w in said)


@pytest.mark.parametrize("copy_id", ["aaa", "zzz", "first.tmp2", "0"])
def test_a_byte_copy_under_any_id_never_takes_the_originals_place(board, copy_id):
    """Two folders with one content: the one under the id the ledger recorded stands; the copy,
    whatever its id sorts as, gives way (a board block naming the copy's id changes nothing:
    the content is the same)."""
    copy = shutil.copytree(board / "entries" / "first", board / "entries" / copy_id)
    edit_results(copy, lambda r: r["board"].update(id=copy_id, name=f"copy {copy_id}"))
    ids, said, _ = shown(board)
    assert "first" in ids and copy_id not in ids
    assert any(f"entry {copy_id}" in w and "its content is entry 'first''s" in w for w in said)


def test_ids_named_like_the_boards_own_files_are_labels_only(board, evaluated, tmp_path):
    """An id can never touch the ledger, its head, the key's id or the lock: entries live in
    entries/ and the board's files beside it."""
    fresh = tmp_path / "fresh"
    for entry_id in ("ledger.jsonl", "ledger.head.json", "board.id"):
        target = tmp_path / entry_id
        shutil.copytree(evaluated / "second", target)
        add_entry(target, fresh, entry_id=entry_id, name=f"entry {entry_id}", kind="baseline")
        shutil.rmtree(fresh / "entries" / entry_id)  # (each its own: the next would be its copy)
    ledger = ledger_of(fresh)
    assert [line["entry"] for line in ledger.lines] == [
        "ledger.jsonl",
        "ledger.head.json",
        "board.id",
    ]
    assert len((fresh / "board.id").read_text().strip()) == 32


def test_a_verified_entry_renamed_keeps_its_badge_and_a_failure_stays_bound(board):
    """Renames are free: the verification follows the content to its new id and name."""
    verify_entry("first", board, **QUIET)
    edit_results(
        board / "entries" / "first", lambda r: r["board"].update(id="renamed", name="renamed team")
    )
    (board / "entries" / "first").rename(board / "entries" / "renamed")
    ids, _, data = shown(board)
    entry = {e["id"]: e for e in data["entries"]}["renamed"]
    assert entry["verified"] is True and "renamed" in ids
    assert [e["event"] for e in events_of(board, "renamed")] == ["added", "verification"]
    site = build(board.parent / "site", board=board, shipped=False).parent
    pages = [p.read_text(encoding="utf-8") for p in site.rglob("entries/*.html")]
    assert any(f'<code class="digest">{entry["digest"]}</code>' in page for page in pages)


def test_the_later_of_two_unrecorded_copies_gives_way_by_content_not_by_date(board, evaluated):
    """Folders the ledger never saw are ordered by digest: a date or id cannot move them."""
    for name in ("zz-early", "aa-late"):
        target = board / "entries" / name
        shutil.copytree(evaluated / "second", target)
        edit_results(target, lambda r, n=name: r["manifest"].update(finished=f"2000-01-01 {n}"))
    ids, said, _ = shown(board)
    assert "second" in ids and "zz-early" not in ids and "aa-late" not in ids  # both copies


def test_an_override_never_lends_one_content_the_record_of_another(board):
    """An override is bound to the content it was given for: a later change to the folder is
    other content, refused until its own override."""
    override_entry("first", board, reason="looked at by hand")
    digest = events_of(board, "first")[-1]["digest"]
    edit_results(
        board / "entries" / "first",
        lambda r: r["manifest"]["tasks"]["maze"]["seats"].update(gnome_0="random"),
    )
    with pytest.raises(LeaderboardError, match="changed since the board recorded it"):
        verify_entry("first", board, **QUIET)
    assert [e["event"] for e in ledger_of(board).events(digest)] == ["added", "override"]


def test_a_ledger_spliced_from_a_copy_of_the_board_is_refused(board, tmp_path):
    """Two copies of one board (one key) diverge; a line of one pasted into the other breaks
    the chain there."""
    other = shutil.copytree(board, tmp_path / "other")
    verify_entry("first", other, sample=1, **QUIET)
    verify_entry("second", board, sample=1, **QUIET)
    theirs = (other / board_ledger.LEDGER_FILE).read_bytes().splitlines(keepends=True)[-1]
    ours = (board / board_ledger.LEDGER_FILE).read_bytes().splitlines(keepends=True)
    (board / board_ledger.LEDGER_FILE).write_bytes(b"".join([*ours[:-1], theirs]))
    with pytest.raises(
        board_ledger.LedgerError, match="line 2 of ledger.jsonl is not the one its head names"
    ):
        ledger_of(board)
