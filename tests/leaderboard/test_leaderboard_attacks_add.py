"""A dishonest submitter against ``leaderboard add`` (issue 28): each attack is refused or
shows nothing the attacker wanted, and honest entries still join.

``add`` replays every episode's recorded actions through this package's environments and
scores the entry from the replay alone, so an edited score, an edited record or a record of
an edited environment is refused, naming the task, item and field.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time

import pytest

import llm_marl_envs.envs.gsm8k as gsm8k_env
from llm_marl_envs.evaluation.evaluate import Team, evaluate, load_runs
from llm_marl_envs.evaluation.results import score
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard import board as leaderboard, entry as submission
from llm_marl_envs.leaderboard.board import (
    LeaderboardError,
    add_entry,
    build_board,
    entries,
    shipped_entries,
)

TASKS = ["gsm8k", "maze", "donor"]


#: The scripted players with a random GSM8K pioneer: a team no shipped entry plays (a board
#: refuses a copy of another entry's episodes).
TEAM = {"0": "scripted", "pioneer_0": "random"}


@pytest.fixture(scope="module")
def honest(evaluate_once):
    """An honest lite evaluation of TASKS by the scripted players (and a random GSM8K
    pioneer), shared with the other modules that use it (conftest.py)."""
    return evaluate_once(TASKS, TEAM)


@pytest.fixture
def copy(honest, tmp_path):
    """A copy of the honest evaluation for the attacker to edit."""
    target = tmp_path / "submission"
    shutil.copytree(honest, target)
    return target


def lines(folder, task):
    path = folder / "episodes" / f"{task}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(folder, task, rows):
    path = folder / "episodes" / f"{task}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def edit_results(folder, edit):
    path = folder / "results.json"
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))


def rescore(folder):
    """Score the folder's (edited) episodes with the package's own scoring, as ``llm-marl
    eval`` does for a complete folder (whatever the plan: eval itself would refuse a cut
    task): results.json agrees with the episodes."""
    suite = load_suite("lite")
    results = json.loads((folder / "results.json").read_text())
    assignments = {name: block["team"] for name, block in results["tasks"].items()}
    runs = load_runs(suite, folder, assignments)
    fresh = score(suite, runs, entry="x", team=None, partial=True)  # the attacker's scores
    edit_results(folder, lambda r: r.update({k: fresh[k] for k in ("tasks", "overall")}))


def refused(folder, board, words, **kwargs):
    with pytest.raises(LeaderboardError, match=words) as caught:
        add_entry(folder, board, **{"entry_id": "attacker", **kwargs})
    assert "\n" not in str(caught.value)
    assert not (board / "entries" / "attacker").exists()
    return str(caught.value)


# --------------------------------------------------------------------------- scores
def test_edited_outcomes_rescored_consistently_are_refused_by_the_replay(copy, tmp_path):
    """Most episodes faked: every maze episode edited into a win and results.json rescored
    with the package's own scoring; the replay of the recorded actions says otherwise."""
    rows = lines(copy, "maze")
    for row in rows:
        for info in row["record"]["final_infos"].values():
            info["success"], info["steps_ratio"] = True, 1.0
        row["record"]["turns"][0]["reward"] = 5.0
    write_lines(copy, "maze", rows)
    rescore(copy)
    message = refused(copy, tmp_path / "b", "do not replay")
    assert "task maze, item seed-0 sample 0: " in message and "5.0 submitted" in message
    assert "16 episode(s)" in message


def test_a_record_of_a_modified_environment_is_refused(tmp_path, monkeypatch):
    """The attacker's local package pays every GSM8K answer as correct; its records and scores
    agree, but the replay runs this package's environment."""
    monkeypatch.setattr(gsm8k_env, "answers_match", lambda *args: True)
    out = tmp_path / "modified"
    evaluate(load_suite("lite"), Team.parse("random"), out, tasks=["gsm8k"], progress=False)
    assert json.loads((out / "results.json").read_text())["tasks"]["gsm8k"]["metrics"]["pass@1"][
        "mean"
    ] == pytest.approx(1.0)
    monkeypatch.undo()
    message = refused(out, tmp_path / "b", "do not replay")
    assert "task gsm8k, item row-0 sample 0: final_infos.observer_0.reward_components" in message
    assert "correct: 1.0 submitted, 0.0 on replay" in message


