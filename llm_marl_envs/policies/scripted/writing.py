"""Scripted players of MAGRPO's writing tasks (TLDRSummarization-v0, ArxivExpansion-v0).

Extractive and deterministic: they make the tasks playable without a model and land in the
middle of the reward's range, not at its top.
"""

from __future__ import annotations

import re
from typing import Any

from llm_marl_envs.policies.base import PolicyFn

__all__ = ["arxiv_expansion", "tldr_summarization"]


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
    sentences = [
        s for s in _source_sentences(observation) if not s.startswith(("SUBREDDIT", "TITLE"))
    ]
    links = ("", "However, ", "As a result, ")
    return " ".join(link + s for link, s in zip(links, sentences[:3], strict=False))


def _introduction_half(first_half: bool) -> PolicyFn:
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


def tldr_summarization(agent: str, seed: int = 0) -> PolicyFn:
    """The summarizer's first sentence; the elaborator's three linked sentences."""
    return _concise_summary if agent.startswith("summarizer") else _detailed_summary


def arxiv_expansion(agent: str, seed: int = 0) -> PolicyFn:
    """Each writer takes its half of the abstract, padded to the length the reward wants."""
    return _introduction_half(first_half=agent.startswith("background"))
