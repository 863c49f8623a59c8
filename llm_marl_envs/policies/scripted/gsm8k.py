"""Scripted players of GSM8K (CORY's pioneer -> observer math task).

Not meant to be good: they make the task playable without a model, offline, in microseconds,
with a deterministic transcript for a given seed.
"""

from __future__ import annotations

import re
from typing import Any

from llm_marl_envs.policies.base import PolicyFn
from llm_marl_envs.rewards.math import extract_answer

__all__ = ["gsm8k"]

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _gsm8k_pioneer(observation: str, info: dict[str, Any]) -> str:
    """Adds up every number in the question: right only on one-step addition problems."""
    question = observation.rsplit("Question:", 1)[-1]
    numbers = [float(n) for n in _NUMBER.findall(question)]
    total = sum(numbers)
    total_text = f"{total:g}" if total != int(total) else str(int(total))
    listed = ", ".join(f"{n:g}" for n in numbers)
    return f"Adding the numbers {listed} gives {total_text}. The answer is {total_text}."


def _gsm8k_observer(observation: str, info: dict[str, Any]) -> str:
    """Trusts the reference answer."""
    reference = observation.rsplit("Reference:", 1)[-1].rsplit("Answer:", 1)[0]
    answer = extract_answer(reference)
    if answer is None:
        return "I cannot tell from the reference."
    return f"The reference looks right to me. The answer is {answer}."


def gsm8k(agent: str, seed: int = 0) -> PolicyFn:
    """The pioneer adds up the question's numbers; the observer trusts the reference."""
    return _gsm8k_pioneer if agent.startswith("pioneer") else _gsm8k_observer
