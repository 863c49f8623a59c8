"""Answer extraction and the GSM8K reward, table-driven (CORY, arXiv:2410.06101)."""

from __future__ import annotations

import pytest

from llm_marl_envs.rewards.math import (
    answers_match,
    extract_answer,
    extract_gold_answer,
    gsm8k_reward,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 42.", "42"),
        ("the answer is 1,234,567", "1234567"),
        ("She pays $1,200.50 in total.", "1200.50"),
        ("It drops to -7 degrees.", "-7"),
        ("Half of it: 0.5", "0.5"),
        ("about .75 of the cake", "0.75"),
        ("First 3, then 5, finally 8", "8"),  # no phrase: the last number
        ("The answer is 12. Check: 12 * 2 = 24", "12"),  # phrase wins over the last number
        ("THE ANSWER IS 9", "9"),
        ("The answer is unclear, maybe 4 or 5", "4"),  # first number after the phrase
        ("It costs 25.", "25"),  # trailing period stripped
        ("Total = 1,000.", "1000"),
        ("no digits at all", None),
        ("", None),
        ("The answer is", None),
        ("答案是 ٣ or 7", "7"),  # only ASCII digits count
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("solution", "gold"),
    [
        ("3 + 4 = <<3+4=7>>7\n#### 7", "7"),
        ("big\n#### 1,250", "1250"),
        ("loss\n#### -12", "-12"),
        ("no marker 5", None),
    ],
)
def test_extract_gold_answer(solution, gold):
    assert extract_gold_answer(solution) == gold


@pytest.mark.parametrize(
    ("predicted", "gold", "match"),
    [
        ("3", "3", True),
        ("3.0", "3", True),
        ("3.5", "3", False),
        (None, "3", False),
        ("3", None, False),
    ],
)
def test_answers_match(predicted, gold, match):
    assert answers_match(predicted, gold) is match


def test_gsm8k_reward_trl_signature():
    completions = [
        "so 18 eggs. The answer is 18.",
        "I think 17",
        [{"role": "assistant", "content": "The answer is 18"}],  # conversational form
        "nothing",
    ]
    answer = ["... #### 18"] * 4
    assert gsm8k_reward(completions, answer=answer, question=["q"] * 4) == [1.0, 0.0, 1.0, 0.0]


def test_gsm8k_reward_on_real_gsm8k_solutions(shared_data):
    """Every real reference solution scores 1 against itself (extraction agrees with ####)."""
    import json

    rows = [json.loads(line) for line in (shared_data / "gsm8k" / "test.jsonl").open()][:300]
    gold_lines = [r["answer"].rsplit("####", 1)[1].strip() for r in rows]
    assert (
        gsm8k_reward(
            [f"The answer is {g}." for g in gold_lines], answer=[r["answer"] for r in rows]
        )
        == [1.0] * 300
    )


def test_gsm8k_reward_as_grpo_trainer_calls_it():
    """Conversational prompts and completions, the ``gold`` column (a bare number) and TRL's
    own keywords."""
    out = gsm8k_reward(
        prompts=[[{"role": "user", "content": "Question: 3 * 6?"}]] * 2,
        completions=[
            [{"role": "assistant", "content": "3 * 6 = 18. The answer is 18."}],
            [{"role": "assistant", "content": "The answer is 19."}],
        ],
        completion_ids=[[1], [2]],
        trainer_state=None,
        log_extra=None,
        log_metric=None,
        gold=["18", "18"],
        seed=[0, 0],
    )
    assert out == [1.0, 0.0]
