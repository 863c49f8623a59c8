"""Evaluation suites: the packaged ones load, hashes pin what is played, bad files say why."""

from __future__ import annotations

import copy

import pytest
import yaml

import llm_marl_envs
from llm_marl_envs.evaluation.suite import (
    SuiteError,
    available_suites,
    data_hash,
    load_suite,
    packaged_version,
    parse_suite,
)

MINIMAL = {
    "name": "mini",
    "version": 1,
    "tasks": [
        {
            "name": "gsm8k",
            "env": "llm_marl_envs/GSM8K-v0",
            "kwargs": {"data_source": "bundled", "split": "test"},
            "rows": "0:3",
            "metrics": ["pass@1", "format_failure/pioneer_0"],
            "primary": "pass@1",
        },
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "seeds": [4, 9],
            "metrics": ["success"],
            "primary": "success",
        },
    ],
}


def test_packaged_suites_load_and_every_task_can_be_made():
    assert {"lite", "full"} <= set(available_suites())
    lite = load_suite("lite")
    assert lite.label == "lite-v3"
    assert [t.name for t in lite.tasks] == [
        "gsm8k",
        "imdb",
        "tldr",
        "arxiv",
        "coding",
        "maze",
        "donor",
    ]
    for task in lite.tasks:  # the lite suite runs offline: every env and its rows exist here
        env = llm_marl_envs.make(task.env, **task.kwargs)
        assert task.primary in task.metrics
        data = getattr(env.unwrapped, "data", None)
        rows = [i.options["row_index"] for i in task.items if i.options]
        if rows:
            assert max(rows) < len(data.rows), task.name
    full = load_suite("full")
    assert full.task("gsm8k").samples == 5 and "pass@5" in full.task("gsm8k").metrics
    assert len(full.task("gsm8k").items) == 1319


def test_items_seeds_and_keys():
    suite = parse_suite(MINIMAL)
    gsm8k, maze = suite.tasks
    assert [(i.seed, i.options, i.key) for i in gsm8k.items] == [
        (0, {"row_index": 0}, "row-0"),
        (1, {"row_index": 1}, "row-1"),
        (2, {"row_index": 2}, "row-2"),
    ]
    assert [(i.seed, i.options, i.key) for i in maze.items] == [
        (4, None, "seed-4"),
        (9, None, "seed-9"),
    ]
    assert gsm8k.generation_settings()["do_sample"] is False  # greedy unless the suite samples
    assert gsm8k.token_budget() == llm_marl_envs.token_budget("llm_marl_envs/GSM8K-v0")
    assert gsm8k.solo() is None  # no fully observed variant
    lite_maze = load_suite("lite").task("maze")
    assert lite_maze.solo().kwargs == {**lite_maze.kwargs, "variant": "full"}
    assert lite_maze.solo().items == lite_maze.items  # the same seeds: paired with the pairs


def test_hashes_pin_the_suite_the_game_and_the_rows():
    suite = parse_suite(MINIMAL)
    assert suite.hash() == parse_suite(copy.deepcopy(MINIMAL)).hash()
    changed = copy.deepcopy(MINIMAL)
    changed["tasks"][1]["seeds"] = [4, 10]
    assert parse_suite(changed).hash() != suite.hash()
    # the spec hash follows the game (kwargs, generation), not where the data came from
    gsm8k = suite.tasks[0]
    local = suite.with_data_sources({"gsm8k": "bundled"}).tasks[0]
    assert local.spec_hash() == gsm8k.spec_hash()
    harder = copy.deepcopy(MINIMAL)
    harder["tasks"][0]["generation"] = {"do_sample": True, "temperature": 0.7}
    assert parse_suite(harder).tasks[0].spec_hash() != gsm8k.spec_hash()
    # the data hash covers the rows played: other rows, another hash; games have none
    first = data_hash(gsm8k)
    assert first.startswith("sha256:") and first == data_hash(gsm8k)
    other = copy.deepcopy(MINIMAL)
    other["tasks"][0]["rows"] = "1:4"
    assert data_hash(parse_suite(other).tasks[0]) != first
    assert data_hash(suite.tasks[1]) is None


