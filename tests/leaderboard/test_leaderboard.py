"""The leaderboard: entries checked on the way in, verified by replay, ranked for the site."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from board_helpers import events_of, forget

from llm_marl_envs.cli import main
from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard.board import (
    LeaderboardError,
    add_entry,
    build_board,
    verify_entry,
)

TASKS = ["gsm8k", "maze"]
#: Teams no shipped entry plays (a board refuses a copy of another entry's episodes): the
#: scripted players (oracles on the maze) with a random GSM8K pioneer, and random text with a
#: scripted GSM8K observer.
TEAMS = {
    "scripted": {"0": "scripted", "pioneer_0": "random"},
    "random": {"0": "random", "observer_0": "scripted"},
}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """Two lite evaluations (two tasks each) of the teams above."""
    root = tmp_path_factory.mktemp("lite")
    suite = load_suite("lite")
    for name, team in TEAMS.items():
        evaluate(suite, Team.parse(None, team), root / name, tasks=TASKS, progress=False)
    return root


@pytest.fixture(scope="module")
def board_once(evaluated, tmp_path_factory):
    board = tmp_path_factory.mktemp("board") / "board"
    add_entry(evaluated / "scripted", board, entry_id="oracles", kind="baseline")
    add_entry(evaluated / "random", board, name="random text", kind="baseline")
    return board


@pytest.fixture
def board(board_once, tmp_path):
    """A board of the two evaluations, each test its own copy (adding them takes ~0.7 s)."""
    return shutil.copytree(board_once, tmp_path / "board")


def tampered(evaluated, tmp_path, edit):
    """A copy of the scripted evaluation with ``edit`` applied to its results.json."""
    copy = tmp_path / "tampered"
    shutil.copytree(evaluated / "scripted", copy)
    results = json.loads((copy / "results.json").read_text())
    edit(results)
    (copy / "results.json").write_text(json.dumps(results))
    return copy


def test_add_copies_the_entry_with_its_episodes(board):
    entry = board / "entries" / "oracles"
    results = json.loads((entry / "results.json").read_text())
    assert results["board"] == {
        "id": "oracles",
        "name": "scripted (pioneer_0=random)",
        "kind": "baseline",
    }
    assert sorted(p.name for p in (entry / "episodes").iterdir()) == [
        "gsm8k.jsonl.gz",
        "gsm8k.meta.json",
        "maze.jsonl.gz",
        "maze.meta.json",
    ]
    with gzip.open(entry / "episodes" / "maze.jsonl.gz", "rt") as handle:
        assert len(handle.read().splitlines()) == 16
    assert (board / "entries" / "random-text").is_dir()  # the id comes from the name


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda r: r["suite"].update(hash="sha256:0000"), "is not this package's lite-v3"),
        (lambda r: r["suite"].update(version=4), "suite lite-v4 .* is not this package's lite-v3"),
        (lambda r: r["suite"].update(version="2"), "suite.version must be an integer"),
        (lambda r: r["suite"].update(name="lite-v1"), "suite 'lite-v1' is not one of this package"),
        (  # the older version's hash under the newest version's number
            lambda r: r["suite"].update(hash=load_suite("lite-v1").hash()),
            "is not this package's lite-v3",
        ),
        (
            lambda r: r["manifest"]["tasks"]["maze"].update(env_spec_hash="sha256:1111"),
            "task maze: env spec hash",
        ),
        (
            lambda r: r["manifest"]["tasks"]["gsm8k"].update(data_hash="sha256:2222"),
            "task gsm8k: the data rows differ",
        ),
        (
            lambda r: r["tasks"]["maze"]["metrics"]["success"].update(mean=0.5),
            "task maze: the scores do not follow from its episodes",
        ),
    ],
)
def test_add_refuses_what_does_not_match(evaluated, tmp_path, edit, words):
    with pytest.raises(LeaderboardError, match=words):
        add_entry(tampered(evaluated, tmp_path, edit), tmp_path / "board", entry_id="t")
    assert not (tmp_path / "board" / "entries").exists() or not any(
        (tmp_path / "board" / "entries").iterdir()
    )


@pytest.mark.slow
def test_an_older_versions_result_joins_that_versions_board_only(evaluated, tmp_path, capsys):
    """lite-v1 stays playable: its results are added, replayed and shown on the lite-v1
    board, never on the newest version's (where they would not be comparable)."""
    out, board = tmp_path / "v1", tmp_path / "board"
    team = Team.parse(None, TEAMS["scripted"])
    evaluate(load_suite("lite-v1"), team, out, tasks=TASKS, progress=False)
    add_entry(out, board, entry_id="old-oracles", name="oracles on lite-v1", kind="baseline")
    add_entry(evaluated / "scripted", board, entry_id="oracles", kind="baseline")
    old = build_board("lite-v1", board, shipped=False)
    new = build_board("lite", board, shipped=False)
    assert old["suite"]["version"] == 1 and new["suite"]["version"] == 3
    assert [e["id"] for e in old["entries"]] == ["old-oracles"]
    assert [e["id"] for e in new["entries"]] == ["oracles"]
    maze = old["entries"][0]["tasks"]["maze"]["metrics"]["success"]["mean"]
    assert maze == new["entries"][0]["tasks"]["maze"]["metrics"]["success"]["mean"] == 1.0
    assert new["other_versions"] == {"lite-v1": 1} and old["other_versions"] == {"lite-v3": 1}
    # the command says where the other version's entries are
    argv = ["leaderboard", "build", "--board", str(board), "--no-shipped"]
    assert main([*argv, "--out", str(tmp_path / "site")]) == 0
    assert "1 of lite-v1 (--suite lite-v1)" in capsys.readouterr().out
    shutil.rmtree(board / "entries" / "oracles")
    assert main([*argv, "--out", str(tmp_path / "site2")]) == 2
    said = capsys.readouterr().err.strip()
    assert said.count("\n") == 0 and "no entries for suite lite-v3" in said
    assert "1 of lite-v1 (--suite lite-v1)" in said


