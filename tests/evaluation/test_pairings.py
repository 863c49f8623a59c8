"""Cross-play: solo, homogeneous and heterogeneous pairs in both seat orders; the matrix, the
collaboration gaps and the seat-order effects."""

from __future__ import annotations

import json

import pytest

from llm_marl_envs.evaluation.pairings import run_pairings
from llm_marl_envs.evaluation.suite import parse_suite
from llm_marl_envs.cli import main

SUITE = {
    "name": "pairs",
    "version": 1,
    "tasks": [
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "solo_kwargs": {"variant": "full"},
            "seeds": "0:4",
            "metrics": ["success"],
            "primary": "success",
        },
        {
            "name": "donor",
            "env": "llm_marl_envs/DonorGame-v1",
            "kwargs": {"num_agents": 4, "num_rounds": 2},
            "seeds": "0:3",
            "metrics": ["donation_fraction"],
            "primary": "donation_fraction",
        },
    ],
}


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    out = tmp_path_factory.mktemp("pairs")
    said = []
    result = run_pairings(
        parse_suite(SUITE), ["scripted", "random"], out, progress=False, write=said.append
    )
    return out, result, said


@pytest.mark.slow
def test_every_condition_is_played_in_its_own_folder(table):
    out, result, said = table
    assert json.loads((out / "crossplay.json").read_text()) == result
    played = sorted(str(p.parent.relative_to(out)) for p in out.rglob("results.json"))
    assert played == [
        "pair/random__random",
        "pair/random__scripted",
        "pair/scripted__random",
        "pair/scripted__scripted",
        "solo/random",
        "solo/scripted",
    ]
    assert said[0].startswith("cross-play of 2 model(s)")
    # the solo runs play the fully observed variant, and only the tasks that have one
    solo = json.loads((out / "solo/scripted/results.json").read_text())
    assert list(solo["tasks"]) == ["maze"]
    assert solo["manifest"]["tasks"]["maze"]["env_kwargs"]["variant"] == "full"
    seats = json.loads((out / "pair/scripted__random/results.json").read_text())
    assert seats["tasks"]["donor"]["team"] == {
        "player_0": "scripted",
        "player_1": "random",
        "player_2": "scripted",
        "player_3": "random",
    }


def test_matrix_gaps_and_seat_order(table):
    _, result, _ = table
    maze = result["maze"]
    assert maze["models"] == ["scripted", "random"] and maze["seats"] == ["gnome_0", "gnome_1"]
    # the oracle gnomes solve every maze together; two random players solve none. 4 of 4 and
    # 0 of 4 are not certainties: Wilson's interval, as task scores get ([0.510, 1], [0, 0.490])
    assert maze["matrix"][0][0]["mean"] == 1.0 and maze["matrix"][0][0]["hi"] == 1.0
    assert maze["matrix"][0][0]["lo"] == pytest.approx(0.510, abs=1e-3)
    assert maze["matrix"][1][1]["mean"] == 0.0
    assert maze["matrix"][1][1]["hi"] == pytest.approx(0.490, abs=1e-3)
    # the scripted oracle alone on the fully observed maze: also every maze, so no gap, with
    # an interval at least one item's swing (1/4) wide
    assert maze["solo"]["scripted"]["mean"] == 1.0
    assert maze["gap"]["scripted"] == {"mean": 0.0, "lo": -0.125, "hi": 0.125, "n": 4}
    # every item's score is kept: the table can be recomputed without playing again
    items = maze["per_item"]
    assert items["pairs"]["scripted|scripted"] == {f"seed-{i}": 1.0 for i in range(4)}
    assert items["solo"]["scripted"] == {f"seed-{i}": 1.0 for i in range(4)}
    assert set(items["pairs"]) == {
        f"{a}|{b}" for a in ("scripted", "random") for b in ("scripted", "random")
    }
    order = maze["seat_order"]["scripted|random"]
    off_diagonal = maze["matrix"][0][1]["mean"] - maze["matrix"][1][0]["mean"]
    assert order["mean"] == pytest.approx(off_diagonal) and order["n"] == 4
    donor = result["donor"]
    assert donor["solo"] == {} and donor["gap"] == {}  # no fully observed variant
    assert all(cell["n"] == 3 for row in donor["matrix"] for cell in row)


def test_cli_pairings_prints_the_matrix(tmp_path, capsys):
    import yaml

    suite_file = tmp_path / "pairs.yaml"
    suite_file.write_text(yaml.safe_dump({**SUITE, "tasks": SUITE["tasks"][:1]}))
    code = main(
        [
            "eval",
            str(suite_file),
            "--pairings",
            "scripted",
            "--out",
            str(tmp_path / "x"),
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "maze (success on 0..1" in printed and "collaboration gap scripted" in printed
    assert (tmp_path / "x" / "crossplay.json").is_file()