def test_rows_beyond_the_split_are_refused_with_its_size():
    big = copy.deepcopy(MINIMAL)
    big["tasks"][0]["rows"] = "0:5000"
    with pytest.raises(SuiteError, match=r"gsm8k/test from bundled has \d+ rows"):
        data_hash(parse_suite(big).tasks[0])


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda s: s.pop("version"), "missing 'version'"),
        (lambda s: s["tasks"][0].pop("primary"), "missing 'primary'"),
        (lambda s: s["tasks"][0].update(env="llm_marl_envs/GSM8K-v9"), "GSM8K-v9"),
        (lambda s: s["tasks"][0].update(seeds="0:2"), "exactly one of 'rows'"),
        (lambda s: s["tasks"][0].update(rows="5:2"), "START < STOP"),
        (lambda s: s["tasks"][0].update(metrics=["pass@3"], primary="pass@3"), "samples"),
        (
            lambda s: s["tasks"][0].update(metrics=["accuracy"], primary="accuracy"),
            "unknown metric",
        ),
        (lambda s: s["tasks"][0].update(primary="success"), "not one of its metrics"),
        (lambda s: s["tasks"][0].update(temprature=0.7), "unknown keys"),
        (lambda s: s["tasks"][1].update(name="gsm8k"), "repeat"),
        (lambda s: s["tasks"][1].update(solo_kwargs={"variant": "bogus"}), "solo_kwargs"),
        (
            lambda s: s["tasks"][1].update(metrics=["success/gnome_0"], primary="success/gnome_0"),
            "per-agent",
        ),
    ],
)
def test_bad_suites_name_the_problem(edit, words):
    raw = copy.deepcopy(MINIMAL)
    edit(raw)
    with pytest.raises(SuiteError, match=words.replace("(", r"\(")):
        parse_suite(raw, "mini.yaml")


def test_suite_files_by_path_and_unknown_names(tmp_path):
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(MINIMAL))
    assert load_suite(path).hash() == parse_suite(MINIMAL).hash()
    with pytest.raises(
        SuiteError, match="unknown suite 'tiny'.*full, full-v1, full-v2, lite, lite-v1, lite-v2"
    ):
        load_suite("tiny")
    (tmp_path / "bad.yaml").write_text("name: [unclosed")
    with pytest.raises(SuiteError, match="not valid YAML"):
        load_suite(tmp_path / "bad.yaml")


#: The hashes of version 1 (what lite-v1's results and the cross-play file kept with it
#: recorded): an older version stays playable, bit for bit.
V1_HASHES = {
    "lite": "sha256:89742d7d45aac642d4ad272f0bb2d18290cc91d3de56e63960f703a5d09396be",
    "full": "sha256:f8c3c4356810d3ae343ebaefccd0f3fd0800aa5bac7d4234b240a15b82670a56",
}


#: The hashes of version 2 (the shipped entries of lite-v2 recorded the lite one).
V2_HASHES = {
    "lite": "sha256:122ab08dde72f5a2ea2d27fe6ef5786a3f2394c0b943d7ae30b1aa11a130dcee",
    "full": "sha256:7bdeea85fc4833055a697631882c6dade6dabf8425b7f0e4dab26660b2989654",
}


@pytest.mark.parametrize("name", ["lite", "full"])
def test_older_versions_stay_playable_by_label(name):
    newest, v2, old = load_suite(name), load_suite(f"{name}-v2"), load_suite(f"{name}-v1")
    assert (newest.version, v2.version, old.version, old.name) == (3, 2, 1, name)
    assert old.hash() == V1_HASHES[name] and v2.hash() == V2_HASHES[name]
    assert load_suite(f"{name}-v3").hash() == newest.hash()
    # version 2 plays coding on CoopCoding-v4 (neither reward hack of v2 pays); nothing else moved
    codings = [t for t in v2.tasks if "CoopCoding" in t.env]
    assert codings and {t.env for t in codings} == {"llm_marl_envs/CoopCoding-v4"}
    assert {t.env for t in old.tasks if "CoopCoding" in t.env} == {"llm_marl_envs/CoopCoding-v2"}
    others = [(t.name, t.spec_hash()) for t in v2.tasks if "CoopCoding" not in t.env]
    assert others == [(t.name, t.spec_hash()) for t in old.tasks if "CoopCoding" not in t.env]
    # version 3 plays every task as version 2 and ranks the writing tasks by their sense check
    assert [(t.name, t.spec_hash()) for t in newest.tasks] == [
        (t.name, t.spec_hash()) for t in v2.tasks
    ]
    primaries = {t.name: (t.primary, v2.task(t.name).primary) for t in newest.tasks}
    changed = {n for n, (a, b) in primaries.items() if a != b}
    assert changed == {"tldr", "arxiv"}
    assert {primaries[n] for n in changed} == {("sensible_reward_share", "readable_reward_share")}
    assert packaged_version(name, 1).hash() == old.hash()
    assert packaged_version(name, 2).hash() == v2.hash()
    assert packaged_version(name, 3).hash() == newest.hash()
    for missing in (4, 0, "1", True, None):
        assert packaged_version(name, missing) is None
    with pytest.raises(SuiteError, match=f"unknown suite '{name}-v4'"):
        load_suite(f"{name}-v4")


def test_every_kept_version_file_is_the_version_its_name_says():
    for label in available_suites():
        suite = load_suite(label)
        if label == suite.name:  # the newest version, by its plain name
            assert f"{suite.name}-v{suite.version}" not in available_suites()
        else:
            assert label == suite.label, f"{label}.yaml holds {suite.label}"
            assert suite.version < load_suite(suite.name).version
