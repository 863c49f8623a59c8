"""A dishonest submitter who has read the code, round 2 (issue 38): each class of attack is
contained, through the public API, plain file edits and the pull-request route (an entry
folder placed into ``<board>/entries/`` by hand), and the honest path still works.

The honest submissions here are evaluations of a team that no shipped entry plays (scripted
players in seat 0, random text in seat 1), so they are not copies of a shipped entry.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import threading
import tracemalloc
import warnings

import pytest
from board_helpers import events_of, forget, ledger_of

from llm_marl_envs.cli import main
from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard import (
    entry as submission,
    ledger as board_ledger,
    sampling,
    verify as verification,
)
from llm_marl_envs.leaderboard.board import (
    LeaderboardError,
    add_entry,
    build,
    build_board,
    override_entry,
    shipped_entries,
    verify_entry,
)

TASKS = ["gsm8k", "maze"]
MIXED = {"0": "scripted", "1": "random"}
QUIET = {"write": lambda line: None}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """An honest two-task lite evaluation by a mixed team, and one of the swapped team."""
    root = tmp_path_factory.mktemp("lite")
    evaluate(
        load_suite("lite"), Team.parse(None, MIXED), root / "mixed", tasks=TASKS, progress=False
    )
    swapped = {"0": "random", "1": "scripted"}
    evaluate(
        load_suite("lite"), Team.parse(None, swapped), root / "swapped", tasks=TASKS, progress=False
    )
    return root


@pytest.fixture
def copy(evaluated, tmp_path):
    target = tmp_path / "submission"
    shutil.copytree(evaluated / "mixed", target)
    return target


@pytest.fixture(scope="module")
def board_once(evaluated, tmp_path_factory):
    board = tmp_path_factory.mktemp("board") / "board"
    add_entry(evaluated / "mixed", board, entry_id="mixed", name="mixed team", kind="baseline")
    return board


@pytest.fixture
def board(board_once, tmp_path):
    """A board of the evaluation, each test its own copy (adding it is the costly part)."""
    return shutil.copytree(board_once, tmp_path / "board")


def refused(folder, board, words, **kwargs):
    """``add`` refuses ``folder`` in one line matching ``words``; nothing joins the board."""
    with pytest.raises(LeaderboardError, match=words) as caught:
        add_entry(folder, board, **{"entry_id": "attacker", "kind": "baseline", **kwargs})
    assert "\n" not in str(caught.value)
    assert not (board / "entries" / "attacker").exists()
    return str(caught.value)


def shown(board, shipped=False):
    """The board as ``build`` shows it, and the warnings it gave (entries left out)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = build_board("lite", board, shipped=shipped)
    return {e["id"]: e for e in data["entries"]}, [str(w.message) for w in caught], data


def read_lines(path):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return [json.loads(line) for line in handle]


def write_lines(path, rows):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt") as handle:
        handle.write("".join(json.dumps(row) + "\n" for row in rows))


def edit_results(folder, edit):
    path = folder / "results.json"
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))


def place(board, source, entry_id, edit=None):
    """A folder put into the board by hand (the pull-request route), optionally edited."""
    target = board / "entries" / entry_id
    shutil.copytree(source, target)
    if edit is not None:
        edit_results(target, edit)
    return target


# --------------------------------------------------------------------------- 1. one reader
def test_a_folder_with_both_forms_of_a_task_file_is_refused_everywhere(board, evaluated, copy):
    """Attack: the oracle's episodes as ``maze.jsonl`` beside the honest ``maze.jsonl.gz``:
    scores read one file, verification the other."""
    oracle = read_lines(shipped_entries() / "scripted" / "episodes" / "maze.jsonl.gz")
    write_lines(board / "entries" / "mixed" / "episodes" / "maze.jsonl", oracle)
    with pytest.raises(LeaderboardError, match="holds both maze.jsonl and maze.jsonl.gz"):
        verify_entry("mixed", board, **QUIET)
    entries, said, _ = shown(board)
    assert "mixed" not in entries
    assert any("mixed" in w and "holds both" in w for w in said)
    # a submission holding both forms is refused by add too
    write_lines(copy / "episodes" / "maze.jsonl.gz", read_lines(copy / "episodes" / "maze.jsonl"))
    refused(copy, board.parent / "b2", "holds both maze.jsonl and maze.jsonl.gz")