def test_add_refuses_a_taken_id_and_a_folder_without_results(board, evaluated, tmp_path):
    with pytest.raises(LeaderboardError, match="already has an entry 'oracles'"):
        add_entry(evaluated / "scripted", board, entry_id="oracles", name="another name")
    with pytest.raises(LeaderboardError, match="no results.json"):
        add_entry(tmp_path, board)


def test_verify_regenerates_a_sample(board):
    said = []
    result = verify_entry("oracles", board, sample=6, secret=1, write=said.append)
    assert result["verified"] and result["sample"]["size"] == 6 and result["regenerated"] == 6
    assert len(said) == 6 and all(line.endswith("reproduced") for line in said)
    saved = events_of(board, "oracles")
    assert [e["event"] for e in saved] == ["added", "verification"]
    assert saved[-1]["verified"] and saved[-1]["episodes"] == result["episodes"]
    assert {e["entry"] for e in saved} == {"oracles"}


def test_verify_catches_an_episode_that_does_not_replay(board):
    path = board / "entries" / "random-text" / "episodes" / "maze.jsonl.gz"
    with gzip.open(path, "rt") as handle:
        lines = [json.loads(line) for line in handle]
    for line in lines:  # as if the recorded answers had been edited
        line["record"]["turns"][0]["action"] = "up"
    with gzip.open(path, "wt") as handle:
        handle.write("".join(json.dumps(line) + "\n" for line in lines))
    result = verify_entry("random-text", board, sample=32, write=lambda line: None)
    assert not result["verified"]
    assert any(
        not check["actions_match"] for check in result["episodes"] if check["task"] == "maze"
    )


def test_verify_refuses_generation_settings_that_are_not_the_suites(board):
    """A manifest that claims sampled answers on a greedy suite is not this suite's result."""
    path = board / "entries" / "oracles" / "results.json"
    results = json.loads(path.read_text())
    results["manifest"]["tasks"]["gsm8k"]["generation"]["do_sample"] = True
    path.write_text(json.dumps(results))
    with pytest.raises(LeaderboardError, match="task gsm8k: the manifest's generation settings"):
        verify_entry("oracles", board)
    with pytest.raises(LeaderboardError, match="no entry 'nobody'"):
        verify_entry("nobody", board)


def test_board_ranks_with_ties(board):
    data = build_board("lite", board, shipped=False)
    assert data["suite"]["name"] == "lite"
    assert [t["name"] for t in data["tasks"]] == [t.name for t in load_suite("lite").tasks]
    by_id = {e["id"]: e for e in data["entries"]}
    assert set(by_id) == {"oracles", "random-text"}
    scripted, random_text = by_id["oracles"], by_id["random-text"]
    # partial results (two tasks of seven) have task scores but no overall score
    assert scripted["overall"] is None
    maze = scripted["tasks"]["maze"]
    assert maze["rank"] == 1 and maze["metrics"]["success"]["mean"] == 1.0
    assert random_text["tasks"]["maze"]["rank"] == 2  # its interval lies wholly below
    assert len(maze["episodes"]) == 16 and maze["episodes"][0]["turns"][0]["action"]
    assert scripted["manifest"]["suite"]["hash"] == data["suite"]["hash"]
    assert "LMArena" in data["rank_rule"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["leaderboard", "add", "/nonexistent/run"], "no results.json in /nonexistent/run"),
        (["leaderboard", "verify", "nobody", "--board", "/nonexistent"], "no entry 'nobody'"),
    ],
)
def test_cli_refusals_are_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("llm-marl: error:") and words in err and "\n" not in err


