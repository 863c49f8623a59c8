"""A task's frozen episode plan (:meth:`Task.plan`): its order, numbering, what a resume lacks,
and why a set of played episodes is not the plan."""

from __future__ import annotations

import pytest

from llm_marl_envs.evaluation.suite import Plan, parse_suite

SUITE = {
    "name": "plan",
    "version": 1,
    "tasks": [
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "kwargs": {"size": 5},
            "seeds": [4, 5, 6],
            "samples": 2,
            "metrics": ["success"],
            "primary": "success",
        }
    ],
}


@pytest.fixture
def task():
    return parse_suite(SUITE).task("maze")


def test_the_plan_is_item_by_item_samples_together_and_numbered_in_that_order(task):
    plan = task.plan()
    assert isinstance(plan, Plan) and plan.task is task and len(plan) == 6
    keys = [(item.index, sample) for item, sample in plan]
    assert keys == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert [item.seed for item, _ in plan] == [4, 4, 5, 5, 6, 6]
    assert plan.numbering == {key: number for number, key in enumerate(keys)}
    assert task.episode_plan() == list(plan.episodes)  # the older name, the same list


def test_what_a_resume_plays_and_the_order_a_file_is_written_in(task):
    plan = task.plan()
    missing = plan.missing({(0, 1): "x", (2, 0): "y"})
    assert [(item.index, sample) for item, sample in missing] == [(0, 0), (1, 0), (1, 1), (2, 1)]
    lines = {
        (item.index, sample): f"{item.seed}/{sample}" for item, sample in reversed(plan.episodes)
    }
    assert [line for _, _, line in plan.ordered(lines)] == [
        "4/0",
        "4/1",
        "5/0",
        "5/1",
        "6/0",
        "6/1",
    ]
    with pytest.raises(KeyError):
        plan.ordered({(0, 0): "only one"})


@pytest.mark.parametrize(
    ("played", "said"),
    [
        ([(i, s) for i in range(3) for s in range(2)], None),
        (
            [(0, 0), (0, 1), (1, 0)],
            "3 of its 6 episodes (3 items x 2 samples) are missing (first: seed-5 sample 1)",
        ),
        (
            [(i, s) for i in range(3) for s in range(2)] + [(7, 0), (1, 1)],
            "1 episode(s) are not in its plan (first: item 7 sample 0); 1 episode(s) appear "
            "twice (first: seed-5 sample 1)",
        ),
    ],
)
def test_why_played_episodes_are_not_the_plan(task, played, said):
    assert task.plan().difference(played) == said
    assert task.plan_difference(played) == said
