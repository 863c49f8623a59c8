"""Issue 28's attacks on verification, each refused or neutralised: a sample an attacker can
foresee, most episodes forged, files edited after verification, a hand-written verification,
a claimed model identity, an unloadable model, and a verify that writes into the package."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import pytest

from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard import records as board_records, sampling, verify as verification
from llm_marl_envs.leaderboard.board import (
    LeaderboardError,
    add_entry,
    build_board,
    shipped_entries,
    verify_entry,
)

TASKS = ["gsm8k", "maze"]
QUIET = {"write": lambda line: None}
#: Teams no shipped entry plays (a board refuses a copy of another entry's episodes): the
#: scripted players (oracles on the maze) with a random GSM8K pioneer, and random text with a
#: scripted GSM8K observer.
TEAMS = {
    "scripted": {"0": "scripted", "pioneer_0": "random"},
    "random": {"0": "random", "observer_0": "scripted"},
}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Two-task lite evaluations of the teams above."""
    root = tmp_path_factory.mktemp("lite")
    for name, team in TEAMS.items():
        evaluate(
            load_suite("lite"), Team.parse(None, team), root / name, tasks=TASKS, progress=False
        )
    return root


@pytest.fixture(scope="module")
def board_once(evaluated, tmp_path_factory):
    board = tmp_path_factory.mktemp("board") / "board"
    add_entry(evaluated / "scripted", board, entry_id="oracles", kind="baseline")
    add_entry(evaluated / "random", board, entry_id="random-text", kind="baseline")
    return board


@pytest.fixture
def board(board_once, tmp_path):
    """A board of the two evaluations, each test its own copy (adding them takes ~0.7 s)."""
    return shutil.copytree(board_once, tmp_path / "board")


def shown(board, entry_id):
    """The entry as ``build`` shows it."""
    return {e["id"]: e for e in build_board("lite", board, shipped=False)["entries"]}[entry_id]


def edit_episodes(path, edit):
    """Rewrite a gzipped episode file, line by line."""
    with gzip.open(path, "rt") as handle:
        lines = [json.loads(line) for line in handle]
    lines = [edit(i, line) for i, line in enumerate(lines)]
    with gzip.open(path, "wt") as handle:
        handle.write("".join(json.dumps(line) + "\n" for line in lines))


# --------------------------------------------------------------------------- the sample
@pytest.mark.slow
def test_the_sample_is_secret_covers_every_task_and_varies(board):
    """Attack: the same 8 keys were replayed for every entry, so only they had to be honest.
    (On these two tasks of 16 episodes each episode is 1/32 of the score, so the default
    sample is every episode; 8 show the draw.)"""
    assert verify_entry("random-text", board, **QUIET)["sample"]["size"] == 32
    first = verify_entry("random-text", board, sample=8, **QUIET)
    second = verify_entry("random-text", board, sample=8, **QUIET)
    assert first["secret_seed"] != second["secret_seed"]
    keys = [{(c["task"], c["key"]) for c in v["episodes"]} for v in (first, second)]
    assert keys[0] != keys[1]
    for result in (first, second):
        assert {c["task"] for c in result["episodes"]} == set(TASKS)
        assert result["sample"]["power"] < verification.POWER  # and said so
    # the recorded secret repeats the draw exactly
    again = verify_entry("random-text", board, sample=8, secret=first["secret_seed"], **QUIET)
    assert [(c["task"], c["key"]) for c in again["episodes"]] == [
        (c["task"], c["key"]) for c in first["episodes"]
    ]


def test_the_sample_size_follows_the_stated_power():
    """The sample of a lite entry: the smallest found that catches any forgery worth 0.02 of
    the overall score with probability >= 0.95 (one draw fewer in any task falls short)."""
    tasks = load_suite("lite").tasks
    plan = verification.allocation(tasks)
    assert plan["size"] == 75 and plan["power"] >= 0.95
    sizes = {t.name: len(t.items) for t in tasks}
    weights = verification.episode_weights(tasks)
    for task in sizes:
        fewer = {**plan["per_task"], task: plan["per_task"][task] - 1}
        assert sampling.catch_power(sizes, weights, fewer, verification.GAIN) < 0.95
    # a fixed sample of 8 of 114 says little: it is reported, not hidden
    assert verification.allocation(tasks, 8)["power"] < 0.2