def test_an_edited_overall_score_is_refused(copy, tmp_path):
    edit_results(copy, lambda r: r.update(overall={"mean": 0.95, "lo": 0.9, "hi": 1.0, "n": 48}))
    refused(copy, tmp_path / "b", r"overall: the score does not follow from the episodes")


def test_an_edited_per_item_value_is_refused(copy, tmp_path):
    edit_results(copy, lambda r: r["tasks"]["donor"]["per_item"]["seed-3"].update(success=1))
    refused(copy, tmp_path / "b", r"task donor: the scores do not follow .*per_item\.seed-3")


def test_a_board_entry_is_scored_from_the_replay(honest, tmp_path):
    entry = add_entry(honest, tmp_path / "b", entry_id="honest")
    stored = json.loads((entry / "results.json").read_text())
    submitted = json.loads((honest / "results.json").read_text())
    assert stored["tasks"] == submitted["tasks"] and stored["overall"] is None
    assert stored["complete"] is False  # three tasks of seven: no overall score, unranked


# --------------------------------------------------------------------------- completeness
def test_cherry_picked_items_are_refused(copy, tmp_path):
    for task in TASKS:  # keep each task's first item only, rescored
        write_lines(copy, task, lines(copy, task)[:1])
    rescore(copy)
    refused(copy, tmp_path / "b", r"task gsm8k: results.json scores 1 items .* plan is 16 x 1")
    edit_results(copy, lambda r: [r["tasks"][t].update(items=16) for t in TASKS])
    refused(copy, tmp_path / "b", r"task gsm8k: 15 of its 16 episodes are missing .*first: row-1")


def test_extra_fake_samples_are_refused(copy, tmp_path):
    rows = lines(copy, "maze")
    write_lines(copy, "maze", rows[:1] + [{**rows[0], "sample": 1}] + rows[1:])
    refused(copy, tmp_path / "b", r"'seed-0' sample 1\): the suite plays 1 sample\(s\) per item")
    write_lines(copy, "maze", rows + [{**rows[0], "sample": 1}])
    refused(copy, tmp_path / "b", r"line 17: more episodes than the plan's 16")


def test_a_duplicated_item_is_refused(copy, tmp_path):
    rows = lines(copy, "donor")
    write_lines(copy, "donor", rows[:2] + rows[:1] + rows[2:])
    refused(copy, tmp_path / "b", r"line 3 \('seed-0' sample 0\): this episode appears twice")


def test_an_item_not_in_the_suite_is_refused(copy, tmp_path):
    rows = lines(copy, "maze")
    rows[0]["seed"] = 999  # an easier maze under seed-0's key
    write_lines(copy, "maze", rows)
    refused(copy, tmp_path / "b", "not an item of task maze of this suite")


@pytest.mark.parametrize("value", [None, "missing"])
def test_a_missing_data_hash_is_refused(copy, tmp_path, value):
    def edit(results):
        if value is None:
            results["manifest"]["tasks"]["gsm8k"]["data_hash"] = None
        else:
            del results["manifest"]["tasks"]["gsm8k"]["data_hash"]

    edit_results(copy, edit)
    refused(copy, tmp_path / "b", "task gsm8k: no data hash")


def test_a_suite_named_by_a_path_is_refused(copy, tmp_path):
    edit_results(copy, lambda r: r["suite"].update(name=str(copy / "my-suite.yaml")))
    refused(copy, tmp_path / "b", "is not one of this package's")


def test_a_record_that_is_not_a_record_is_one_line(copy, tmp_path):
    rows = lines(copy, "maze")
    rows[2]["record"]["surprise"] = "<script>"
    write_lines(copy, "maze", rows)
    refused(copy, tmp_path / "b", r"maze.jsonl line 3: not an episode of llm-marl eval")


