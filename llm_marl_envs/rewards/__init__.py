"""Reward functions with the TRL signature ``f(completions, **columns) -> list[float]``.

Each of :func:`gsm8k_reward`, :func:`sentiment_reward`, :func:`joint_reward` (writing) and
:func:`coop_coding_reward` (coding) can be a ``GRPOTrainer`` ``reward_funcs`` entry as it is:
it takes ``prompts`` and ``completions`` as text or as chat messages, the dataset columns it
needs as keyword arguments (``llm_marl_envs.integrations.trl.env_dataset`` builds them), and
ignores the rest. The coding reward runs its tests in the sandbox
(:mod:`llm_marl_envs.rewards.coding_sandbox`, which CoopCoding uses too). The maze and
Donor modules hold per-turn scoring only; their games are rewarded through the environment
(``env_reward``, ``env_rollout_func`` and ``tool_environment`` of the TRL integration).
"""

from llm_marl_envs.rewards.coding_sandbox import coop_coding_reward
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
from llm_marl_envs.rewards.writing import joint_reward

__all__ = [
    "TransformersSentimentScorer",
    "VaderScorer",
    "answers_match",
    "coop_coding_reward",
    "extract_answer",
    "extract_gold_answer",
    "gsm8k_reward",
    "joint_reward",
    "resolve_scorer",
    "sentiment_reward",
]
