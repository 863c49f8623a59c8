"""The board against concurrent runs and kills (issue 33): one id added by several processes at
once, an ``add`` killed before its final rename, a damaged ``results.json``, a result whose
items x samples are not the suite's plan, a full disk."""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings

import pytest

from llm_marl_envs.cli import main
from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard import board as leaderboard
from llm_marl_envs.leaderboard.board import (
    LeaderboardError,
    add_entry,
    build_board,
    entries,
    shipped_entries,
)

TASKS = ["gsm8k", "maze"]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """The scripted players with a random GSM8K pioneer (a team no shipped entry plays)."""
    out = tmp_path_factory.mktemp("lite") / "scripted"
    team = Team.parse(None, {"0": "scripted", "pioneer_0": "random"})
    evaluate(load_suite("lite"), team, out, tasks=TASKS, progress=False)
    return out


def added(board):
    """The board's own entries (the shipped ones left out)."""
    return sorted(set(entries(board)) - set(entries(None)))


@pytest.mark.slow
def test_concurrent_adds_of_one_id_publish_one_whole_entry(evaluated, tmp_path):
    board = tmp_path / "board"
    barrier = threading.Barrier(4)
    outcomes = []

    def add(number):
        barrier.wait()
        try:
            add_entry(evaluated, board, entry_id="x", name=f"scripted {number}")
            outcomes.append("added")
        except Exception as error:  # noqa: BLE001 - every outcome is asserted below
            outcomes.append(f"{type(error).__name__}: {error}")

    threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 4 and outcomes.count("added") == 1, outcomes
    refusal = "LeaderboardError: the board already has an entry 'x'; choose --id"
    assert all(o in ("added", refusal) for o in outcomes), outcomes
    assert added(board) == ["x"]
    assert sorted(p.name for p in (board / "entries").iterdir()) == ["x"]  # no temp left
    assert sorted(p.name for p in (board / "entries" / "x" / "episodes").iterdir()) == [
        "gsm8k.jsonl.gz",
        "gsm8k.meta.json",
        "maze.jsonl.gz",
        "maze.meta.json",
    ]
    ids = [e["id"] for e in build_board("lite", board, shipped=False)["entries"]]
    assert ids == ["x"]


