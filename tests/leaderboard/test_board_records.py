"""What a board remembers of an entry (issue 38): sealed records, the badge rule (a failure
sticks until an override, a changed file loses the badge), the board's .gitignore; and
parsing JSON within bounds."""

from __future__ import annotations

import json

import pytest

from llm_marl_envs.leaderboard import records as board_records
from llm_marl_envs.core.bounded_json import BoundsError, count, loads

FILES = {"results.json": "sha256:aa", "episodes/maze.jsonl.gz": "sha256:bb"}


def verification(ok: bool, at: str, files=FILES) -> dict:
    return {
        "event": "verification",
        "at": at,
        "verified": ok,
        "problems": [] if ok else [f"maze seed-{at[-2:]} does not reproduce"],
        "files": dict(files),
        "replay": {"replayed": 16, "episodes": 16},
        "regenerated": 4,
    }


def override(at: str) -> dict:
    return {"event": "override", "at": at, "reason": "checked by hand"}


@pytest.mark.parametrize(
    ("events", "verified", "words"),
    [
        ([], None, ""),
        ([verification(True, "01")], True, ""),
        ([verification(False, "01"), verification(True, "02")], False, "a verification failed"),
        ([verification(False, "01"), verification(True, "02"), override("03")], True, ""),
        (
            [verification(False, "01"), override("02"), verification(False, "03")],
            False,
            "a verification since the latest override failed (03",
        ),
        ([verification(True, "01", {"results.json": "sha256:cc"})], False, "changed since"),
    ],
)
def test_the_badge_rule(events, verified, words):
    shown = board_records.badge(events, FILES)
    assert shown["verified"] is verified
    assert words in " ".join(shown["problems"])
    assert shown["verifications"] == sum(e["event"] == "verification" for e in events)
    assert shown["failed"] == sum(e.get("verified") is False for e in events)


def test_the_replay_count_comes_from_an_event_that_read_these_files():
    added = {"event": "added", "at": "01", "files": FILES, "replay": {"replayed": 16}}
    assert board_records.badge([added], FILES)["replay"] == {"replayed": 16}
    assert board_records.badge([added], {"results.json": "sha256:zz"})["replay"] is None


def test_a_record_is_the_boards_only_when_sealed_and_of_its_entry(tmp_path):
    key = board_records.board_key(tmp_path, create=True)
    path = board_records.record_path(tmp_path, "one")
    board_records.write(path, "one", [verification(True, "01")], key)
    assert board_records.load(path, "one", key)[0]["verified"] is True
    with pytest.raises(board_records.RecordError, match="record of entry 'one'"):
        board_records.load(path, "two", key)
    with pytest.raises(board_records.RecordError, match="not sealed by this board's key"):
        board_records.load(path, "one", b"another board's key")
    document = json.loads(path.read_text())
    document["events"][0]["regenerated"] = 400
    path.write_text(json.dumps(document))
    with pytest.raises(board_records.RecordError, match="not sealed"):
        board_records.load(path, "one", key)
    assert board_records.load(path, "one", None, trusted=True)[0]["regenerated"] == 400
    path.write_text("[" * 1000)
    with pytest.raises(board_records.RecordError, match="nested deeper"):
        board_records.load(path, "one", key)
    assert board_records.load(tmp_path / "absent.json", "one", key) == []


def test_the_board_keeps_its_key_and_lock_out_of_version_control(tmp_path):
    (tmp_path / ".gitignore").write_text("site/\nverification.key\n")
    board_records.ensure_board(tmp_path)
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["site/", "verification.key"]  # the board's own lines are kept
    assert set(board_records.GITIGNORE) <= set(lines) and lines.count("verification.key") == 1
    board_records.ensure_board(tmp_path / "new")
    assert (tmp_path / "new" / ".gitignore").read_text().count("\n") == 4


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (b"[[[[" + b"[" * 30 + b"]" * 34, "nested deeper than 32 levels"),
        (b"[" + b"0," * 20 + b"0]", "more than 10 JSON values"),
        (b'{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}', "more than 10 JSON values"),
        (b"-" + b"9" * 21, "beyond 64 bits"),
        (b"[Infinity]", "Infinity is not a JSON value"),
        (b"-1e400", "too large to be finite"),
        (b'{"\\udfff": 1}', "lone surrogate"),
        (b'"\xff"', "not UTF-8 text"),
        (b"{", "not JSON"),
    ],
)
def test_json_outside_the_bounds_is_one_line_naming_where(text, words):
    with pytest.raises(BoundsError, match=words) as caught:
        loads(text, "file line 3", max_values=10 if b"," in text else 100, max_depth=32)
    assert str(caught.value).startswith("file line 3: ") and "\n" not in str(caught.value)


def test_json_within_the_bounds_is_returned_as_parsed():
    text = json.dumps({"seed": 2**64 - 1, "x": [1.5, None, True, "é"]}).encode()
    assert loads(text, "f", max_values=10, max_depth=3) == json.loads(text)
    assert count({"a": [1, 2], "b": {"c": None}}, "f", max_values=10, max_depth=3) == 9


