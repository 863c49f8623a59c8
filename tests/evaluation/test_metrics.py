"""Suite metrics on hand-made episode records: values checked by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from llm_marl_envs.evaluation.metrics import check_metric, item_value, normalise, readable
from llm_marl_envs.rollout.records import EpisodeRecord, TurnRecord

TASK = SimpleNamespace(name="t", max_reward=3.0)


def turn(agent, action="", format_error=None, **components):
    return TurnRecord(
        agent=agent,
        role=None,
        observation="",
        messages=[],
        action=action,
        reward_components=components,
        format_error=format_error,
    )


def episode(turns, returns=None, final_infos=None):
    return EpisodeRecord(
        env_id="x",
        seed=0,
        episode=0,
        group=0,
        turns=turns,
        returns=returns or {},
        final_infos=final_infos or {},
    )


def gsm8k(pioneer: float, observer: float):
    return episode([turn("pioneer_0", correct=pioneer), turn("observer_0", correct=observer)])


def test_pass_at_k_is_the_unbiased_estimator():
    samples = [gsm8k(0, 1), gsm8k(0, 0), gsm8k(1, 1), gsm8k(0, 0), gsm8k(0, 0)]  # c = 2 of 5
    assert item_value("pass@1", samples, TASK) == pytest.approx(2 / 5)
    assert item_value("pass@2", samples, TASK) == pytest.approx(
        1 - math.comb(3, 2) / math.comb(5, 2)
    )
    assert item_value("pass@5", samples, TASK) == 1.0
    assert item_value("pass@1/pioneer_0", samples, TASK) == pytest.approx(1 / 5)
    assert item_value("pass@4", [gsm8k(0, 0)] * 5, TASK) == 0.0


def test_readable_text_and_continuation_sentiment():
    assert readable("and the acting was wonderful, truly a joy!")
    assert readable('"Great" (really) fun.')
    assert not readable("_@어:1$(文α)🤖{SP=7s 😀 !!! q")
    assert not readable("")
    words = episode([turn("pioneer_0", "a wonderful, joyful film", sentiment=0.9)])
    junk = episode([turn("pioneer_0", "😀😀 !!! ✓✓ 🤖", sentiment=0.99)])
    echo = episode([turn("pioneer_0", "a wonderful film", format_error="echo", sentiment=0.0)])
    assert item_value("continuation_sentiment", [words], TASK) > 0.5
    assert item_value("continuation_sentiment", [junk], TASK) == 0.0  # VADER alone: ~0.9
    assert item_value("continuation_sentiment", [echo], TASK) == 0.0
    assert item_value("sentiment", [junk], TASK) == 0.99  # CORY's reward pays it


def test_game_and_writing_metrics():
    maze = episode(
        [turn("gnome_0", format_error="no_move"), turn("gnome_1")],
        final_infos={
            "gnome_0": {"success": True, "steps_ratio": 1.5},
            "gnome_1": {"success": True},
        },
    )
    lost = episode([turn("gnome_0")], final_infos={"gnome_0": {"success": False}})
    assert item_value("success", [maze], TASK) == 1.0 and item_value("success", [lost], TASK) == 0.0
    assert item_value("steps_ratio", [maze], TASK) == 1.5
    assert item_value("steps_ratio", [lost], TASK) is None  # only solved mazes count
    assert item_value("format_failure/gnome_0", [maze], TASK) == 1.0
    assert item_value("format_failure", [maze], TASK) == 0.5
    writing = episode([turn("a")], returns={"a": 1.5, "b": 1.5})
    assert item_value("joint_reward", [writing], TASK) == 1.5
    assert item_value("reward_share", [writing], TASK) == 0.5
    prose = episode([turn("a", "My landlord kept the deposit."), turn("b", "He kept it all.")])
    prose.returns = {"a": 1.5, "b": 1.5}
    junk = episode([turn("a", "My landlord kept the deposit."), turn("b", "x7# 9$ ~~ qq@")])
    junk.returns = {"a": 1.5, "b": 1.5}
    assert item_value("readable_reward_share", [prose], TASK) == 0.5
    assert item_value("readable_reward_share", [prose, junk], TASK) == 0.25  # one of two
    coding = episode(
        [turn("main_0")],
        final_infos={"main_0": {"reward_components": {"tests_passed": 3.0, "tests_total": 3.0}}},
    )
    assert item_value("all_tests_passed", [coding], TASK) == 1.0


def test_names_ranges_and_directions():
    assert check_metric("pass@3", samples=2) == "pass@k needs 1 <= k <= samples (2)"
    assert check_metric("success/gnome_0", 1) == "has no per-agent form"
    assert check_metric("return", 1) == "needs an agent: NAME/AGENT"
    assert "unknown metric" in check_metric("bleu", 1)
    assert normalise("continuation_sentiment", 0.0) == 0.5
    assert normalise("format_failure/x", 0.25) == 0.75  # lower is better
    with pytest.raises(ValueError, match="no bounded range"):
        normalise("final_resources", 30.0)
