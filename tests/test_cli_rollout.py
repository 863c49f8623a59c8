"""``llm-marl rollout`` and ``llm-marl play`` with scripted policies (models: tests/rollout)."""

from __future__ import annotations

import pytest

from llm_marl_envs.cli import main
from llm_marl_envs.playing import parse_assignments, run_play
from llm_marl_envs.rollout import read_jsonl


def test_rollout_writes_jsonl_and_prints_a_summary(tmp_path, capsys):
    out = tmp_path / "maze.jsonl"
    code = main([
        "rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "scripted", "--agent", "gnome_1=random",
        "--episodes", "5", "--batch-size", "2", "--seed", "4", "--out", str(out), "--show", "1",
        "--env-arg", "size=5", "--no-progress",
    ])
    assert code == 0
    text = capsys.readouterr().out
    assert "=== llm_marl_envs/MazeCollab-v0 | episode 0 | seed 4" in text
    assert "MazeCollab-v0  gnome_0" in text and "episodes written to" in text
    records = read_jsonl(out)
    assert sorted(r.episode for r in records) == list(range(5))
    assert all(r.env_kwargs == {"size": 5} for r in records)
    assert records[0].policies == {"gnome_0": "scripted:gnome_0", "gnome_1": "random"}


def test_rollout_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "scripted", "--episodes", "0"])
    with pytest.raises(SystemExit):
        main(["rollout", "llm_marl_envs/MazeCollab-v0", "--agent", "gnome_0"])
    with pytest.raises(ValueError, match="unknown policy spec"):
        main(["rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "gpt-17"])
    with pytest.raises(ValueError, match="no agent"):
        main(["rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "scripted", "--agent", "gnome_7=random"])


def test_parse_assignments_reads_yaml_values():
    assert parse_assignments(["size=7", "variant=full", "turn_weights=[1.2, 0.8]", "flag=true"], "x") == {
        "size": 7, "variant": "full", "turn_weights": [1.2, 0.8], "flag": True,
    }
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_assignments(["novalue"], "--env-arg")


def test_play_lets_a_person_move_a_gnome():
    typed = iter(["MOVE: stay\\", "SAY: waiting for you"] + ["stay"] * 200)
    shown = []
    returns = run_play(
        "llm_marl_envs/MazeCollab-v0", humans=["gnome_0"], policy="scripted", seed=2,
        env_kwargs={"size": 5}, read=lambda prompt: next(typed), write=shown.append,
    )
    assert set(returns) == {"gnome_0", "gnome_1"}
    text = "\n".join(shown)
    assert "gnome_0 (" in text and "[gnome_1] MOVE:" in text and "Game over" in text