@pytest.mark.parametrize(
    ("sample", "badged"),
    [
        ({"power": 0.9512, "gain": 0.02}, True),  # the documented guarantee
        ({"power": 0.99, "gain": 0.01}, True),  # a stronger one
        ({"power": 0.999, "gain": 0.5}, False),  # verify --gain 0.5: a tiny sample
        ({"power": 0.9, "gain": 0.02}, False),  # verify --sample N: too few draws
        ({"power": 0.99}, False),  # no gain recorded: no guarantee known
        ({"power": 0.99, "gain": "0.01x"}, False),
        (None, False),
    ],
)
def test_the_badge_needs_the_documented_power_whatever_the_flags(sample, badged):
    """``verify --gain 0.5`` earned the badge: its sample was sized to catch a forgery worth
    half the score. The badge needs the board's own guarantee (a forgery worth GAIN caught with
    probability POWER), whatever gain or sample size the verification was asked for."""
    from llm_marl_envs.leaderboard.verify import GAIN, POWER

    event = {**verification(True, "01"), "sample": sample}
    shown = board_records.badge([event], FILES, POWER, GAIN)
    assert shown["verified"] is (True if badged else None)
    assert shown.get("weak", False) is (not badged)


# --------------------------------------------------------------------------- the key
def test_the_key_never_lives_in_the_board_and_a_git_add_cannot_publish_it(tmp_path):
    """A board in a git repository whose .gitignore negates every ignore line (the attack that
    committed verification.key): after a board's first key, ``git add -A`` tracks no file that
    holds it, because no file in the board does."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    board = repo / "leaderboard"
    board.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (board / ".gitignore").write_text("!verification.key\n!*.key\n!.board.lock\n")
    key = board_records.board_key(board, create=True)
    board_records.write(board_records.record_path(board, "e"), "e", [verification(True, "01")], key)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    tracked = subprocess.run(
        ["git", "-C", str(repo), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "leaderboard/board.id" in tracked and "leaderboard/records/e.json" in tracked
    for name in tracked:
        assert key not in (repo / name).read_bytes(), name
    board_id = (board / board_records.BOARD_ID_FILE).read_text().strip()
    assert (board_records.keys_folder() / f"{board_id}.key").read_bytes().strip() == key


def test_an_older_boards_key_is_moved_out_and_its_records_still_verify(tmp_path):
    key = b"ab" * 32
    (tmp_path / board_records.KEY_FILE).write_bytes(key + b"\n")  # an older version's layout
    path = board_records.record_path(tmp_path, "e")
    board_records.write(path, "e", [verification(True, "01")], key)
    assert board_records.board_key(tmp_path) == key  # read, and moved out on the way
    assert not (tmp_path / board_records.KEY_FILE).exists()
    assert board_records.load(path, "e", board_records.board_key(tmp_path))[0]["verified"]


def test_a_keys_folder_inside_a_git_work_tree_is_refused(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("LLM_MARL_BOARD_KEYS", str(tmp_path / "keys"))
    with pytest.raises(board_records.RecordError, match="inside the git work tree") as caught:
        board_records.board_key(tmp_path / "board", create=True)
    assert "LLM_MARL_BOARD_KEYS" in str(caught.value) and "\n" not in str(caught.value)


# --------------------------------------------------------------------------- ids and files
def test_an_entry_called_index_has_a_record_of_its_own(tmp_path):
    """The records' index was ``records/index.json``: an entry called ``index`` overwrote it
    (and its own record was then the index). Ids are labels that never meet the board's own
    files: the index is ``records/.index.json``, a name no id can take."""
    key = board_records.board_key(tmp_path, create=True)
    for entry_id in ("index", "e", "INDEX"):
        board_records.write(
            board_records.record_path(tmp_path, entry_id), entry_id, [verification(True, "01")], key
        )
    for entry_id in ("index", "e", "INDEX"):
        path = board_records.record_path(tmp_path, entry_id)
        assert board_records.load(path, entry_id, key)[0]["verified"] is True
    listing = json.loads((tmp_path / "records" / board_records.INDEX_FILE).read_text())
    assert sorted(listing["entries"]) == ["INDEX", "e", "index"]


def test_an_older_boards_index_is_read_then_moved(tmp_path):
    key = board_records.board_key(tmp_path, create=True)
    path = board_records.record_path(tmp_path, "e")
    board_records.write(path, "e", [verification(True, "01")], key)
    records = tmp_path / "records"
    (records / board_records.INDEX_FILE).rename(records / board_records.LEGACY_INDEX_FILE)
    assert board_records.load(path, "e", key)[0]["verified"] is True  # the older index holds
    path.write_text(path.read_text().replace('"01"', '"02"'))  # ... and still guards
    with pytest.raises(board_records.RecordError):
        board_records.load(path, "e", key)
    board_records.write(path, "e", [verification(True, "03")], key)
    assert not (records / board_records.LEGACY_INDEX_FILE).exists()
    assert board_records.load(path, "e", key)[0]["at"] == "03"