@pytest.mark.parametrize(
    "name", ["episodes/maze.jsonl.bak", "episodes/MAZE.jsonl", "notes.txt", "episodes/extra/x"]
)
def test_a_file_the_format_does_not_name_is_refused(copy, tmp_path, name):
    path = copy / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n")
    refused(copy, tmp_path / "b", "is not a file of an llm-marl eval result|remove it")


def test_verify_regenerates_exactly_the_episodes_that_are_scored(board):
    """The verification binds the bytes the reader scored: its hashes are the reader's."""
    result = verify_entry("mixed", board, sample=3, secret=7, **QUIET)
    with submission.open_entry(board / "entries" / "mixed") as entry:
        entry.read_all()
        assert result["files"] == entry.hashes
    assert set(result["files"]) >= {"episodes/maze.jsonl.gz", "results.json"}


# --------------------------------------------------------------------------- 2. bounded reading
def _bomb(path, line, unpacked=32 * 2**20):
    """A gzip of ``line`` repeated to ``unpacked`` bytes (32 MiB of ``[]`` is 34 KB packed)."""
    path.write_bytes(gzip.compress(line * max(1, unpacked // len(line)), compresslevel=9))


def _peak(run) -> int:
    tracemalloc.start()
    try:
        run()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda first: b"[]\n", "not an episode line"),
        (lambda first: first, "this episode appears twice"),  # one valid line, repeated
        (lambda first: b"\n", "more than 16 blank lines"),
        (lambda first: b'{"a": [' + b"0," * 300_000 + b"0]}\n", "more than 100,000 JSON values"),
    ],
)
def test_a_small_gzip_that_unpacks_into_millions_of_values_is_refused_early(
    copy, tmp_path, make, words
):
    """Attack: 34 KB of gzip, 32 MiB of lines; each line is checked as it is read, so what is
    parsed never grows with the file."""
    plain = copy / "episodes" / "maze.jsonl"
    first = plain.read_bytes().splitlines(keepends=True)[0]
    plain.unlink()
    _bomb(copy / "episodes" / "maze.jsonl.gz", make(first))
    peak = _peak(lambda: refused(copy, tmp_path / "b", words))
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MiB parsed for a refused file"


def test_lines_past_the_plan_are_refused_as_they_are_read(copy, tmp_path):
    path = copy / "episodes" / "gsm8k.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines) + lines[-1])
    refused(copy, tmp_path / "b", "line 17: more episodes than the plan's 16")


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda r: r["manifest"].update(finished=5), "manifest.finished must be text, not int"),
        (lambda r: r["manifest"].update(finished=None), "manifest.finished"),
        (lambda r: r["manifest"].update(policies=[]), "manifest.policies must be an object"),
        (
            lambda r: r["manifest"]["tasks"]["maze"].update(seats="all"),
            "manifest.tasks.maze.seats must be an object",
        ),
        (lambda r: r["manifest"].update(batch_size=10**9), "manifest.batch_size is 1000000000"),
        (lambda r: r["manifest"]["hardware"].update(gpu=["8x H100"]), "manifest.hardware.gpu"),
        (lambda r: r.update(board={"id": 1}), "board.id must be text"),
        (lambda r: r["suite"].update(version="2"), "suite.version must be an integer"),
    ],
)
def test_a_manifest_field_of_the_wrong_type_is_one_line_naming_it(copy, tmp_path, edit, words):
    edit_results(copy, edit)
    refused(copy, tmp_path / "b", words)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 32 levels"),
        ("1" * 400, "an integer beyond 64 bits"),
        ("NaN", "NaN is not a JSON value"),
        ("1e999", "too large to be finite"),
        ('"\\ud800"', "lone surrogate"),
    ],
)
def test_malformed_values_in_results_json_are_one_line(copy, tmp_path, text, words):
    """Attack: a 100,000-deep array, a 400-digit integer, NaN, an infinite float, a lone
    surrogate, in a field nobody reads."""
    raw = (copy / "results.json").read_text()
    (copy / "results.json").write_text(raw.replace("{", '{"extra": ' + text + ", ", 1))
    refused(copy, tmp_path / "b", words)


