"""Fixtures shared by the leaderboard's tests."""

from __future__ import annotations

import json

import pytest

from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.suite import load_suite

#: The scripted players, with a random GSM8K pioneer: an honest team that plays fast.
HONEST_TEAM = {"0": "scripted", "pioneer_0": "random"}


@pytest.fixture(scope="session")
def evaluate_once(tmp_path_factory):
    """``make(tasks, team=HONEST_TEAM)``: an honest lite evaluation of ``tasks``, made once per
    session (per test worker) and shared; tests copy it before editing."""
    made: dict[tuple, object] = {}

    def make(tasks, team=None):
        team = team or HONEST_TEAM
        key = (tuple(tasks), json.dumps(team, sort_keys=True))
        if key not in made:
            out = tmp_path_factory.mktemp("honest") / "evaluation"
            evaluate(
                load_suite("lite"), Team.parse(None, team), out, tasks=list(tasks), progress=False
            )
            made[key] = out
        return made[key]

    return make