def test_most_episodes_forged_are_caught(board):
    """Attack: an entry forges many of its episodes (here: half of the maze, with the oracle's
    moves; forging more would make it a copy of the oracle's entry, refused as such)."""
    oracle = board / "entries" / "oracles" / "episodes" / "maze.jsonl.gz"
    with gzip.open(oracle, "rt") as handle:
        moves = [json.loads(line)["record"] for line in handle]
    path = board / "entries" / "random-text" / "episodes" / "maze.jsonl.gz"
    edit_episodes(path, lambda i, line: line if i % 2 else {**line, "record": moves[i]})
    result = verify_entry("random-text", board, secret=5, **QUIET)
    assert not result["verified"]
    assert any("maze seed-" in problem for problem in result["problems"])
    assert shown(board, "random-text")["verified"] is False


def test_a_forged_fraction_is_caught_with_a_fixed_secret(board):
    """2 of 32 episodes forged (the oracle's episode for one item of each task, records that
    replay as recorded) and a fixed secret: the regenerated sample catches one."""
    for task in TASKS:
        oracle = board / "entries" / "oracles" / "episodes" / f"{task}.jsonl.gz"
        with gzip.open(oracle, "rt") as handle:
            forged = json.loads(handle.readlines()[3])["record"]
        path = board / "entries" / "random-text" / "episodes" / f"{task}.jsonl.gz"
        edit_episodes(path, lambda i, line, f=forged: {**line, "record": f} if i == 3 else line)
    result = verify_entry("random-text", board, secret=2028, **QUIET)
    assert result["replay"] == {"replayed": 32, "episodes": 32}  # the replay cannot tell
    # each forged episode is 1/32 of the (two-task) score: over the 0.02 the sample catches
    assert result["sample"]["gain"] == 0.02 and result["sample"]["power"] >= 0.95
    assert not result["verified"] and "does not reproduce" in " ".join(result["problems"])


def test_an_episode_that_does_not_replay_is_unverified(board):
    """A record whose rewards do not follow from its actions (put in the board after add)."""

    def edit(i, line):
        if i == 0:
            line["record"]["turns"][0]["reward"] = 1.0
        return line

    edit_episodes(board / "entries" / "random-text" / "episodes" / "maze.jsonl.gz", edit)
    result = verify_entry("random-text", board, sample=2, **QUIET)
    assert result["replay"] == {"replayed": 31, "episodes": 32} and not result["verified"]
    assert "task maze, item seed-0 sample 0" in " ".join(result["problems"])


# --------------------------------------------------------------------------- binding
def test_results_edited_after_verification_lose_the_badge(board):
    """Attack: results.json (or an episode file) edited in the board after add and verify."""
    verify_entry("oracles", board, **QUIET)
    assert shown(board, "oracles")["verified"] is True
    path = board / "entries" / "oracles" / "results.json"
    results = json.loads(path.read_text())
    results["tasks"]["gsm8k"]["metrics"]["pass@1"].update(mean=0.99, lo=0.98, hi=1.0)
    path.write_text(json.dumps(results))
    entry = shown(board, "oracles")
    assert entry["verified"] is False
    assert "changed since it was verified: results.json" in entry["verification"]["summary"]


def test_an_episode_file_edited_after_verification_loses_the_badge(board):
    verify_entry("oracles", board, sample=4, **QUIET)
    path = board / "entries" / "oracles" / "episodes" / "gsm8k.jsonl.gz"
    edit_episodes(path, lambda i, line: line)  # same lines, other bytes
    entry = shown(board, "oracles")
    assert entry["verified"] is False
    assert "episodes/gsm8k.jsonl.gz" in entry["verification"]["summary"]


def test_a_hand_written_verification_gets_no_badge(board, tmp_path):
    """Attack: a record written by hand, with the right file hashes even, or one sealed on
    another board; a verification.json in the entry folder (the old place) is not read."""
    folder = board / "entries" / "random-text"
    forged = {
        "event": "verification",
        "at": "2026-11-28T00:00:00+00:00",
        "verified": True,
        "regenerated": 32,
        "sample": {"episodes": 32, "size": 32, "gain": 0.02, "power": 1.0},
        "files": json.loads((board / "records" / "random-text.json").read_text())["events"][0][
            "files"
        ],
    }
    path = board_records.record_path(board, "random-text")
    document = {"format": board_records.FORMAT, "entry": "random-text", "events": [forged]}
    path.write_text(json.dumps(document))
    (folder / "verification.json").write_text(json.dumps(forged))
    entry = shown(board, "random-text")
    assert entry["verified"] is False and "not sealed" in entry["verification"]["summary"]
    other = tmp_path / "other"
    shutil.copytree(folder, other / "entries" / "random-text")
    (other / "entries" / "random-text" / "verification.json").unlink()
    verify_entry("random-text", other, sample=2, **QUIET)
    shutil.copy(board_records.record_path(other, "random-text"), path)
    entry = shown(board, "random-text")
    assert entry["verified"] is False and "not sealed by this board's key" in str(entry)