@pytest.mark.parametrize(
    ("value", "words"),
    [("1" * 400, "an integer beyond 64 bits"), ("[" * 50_000 + "]" * 50_000, "nested deeper")],
)
def test_a_malformed_reward_in_an_episode_is_one_line_naming_file_and_line(
    copy, tmp_path, value, words
):
    path = copy / "episodes" / "maze.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"reward": ', f'"reward": {value}, "x": ', 1)
    path.write_text("\n".join(lines) + "\n")
    message = refused(copy, tmp_path / "b", words)
    assert "maze.jsonl line 4" in message


@pytest.mark.slow
def test_a_bad_folder_at_build_is_left_out_and_never_stops_the_board(board, evaluated):
    """A hand-placed folder with a deep array, and one whose finished is a number: each left
    out with a warning naming it; the rest of the board builds, and later adds work."""
    deep = place(board, evaluated / "swapped", "deep")
    raw = (deep / "results.json").read_text()
    nested = "[" * 100_000 + "]" * 100_000
    (deep / "results.json").write_text(raw.replace("{", '{"x": ' + nested + ", ", 1))
    place(board, evaluated / "swapped", "numbered", lambda r: r["manifest"].update(finished=7))
    entries, said, _ = shown(board)
    assert "mixed" in entries and "deep" not in entries and "numbered" not in entries
    assert any("entry deep" in w and "nested deeper" in w for w in said)
    assert any("entry numbered" in w and "manifest.finished" in w for w in said)
    shutil.rmtree(board / "entries" / "deep")
    shutil.rmtree(board / "entries" / "numbered")
    add_entry(evaluated / "swapped", board, entry_id="swapped", kind="baseline")


# --------------------------------------------------------------------------- 3. checked facts
@pytest.mark.slow
def test_claims_are_shown_apart_from_what_was_checked(copy, tmp_path):
    """Attack: random text claims a pinned Qwen2.5-72B team, package 9.9.9 and 8x H100."""

    def claim(results):
        results["team"] = {"seats": ["hf:Qwen/Qwen2.5-72B-Instruct@abc"], "agents": {}}
        results["manifest"]["team"] = results["team"]
        results["manifest"]["package"]["version"] = "9.9.9"
        results["manifest"]["hardware"] = {"gpu": "8x H100", "cpus": 224}

    edit_results(copy, claim)
    board = tmp_path / "b"
    add_entry(copy, board, entry_id="claims", name="claims", kind="baseline")
    verify_entry("claims", board, **QUIET)
    entry = shown(board)[0]["claims"]
    assert entry["verified"] is True
    assert entry["team"] == {
        "gsm8k": {"pioneer_0": "scripted", "observer_0": "random"},
        "maze": {"gnome_0": "scripted", "gnome_1": "random"},
    }
    assert [p["spec"] for p in entry["played_by"]] == ["scripted", "random"]
    assert "Qwen" not in json.dumps(entry["manifest"]) + json.dumps(entry["team"])
    assert entry["claimed"]["package"]["version"] == "9.9.9"
    assert entry["claimed"]["hardware"]["gpu"] == "8x H100"
    assert "package" not in entry["manifest"] and "hardware" not in entry["manifest"]
    assert entry["manifest"]["tasks"]["maze"]["seats"] == entry["team"]["maze"]  # regenerated
    assert "seats" not in entry["claimed"]
    index = build(tmp_path / "site", board=board, shipped=False).read_text()
    assert "played by scripted, random" in index and "Qwen" not in index
    page = next((tmp_path / "site").glob("site-*/entries/claims-*.html")).read_text()
    claimed_part = page.split("<h2>Claimed</h2>")[1]
    assert "9.9.9" in claimed_part and "8x H100" in claimed_part
    assert "9.9.9" not in page.split("<h2>Claimed</h2>")[0]


def test_a_model_kind_needs_a_model_in_some_seat(copy, tmp_path):
    """Attack: --name "Qwen2.5-72B-Instruct (greedy)" --kind model on a scripted team."""
    refused(
        copy,
        tmp_path / "b",
        "kind model needs a model in some seat; this team is scripted, random",
        name="Qwen2.5-72B-Instruct (greedy)",
        kind="model",
    )


def test_generation_settings_other_than_the_suites_are_refused(copy, tmp_path):
    edit_results(copy, lambda r: r["manifest"]["tasks"]["maze"]["generation"].update(top_p=0.5))
    refused(
        copy, tmp_path / "b", "task maze: the manifest's generation settings are not the suite's"
    )


