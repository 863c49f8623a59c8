"""Replay equality means equal (issue 49, attack class "equality"): a submitted value joins
the board only when it is the replay's, of the same JSON type; floats within a relative
tolerance only where neither is a whole number, never by an absolute one; and the board keeps
the replay's values, so no submitted float is ever scored.

Each attack edits an honest scripted evaluation's records with a text editor's power (the
results rescored with the package's own scoring, as a careful attacker would)."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from llm_marl_envs.evaluation.evaluate import load_runs
from llm_marl_envs.evaluation.results import score
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard.board import LeaderboardError, add_entry
from llm_marl_envs.leaderboard.replay import FLOAT_REL_TOL, _same

TASKS = ["gsm8k", "maze"]
TEAM = {"0": "scripted", "pioneer_0": "random"}


@pytest.fixture(scope="module")
def honest(evaluate_once):
    """An honest lite evaluation of TASKS by the scripted players (and a random GSM8K
    pioneer), shared with the other modules that use it (conftest.py)."""
    return evaluate_once(TASKS, TEAM)


@pytest.fixture
def copy(honest, tmp_path):
    target = tmp_path / "submission"
    shutil.copytree(honest, target)
    return target


def edit(folder, task, change):
    """Apply ``change`` to each record of ``task`` and rescore results.json from the edits."""
    path = folder / "episodes" / f"{task}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        change(row["record"])
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    suite = load_suite("lite")
    results = json.loads((folder / "results.json").read_text())
    assignments = {name: block["team"] for name, block in results["tasks"].items()}
    fresh = score(suite, load_runs(suite, folder, assignments), entry="x", team=None, partial=True)
    results.update({k: fresh[k] for k in ("tasks", "overall")})
    (folder / "results.json").write_text(json.dumps(results))


def refused(folder, board, words):
    with pytest.raises(LeaderboardError, match=words) as caught:
        add_entry(folder, board, entry_id="attacker")
    assert "\n" not in str(caught.value)
    assert not (board / "entries" / "attacker").exists()


def stored(entry, task):
    with gzip.open(entry / "episodes" / f"{task}.jsonl.gz", "rt") as handle:
        return [json.loads(line)["record"] for line in handle]


def _final_correct(record, value):
    for info in record["final_infos"].values():
        if "correct" in info.get("reward_components", {}):
            info["reward_components"]["correct"] = value
    for turn in record["turns"]:
        if "correct" in turn.get("reward_components", {}):
            turn["reward_components"]["correct"] = value


@pytest.mark.parametrize(
    "value",
    [5e-324, 1e-300, 1e-13, 1e-12, 0.9999999999, True, 1],
    ids=["subnormal", "tiny", "under-old-abs-tol", "at-old-abs-tol", "near-one", "bool", "int"],
)
def test_a_crafted_correct_is_refused(copy, tmp_path, value):
    """A ``correct`` of 0.0 on replay, submitted as a tiny float, a float a hair under 1, a
    boolean or an integer (the earlier replay let 5e-324 through as 0.0 and a board scored it
    as solved)."""
    edit(copy, "gsm8k", lambda record: _final_correct(record, value))
    refused(copy, tmp_path / "b", "do not replay")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("success_as_int", 1),
        ("string_renormalised", "e\u0301"),
        ("negated_zero_reward", "sign"),
        ("relative_1e-6", 1e-6),
    ],
)
def test_other_type_and_value_changes_are_refused(copy, tmp_path, field, value):
    def change(record):
        turn = record["turns"][0]
        if field == "success_as_int":  # a float outcome written as an integer
            turn["reward_components"]["success"] = int(turn["reward_components"]["success"])
        elif field == "string_renormalised":  # the same text to a reader, other code points
            turn["observation"] = turn["observation"].replace("e", value, 1)
        elif field == "negated_zero_reward":
            turn["reward"] = -turn["reward"]
        else:
            turn["reward"] = turn["reward"] * (1 + value)

    edit(copy, "maze", change)
    refused(copy, tmp_path / "b", "do not replay")


def test_last_bit_rounding_joins_and_the_board_keeps_the_replays_values(copy, tmp_path):
    """Another machine's maths library may round a non-integral float's last bits otherwise:
    such an entry joins, and what the board keeps (and scores) is the replay's value, not the
    submitted one."""
    replayed = [
        r["turns"][0]["reward"]
        for r in (
            json.loads(x)["record"]
            for x in (copy / "episodes" / "maze.jsonl").read_text().splitlines()
        )
    ]
    assert all(not float(v).is_integer() for v in replayed)
    edit(copy, "maze", lambda r: r["turns"][0].update(reward=r["turns"][0]["reward"] * (1 + 4e-16)))
    submitted = [
        json.loads(x)["record"]["turns"][0]["reward"]
        for x in (copy / "episodes" / "maze.jsonl").read_text().splitlines()
    ]
    assert submitted != replayed
    entry = add_entry(copy, tmp_path / "b", entry_id="rounded")
    kept = [record["turns"][0]["reward"] for record in stored(entry, "maze")]
    assert kept == replayed
    # who played it is the submission's
    first = stored(entry, "maze")[0]
    assert (
        first["policies"]
        == json.loads((copy / "episodes" / "maze.jsonl").read_text().splitlines()[0])["record"][
            "policies"
        ]
    )


def test_the_equality_rule():
    assert _same(1, 1) and _same("a", "a") and _same(None, None) and _same(True, True)
    assert not _same(1, 1.0) and not _same(True, 1) and not _same(0, False)
    assert not _same(5e-324, 0.0) and not _same(0.0, 5e-324) and not _same(1.0, 0.9999999999)
    assert _same(0.1 + 0.2, 0.3) and not _same(0.3, 0.3 * (1 + 10 * FLOAT_REL_TOL))
    assert not _same(1e-20, -1e-20) and _same(-0.0, 0.0)
    import numpy as np

    assert _same(np.float64(0.25), 0.25) and _same(np.int64(3), 3) and not _same(np.bool_(1), 1)
