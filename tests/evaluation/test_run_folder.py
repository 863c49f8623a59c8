"""The run folder's format has one home (issue 49): ``evaluation/run_folder.py`` names every
file of an ``llm-marl eval`` folder, writes and reads the episode line and keeps the resume's
bookkeeping; the harness, the leaderboard's entry reader and its board use it, and no other
module of the package spells a file name of the format. The harness's own behaviour (resume,
nothing lost) is tested in test_nothing_lost.py and test_evaluate.py."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest

from llm_marl_envs.evaluation import run_folder
from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import parse_suite
from llm_marl_envs.rollout.records import EpisodeRecord

PACKAGE = Path(__file__).resolve().parents[2] / "llm_marl_envs"
SUITE = {
    "name": "tiny",
    "version": 1,
    "seed": 0,
    "tasks": [
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "seeds": [0, 1, 2],
            "metrics": ["success"],
            "primary": "success",
        }
    ],
}


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A scripted evaluation of a three-episode maze task: its folder and the task."""
    out = tmp_path_factory.mktemp("run") / "out"
    suite = parse_suite(SUITE)
    evaluate(suite, Team.parse("scripted"), out, progress=False, write=lambda _: None)
    return out, suite.task("maze")


def test_no_other_module_spells_a_file_of_the_format():
    """Every string constant of the package that is a name of the format (a file, a form, the
    results schema) is in run_folder.py: the harness, the entry reader and the board take it
    from there (read with ``ast``, so docstrings and messages that mention a name don't count
    unless they are exactly it)."""
    names = {
        run_folder.LOCK_FILE,
        run_folder.RUN_FILE,
        run_folder.RESULTS_FILE,
        run_folder.RESULTS_SCHEMA,
        run_folder.META_FORM,
        *run_folder.EPISODE_FORMS[1:],
        *(f".{form}" for form in (*run_folder.EPISODE_FORMS[1:], run_folder.META_FORM)),
    }
    spelled = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "run_folder.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                spelled.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert spelled == []
    # the readers and writers that use it
    for module in ("evaluation/evaluate.py", "leaderboard/entry.py", "leaderboard/board.py"):
        assert "run_folder" in (PACKAGE / module).read_text(encoding="utf-8"), module


def test_the_folder_holds_the_named_files(played):
    out, task = played
    assert (out / run_folder.RESULTS_FILE).is_file() and (out / run_folder.RUN_FILE).is_file()
    assert run_folder.find_episodes(out, "maze") == run_folder.episodes_file(out, "maze")
    assert set(run_folder.read_meta(out, "maze")) == {"wall_seconds", "data_hash"}
    assert run_folder.find_episodes(out, "gsm8k") is None and run_folder.read_meta(out, "x") == {}
    assert not list((out / run_folder.PROGRESS_DIR).glob("maze.*"))  # merged and removed
    results = json.loads((out / run_folder.RESULTS_FILE).read_text(encoding="utf-8"))
    assert results["schema"] == run_folder.RESULTS_SCHEMA


def test_episode_lines_round_trip_and_a_gzipped_copy_reads_the_same(played, tmp_path):
    out, task = played
    lines = run_folder.load_episodes(run_folder.episodes_file(out, "maze"))
    assert [(line["item"], line["sample"]) for line in lines] == [(0, 0), (1, 0), (2, 0)]
    assert all(set(line) == run_folder.LINE_KEYS for line in lines)
    assert all(isinstance(line["record"], EpisodeRecord) for line in lines)
    # the line the board writes is the line the harness wrote
    item, record = task.items[1], lines[1]["record"]
    again = run_folder.episode_line(
        task, item, 0, json.dumps(record.to_dict(shallow=True), ensure_ascii=False)
    )
    assert json.loads(again) == json.loads(
        run_folder.episodes_file(out, "maze").read_text(encoding="utf-8").splitlines()[1]
    )
    packed = run_folder.episodes_file(tmp_path, "maze", gz=True)
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(run_folder.episodes_file(out, "maze").read_bytes()))
    assert run_folder.find_episodes(tmp_path, "maze") == packed
    assert [x["record"].to_dict() for x in run_folder.load_episodes(packed)] == [
        x["record"].to_dict() for x in lines
    ]


def test_saved_episodes_keep_the_plan_and_name_each_bad_line(played, tmp_path):
    out, task = played
    text = run_folder.episodes_file(out, "maze").read_text(encoding="utf-8").splitlines()
    target = run_folder.episodes_file(tmp_path, "maze")
    target.parent.mkdir()
    target.write_text("\n".join([text[0], text[0], "{not json", text[2][:40]]), encoding="utf-8")
    said: list[str] = []
    kept, problems = run_folder.saved_episodes(task, tmp_path, said.append)
    assert set(kept) == {(0, 0)}
    assert [p.split(": ", 1)[1] for p in problems] == [
        "item 0 sample 0 appears twice",
        "not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        "cut short (no newline)",
    ]
    assert len(said) == 3 and all("left out" in line for line in said)


def test_a_shard_resumes_into_the_plans_numbers(played, tmp_path):
    """Progress shards map their lines to (item, sample); the task file renumbers each record
    by its place in the plan and removes the shards."""
    out, task = played
    records = [
        json.dumps(x["record"].to_dict(), ensure_ascii=False)
        for x in run_folder.load_episodes(run_folder.episodes_file(out, "maze"))
    ]
    plan = task.episode_plan()
    shard = run_folder.new_shard(task, tmp_path, [plan[2], plan[0]])
    assert shard.name == "maze.0.jsonl" and shard.with_suffix(".plan.json").name
    first = [json.loads(records[2]), json.loads(records[0])]
    for number, data in enumerate(first):  # a resumed engine counts from 0
        data["episode"] = data["group"] = number
    shard.write_text("".join(json.dumps(d) + "\n" for d in first) + '{"episode": 1', "utf-8")
    assert run_folder.new_shard(task, tmp_path, [plan[1]]).name == "maze.1.jsonl"
    done = run_folder.finished_episodes(task, tmp_path)
    assert set(done) == {(2, 0), (0, 0)}  # the line cut short by a kill is not one
    done[(1, 0)] = records[1]
    written = run_folder.write_task(task, done, tmp_path, {"wall_seconds": 1.0})
    assert [json.loads(line)["episode"] for _, _, line in written] == [0, 1, 2]
    assert not list((tmp_path / run_folder.PROGRESS_DIR).iterdir())
    assert run_folder.read_meta(tmp_path, "maze") == {"wall_seconds": 1.0}
    again = run_folder.load_episodes(run_folder.episodes_file(tmp_path, "maze"))
    assert [x["record"].to_dict() for x in again] == [
        EpisodeRecord.from_dict(json.loads(r)).to_dict() for r in records
    ]


def test_a_damaged_gzip_file_is_one_error_naming_it(tmp_path):
    path = tmp_path / "maze.jsonl.gz"
    packed = gzip.compress(
        "".join(f'{{"line": {n}, "text": "{n**7}"}}\n' for n in range(2000)).encode()
    )
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(run_folder.EvalError, match="maze.jsonl.gz: the file is cut short"):
        list(run_folder.episode_lines(path))
