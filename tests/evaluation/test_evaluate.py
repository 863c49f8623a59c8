"""``llm-marl eval``: a suite played by a team, scored, with a manifest; stopped runs resume
without replaying or losing an episode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_marl_envs.evaluation.evaluate import EvalError, Team, evaluate, load_episodes
from llm_marl_envs.evaluation.stats import wilson
from llm_marl_envs.evaluation.suite import parse_suite
from llm_marl_envs.cli import main

MINI = {
    "name": "mini",
    "version": 1,
    "seed": 3,
    "tasks": [
        {
            "name": "gsm8k",
            "env": "llm_marl_envs/GSM8K-v0",
            "kwargs": {"data_source": "bundled", "split": "test"},
            "rows": "0:6",
            "metrics": ["pass@1", "pass@1/pioneer_0", "format_failure/observer_0"],
            "primary": "pass@1",
        },
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "seeds": [0, 1, 2],
            "metrics": ["success", "steps_ratio", "format_failure/gnome_0"],
            "primary": "success",
        },
        {
            "name": "donor",
            "env": "llm_marl_envs/DonorGame-v1",
            "kwargs": {"num_agents": 4, "num_rounds": 2},
            "seeds": "0:2",
            "metrics": ["donation_fraction", "final_resources", "format_failure/player_2"],
            "primary": "donation_fraction",
        },
    ],
}


def all_lines(out: Path) -> dict[str, list[dict]]:
    return {p.stem: load_episodes(p) for p in sorted((out / "episodes").glob("*.jsonl"))}


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "scripted"
    results = evaluate(parse_suite(MINI), Team.parse("scripted"), out, progress=False)
    return out, results


def test_results_scores_and_records(scripted):
    out, results = scripted
    assert json.loads((out / "results.json").read_text()) == results
    assert results["complete"] and results["entry"] == "scripted"
    maze = results["tasks"]["maze"]
    # the scripted gnomes are oracles: every maze solved along a shortest path; 3 of 3 is
    # Wilson's interval, not a point
    assert maze["metrics"]["success"] == wilson(3, 3).to_dict()
    assert round(maze["metrics"]["success"]["lo"], 3) == 0.439
    assert maze["metrics"]["steps_ratio"]["mean"] == 1.0
    assert maze["metrics"]["format_failure/gnome_0"]["mean"] == 0.0
    assert maze["score"]["mean"] == 1.0 and set(maze["per_item"]) == {"seed-0", "seed-1", "seed-2"}
    gsm8k = results["tasks"]["gsm8k"]
    assert gsm8k["metrics"]["pass@1"]["n"] == 6 and 0.0 <= gsm8k["metrics"]["pass@1"]["mean"] <= 1.0
    values = [v["pass@1"] for v in gsm8k["per_item"].values()]
    assert gsm8k["metrics"]["pass@1"]["mean"] == pytest.approx(sum(values) / 6)
    # overall: the mean of the task scores (each on 0..1), inside its interval
    scores = [t["score"]["mean"] for t in results["tasks"].values()]
    overall = results["overall"]
    assert overall["mean"] == pytest.approx(sum(scores) / 3)
    assert overall["lo"] <= overall["mean"] <= overall["hi"] and overall["n"] == 11
    lines = all_lines(out)
    assert [len(lines[t]) for t in ("gsm8k", "maze", "donor")] == [6, 3, 2]
    first = lines["gsm8k"][0]
    assert (first["key"], first["seed"], first["options"]) == ("row-0", 3, {"row_index": 0})
    assert first["record"].reset_options == {"row_index": 0}
    assert not list((out / "progress").iterdir())  # merged and removed


def test_manifest_says_what_was_measured(scripted):
    _, results = scripted
    manifest = results["manifest"]
    suite = parse_suite(MINI)
    assert manifest["suite"]["hash"] == suite.hash() == results["suite"]["hash"]
    assert manifest["package"]["version"]
    assert {"python", "numpy", "pettingzoo"} <= set(manifest["libraries"])
    assert manifest["hardware"]["cpus"] >= 1
    gsm8k = manifest["tasks"]["gsm8k"]
    assert gsm8k["env_spec_hash"] == suite.task("gsm8k").spec_hash()
    assert gsm8k["data_hash"].startswith("sha256:") and gsm8k["data_source"] == "bundled"
    assert manifest["tasks"]["maze"]["data_hash"] is None  # a procedural game
    assert gsm8k["items"][0] == {"key": "row-0", "seed": 3, "row_index": 0}
    assert gsm8k["generation"]["do_sample"] is False
    assert gsm8k["seats"] == {"pioneer_0": "scripted", "observer_0": "scripted"}
    assert manifest["policies"] == {}  # no model loaded
    assert manifest["tokens_generated"] == 0 and manifest["wall_seconds"] > 0


def test_deterministic_given_the_records(scripted, tmp_path):
    _, results = scripted
    again = evaluate(parse_suite(MINI), Team.parse("scripted"), tmp_path, progress=False)
    for name, task in results["tasks"].items():
        assert again["tasks"][name]["metrics"] == task["metrics"]
        assert again["tasks"][name]["per_item"] == task["per_item"]
    assert again["overall"] == results["overall"]


@pytest.mark.slow
def test_an_interrupted_evaluation_resumes_without_replaying(tmp_path, monkeypatch):
    """A Ctrl-C in the middle of a task keeps the finished episodes; the same call resumes,
    plays only the rest, and the result has each episode once."""
    from llm_marl_envs.policies.hf import HFPolicy
    from llm_marl_envs.rollout.engine import RolloutInterrupted

    suite = parse_suite(MINI)
    team = Team.parse("tiny")
    calls = {"n": 0}
    original = HFPolicy.generate

    def interrupted(self, prompts):
        calls["n"] += 1
        if calls["n"] == 3:  # after two batches: the first two GSM8K episodes are finished
            raise KeyboardInterrupt
        return original(self, prompts)

    monkeypatch.setattr(HFPolicy, "generate", interrupted)
    with pytest.raises(RolloutInterrupted):
        evaluate(suite, team, tmp_path, batch_size=2, progress=False)
    shard = tmp_path / "progress" / "gsm8k.0.jsonl"
    kept = [json.loads(line) for line in shard.read_text().splitlines()]
    assert len(kept) == 2
    monkeypatch.setattr(HFPolicy, "generate", original)
    said = []
    results = evaluate(suite, team, tmp_path, batch_size=2, progress=False, write=said.append)
    assert any("resuming, 2 episodes kept, 4 to play" in line for line in said)
    lines = all_lines(tmp_path)
    assert [(x["item"], x["sample"]) for x in lines["gsm8k"]] == [(i, 0) for i in range(6)]
    by_key = {x["key"]: x["record"].to_dict() for x in lines["gsm8k"]}
    for record in kept:  # the episodes finished before the stop are the ones in the result
        assert by_key[f"row-{record['reset_options']['row_index']}"]["turns"] == record["turns"]
    assert results["complete"] and results["tasks"]["gsm8k"]["metrics"]["pass@1"]["n"] == 6
    policy = results["manifest"]["policies"]["tiny"]
    assert policy["kind"] == "transformers" and policy["weights_sha256"].startswith("sha256:")
    assert results["manifest"]["tokens_generated"] > 0
    # once complete, the same call plays nothing and keeps the result (its manifest included)
    said = []
    assert evaluate(suite, team, tmp_path, batch_size=2, write=said.append) == results
    assert said[-1] == (
        f"{tmp_path}: this evaluation is complete; its results are in {tmp_path / 'results.json'}"
    )
    assert not any("episodes in" in line for line in said)  # nothing played


def test_a_folder_of_another_run_is_refused(scripted):
    out, _ = scripted
    with pytest.raises(EvalError, match="team differ.*new --out folder"):
        evaluate(parse_suite(MINI), Team.parse("random"), out, progress=False)


@pytest.mark.parametrize(
    ("policy", "team", "agents", "expected"),
    [
        ("default", None, ["a", "b", "c"], {"a": "default", "b": "default", "c": "default"}),
        (
            None,
            ["0=tiny", "1=scripted"],
            ["a", "b", "c"],
            {"a": "tiny", "b": "scripted", "c": "tiny"},
        ),
        (None, ["0=tiny", "b=random"], ["a", "b"], {"a": "tiny", "b": "random"}),
        (None, {"0": "x", "1": "y"}, ["a", "b"], {"a": "x", "b": "y"}),
    ],
)
def test_team_assignment(policy, team, agents, expected):
    assert Team.parse(policy, team).assign(agents) == expected


@pytest.mark.parametrize(
    ("policy", "team", "words"),
    [
        ("tiny", ["0=tiny"], "not both"),
        (None, None, "not both"),
        (None, ["tiny"], "SEAT=SPEC"),
        (None, ["0=a", "2=b"], "without gaps"),
        (None, ["pioneer_0=tiny"], "add 0=SPEC"),
    ],
)
def test_bad_teams(policy, team, words):
    with pytest.raises(EvalError, match=words):
        Team.parse(policy, team)


def test_cli_eval_prints_the_scores(tmp_path, capsys):
    suite_file = tmp_path / "mini.yaml"
    mini = {**MINI, "tasks": MINI["tasks"][1:2]}
    suite_file.write_text(yaml.safe_dump(mini))
    out = tmp_path / "out"
    code = main(
        ["eval", str(suite_file), "--policy", "scripted", "--out", str(out), "--no-progress"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "maze" in printed and "1.000" in printed and str(out / "results.json") in printed
    assert json.loads((out / "results.json").read_text())["tasks"]["maze"]["items"] == 3


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["eval", "nosuch", "--policy", "scripted"], "unknown suite 'nosuch'"),
        (["eval", "lite", "--policy", "scripted", "--tasks", "chess"], "has no task 'chess'"),
        (["eval", "lite", "--team", "0"], "SEAT=SPEC"),
        (["eval", "lite", "--policy", "scripted", "--data", "go=/x"], "--data names no task"),
    ],
)
def test_cli_eval_mistakes_are_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("llm-marl: error:") and words in err and "\n" not in err


@pytest.mark.slow
def test_kill_9_mid_task_then_resume_keeps_every_finished_episode(tmp_path):
    """A real ``llm-marl eval`` process killed with SIGKILL in the middle of a task: the
    resumed evaluation keeps the episodes it had finished (as they were) and plays the rest."""
    import os
    import signal
    import subprocess
    import sys
    import time

    suite_file = tmp_path / "mini.yaml"
    suite_file.write_text(yaml.safe_dump(MINI))
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    argv = ["eval", str(suite_file), "--policy", "tiny", "--batch-size", "1", "--out", str(out)]
    child = subprocess.Popen(
        [sys.executable, "-m", "llm_marl_envs.cli", *argv, "--no-progress"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    shard = out / "progress" / "maze.0.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and child.poll() is None:
        if shard.exists() and shard.read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert not (out / "results.json").exists(), "the run ended before it could be killed"
    kept = {
        json.loads(line)["seed"]: json.loads(line)["turns"]
        for line in shard.read_text().splitlines()
        if line.endswith("}")
    }
    assert kept and (out / "episodes" / "gsm8k.jsonl").exists()  # gsm8k finished before
    results = evaluate(
        parse_suite(MINI),
        Team.parse("tiny"),
        out,
        batch_size=1,
        progress=False,
        write=lambda _: None,
    )
    lines = all_lines(out)
    assert [(x["item"], x["sample"]) for x in lines["maze"]] == [(0, 0), (1, 0), (2, 0)]
    for line in lines["maze"]:
        if line["seed"] in kept:  # finished before the kill: kept as it was, not replayed
            assert line["record"].to_dict()["turns"] == kept[line["seed"]]
    assert results["complete"] and [len(lines[t]) for t in ("gsm8k", "maze", "donor")] == [6, 3, 2]


@pytest.mark.slow  # about 2.5 s: three tasks with the tiny model
def test_one_model_load_plays_every_task_with_its_own_settings(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from llm_marl_envs.policies import GenerationConfig, hf

    loads = []
    load_model = hf.load_model
    monkeypatch.setattr(hf, "load_model", lambda *a, **k: loads.append(k) or load_model(*a, **k))
    mini = {**MINI, "tasks": [dict(MINI["tasks"][0], rows="0:2", max_new_tokens=5)]}
    mini["tasks"].append(dict(MINI["tasks"][1], seeds=[0], max_new_tokens=3))
    out = tmp_path / "tiny"
    results = evaluate(
        parse_suite(mini),
        Team.parse("tiny"),
        out,
        progress=False,
        generation=GenerationConfig(dtype="float64", max_new_tokens=99),
        write=lambda _: None,
    )
    # one load, where the config says
    assert loads == [{"dtype": "float64", "device": "auto"}]
    for task, budget in (("gsm8k", 5), ("maze", 3)):  # the suite's budget, not the caller's
        turns = [t for x in all_lines(out)[task] for t in x["record"].turns]
        assert max(t.completion_tokens for t in turns) == budget
    assert results["manifest"]["policies"]["tiny"]["dtype"] == "float64"
    assert json.loads((out / "run.json").read_text())["generation"] == {"dtype": "float64"}