def test_cli_add_and_verify(evaluated, tmp_path, capsys):
    board = tmp_path / "b"
    add = ["leaderboard", "add", str(evaluated / "scripted"), "--board", str(board), "--id", "s"]
    assert main(add) == 0
    assert main(["leaderboard", "verify", "s", "--board", str(board), "--sample", "3"]) == 0
    printed = capsys.readouterr().out
    assert "added entry s " in printed and "s: verified: 3 of 3" in printed
    # 3 of 32: weak, and said so
    assert "raises the overall score by 0.02 or more with probability 0.0" in printed


@pytest.mark.slow
def test_build_with_no_arguments_shows_the_shipped_entries(tmp_path, monkeypatch, capsys):
    """The entries that ship with the package match this package's lite suite, are verified
    (but the trained one, whose checkpoint does not ship), and make a real site on day one
    (with their cross-play)."""
    monkeypatch.chdir(tmp_path)
    assert main(["leaderboard", "build"]) == 0
    index = tmp_path / "leaderboard-site" / "index.html"
    assert str(index.relative_to(tmp_path)) in capsys.readouterr().out
    page = index.read_text()
    for name in (
        "scripted players",
        "SmolLM2-135M-Instruct",
        "tiny random-init GPT-2",
        "random text",
        "SmolLM2-135M after CORY",
    ):
        assert name in page
    data = build_board("lite", tmp_path / "leaderboard")
    verified = {e["id"]: e["verified"] for e in data["entries"]}
    assert verified == dict.fromkeys(["scripted", "default", "tiny", "random"], True) | {
        "cory-imdb": False
    }
    cory = {e["id"]: e for e in data["entries"]}["cory-imdb"]["verification"]["summary"]
    assert "unverified" in cory and "model could not be loaded" in cory
    kinds = {e["id"]: e["kind"] for e in data["entries"]}
    assert kinds["cory-imdb"] == "trained" and kinds["default"] == "model"
    assert [e["id"] for e in data["entries"]][0] == "scripted"  # ranked first overall
    assert {"maze", "donor"} <= set(data["crossplay"])
    assert 'id="crossplay"' in page


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["scripted", "random"])
def test_the_shipped_model_free_entries_replay_in_full_with_todays_code(entry, tmp_path):
    """Every episode of the shipped scripted and random entries replays and regenerates: a
    change to the envs, the players or how the harness seeds them (random seats draw from the
    task's seed) shows here before it strands the shipped board."""
    result = verify_entry(entry, tmp_path, sample=10_000, write=lambda line: None)
    assert result["sample"]["size"] == 114 and result["sample"]["power"] == 1.0
    assert result["verified"] and result["regenerated"] == 114
    assert result["replay"] == {"replayed": 114, "episodes": 114}


@pytest.mark.parametrize(
    ("seat", "why"),
    [("openai:http://127.0.0.1:9/v1#m", "an openai seat"), ("human", "a human seat")],
)
def test_verify_refuses_seats_whose_answers_cannot_be_replayed(evaluated, tmp_path, seat, why):
    folder = tmp_path / "entries" / "served"
    shutil.copytree(evaluated / "scripted", folder)  # put on the board by hand
    results = json.loads((folder / "results.json").read_text())
    results["manifest"]["tasks"]["gsm8k"]["seats"]["observer_0"] = seat
    (folder / "results.json").write_text(json.dumps(results))
    with pytest.raises(
        LeaderboardError, match=f"cannot be verified by replay: task gsm8k has {why}"
    ):
        verify_entry("served", tmp_path)