@pytest.mark.slow
def test_the_boards_date_is_the_boards_own(board, evaluated):
    """Attack: ``manifest.finished`` holds a notice meant for every visitor's header."""
    notice = "NOTICE: this board moved"
    place(board, evaluated / "swapped", "notice", lambda r: r["manifest"].update(finished=notice))
    verify_entry("notice", board, sample=1, **QUIET)
    _, _, data = shown(board)
    events = events_of(board, "notice")
    assert data["generated"] == events[-1]["at"]
    assert "NOTICE" not in data["generated"]


# --------------------------------------------------------------------------- 4. names
@pytest.mark.parametrize(
    "name",
    [
        "r\u0430nd\u043em t\u0435xt (floor)",  # Cyrillic a, o, e
        "random\u034f text (floor)",  # combining grapheme joiner
        "random text\ufe0f (floor)",  # variation selector
        "random text (floor)\U000e0101",  # variation selector supplement
        "RANDOM  TEXT (FLOOR)",
    ],
)
def test_a_look_alike_of_a_shipped_name_is_refused(copy, tmp_path, name):
    refused(copy, tmp_path / "b", "cannot be told apart from entry 'random'", name=name)


@pytest.mark.parametrize("name", ["\u3164", "\u2800", "\u200b\u200b", " \u034f ", "\u0301"])
def test_a_name_with_nothing_visible_is_refused(copy, tmp_path, name):
    refused(copy, tmp_path / "b", "no visible character", name=name)


def test_a_hand_placed_look_alike_is_left_out_and_the_original_stays(board, evaluated):
    place(
        board,
        evaluated / "swapped",
        "lookalike",
        lambda r: r.update(
            board={"id": "lookalike", "name": "m\u0456xed team", "kind": "baseline"}
        ),
    )
    entries, said, _ = shown(board)
    assert "mixed" in entries and "lookalike" not in entries
    assert any("lookalike" in w and "cannot be told apart from entry 'mixed'" in w for w in said)
    with pytest.raises(LeaderboardError, match="cannot be told apart from entry 'mixed'"):
        verify_entry("lookalike", board, **QUIET)


# --------------------------------------------------------------------------- 5. memory
def _forge_one_maze_episode(board, entry_id, index):
    """Replace one maze episode of the entry by the shipped oracle's episode of that item:
    it replays as recorded, but the entry's seats would not have played it."""
    oracle = read_lines(shipped_entries() / "scripted" / "episodes" / "maze.jsonl.gz")
    path = board / "entries" / entry_id / "episodes" / "maze.jsonl.gz"
    rows = read_lines(path)
    rows[index]["record"] = oracle[index]["record"]
    write_lines(path, rows)


def _secret(plan, forged_position, caught: bool) -> int:
    """A secret whose draw holds (or misses) the maze episode at ``forged_position``."""
    pool = {task: list(range(16)) for task in TASKS}
    for secret in range(10_000):
        drawn = set(sampling.draw(pool, plan, secret))
        if (("maze", forged_position) in drawn) == caught:
            return secret
    raise AssertionError("no such secret")


