"""Answer extraction and the exact-match reward of GSM8K (CORY: Ma et al., NeurIPS 2024, arXiv:2410.06101).

Pure functions: no environment state, no I/O, no randomness. :func:`gsm8k_reward` has the
TRL reward-function signature ``f(completions, **columns) -> list[float]`` so it plugs into
other trainers unchanged.

Rules:
  * gold answer: the number after ``#### `` in the reference solution, commas removed;
  * model answer: the first number after "The answer is" (case-insensitive) when that phrase
    is present, otherwise the last number in the text; commas and a trailing period stripped;
  * reward 1.0 when the two numbers are equal, else 0.0.

>>> extract_answer("5 + 7 = 12 apples. The answer is 1,200.")
'1200'
>>> gsm8k_reward(["so she has 18."], answer=["... #### 18"])
[1.0]
"""

from __future__ import annotations

import re
from typing import Any

from llm_marl_envs.core.text_env import DEFAULT_MAX_ACTION_LENGTH
from llm_marl_envs.rewards.inputs import answer_text, per_row, team_rewards

__all__ = ["answers_match", "extract_answer", "extract_gold_answer", "gsm8k_reward"]

_NUMBER = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
_ANSWER_IS = re.compile(r"the answer is", re.IGNORECASE)
_GOLD = re.compile(r"####\s*(-?[\d,]*\.?\d+)")


def _normalise(number: str) -> str:
    number = number.replace(",", "").rstrip(".")
    if number.startswith("-."):
        number = "-0" + number[1:]
    elif number.startswith("."):
        number = "0" + number
    return number


def extract_answer(text: str) -> str | None:
    """Extract the model's final number from free text, or ``None`` when there is none.

    Returns the number as a normalised string (no commas, no trailing period), e.g.
    ``"-3.5"`` or ``"1200"``.
    """
    match = _ANSWER_IS.search(text)
    if match:
        first = _NUMBER.search(text, match.end())
        if first:
            return _normalise(first.group())
    numbers = _NUMBER.findall(text)
    return _normalise(numbers[-1]) if numbers else None


def extract_gold_answer(solution: str) -> str | None:
    """The reference number after ``####`` in a GSM8K solution (commas removed)."""
    match = _GOLD.search(solution)
    return _normalise(match.group(1)) if match else None


def answers_match(predicted: str | None, gold: str | None) -> bool:
    """Numeric equality of two extracted answers (``"3.0" == "3"``); ``None`` never matches."""
    if predicted is None or gold is None:
        return False
    try:
        return abs(float(predicted) - float(gold)) <= 1e-6 * max(1.0, abs(float(gold)))
    except ValueError:
        return False


def gsm8k_reward(
    completions: list[Any],
    answer: list[str] | None = None,
    *,
    gold: list[str] | None = None,
    reward_mode: list[str] | str = "individual",
    partner_reward: list[float] | float | None = None,
    max_action_length: list[int] | int = DEFAULT_MAX_ACTION_LENGTH,
    **kwargs: Any,
) -> list[float]:
    """Exact-match reward, 1.0 when the completion's number equals the reference's.

    The TRL reward signature: ``GRPOTrainer`` passes ``prompts``, ``completions`` (strings, or
    conversations whose last assistant message is scored) and every dataset column. On the
    columns of ``llm_marl_envs.integrations.trl.env_dataset`` it pays what GSM8K-v0 pays.

    Args:
        completions: Model outputs.
        answer: Reference solutions ending in ``#### <number>`` (the GSM8K ``answer`` column),
            or bare gold numbers.
        gold: The gold numbers (``env.gold``), if the dataset names the column so; used when
            ``answer`` is not given.
        reward_mode: ``"individual"`` (default: the completion's own score) or
            ``"collective"`` (plus ``partner_reward``, as the env pays in CORY's mode).
        partner_reward: The partner's task reward (the observer's rows: the pioneer's r1).
        max_action_length: Longer completions are format failures scoring 0, as in the env.
        **kwargs: ``prompts``, other dataset columns and TRL's own keywords, ignored.
    """
    references = answer if answer is not None else gold
    if references is None:
        raise TypeError("gsm8k_reward needs the gold answers: an 'answer' or 'gold' column")
    limits = per_row(max_action_length, len(completions), "max_action_length")
    own = []
    for completion, reference, limit in zip(completions, references, limits, strict=True):
        reference = str(reference)
        target = extract_gold_answer(reference) or extract_answer(reference)
        text = answer_text(completion, limit)
        own.append(float(text is not None and answers_match(extract_answer(text), target)))
    return team_rewards(own, reward_mode, partner_reward, "gsm8k_reward")
