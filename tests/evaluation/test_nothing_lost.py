"""Nothing lost (issue 33): an evaluation folder in use is locked, a task file always holds the
whole frozen plan, a lost or cut episode line is played again (numbered as an uninterrupted
run numbers it), and a failed write is one line."""

from __future__ import annotations

import errno
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from llm_marl_envs.cli import main
from llm_marl_envs.evaluation.evaluate import EvalError, Team, evaluate, load_episodes
from llm_marl_envs.evaluation.files import FolderBusy
from llm_marl_envs.evaluation.results import score
from llm_marl_envs.evaluation.suite import PlanError, parse_suite

# the module (the package's ``evaluate`` name is the function)
evaluate_module = importlib.import_module("llm_marl_envs.evaluation.evaluate")
run_folder = importlib.import_module("llm_marl_envs.evaluation.run_folder")

SMALL = {
    "name": "small",
    "version": 1,
    "seed": 0,
    "tasks": [
        {
            "name": "gsm8k",
            "env": "llm_marl_envs/GSM8K-v0",
            "kwargs": {"data_source": "bundled", "split": "test"},
            "rows": "0:4",
            "metrics": ["pass@1"],
            "primary": "pass@1",
        },
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "seeds": [0, 1],
            "metrics": ["success"],
            "primary": "success",
        },
    ],
}
QUIET = {"progress": False, "write": lambda _: None}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An uninterrupted scripted evaluation of SMALL: its files, to compare with."""
    out = tmp_path_factory.mktemp("reference") / "out"
    results = evaluate(parse_suite(SMALL), Team.parse("scripted"), out, **QUIET)
    files = {t: (out / "episodes" / f"{t}.jsonl").read_bytes() for t in ("gsm8k", "maze")}
    return results, files


def episodes_file(out, task="gsm8k"):
    return out / "episodes" / f"{task}.jsonl"


def scores(results):
    return {name: block["per_item"] for name, block in results["tasks"].items()}


# --------------------------------------------------------------------------- the lock
def hold_lock(out):
    """A child process holding ``out``'s evaluation lock, as a running ``llm-marl eval``
    does; returns it once the lock is held."""
    code = (
        "import sys, time\n"
        "from llm_marl_envs.evaluation.files import folder_lock\n"
        f"with folder_lock({str(out)!r}, '.eval.lock', 'x', 'y'):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(120)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, env={**os.environ}, text=True
    )
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_eval_on_a_folder_in_use_is_refused_naming_the_holder(tmp_path, capsys):
    suite_file = tmp_path / "small.yaml"
    suite_file.write_text(json.dumps(SMALL))
    out = tmp_path / "out"
    out.mkdir()
    child = hold_lock(out)
    argv = ["eval", str(suite_file), "--policy", "scripted", "--out", str(out), "--no-progress"]
    try:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "is in use by another llm-marl eval" in err
        assert f"process {child.pid} on " in err and "give another --out" in err
        assert not (out / "run.json").exists()  # refused before anything was written
    finally:
        child.send_signal(signal.SIGKILL)  # a holder killed -9 ...
        child.wait()
    assert main(argv) == 0  # ... leaves no lock behind
    assert json.loads((out / "results.json").read_text())["complete"]


def test_concurrent_evals_on_one_folder_lose_no_episode(tmp_path, reference):
    """Four evaluations started together on one folder: each finishes or is refused with
    one line; the folder ends complete, each task file the uninterrupted run's."""
    out = tmp_path / "out"
    barrier = threading.Barrier(4)
    outcomes = []

    def run():
        barrier.wait()
        try:
            evaluate(parse_suite(SMALL), Team.parse("scripted"), out, **QUIET)
            outcomes.append("done")
        except FolderBusy as busy:
            assert "is in use by another llm-marl eval" in str(busy)
            outcomes.append("refused")

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 4 and "done" in outcomes
    for task, expected in reference[1].items():
        assert episodes_file(out, task).read_bytes() == expected
    results = json.loads((out / "results.json").read_text())
    assert scores(results) == scores(reference[0])
    assert not list((out / "progress").iterdir())


# --------------------------------------------------------------------------- the plan
def test_a_deleted_line_is_played_again(tmp_path, reference):
    out = tmp_path / "out"
    evaluate(parse_suite(SMALL), Team.parse("scripted"), out, **QUIET)
    path = episodes_file(out)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2] + lines[3:]))  # row-2 is lost
    said = []
    results = evaluate(
        parse_suite(SMALL), Team.parse("scripted"), out, progress=False, write=said.append
    )
    assert any("gsm8k.jsonl lacks 1 of its 4 episodes; playing them again" in s for s in said)
    # the episode played again is the one lost, numbered (episode, group) as it was
    assert path.read_bytes() == reference[1]["gsm8k"]
    assert results["tasks"]["gsm8k"]["items"] == 4 and scores(results) == scores(reference[0])


def test_a_file_cut_short_is_named_with_its_line_and_completed(tmp_path, reference):
    out = tmp_path / "out"
    evaluate(parse_suite(SMALL), Team.parse("scripted"), out, **QUIET)
    path = episodes_file(out)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 300])  # a copy cut off inside the last line
    with pytest.raises(EvalError, match=rf"{path}:4: not an episode line .*cut short"):
        load_episodes(path)
    said = []
    evaluate(parse_suite(SMALL), Team.parse("scripted"), out, progress=False, write=said.append)
    assert f"  gsm8k: {path}:4: cut short (no newline); left out (its episode is played again)" in (
        said
    )
    assert path.read_bytes() == reference[1]["gsm8k"]