@pytest.mark.slow
def test_a_failed_verification_sticks_until_an_override(board):
    """Attack: verify again and again until the secret sample misses the forgery (a forged
    entry placed on the board by hand)."""
    path = board / "entries" / "mixed" / "episodes" / "maze.jsonl.gz"
    honest = path.read_bytes()
    forget(board)
    _forge_one_maze_episode(board, "mixed", 5)
    plan = verification.allocation([load_suite("lite").task(t) for t in TASKS], 2)["per_task"]
    failed = verify_entry("mixed", board, sample=2, secret=_secret(plan, 5, True), **QUIET)
    assert failed["verified"] is False
    passed = verify_entry("mixed", board, sample=2, secret=_secret(plan, 5, False), **QUIET)
    assert passed["verified"] is True  # this draw missed the forgery ...
    entry = shown(board)[0]["mixed"]
    assert entry["verified"] is False  # ... but the board remembers
    summary = entry["verification"]["summary"]
    assert "1 of 2 verifications failed" in summary
    assert "a failure stands until a maintainer overrides it" in summary
    # an override of the forged content, and a full verification: caught again
    override_entry("mixed", board, reason="a second look")
    assert verify_entry("mixed", board, **QUIET)["verified"] is False
    # the honest file put back is other content, which the ledger recorded under this id:
    # refused until a maintainer accepts it, saying why; then it verifies on its own
    forged = events_of(board, "mixed")
    path.write_bytes(honest)
    with pytest.raises(LeaderboardError, match="changed since the board recorded it"):
        verify_entry("mixed", board, **QUIET)
    assert "mixed" not in shown(board)[0]
    override_entry("mixed", board, reason="the forged episode was a test; restored")
    assert verify_entry("mixed", board, **QUIET)["verified"] is True
    entry = shown(board)[0]["mixed"]
    assert entry["verified"] is True and "forged episode was a test" in str(entry)
    kept = ledger_of(board).events(forged[0]["digest"])
    assert [e["event"] for e in kept] == [e["event"] for e in forged]  # nothing removed
    assert [e.get("verified") for e in kept if e["event"] == "verification"] == [
        False,
        True,
        False,
    ]
    with pytest.raises(LeaderboardError, match="--reason must say why"):
        override_entry("mixed", board, reason="  ")


@pytest.mark.slow
def test_the_failure_follows_the_content_through_a_rename_removal_and_re_add(board, evaluated):
    """Attack: launder a failed verification: move the folder to a new id and name, or remove
    the entry and add the same evaluation again; or touch up one episode. The failure is the
    content's: it follows the digest; a near-copy of it is refused."""
    forget(board)
    _forge_one_maze_episode(board, "mixed", 5)
    plan = verification.allocation([load_suite("lite").task(t) for t in TASKS], 2)["per_task"]
    verify_entry("mixed", board, sample=2, secret=_secret(plan, 5, True), **QUIET)
    forged = board / "entries" / "mixed"
    # renamed: new folder, id and name
    os.rename(forged, board / "entries" / "fresh")
    edit_results(
        board / "entries" / "fresh",
        lambda r: r.update(board={"id": "fresh", "name": "fresh start", "kind": "baseline"}),
    )
    entries, _, _ = shown(board)
    assert entries["fresh"]["verified"] is False
    assert "a failure stands" in entries["fresh"]["verification"]["summary"]
    # removed, then the same content placed again by hand under another id
    saved = shutil.copytree(board / "entries" / "fresh", board.parent / "saved")
    shutil.rmtree(board / "entries" / "fresh")
    place(board, saved, "again", lambda r: r.update(board={**r["board"], "id": "again"}))
    entries, _, _ = shown(board)
    assert entries["again"]["verified"] is False
    assert "a failure stands" in entries["again"]["verification"]["summary"]
    # one more episode touched up: a near-copy of the failed content, left out and refused
    shutil.rmtree(board / "entries" / "again")
    touched = place(
        board, saved, "touched", lambda r: r.update(board={**r["board"], "id": "touched"})
    )
    rows = read_lines(touched / "episodes" / "maze.jsonl.gz")
    oracle = read_lines(shipped_entries() / "scripted" / "episodes" / "maze.jsonl.gz")
    rows[6]["record"] = oracle[6]["record"]
    write_lines(touched / "episodes" / "maze.jsonl.gz", rows)
    entries, said, _ = shown(board)
    assert "touched" not in entries
    assert any("those of entry 'mixed' (ledger line 0, no longer on the board)" in w for w in said)
    with pytest.raises(LeaderboardError, match="those of entry 'mixed' .ledger line 0"):
        verify_entry("touched", board, **QUIET)
    shutil.rmtree(touched)
    # a new entry under the reused id, with other content, starts with no record
    add_entry(evaluated / "swapped", board, entry_id="mixed", name="new mixed", kind="baseline")
    entries, _, _ = shown(board)
    assert entries["mixed"]["verified"] is None and entries["mixed"]["verification"]["failed"] == 0


@pytest.mark.slow
def test_a_sample_too_small_for_the_guarantee_earns_no_badge(board):
    """``--sample 2`` passes, but a sample that weak does not make the entry "verified"."""
    assert verify_entry("mixed", board, sample=2, **QUIET)["verified"] is True
    entry = shown(board)[0]["mixed"]
    assert entry["verified"] is None
    assert "2 regenerated, a sample too small for the badge" in entry["verification"]["summary"]


