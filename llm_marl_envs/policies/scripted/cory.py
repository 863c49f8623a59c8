"""Scripted players of the CORY tasks (GSM8K-v0, IMDBSentiment-v0).

Not meant to be good: they make the tasks playable without a model, offline, in
microseconds, with a deterministic transcript for a given seed.
"""

from __future__ import annotations

import re
from typing import Any

from llm_marl_envs.policies.base import PolicyFn
from llm_marl_envs.policies.scripted import turn_draw
from llm_marl_envs.rewards.math import extract_answer

__all__ = ["gsm8k", "imdb_sentiment"]

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_POSITIVE_PHRASES = (
    "is a wonderful, heartfelt film that I loved",
    "turned out to be a delightful surprise with a brilliant cast",
    "is beautifully shot and genuinely moving",
    "made me laugh and smile from start to finish",
    "is one of the best films I have seen this year",
)


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


def _sentiment_writer(seed: int) -> PolicyFn:
    def policy(observation: str, info: dict[str, Any]) -> str:
        return _POSITIVE_PHRASES[turn_draw(seed, observation, len(_POSITIVE_PHRASES))]

    return policy


def gsm8k(agent: str, seed: int = 0) -> PolicyFn:
    """The pioneer adds up the question's numbers; the observer trusts the reference."""
    return _gsm8k_pioneer if agent.startswith("pioneer") else _gsm8k_observer


def imdb_sentiment(agent: str, seed: int = 0) -> PolicyFn:
    """A stock positive phrase, drawn from the seed and the review it continues."""
    return _sentiment_writer(seed + (0 if agent.startswith("pioneer") else 1))
