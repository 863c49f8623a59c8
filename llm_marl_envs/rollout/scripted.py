"""Simple built-in policies, used by ``llm-marl demo`` and by tests.

A policy here is a callable ``(observation, info) -> str`` for one agent. These are not
meant to be good: they make every environment playable without a model, offline, in
milliseconds, with a deterministic transcript for a given seed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from llm_marl_envs.rewards.math import extract_answer

__all__ = ["Policy", "play_episode", "scripted_policy"]

Policy = Callable[[str, dict[str, Any]], str]

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
    return f"Adding the numbers {', '.join(f'{n:g}' for n in numbers)} gives {total_text}. The answer is {total_text}."


def _gsm8k_observer(observation: str, info: dict[str, Any]) -> str:
    """Trusts the reference answer."""
    reference = observation.rsplit("Reference:", 1)[-1].rsplit("Answer:", 1)[0]
    answer = extract_answer(reference)
    if answer is None:
        return "I cannot tell from the reference."
    return f"The reference looks right to me. The answer is {answer}."


def _sentiment_writer(seed: int) -> Policy:
    rng = np.random.default_rng(seed)

    def policy(observation: str, info: dict[str, Any]) -> str:
        return str(_POSITIVE_PHRASES[int(rng.integers(len(_POSITIVE_PHRASES)))])

    return policy


def scripted_policy(env_id: str, agent: str, seed: int = 0) -> Policy:
    """The built-in scripted policy of ``agent`` in ``env_id``."""
    name = env_id.split("/")[-1]
    if name.startswith("GSM8K"):
        return _gsm8k_pioneer if agent.startswith("pioneer") else _gsm8k_observer
    if name.startswith("IMDBSentiment"):
        return _sentiment_writer(seed + (0 if agent.startswith("pioneer") else 1))
    raise ValueError(f"No scripted policy for {env_id!r}")


def play_episode(
    env: AECEnv, policies: dict[str, Policy], seed: int | None = None
) -> dict[str, float]:
    """Play one episode of an AEC env; returns each agent's total reward."""
    env.reset(seed=seed)
    totals = {agent: 0.0 for agent in env.possible_agents}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += float(reward)
        env.step(None if terminated or truncated else policies[agent](observation, info))
    return totals