@pytest.mark.slow
def test_an_edited_ledger_line_is_not_trusted_until_a_maintainer_starts_anew(board):
    """Attack: a ledger line edited by hand (a stronger claim): its seal no longer holds, so
    no entry of the board shows a badge and verify refuses, naming the override; the override
    keeps the broken ledger aside and starts a new one."""
    verify_entry("mixed", board, secret=1, **QUIET)
    ledger = board / board_ledger.LEDGER_FILE
    lines = ledger.read_bytes().splitlines()
    line = json.loads(lines[-1])
    line["regenerated"] = 999
    ledger.write_bytes(b"\n".join([*lines[:-1], json.dumps(line).encode()]) + b"\n")
    entry = shown(board)[0]["mixed"]
    assert entry["verified"] is False and "line 1 is not sealed" in str(entry)
    with pytest.raises(LeaderboardError, match="override mixed --reason"):
        verify_entry("mixed", board, **QUIET)
    override_entry("mixed", board, reason="ledger edited by a test")
    kept = sorted(p.name for p in board.glob("ledger.set-aside-*"))
    assert len(kept) == 2 and any(name.endswith(".jsonl") for name in kept)
    assert verify_entry("mixed", board, secret=1, **QUIET)["verified"]
    assert "set aside" in events_of(board, "mixed")[0]["reason"]


@pytest.mark.slow
def test_a_ledger_cut_back_or_removed_is_not_the_boards_and_a_whole_rollback_shows(board):
    """Attack: cut the ledger back past a failed verification, or remove it; roll the whole
    board back (ledger and head together): the site's ledger length says so."""
    forget(board)
    _forge_one_maze_episode(board, "mixed", 5)
    plan = verification.allocation([load_suite("lite").task(t) for t in TASKS], 2)["per_task"]
    missed = verify_entry("mixed", board, sample=2, secret=_secret(plan, 5, False), **QUIET)
    assert missed["verified"] is True  # a draw that missed the forgery
    older = {
        n: (board / n).read_bytes() for n in (board_ledger.LEDGER_FILE, board_ledger.HEAD_FILE)
    }
    published = shown(board)[2]["ledger"]
    caught = verify_entry("mixed", board, sample=2, secret=_secret(plan, 5, True), **QUIET)
    assert caught["verified"] is False
    later = shown(board)[2]["ledger"]
    assert later["length"] == published["length"] + 1 and later["head"] != published["head"]
    ledger = board / board_ledger.LEDGER_FILE
    ledger.write_bytes(older[board_ledger.LEDGER_FILE])  # cut back past the failure
    entry = shown(board)[0]["mixed"]
    assert entry["verified"] is False and "cut back" in str(entry)
    ledger.unlink()  # removed
    entry = shown(board)[0]["mixed"]
    assert entry["verified"] is False and "is gone (removed?)" in str(entry)
    with pytest.raises(LeaderboardError, match="is gone .removed.*override mixed --reason"):
        verify_entry("mixed", board, **QUIET)
    for name, data in older.items():  # rolled back whole: the files cannot tell ...
        (board / name).write_bytes(data)
    _, _, data = shown(board)
    assert data["ledger"] == published  # ... but a page published since showed more
    assert data["ledger"]["length"] < later["length"]
    index = build(board.parent / "site", board=board).read_text(encoding="utf-8")
    assert f'<span id="ledger-length">{published["length"]}</span> lines' in index
    assert f'<code id="ledger-head">{published["head"]}</code>' in index


@pytest.mark.slow
def test_the_key_and_the_lock_stay_out_of_version_control(board):
    from llm_marl_envs.leaderboard.records import BOARD_ID_FILE, keys_folder

    verify_entry("mixed", board, sample=1, **QUIET)
    assert not (board / "verification.key").exists()  # the key is kept outside the board
    key = keys_folder() / f"{(board / BOARD_ID_FILE).read_text().strip()}.key"
    assert key.stat().st_mode & 0o077 == 0
    assert (board / ".board.lock").read_bytes() == b""  # nothing about the host
    subprocess.run(["git", "init", "-q", str(board)], check=True)
    subprocess.run(["git", "-C", str(board), "add", "-A"], check=True)
    staged = subprocess.run(
        ["git", "-C", str(board), "ls-files"], check=True, capture_output=True, text=True
    ).stdout.split()
    assert ".board.lock" not in staged and BOARD_ID_FILE in staged
    assert {"ledger.jsonl", "ledger.head.json", "entries/mixed/results.json"} <= set(staged)
    secret = key.read_bytes().strip()
    assert not any(secret in (board / name).read_bytes() for name in staged)


