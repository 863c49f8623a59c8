"""Suite versions: what carries over from an older version, and only what plays the same."""

from __future__ import annotations

import copy
import json

import pytest

from llm_marl_envs.evaluation.suite import load_suite, parse_suite
from llm_marl_envs.leaderboard import board as leaderboard, rules as board_rules
from llm_marl_envs.leaderboard.board import build_board, same_play
from llm_marl_envs.leaderboard.site.pages import build_site


def edited(label: str, task: str, **changes) -> object:
    """The packaged suite ``label`` with ``changes`` made to one task's YAML entry."""
    raw = copy.deepcopy(load_suite(label).raw)
    block = next(t for t in raw["tasks"] if t["name"] == task)
    block.update(changes)
    return parse_suite(raw, f"edited {label}")


def test_lite_v2_changes_coding_alone_and_v3_the_writing_scores_alone():
    old, new = load_suite("lite-v1"), load_suite("lite-v2")
    same = {t.name: same_play(old, new, t.name) for t in new.tasks}
    assert same == {name: name != "coding" for name in same}
    assert not same_play(old, new, "no-such-task")
    newest = load_suite("lite")
    same = {t.name: same_play(new, newest, t.name) for t in newest.tasks}
    assert same == {name: name not in ("tldr", "arxiv") for name in same}


@pytest.mark.parametrize(
    "changes",
    [
        {"seeds": "1:17"},  # other games
        {"kwargs": {"size": 7, "max_cycles": 6}},  # another maze
        {"solo_kwargs": {"variant": "partial"}},  # another solo condition
        {"primary": "steps_ratio"},  # scored on another metric
        {"samples": 2},
        {"generation": {"do_sample": True, "temperature": 0.7}},
    ],
)
def test_any_change_to_what_a_task_plays_or_scores_breaks_the_match(changes):
    assert same_play(load_suite("lite"), load_suite("lite"), "maze")
    assert not same_play(load_suite("lite"), edited("lite", "maze", **changes), "maze")


def test_a_newer_version_shows_the_older_cross_play_of_unchanged_tasks_only(tmp_path, monkeypatch):
    v1 = json.loads((leaderboard.shipped_entries() / "crossplay-lite-v1.json").read_text())
    shipped = tmp_path / "entries"
    shipped.mkdir()
    monkeypatch.setattr(board_rules, "shipped_entries", lambda: shipped)
    # a v1 table that (hypothetically) also held coding, which v2 plays on CoopCoding-v4
    v1["coding"] = {**v1["maze"], "env": "llm_marl_envs/CoopCoding-v2"}
    (shipped / "crossplay-lite-v1.json").write_text(json.dumps(v1))
    carried = board_rules.shipped_crossplay(load_suite("lite-v2"))
    assert sorted(carried) == ["donor", "maze"]  # coding changed: its v1 table is not shown
    assert all(block["measured_on"] == "lite-v1" for block in carried.values())
    assert carried["maze"]["matrix"] == v1["maze"]["matrix"]
    # the version's own table, once it ships, is the one shown (nothing carried over)
    own = {"maze": {**v1["maze"], "matrix": [[None] * 4] * 4}}
    (shipped / "crossplay-lite-v2.json").write_text(json.dumps(own))
    assert board_rules.shipped_crossplay(load_suite("lite-v2")) == own
    # the older version's board shows its own table as it is
    assert "measured_on" not in board_rules.shipped_crossplay(load_suite("lite-v1"))["maze"]


def test_the_site_says_where_a_carried_over_table_was_played(tmp_path, monkeypatch):
    shipped = tmp_path / "entries"
    shipped.mkdir()
    v1 = leaderboard.shipped_entries() / "crossplay-lite-v1.json"
    (shipped / v1.name).write_bytes(v1.read_bytes())  # a package with v1's table alone
    monkeypatch.setattr(board_rules, "shipped_entries", lambda: shipped)
    board = build_board("lite", tmp_path / "empty-board")
    assert {b.get("measured_on") for b in board["crossplay"].values()} == {"lite-v1"}
    index = build_site(board, tmp_path / "site").read_text(encoding="utf-8")
    assert index.count("Played on lite-v1, which plays this task exactly as") == 2
    # the older version's own board shows the same table without the note
    own = build_site(build_board("lite-v1", tmp_path / "empty-board"), tmp_path / "site-v1")
    assert "Played on" not in own.read_text(encoding="utf-8")