@pytest.mark.slow
def test_an_add_killed_before_its_final_rename_publishes_nothing(evaluated, tmp_path):
    """A real ``kill -9`` of an ``add`` process just before it renames the entry into place:
    no entry (no phantom ``x.tmp`` either), and the next add of that id succeeds and removes
    what the killed one left."""
    board = tmp_path / "board"
    code = (
        "import os, signal\n"
        "from llm_marl_envs.leaderboard.board import add_entry\n"
        "real = os.rename\n"
        "def rename(src, dst, *a, **k):\n"
        "    if os.path.basename(str(dst)) == 'x':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real(src, dst, *a, **k)\n"
        "os.rename = rename\n"
        f"add_entry({str(evaluated)!r}, {str(board)!r}, entry_id='x')\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600)
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    left = list((board / "entries").iterdir())
    assert left and all(p.name.startswith(".tmp-x-") for p in left)  # written, not published
    assert added(board) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a warning about it
        assert build_board("lite", board, shipped=False)["entries"] == []
    add_entry(evaluated, board, entry_id="x")
    assert sorted(p.name for p in (board / "entries").iterdir()) == ["x"]


def test_entries_lists_only_whole_entries(evaluated, tmp_path):
    board = tmp_path / "board"
    add_entry(evaluated, board, entry_id="x")
    for name in ("x.tmp", ".tmp-y-123-abc", "y.tmp"):  # an older add's temp, a hidden one
        shutil.copytree(board / "entries" / "x", board / "entries" / name)
    cut = board / "entries" / "z"
    shutil.copytree(board / "entries" / "x", cut)
    text = (cut / "results.json").read_text()
    (cut / "results.json").write_text(text[: len(text) // 2])  # killed mid-write (old code)
    assert added(board) == ["x", "z"]  # listed; what is in a folder is checked by its readers
    with pytest.warns(UserWarning, match=r"entry z .* left out: .*z.results\.json: not JSON"):
        assert [e["id"] for e in build_board("lite", board, shipped=False)["entries"]] == ["x"]
    with pytest.raises(LeaderboardError, match="cannot end with '.tmp'"):
        add_entry(evaluated, board, entry_id="w.tmp")


# --------------------------------------------------------------------------- the plan
def test_add_refuses_a_task_listed_without_its_episodes(evaluated, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(evaluated, copy)
    (copy / "episodes" / "maze.jsonl").unlink()
    with pytest.raises(
        LeaderboardError,
        match=r"task maze: listed in results.json but it has no episodes file",
    ):
        add_entry(copy, tmp_path / "board", entry_id="x")


def test_add_refuses_results_whose_items_are_not_the_plan(evaluated, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(evaluated, copy)
    results = json.loads((copy / "results.json").read_text())
    results["tasks"]["maze"]["samples"] = 2
    (copy / "results.json").write_text(json.dumps(results))
    with pytest.raises(
        LeaderboardError, match=r"task maze: results.json scores 16 items x 2 samples; the suite"
    ):
        add_entry(copy, tmp_path / "board", entry_id="x")


@pytest.fixture(scope="module")
def board_once(evaluated, tmp_path_factory):
    board = tmp_path_factory.mktemp("board") / "board"
    add_entry(evaluated, board, entry_id="x")
    return board


@pytest.fixture
def board(board_once, tmp_path):
    """A board of the evaluation, each test its own copy (adding it is the costly part)."""
    return shutil.copytree(board_once, tmp_path / "board")


def verify_fails(board, capsys, words):
    assert main(["leaderboard", "verify", "x", "--board", str(board)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and words in err, err


def test_verify_refuses_an_entry_that_lost_an_episode_line(board, capsys):
    path = board / "entries" / "x" / "episodes" / "maze.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    path.write_bytes(gzip.compress(b"".join(lines[1:])))
    verify_fails(board, capsys, "the plan's episode 1, seed-0 sample 0, is missing before it")
    path.write_bytes(gzip.compress(b"".join(lines[:-1])))
    verify_fails(board, capsys, "task maze: 1 of its 16 episodes are missing")


def test_verify_names_an_episodes_file_cut_short(board, capsys):
    path = board / "entries" / "x" / "episodes" / "maze.jsonl.gz"
    path.write_bytes(path.read_bytes()[:-200])
    verify_fails(board, capsys, f"{path} cannot be read")


def test_verify_refuses_a_task_without_its_episodes_file(board, capsys):
    (board / "entries" / "x" / "episodes" / "maze.jsonl.gz").unlink()
    verify_fails(board, capsys, "task maze: listed in results.json but it has no episodes file")


# --------------------------------------------------------------------------- failed writes
def test_a_full_disk_during_add_is_one_line_and_leaves_the_board_unchanged(
    evaluated, tmp_path, monkeypatch, capsys
):
    board = tmp_path / "board"

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(leaderboard, "write_synced", full)
    argv = ["leaderboard", "add", str(evaluated), "--id", "x", "--board", str(board)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "No space left on device" in err and "nothing was changed" in err
    assert list((board / "entries").iterdir()) == []


def test_the_losing_concurrent_add_is_one_line(evaluated, tmp_path, capsys):
    board = tmp_path / "board"
    add_entry(evaluated, board, entry_id="x")
    argv = ["leaderboard", "add", str(evaluated), "--id", "x", "--board", str(board)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == "llm-marl: error: the board already has an entry 'x'; choose --id"


def test_shipped_entries_meet_the_rules_and_the_plan():
    from llm_marl_envs.leaderboard.entry import open_entry

    for entry_id, folder in entries(None).items():
        assert folder.parent == shipped_entries()
        with open_entry(folder) as entry:
            assert leaderboard.entry_problems(entry) == [], entry_id
            assert leaderboard.board_meta(entry, entry_id)[0]
            assert sum(len(e) for e in entry.read_all().values()) == 114
    assert os.path.isdir(shipped_entries())


def test_a_key_left_empty_by_a_killed_verify_is_made_again(tmp_path):
    from llm_marl_envs.leaderboard.records import BOARD_ID_FILE, KEY_FILE, board_key, keys_folder

    (tmp_path / KEY_FILE).write_text("")  # an older version, killed before it wrote the key
    assert board_key(tmp_path) is None  # no seal is checked against an empty key
    key = board_key(tmp_path, create=True)
    board_id = (tmp_path / BOARD_ID_FILE).read_text().strip()
    kept = keys_folder() / f"{board_id}.key"
    assert len(key) == 64 and kept.stat().st_mode & 0o777 == 0o600
    assert board_key(tmp_path, create=True) == key  # kept once made
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitignore", BOARD_ID_FILE]
    assert [p.name for p in keys_folder().glob(f"*{board_id}*")] == [kept.name]  # no temporary
