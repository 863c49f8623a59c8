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


def _source_sentences(observation: str) -> list[str]:
    source = observation.split(":\n", 1)[-1].rsplit("\n\nYour text:", 1)[0]
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", source.replace("\n", " ")) if s.strip()]


def _concise_summary(observation: str, info: dict[str, Any]) -> str:
    """Extractive: the post's first sentence, cut to 30 words."""
    sentences = _source_sentences(observation) or ["Nothing to summarise."]
    post = [s for s in sentences if not s.startswith(("SUBREDDIT", "TITLE"))] or sentences
    return " ".join(post[0].split()[:30])


def _detailed_summary(observation: str, info: dict[str, Any]) -> str:
    """Extractive: three sentences of the post joined by transition words."""
    sentences = [s for s in _source_sentences(observation) if not s.startswith(("SUBREDDIT", "TITLE"))]
    links = ("", "However, ", "As a result, ")
    return " ".join(link + s for link, s in zip(links, sentences[:3], strict=False))


def _introduction_half(first_half: bool) -> Policy:
    """Extractive: one half of the abstract, padded with a stock paragraph to >= 128 words."""
    filler = (
        "This question matters because many systems in practice depend on it, and earlier "
        "work leaves important gaps in both understanding and tooling. "
        if first_half
        else "Furthermore, the evaluation suggests clear directions for future work, and the "
        "results therefore carry implications beyond the settings studied here. "
    )

    def policy(observation: str, info: dict[str, Any]) -> str:
        sentences = _source_sentences(observation)
        half = sentences[: len(sentences) // 2] if first_half else sentences[len(sentences) // 2 :]
        text = " ".join(half)
        while len(text.split()) < 140:
            text = f"{text} {filler}".strip()
        return " ".join(text.split()[:250])

    return policy


def _coding_helper(observation: str, info: dict[str, Any]) -> str:
    """An identity helper: right only where the answer is the input."""
    return "```python\ndef aux(value):\n    return value\n```"


def _coding_main(observation: str, info: dict[str, Any]) -> str:
    """Passes the first argument through aux: a trivial wrapper, as the reward calls it."""
    match = re.search(r"Implement the function `(\w+)`", observation)
    name = match.group(1) if match else "solution"
    return f"def {name}(*args):\n    return aux(args[0]) if args else None\n"


def scripted_policy(env_id: str, agent: str, seed: int = 0) -> Policy:
    """The built-in scripted policy of ``agent`` in ``env_id``.

    For the games these are reference policies: the maze's oracle (privileged, see
    :mod:`llm_marl_envs.rollout.maze_policies`, which also has a random pair) and the Donor
    game's reputation reciprocator (:mod:`llm_marl_envs.rollout.donor_policies` has the others).
    """
    name = env_id.split("/")[-1]
    if name.startswith("GSM8K"):
        return _gsm8k_pioneer if agent.startswith("pioneer") else _gsm8k_observer
    if name.startswith("IMDBSentiment"):
        return _sentiment_writer(seed + (0 if agent.startswith("pioneer") else 1))
    if name.startswith("TLDRSummarization"):
        return _concise_summary if agent.startswith("summarizer") else _detailed_summary
    if name.startswith("ArxivExpansion"):
        return _introduction_half(first_half=agent.startswith("background"))
    if name.startswith("CoopCoding"):
        return _coding_helper if agent.startswith("helper") else _coding_main
    if name.startswith("MazeCollab"):
        from llm_marl_envs.rollout.maze_policies import oracle_gnome

        return oracle_gnome
    if name.startswith("DonorGame"):
        from llm_marl_envs.rollout.donor_policies import reputation_reciprocator

        return reputation_reciprocator()
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
