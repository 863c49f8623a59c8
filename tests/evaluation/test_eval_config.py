"""How an evaluation runs, as one object (:class:`EvalConfig`): the same evaluation as the
keywords give, built once and passed whole (cross-play too); both at once is refused."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from llm_marl_envs.evaluation import EvalConfig, Team, evaluate
from llm_marl_envs.evaluation.pairings import run_pairings
from llm_marl_envs.evaluation.suite import parse_suite

SUITE = {
    "name": "config",
    "version": 1,
    "tasks": [
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "solo_kwargs": {"variant": "full"},
            "seeds": [0, 1, 2],
            "metrics": ["success"],
            "primary": "success",
        },
        {
            "name": "donor",
            "env": "llm_marl_envs/DonorGame-v1",
            "kwargs": {"num_agents": 3, "num_rounds": 1},
            "seeds": [0],
            "metrics": ["donation_fraction"],
            "primary": "donation_fraction",
        },
    ],
}


def _scores(results: dict) -> dict:
    return {name: block["per_item"] for name, block in results["tasks"].items()}


def test_a_config_plays_the_evaluation_its_keywords_play(tmp_path):
    suite, team = parse_suite(SUITE), Team.parse(team=["0=scripted", "1=random"])
    said_by_keywords, said_by_config = [], []
    by_keywords = evaluate(
        suite,
        team,
        tmp_path / "keywords",
        tasks=["maze"],
        batch_size=2,
        progress=False,
        entry="mine",
        write=said_by_keywords.append,
    )
    config = EvalConfig(
        tasks=["maze"], batch_size=2, progress=False, entry="mine", write=said_by_config.append
    )
    by_config = evaluate(suite, team, tmp_path / "config", config=config)
    assert by_config["entry"] == by_keywords["entry"] == "mine"
    assert list(by_config["tasks"]) == ["maze"]
    assert _scores(by_config) == _scores(by_keywords)
    episodes = [
        (tmp_path / run / "episodes" / "maze.jsonl").read_bytes() for run in ("keywords", "config")
    ]
    assert episodes[0] == episodes[1]
    run = json.loads((tmp_path / "config" / "run.json").read_text())
    assert run["batch_size"] == 2 and run["tasks"] == ["maze"]

    def said(lines, run):  # the folder and the wall time differ; nothing else may
        return [
            re.sub(r" in \d+ s$", " in T s", line.replace(str(tmp_path / run), "OUT"))
            for line in lines
        ]

    assert said(said_by_config, "config") == said(said_by_keywords, "keywords")
    assert config.tasks == ("maze",)  # frozen, and so are its tasks
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batch_size = 4


def test_a_config_and_keywords_at_once_are_refused_before_anything_is_written(tmp_path):
    suite, team = parse_suite(SUITE), Team.parse("scripted")
    with pytest.raises(TypeError, match=r"not both \(keywords: batch_size, tasks\)"):
        evaluate(suite, team, tmp_path / "out", batch_size=2, tasks=["maze"], config=EvalConfig())
    with pytest.raises(TypeError, match="config must be an EvalConfig"):
        evaluate(suite, team, tmp_path / "out", config={"batch_size": 2})
    assert not (tmp_path / "out").exists()


def test_cross_play_takes_the_config_whole_and_names_each_condition_by_its_team(tmp_path):
    said: list[str] = []
    config = EvalConfig(tasks=["maze"], entry="ignored", progress=False, write=said.append)
    table = run_pairings(parse_suite(SUITE), ["scripted", "random"], tmp_path, config=config)
    assert list(table) == ["maze"] and table["maze"]["models"] == ["scripted", "random"]
    pair = json.loads((tmp_path / "pair/scripted__random/results.json").read_text())
    assert pair["entry"] == "scripted + random" and list(pair["tasks"]) == ["maze"]
    assert said[0].startswith("cross-play of 2 model(s) on config-v1 (maze): 6 evaluations")
    assert any(line.startswith("[6/6] pair/random__random") for line in said)