# --------------------------------------------------------------------------- who is ranked
@pytest.mark.parametrize(
    ("seat", "why"),
    [("openai:http://127.0.0.1:9/v1#m", "an openai seat"), ("human", "a human seat")],
)
def test_a_seat_no_replay_can_regenerate_is_shown_but_never_ranked(
    evaluated, board, tmp_path, seat, why
):
    """An entry whose GSM8K observer was a person or a remote server (put on the board by
    hand, its scores the oracles' own) is shown with its scores, unranked on that task with
    the reason, below the ranked entries; its other task keeps its rank."""
    # the served copy's episodes are the oracles': a board without them, and without a record
    # of them (a near-copy of an entry the ledger recorded is left out)
    shutil.rmtree(board / "entries" / "oracles")
    forget(board)
    folder = board / "entries" / "served"
    shutil.copytree(evaluated / "scripted", folder)
    results = json.loads((folder / "results.json").read_text())
    results["manifest"]["tasks"]["gsm8k"]["seats"]["observer_0"] = seat
    (folder / "results.json").write_text(json.dumps(results))
    data = build_board("lite", board, shipped=False)
    by_id = {e["id"]: e for e in data["entries"]}
    served, other = by_id["served"]["tasks"], by_id["random-text"]["tasks"]
    assert "rank" not in served["gsm8k"] and f"task gsm8k has {why}" in served["gsm8k"]["unranked"]
    assert other["gsm8k"]["rank"] == 1  # alone among the entries that can be checked
    assert served["maze"]["rank"] == 1 and "unranked" not in served["maze"]
    assert (
        served["gsm8k"]["metrics"]["pass@1"]["mean"] >= other["gsm8k"]["metrics"]["pass@1"]["mean"]
    )
    from llm_marl_envs.leaderboard.site.pages import build_site

    index = build_site(data, tmp_path / "site")
    page = index.read_text(encoding="utf-8")
    gsm8k = page[page.index('id="task-gsm8k"') :] if 'id="task-gsm8k"' in page else page
    assert f"task gsm8k has {why}" in gsm8k
    assert gsm8k.index("random text") < gsm8k.index("scripted (pioneer_0=random)")


def test_a_failed_verification_removes_the_rank():
    """Board rows (as build_board makes them): a complete entry whose verification failed
    keeps its scores and loses its rank, overall and per task, with the reason; one never
    verified (None) and one verified stay ranked."""
    from llm_marl_envs.leaderboard.ranks import rank_entries

    def row(entry_id, mean, verified):
        interval = {"mean": mean, "lo": mean - 0.01, "hi": mean + 0.01, "n": 10}
        return {
            "id": entry_id,
            "complete": True,
            "verified": verified,
            "team": {"maze": {"0": "scripted"}},
            "overall": dict(interval),
            "tasks": {"maze": {"complete": True, "metrics": {"success": dict(interval)}}},
        }

    rows = [row("failed", 0.9, False), row("verified", 0.5, True), row("unchecked", 0.3, None)]
    tasks = [{"name": "maze", "primary": "success", "higher_is_better": {"success": True}}]
    rank_entries(rows, tasks)
    failed, verified, unchecked = rows
    assert "rank" not in failed["overall"] and "verification failed" in failed["unranked"]
    assert "rank" not in failed["tasks"]["maze"] and failed["tasks"]["maze"]["unranked"]
    assert (verified["overall"]["rank"], unchecked["overall"]["rank"]) == (1, 2)
    assert verified["tasks"]["maze"]["rank"] == 1 and "unranked" not in verified


def test_entries_whose_pages_would_share_a_name_leave_the_later_out_not_the_build(
    board, tmp_path, monkeypatch
):
    """Two ids whose site file names meet (forced here: 64 bits of sha256 cannot be matched by
    trying ids) used to break the whole build with a misleading 'free some space' error: the
    later entry is left out with its reason, the rest of the board builds."""
    import warnings

    from llm_marl_envs.leaderboard import board as leaderboard
    from llm_marl_envs.leaderboard.site import html

    monkeypatch.setattr(html, "file_id", lambda entry_id: "Same-name")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = build_board("lite", board, shipped=False)
    assert [e["id"] for e in data["entries"]] == ["oracles"]
    said = " ".join(str(w.message) for w in caught)
    assert "entry random-text" in said and "site pages would be named as entry 'oracles'" in said
    monkeypatch.undo()
    index = leaderboard.build(tmp_path / "site", board=board, shipped=False)
    assert index.is_file()


def test_the_checked_block_holds_checks_only(board):
    """An entry no verification regenerated: its seats are what it claims (the replay checks
    what the actions score, not who wrote them), so they sit under ``claimed``, not in the
    checked manifest; the suite, env specs, data and generation settings stay checked."""
    data = build_board("lite", board, shipped=False)
    entry = {e["id"]: e for e in data["entries"]}["oracles"]
    assert entry["verified"] is None
    assert all("seats" not in block for block in entry["manifest"]["tasks"].values())
    assert entry["claimed"]["seats"] == entry["team"]
    assert set(entry["manifest"]["tasks"]["maze"]) == {
        "env",
        "env_spec_hash",
        "data_hash",
        "samples",
        "generation",
    }
    assert entry["manifest"]["policies"] == {}