# --------------------------------------------------------------------------- identity
def test_a_shipped_id_is_protected(honest, tmp_path):
    refused(
        honest, tmp_path / "b", "the id of an entry shipped with the package", entry_id="scripted"
    )
    refused(honest, tmp_path / "b", "shipped with the package", entry_id="Scripted")
    # a folder put into the board by hand does not shadow the shipped entry either
    shutil.copytree(shipped_entries() / "random", tmp_path / "b" / "entries" / "scripted")
    with pytest.warns(UserWarning, match="is a shipped entry's id"):
        found = entries(tmp_path / "b")
    assert found["scripted"] == shipped_entries() / "scripted"


def test_names_are_cleaned_bounded_and_unique(honest, tmp_path):
    board = tmp_path / "b"
    spoof = "\u202e)roolf( txet modnar"  # shows as "random text (floor)" right to left
    entry = add_entry(honest, board, entry_id="one", name=spoof + "\x07\u200b")
    assert json.loads((entry / "results.json").read_text())["board"]["name"] == (
        ")roolf( txet modnar"
    )
    taken = "cannot be told apart from entry '{}''s"
    refused(honest, board, taken.format("random"), name="random text (floor)\u200b")
    refused(honest, board, taken.format("random"), name="RANDOM  text (floor)")
    refused(honest, board, taken.format("one"), name=")roolf( txet modnar")
    refused(honest, board, "5000 characters, over the limit of 80", name="x" * 5000)
    refused(honest, board, "no visible character", name="\u202e\u200b")