def test_resumed_records_keep_the_numbers_of_an_uninterrupted_run(tmp_path, monkeypatch, reference):
    """Stopped after two of gsm8k's four episodes, then resumed: the task file is the
    uninterrupted run's byte for byte (``record.episode`` / ``group`` 2 and 3, not 0 and 1)."""
    from llm_marl_envs.policies.base import CallablePolicy
    from llm_marl_envs.rollout.engine import RolloutInterrupted

    calls = {"n": 0}
    original = CallablePolicy.generate

    def interrupted(self, prompts):
        calls["n"] += 1
        if calls["n"] == 3:  # after one batch of two episodes (two turns each)
            raise KeyboardInterrupt
        return original(self, prompts)

    monkeypatch.setattr(CallablePolicy, "generate", interrupted)
    out = tmp_path / "out"
    with pytest.raises(RolloutInterrupted):
        evaluate(parse_suite(SMALL), Team.parse("scripted"), out, batch_size=2, **QUIET)
    assert (out / "progress" / "gsm8k.0.jsonl").read_text().count("\n") == 2
    monkeypatch.setattr(CallablePolicy, "generate", original)
    evaluate(parse_suite(SMALL), Team.parse("scripted"), out, batch_size=2, **QUIET)
    assert episodes_file(out).read_bytes() == reference[1]["gsm8k"]
    numbers = [(x["record"].episode, x["record"].group) for x in load_episodes(episodes_file(out))]
    assert numbers == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_a_task_file_is_never_written_without_the_whole_plan(tmp_path):
    suite = parse_suite(SMALL)
    task = suite.task("gsm8k")
    lines = {(item.index, 0): "{}" for item in task.items[:3]}
    with pytest.raises(EvalError, match=r"1 of its 4 episodes .* are missing \(first: row-3"):
        evaluate_module._save_task(task.plan(), lines, {}, tmp_path, 0.0)
    assert not list(tmp_path.rglob("*.jsonl"))


def test_scoring_refuses_a_run_that_is_not_the_plan(reference):
    suite = parse_suite(SMALL)
    task = suite.task("maze")
    record = None  # scoring refuses before it reads a record
    runs = [evaluate_module.TaskRun(task, [(task.items[0], 0, record)], 0.0, None, {})]
    with pytest.raises(PlanError, match=r"task maze cannot be scored: 1 of its 2 episodes"):
        score(suite, runs, entry="x", team=None)
    twice = [(task.items[0], 0, record)] * 2 + [(task.items[1], 0, record)]
    runs = [evaluate_module.TaskRun(task, twice, 0.0, None, {})]
    with pytest.raises(PlanError, match=r"1 episode\(s\) appear twice \(first: seed-0 sample 0"):
        score(suite, runs, entry="x", team=None)


# --------------------------------------------------------------------------- failed writes
def test_a_full_disk_stops_eval_with_one_line_and_the_rerun_completes(
    tmp_path, monkeypatch, capsys, reference
):
    suite_file = tmp_path / "small.yaml"
    suite_file.write_text(json.dumps(SMALL))
    out = tmp_path / "out"
    real = run_folder.write_atomic  # (the run folder's writes)

    def full(path, data):
        if str(path).endswith("maze.jsonl"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, data)

    monkeypatch.setattr(run_folder, "write_atomic", full)
    argv = ["eval", str(suite_file), "--policy", "scripted", "--out", str(out), "--no-progress"]
    assert main(argv) == 1
    said = capsys.readouterr().out.strip()
    assert said == (
        f"eval stopped: cannot write {out / 'episodes' / 'maze.jsonl'}: No space left on device "
        "(free some space or fix the folder's permissions); run the same command to resume"
    )
    assert episodes_file(out).read_bytes() == reference[1]["gsm8k"]  # kept
    monkeypatch.setattr(run_folder, "write_atomic", real)
    assert main(argv) == 0
    assert episodes_file(out, "maze").read_bytes() == reference[1]["maze"]


def test_the_lock_note_names_the_holder_and_a_dead_holder_releases(tmp_path):
    from llm_marl_envs.evaluation.files import folder_lock

    with folder_lock(tmp_path, ".lock", "a test", "wait"):
        started = time.monotonic()
        with pytest.raises(FolderBusy, match=rf"in use by a test: process {os.getpid()} on "):
            with folder_lock(tmp_path, ".lock", "a test", "wait", wait=0.3):
                pass
        assert time.monotonic() - started >= 0.3  # it waited before refusing
    with folder_lock(tmp_path, ".lock", "a test", "wait"):  # released on leaving
        pass


def test_a_damaged_results_file_is_scored_again(tmp_path, reference):
    out = tmp_path / "out"
    evaluate(parse_suite(SMALL), Team.parse("scripted"), out, **QUIET)
    text = (out / "results.json").read_text()
    (out / "results.json").write_text(text[:100])
    results = evaluate(parse_suite(SMALL), Team.parse("scripted"), out, **QUIET)
    assert scores(results) == scores(reference[0])
    assert json.loads((out / "results.json").read_text()) == results