# --------------------------------------------------------------------------- 7. hand-placed
@pytest.mark.slow
def test_a_byte_copy_under_a_new_id_is_not_verified(board):
    verify_entry("mixed", board, **QUIET)
    shutil.copytree(board / "entries" / "mixed", board / "entries" / "copy")
    entries, said, _ = shown(board)
    assert entries["mixed"]["verified"] is True and "copy" not in entries
    assert any("entry copy" in w and "a copy of another entry" in w for w in said)
    # its board block rewritten to the new id: still the same episodes
    edit_results(
        board / "entries" / "copy",
        lambda r: r.update(board={"id": "copy", "name": "another", "kind": "baseline"}),
    )
    entries, said, _ = shown(board)
    assert "copy" not in entries
    assert any("its content is entry 'mixed''s (the same digest)" in w for w in said)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"name": "evil\u202eelif", "kind": "baseline"}, "holds characters a name cannot hold"),
        ({"name": "Qwen2.5-72B", "kind": "model"}, "kind model needs a model"),
        ({"name": "x", "kind": "oracle"}, "board.kind must be one of"),
        ({"name": "\u3164", "kind": "baseline"}, "no visible character"),
    ],
)
def test_hand_placed_folders_meet_the_add_time_rules(board, evaluated, block, words):
    place(
        board, evaluated / "swapped", "placed", lambda r: r.update(board={"id": "placed", **block})
    )
    entries, said, _ = shown(board)
    assert "placed" not in entries and any(
        "entry placed" in w and words.split("|")[0] in w for w in said
    )
    with pytest.raises(LeaderboardError, match=words):
        verify_entry("placed", board, **QUIET)


def test_a_file_swapped_for_a_symlink_after_the_listing_is_refused(copy, tmp_path, monkeypatch):
    """Attack: the file passes the listing's check, then becomes a link to an outside file."""
    secret = tmp_path / "outside.json"
    secret.write_text(json.dumps({"schema": "llm-marl-envs/results/1", "secret": "yes"}))
    listing = submission.kinds

    def swap_after_listing(fd, where):
        found = listing(fd, where)
        if where == copy:
            (copy / "results.json").unlink()
            os.symlink(secret, copy / "results.json")
        return found

    monkeypatch.setattr(submission, "kinds", swap_after_listing)
    refused(copy, tmp_path / "b", "results.json is a symlink")


@pytest.mark.slow
def test_a_symlink_race_never_pulls_an_outside_file_in(copy, tmp_path):
    """A thread flips an episodes file between a copy and a link to an outside file while
    adds run: each add is refused or adds the honest file, never the outside one."""
    outside = tmp_path / "outside.jsonl"
    oracle = read_lines(shipped_entries() / "scripted" / "episodes" / "maze.jsonl.gz")
    write_lines(outside, oracle)
    path = copy / "episodes" / "maze.jsonl"
    honest = path.read_bytes()
    stop = threading.Event()

    def flip():
        link, real = tmp_path / "flip", tmp_path / "real"
        while not stop.is_set():
            os.symlink(outside, link)
            os.replace(link, path)
            real.write_bytes(honest)
            os.replace(real, path)

    thread = threading.Thread(target=flip)
    thread.start()
    try:
        for attempt in range(12):
            board = tmp_path / f"b{attempt}"
            try:
                add_entry(copy, board, entry_id="x", kind="baseline")
            except LeaderboardError:
                continue
            stored = read_lines(board / "entries" / "x" / "episodes" / "maze.jsonl.gz")
            assert [r["record"]["turns"] for r in stored] != [r["record"]["turns"] for r in oracle]
    finally:
        stop.set()
        thread.join()


