"""Pure reward functions with the TRL signature ``f(completions, **columns) -> list[float]``."""

from llm_marl_envs.rewards.math import (
    answers_match,
    extract_answer,
    extract_gold_answer,
    gsm8k_reward,
)
from llm_marl_envs.rewards.sentiment import (
    TransformersSentimentScorer,
    VaderScorer,
    resolve_scorer,
    sentiment_reward,
)

__all__ = [
    "TransformersSentimentScorer",
    "VaderScorer",
    "answers_match",
    "extract_answer",
    "extract_gold_answer",
    "gsm8k_reward",
    "resolve_scorer",
    "sentiment_reward",
]
