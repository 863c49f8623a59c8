"""Scripted players of IMDBSentiment (CORY's pioneer -> observer sentiment task).

Not meant to be good: they make the task playable without a model, offline, in microseconds,
with a deterministic transcript for a given seed.
"""

from __future__ import annotations

from typing import Any

from llm_marl_envs.policies.base import PolicyFn
from llm_marl_envs.policies.scripted import turn_draw

__all__ = ["imdb_sentiment"]

_POSITIVE_PHRASES = (
    "is a wonderful, heartfelt film that I loved",
    "turned out to be a delightful surprise with a brilliant cast",
    "is beautifully shot and genuinely moving",
    "made me laugh and smile from start to finish",
    "is one of the best films I have seen this year",
)


def _sentiment_writer(seed: int) -> PolicyFn:
    def policy(observation: str, info: dict[str, Any]) -> str:
        return _POSITIVE_PHRASES[turn_draw(seed, observation, len(_POSITIVE_PHRASES))]

    return policy


def imdb_sentiment(agent: str, seed: int = 0) -> PolicyFn:
    """A stock positive phrase, drawn from the seed and the review it continues."""
    return _sentiment_writer(seed + (0 if agent.startswith("pioneer") else 1))