# --------------------------------------------------------------------------- files
def test_a_symlink_in_episodes_is_refused(copy, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not the submitter's")
    os.symlink(secret, copy / "episodes" / "notes.txt")
    refused(copy, tmp_path / "b", r"notes.txt is a symlink")


def test_a_symlinked_episodes_file_is_refused(copy, tmp_path):
    moved = tmp_path / "elsewhere.jsonl"
    shutil.move(copy / "episodes" / "maze.jsonl", moved)
    os.symlink(moved, copy / "episodes" / "maze.jsonl")
    refused(copy, tmp_path / "b", r"maze.jsonl is a symlink")


def test_an_action_over_the_limit_is_refused(copy, tmp_path):
    rows = lines(copy, "maze")
    rows[0]["record"]["turns"][0]["action"] = "a" * (submission.MAX_ACTION_BYTES + 1)
    write_lines(copy, "maze", rows)
    refused(copy, tmp_path / "b", r"turn 0's action is over the limit of 65,536 bytes")


@pytest.mark.parametrize(
    ("limit", "words"),
    [
        ("MAX_RECORD_BYTES", r"line 1: an episode record over the limit of [\d,]+ bytes"),
        ("MAX_EPISODE_FILE_BYTES", r"over the limit of [\d,]+ bytes unpacked for one task"),
        ("MAX_ENTRY_BYTES", r"over the limit of [\d,]+ bytes unpacked for a whole entry"),
    ],
)
def test_files_over_the_size_limits_are_refused(copy, tmp_path, monkeypatch, limit, words):
    """The limits (64 KiB an action, 2 MiB a record, 256 MiB a task's episodes, 1 GiB an
    entry) lowered so that the first line of a gzipped file crosses the record limit, or the
    second the others: gzip is counted unpacked."""
    plain = copy / "episodes" / "gsm8k.jsonl"
    first = len(plain.read_bytes().splitlines(keepends=True)[0])
    monkeypatch.setattr(submission, limit, first - 1 if limit == "MAX_RECORD_BYTES" else first)
    plain.with_name("gsm8k.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    refused(copy, tmp_path / "b", words)


def test_results_over_the_limit_are_refused(copy, tmp_path, monkeypatch):
    monkeypatch.setattr(submission, "MAX_RESULTS_BYTES", 1_000)
    refused(copy, tmp_path / "b", r"results.json is [\d,]+ bytes, over the limit of 1,000")


@pytest.mark.slow
def test_cross_play_is_never_a_loose_file(copy, tmp_path):
    board = tmp_path / "b"
    (copy / "crossplay.json").write_text(json.dumps({"maze": {"forged": True}}))
    refused(copy, board, "is a cross-play result: cross-play cannot be added")
    clean = tmp_path / "clean"
    clean.mkdir()
    board.mkdir()
    for label in ("lite-v1", "lite-v2"):
        (board / f"crossplay-{label}.json").write_text(json.dumps({"maze": {"forged": True}}))
    built = build_board("lite", board)["crossplay"]
    assert built == build_board("lite", clean)["crossplay"]  # the loose files changed nothing
    shipped = json.loads((shipped_entries() / "crossplay-lite-v2.json").read_text())
    assert {task: block["matrix"] for task, block in built.items()} == {
        task: block["matrix"] for task, block in shipped.items()
    }
    assert build_board("lite", board, shipped=False)["crossplay"] == {}


# --------------------------------------------------------------------------- honest
@pytest.mark.slow
@pytest.mark.parametrize("entry", ["scripted", "random", "tiny", "default", "cory-imdb"])
def test_every_shipped_entry_replays_in_full_and_scores_the_same(entry):
    """The shipped entries (gzipped episodes, every task) replay in full and score the same,
    read by the board's one reader (a re-add of one would be refused as a copy of it)."""
    with submission.open_entry(shipped_entries() / entry) as opened:
        rescored, replay, differ = leaderboard.replay_entry(opened)
    assert differ == [] and replay == {"replayed": 114, "episodes": 114}
    shipped = json.loads((shipped_entries() / entry / "results.json").read_text())
    assert rescored["tasks"] == shipped["tasks"] and rescored["overall"] == shipped["overall"]


@pytest.mark.slow
def test_a_fresh_lite_evaluation_adds_in_time_and_builds(tmp_path):
    """``llm-marl eval lite`` of the scripted players with a random GSM8K pioneer, then
    ``add`` with the full replay (every episode, coding's 16 sandboxed programs per episode
    included), then ``build``; the scripted players alone are the shipped entry, refused as a
    copy of it."""
    out = tmp_path / "lite"
    evaluate(load_suite("lite"), Team.parse(None, TEAM), out, progress=False)
    started = time.perf_counter()
    add_entry(out, tmp_path / "b", entry_id="fresh", name="fresh scripted")
    assert time.perf_counter() - started < 60
    data = leaderboard.build_board("lite", tmp_path / "b")
    fresh = next(e for e in data["entries"] if e["id"] == "fresh")
    shipped = next(e for e in data["entries"] if e["id"] == "scripted")
    # the same as the scripted players on every task without a pioneer (GSM8K's and IMDB's
    # is random)
    for task in ("tldr", "arxiv", "coding", "maze", "donor"):
        assert fresh["tasks"][task]["score"] == shipped["tasks"][task]["score"]
    assert {e["id"] for e in data["entries"]} >= {"scripted", "random", "fresh"}
    alone = tmp_path / "alone"
    evaluate(load_suite("lite"), Team.parse("scripted"), alone, tasks=["maze"], progress=False)
    with pytest.raises(LeaderboardError, match="its episodes are entry 'scripted''s"):
        add_entry(alone, tmp_path / "b", entry_id="alone", name="my oracles")


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({f"maze.{n}.jsonl": b"" for n in range(300)}, "over 256 files"),
        ({"notes.txt": b"x"}, "progress/notes.txt: remove it"),
        ({"maze.0.jsonl": b"x"}, None),  # a shard of an unfinished task: kept, never read
    ],
)
def test_an_eval_folders_progress_files_are_bounded_and_never_read(copy, tmp_path, files, words):
    """Resources: ``progress/`` (the harness's working files, never read nor copied) holds at
    most 256 files named as the harness names them."""
    progress = copy / "progress"
    progress.mkdir(exist_ok=True)  # (the harness leaves it, emptied)
    for name, data in files.items():
        (progress / name).write_bytes(data)
    if words is None:
        add_entry(copy, tmp_path / "board", entry_id="with-progress", kind="baseline")
        assert not (tmp_path / "board" / "entries" / "with-progress" / "progress").exists()
    else:
        refused(copy, tmp_path / "board", words)