# --------------------------------------------------------------------------- 8. duplicates
def test_copies_of_an_evaluation_under_new_names_are_refused(board, evaluated, tmp_path):
    refused(evaluated / "mixed", board, "its episodes are entry 'mixed''s", name="another name")
    # a re-encoded copy: other bytes, other policy names in the records, the same actions
    again = tmp_path / "again"
    shutil.copytree(evaluated / "mixed", again)
    path = again / "episodes" / "maze.jsonl"
    rows = read_lines(path)
    for row in rows:
        row["record"]["policies"] = {"gnome_0": "renamed", "gnome_1": "renamed"}
    write_lines(path, rows)
    refused(again, board, "its episodes are entry 'mixed''s", name="third name")


def test_a_copy_with_a_few_episodes_touched_up_is_still_a_copy(board, evaluated, tmp_path):
    """Attack: the same evaluation with one episode swapped for another legitimate one (it
    replays, its scores rescored): 31 of 32 episodes are the first entry's."""
    from llm_marl_envs.evaluation.evaluate import load_runs
    from llm_marl_envs.evaluation.results import score

    again = tmp_path / "touched"
    shutil.copytree(evaluated / "mixed", again)
    oracle = read_lines(shipped_entries() / "scripted" / "episodes" / "maze.jsonl.gz")
    path = again / "episodes" / "maze.jsonl"
    rows = read_lines(path)
    rows[0]["record"] = oracle[0]["record"]
    write_lines(path, rows)
    suite = load_suite("lite")
    results = json.loads((again / "results.json").read_text())
    team = {name: block["team"] for name, block in results["tasks"].items()}
    fresh = score(suite, load_runs(suite, again, team), entry="x", team=None)
    edit_results(again, lambda r: r.update({k: fresh[k] for k in ("tasks", "overall")}))
    refused(
        again,
        board,
        r"its episodes are entry 'mixed''s \(the same actions for at least 90%",
        name="touched",
    )


def test_a_copy_of_a_shipped_entry_is_refused_naming_it(tmp_path):
    out = tmp_path / "scripted"
    evaluate(load_suite("lite"), Team.parse("scripted"), out, tasks=["maze"], progress=False)
    refused(out, tmp_path / "b", "its episodes are entry 'scripted''s", name="my oracle")


# --------------------------------------------------------------------------- 9. score terms
def test_the_sample_is_sized_and_weighted_by_each_episodes_share_of_the_score():
    tasks = load_suite("lite").tasks
    plan = verification.allocation(tasks)
    assert plan["gain"] == verification.GAIN and plan["power"] >= verification.POWER
    assert plan["per_task"]["arxiv"] == 5  # each arXiv episode is 1/35 of the overall score
    sizes = {t.name: len(t.items) for t in tasks}
    weights = verification.episode_weights(tasks)
    assert weights["arxiv"] == pytest.approx(1 / 35) and weights["imdb"] == pytest.approx(1 / 224)
    # the example: one forged arXiv episode is now always caught
    assert sampling.miss(sizes["arxiv"], plan["per_task"]["arxiv"], 1) == 0.0
    # heavier episodes are drawn more densely
    share = {t: plan["per_task"][t] / sizes[t] for t in sizes}
    assert share["arxiv"] > share["tldr"] > share["gsm8k"] > share["imdb"]


def test_the_worst_forgery_is_caught_as_often_as_stated():
    """Place the forger's best spread for a gain of 0.02 and draw many secrets."""
    tasks = load_suite("lite").tasks
    plan = verification.allocation(tasks)
    pool = {t.name: list(range(len(t.items))) for t in tasks}
    forged = {(t, i) for t, k in plan["worst"].items() for i in range(k)}
    gain = sum(k * verification.episode_weights(tasks)[t] for t, k in plan["worst"].items())
    assert gain >= verification.GAIN - 1e-12
    caught = sum(bool(forged & set(sampling.draw(pool, plan["per_task"], s))) for s in range(4000))
    assert caught / 4000 >= plan["power"] - 0.015  # 4,000 draws: standard error 0.0034


@pytest.mark.slow
def test_the_cli_states_the_guarantee_in_score_terms(board, capsys):
    assert main(["leaderboard", "verify", "mixed", "--board", str(board), "--sample", "3"]) == 0
    said = capsys.readouterr().out
    assert "raises the overall score by 0.02 or more with probability" in said
    assert main(["leaderboard", "verify", "mixed", "--board", str(board), "--gain", "2"]) == 2