# --------------------------------------------------------------------------- models
@pytest.fixture(scope="module")
def tiny_imdb(tmp_path_factory):
    """The tiny model leading random text on IMDB (32-token answers: cheap), a team no
    shipped entry plays."""
    out = tmp_path_factory.mktemp("tiny") / "tiny-imdb"
    team = Team.parse(None, {"0": "tiny", "1": "random"})
    evaluate(load_suite("lite"), team, out, tasks=["imdb"], progress=False)
    return out


def with_manifest(source, board, entry_id, edit):
    """The evaluation in ``source`` put into ``board`` by hand as ``entry_id``, its manifest
    edited."""
    folder = board / "entries" / entry_id
    shutil.copytree(source, folder)
    results = json.loads((folder / "results.json").read_text())
    edit(results["manifest"])
    (folder / "results.json").write_text(json.dumps(results))
    return folder


@pytest.mark.slow
def test_an_honest_model_entry_verifies_and_shows_the_loaded_identity(tiny_imdb, tmp_path):
    board = tmp_path / "board"
    with_manifest(tiny_imdb, board, "tiny-imdb", lambda manifest: None)
    result = verify_entry("tiny-imdb", board, **QUIET)  # 1/32 of the score each: 31 of 32
    assert result["verified"] and result["regenerated"] == result["sample"]["size"] == 31
    assert result["models"]["tiny"]["weights_sha256"].startswith("sha256:")
    entry = shown(board, "tiny-imdb")
    assert entry["manifest"]["policies"]["tiny"] == result["models"]["tiny"]
    assert entry["verification"]["summary"].startswith("32/32 replayed, 31 regenerated")
    assert [p["spec"] for p in entry["played_by"]] == ["tiny", "random"]
    assert entry["played_by"][0]["model_id"] == result["models"]["tiny"]["model_id"].split(" (")[0]


@pytest.mark.slow
def test_a_claimed_model_identity_with_a_made_up_weights_hash_is_unverified(tiny_imdb, tmp_path):
    """Attack: the manifest claims a famous model and a weights hash the seats never loaded."""

    def claim(manifest):
        manifest["policies"]["tiny"].update(
            model_id="Qwen/Qwen2.5-72B-Instruct",
            weights_sha256="sha256:" + hashlib.sha256(b"made up").hexdigest(),
        )

    board = tmp_path / "board"
    with_manifest(tiny_imdb, board, "qwen-72b", claim)
    result = verify_entry("qwen-72b", board, **QUIET)
    assert not result["verified"] and result["episodes"] == []
    said = " ".join(result["problems"])
    assert "claims model_id 'Qwen/Qwen2.5-72B-Instruct'" in said and "weights_sha256" in said
    entry = shown(board, "qwen-72b")
    assert entry["verified"] is False
    assert entry["manifest"]["policies"] == {}  # claims are not shown as the models
    assert "seats" not in entry["manifest"]["tasks"]["imdb"]  # nor as the seats
    assert entry["claimed"]["seats"]["imdb"] == entry["team"]["imdb"]
    assert entry["claimed"]["policies"]["tiny"]["model_id"].startswith("Qwen")
    assert entry["played_by"] == [{"spec": "tiny"}, {"spec": "random"}]  # no model id shown


@pytest.mark.slow
def test_a_model_that_cannot_be_loaded_is_unverified(tiny_imdb, tmp_path):
    """Attack: seats name a model the verifier cannot load: never "verified"."""

    def seat(manifest):
        manifest["tasks"]["imdb"]["seats"] = {
            "pioneer_0": "hf:/nonexistent/model",
            "observer_0": "random",
        }

    board = tmp_path / "board"
    with_manifest(tiny_imdb, board, "ghost", seat)
    result = verify_entry("ghost", board, **QUIET)
    assert not result["verified"] and result["regenerated"] == 0
    assert "task imdb: a seat's model could not be loaded" in result["problems"][0]
    assert "unverified" in shown(board, "ghost")["verification"]["summary"]


# --------------------------------------------------------------------------- the package
def package_digest():
    root = shipped_entries()
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow  # regenerates 75 episodes
def test_verifying_a_shipped_entry_leaves_the_package_unchanged(tmp_path):
    before = package_digest()
    board = tmp_path / "board"
    result = verify_entry("scripted", board, **QUIET)
    assert package_digest() == before
    assert result["verified"]
    saved = json.loads((board / "records" / "scripted.json").read_text())
    assert saved["seal"].startswith("hmac-sha256:") and saved["entry"] == "scripted"
    entry = {e["id"]: e for e in build_board("lite", board)["entries"]}["scripted"]
    assert entry["verified"] and entry["verification"]["secret_seed"] == result["secret_seed"]
    with pytest.raises(LeaderboardError, match="give one"):
        verify_entry("scripted", None)
