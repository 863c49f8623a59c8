"""Issue 28's attacks on verification, each refused or neutralised: a sample an attacker can
foresee, most episodes forged, files edited after verification, a hand-written verification,
a claimed model identity, an unloadable model, and a verify that writes into the package."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import warnings

import pytest
from board_helpers import events_of, forget, ledger_of

from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard import ledger as board_ledger, sampling, verify as verification
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
    moves; forging more would make it a copy of the oracle's entry, refused as such). The
    forgery arrives as a folder placed by hand (a folder edited after the board recorded it is
    refused before any work: test_ledger.py)."""
    forget(board)
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
    replay as recorded) and a fixed secret: the regenerated sample catches one (placed by
    hand, as above)."""
    forget(board)
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
    """A record whose rewards do not follow from its actions (placed on the board by hand)."""
    forget(board)

    def edit(i, line):
        if i == 0:
            line["record"]["turns"][0]["reward"] = 1.0
        return line

    edit_episodes(board / "entries" / "random-text" / "episodes" / "maze.jsonl.gz", edit)
    result = verify_entry("random-text", board, sample=2, **QUIET)
    assert result["replay"] == {"replayed": 31, "episodes": 32} and not result["verified"]
    assert "task maze, item seed-0 sample 0" in " ".join(result["problems"])


# --------------------------------------------------------------------------- binding
def test_scores_edited_after_verification_change_nothing_shown(board):
    """Attack: results.json's scores raised by hand after add and verify. The board scores the
    episodes again and never shows results.json's numbers; the digest holds what is scored,
    not those numbers, so the entry keeps its record and its badge, with its true score."""
    verify_entry("oracles", board, **QUIET)
    before = shown(board, "oracles")
    assert before["verified"] is True
    path = board / "entries" / "oracles" / "results.json"
    results = json.loads(path.read_text())
    results["tasks"]["gsm8k"]["metrics"]["pass@1"].update(mean=0.0, lo=0.0, hi=0.01)
    path.write_text(json.dumps(results))
    after = shown(board, "oracles")
    assert after["verified"] is True and after["overall"] == before["overall"]
    assert after["digest"] == before["digest"]


@pytest.mark.parametrize(
    "edit",
    [
        "manifest seats",  # another team named: the verification regenerated with the old one
        "episode bytes",  # the same lines written again in another form
        "one action",
    ],
)
def test_content_changed_after_verification_is_left_out_naming_why(board, edit):
    """Attack: the verified entry's folder edited on the board. Its content is no longer what
    the board recorded: it is left out of the board (a near-copy of the content the ledger
    holds for it), and verify refuses it before any work."""
    verify_entry("oracles", board, sample=4, **QUIET)
    folder = board / "entries" / "oracles"
    if edit == "manifest seats":
        results = json.loads((folder / "results.json").read_text())
        results["manifest"]["tasks"]["gsm8k"]["seats"]["observer_0"] = "random"
        (folder / "results.json").write_text(json.dumps(results))
    elif edit == "episode bytes":
        edit_episodes(folder / "episodes" / "gsm8k.jsonl.gz", lambda i, line: line)
    else:

        def one(i, line):
            if i == 0:
                line["record"]["turns"][-1]["action"] += " "
            return line

        edit_episodes(folder / "episodes" / "gsm8k.jsonl.gz", one)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = build_board("lite", board, shipped=False)
    assert "oracles" not in {e["id"] for e in data["entries"]}
    said = " ".join(str(w.message) for w in caught)
    if edit != "one action":  # (one action edited may not replay: left out for that)
        assert "its content changed since the board recorded it (ledger line 0)" in said
    with pytest.raises(LeaderboardError, match="changed since the board recorded it|replay"):
        verify_entry("oracles", board, **QUIET)


def test_a_hand_written_ledger_line_gets_no_badge(board, tmp_path):
    """Attack: a verification line written by hand at the end of the ledger (chained to the
    line before, even), or one sealed by another board; a verification.json in the entry
    folder (an older version's place) is not read either."""
    ledger = board / board_ledger.LEDGER_FILE
    honest = ledger.read_bytes()
    last = json.loads(honest.splitlines()[-1])
    digest = events_of(board, "random-text")[0]["digest"]
    forged = {
        "n": last["n"] + 1,
        "prev": "sha256:" + hashlib.sha256(honest.splitlines()[-1]).hexdigest(),
        "at": "2026-11-28T00:00:00+00:00",
        "event": "verification",
        "digest": digest,
        "entry": "random-text",
        "verified": True,
        "regenerated": 32,
        "sample": {"episodes": 32, "size": 32, "gain": 0.02, "power": 1.0},
        "seal": "hmac-sha256:" + "0" * 64,
    }
    ledger.write_bytes(honest + json.dumps(forged).encode() + b"\n")
    (board / "entries" / "random-text" / "verification.json").write_text(json.dumps(forged))
    entry = shown(board, "random-text")
    assert entry["verified"] is False
    assert "line 2 is not sealed by this board's key" in entry["verification"]["summary"]
    # sealed, but by another board: a copy of this board verified there
    ledger.write_bytes(honest)
    other = tmp_path / "other"
    shutil.copytree(board / "entries" / "random-text", other / "entries" / "random-text")
    (other / "entries" / "random-text" / "verification.json").unlink()
    verify_entry("random-text", other, sample=2, **QUIET)
    theirs = (other / board_ledger.LEDGER_FILE).read_bytes().splitlines()[0]
    ledger.write_bytes(honest + theirs + b"\n")
    entry = shown(board, "random-text")
    assert entry["verified"] is not True and "line 2" in entry["verification"]["summary"]
    with pytest.raises(LeaderboardError, match="ledger cannot be trusted.*override random-text"):
        verify_entry("random-text", board, **QUIET)


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
    saved = ledger_of(board).lines
    assert [(e["event"], e["entry"]) for e in saved] == [("verification", "scripted")]
    assert saved[0]["seal"].startswith("hmac-sha256:")
    entry = {e["id"]: e for e in build_board("lite", board)["entries"]}["scripted"]
    assert entry["verified"] and entry["verification"]["secret_seed"] == result["secret_seed"]
    with pytest.raises(LeaderboardError, match="give one"):
        verify_entry("scripted", None)
