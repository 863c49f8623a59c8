"""Joint reward of MAGRPO's writing tasks: TL;DR summarisation and arXiv expansion.

MAGRPO: Liu et al., "LLM Collaboration With Multi-Agent Reinforcement Learning", 2025
(arXiv:2508.04652).

Two agents write about the same source text: ``c1`` (agent 1) and ``c2`` (agent 2). Their
joint reward (maximum 3.0) climbs four gated levels; the first level that fails stops the
climb and earlier levels keep their points:

1. **structure** (+0.5): both texts have ``min_words..max_words`` whitespace-separated words;
2. **length_ratio** (up to +1.0): rho = len(c2) / len(c1) in characters, scored by a
   trapezoid (a plateau of 1.0 with linear ramps to 0 at its edges; outside them: stop);
3. **vocabulary** (up to +0.5): u = |unique words of c2| / |unique words of c1|
   (``\\b\\w+\\b`` on lower-cased text, stopwords kept), another trapezoid;
4. **style** = **coherence** + **consistency**: coherence = 0.4 * T, where T = 0 if no
   transition phrase is used, else min(0.4 + 0.05 * (categories used - 1), 1.0);
   consistency = 0.6 * min(J, cap) / cap, with J the Jaccard similarity of the two texts'
   word sets without stopwords.

The two tasks differ only in their table (:data:`TLDR`, :data:`ARXIV`). All functions are
pure. :func:`writing_reward` returns the named components; :func:`joint_reward` is the
batched form ``f(completions_1, completions_2) -> list[float]``.

>>> writing_reward("a b c", "d e f", TLDR)["total"]  # fewer than 8 words: no level passes
0.0
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from llm_marl_envs.rewards.writing_tables import STOPWORDS, TRANSITIONS

__all__ = ["ARXIV", "TLDR", "WritingRewardTable", "joint_reward", "trapezoid", "writing_reward"]

_WORD = re.compile(r"\b\w+\b")
# One pass over the text: one named group per category, longest phrases first.
_TRANSITION_PATTERN = re.compile(
    r"\b(?:"
    + "|".join(
        f"(?P<c{i}>" + "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True)) + ")"
        for i, phrases in enumerate(TRANSITIONS.values())
    )
    + r")\b"
)


@dataclass(frozen=True)
class WritingRewardTable:
    """The numbers that define one writing task's reward.

    Attributes:
        min_words, max_words: Structure gate (inclusive) on both texts.
        rho: Trapezoid ``(zero_low, full_low, full_high, zero_high)`` for the length ratio.
        u: Trapezoid for the vocabulary ratio (``math.inf`` for an open end).
        transitions_on: ``"c2"`` (TL;DR: only the elaboration) or ``"both"`` (arXiv: c1 + c2).
        jaccard_cap: J at which consistency is full.
    """

    min_words: int
    max_words: int
    rho: tuple[float, float, float, float]
    u: tuple[float, float, float, float]
    transitions_on: str
    jaccard_cap: float


TLDR = WritingRewardTable(8, 256, (1.1, 1.6, 3.2, 5.0), (1.3, 2.0, math.inf, math.inf), "c2", 0.03)
ARXIV = WritingRewardTable(128, 256, (0.8, 1.0, 1.3, 1.5), (0.5, 0.7, 1.3, 1.7), "both", 0.23)

STRUCTURE_POINTS, LENGTH_POINTS, VOCABULARY_POINTS = 0.5, 1.0, 0.5
COHERENCE_WEIGHT, CONSISTENCY_WEIGHT = 0.4, 0.6


def trapezoid(x: float, shape: tuple[float, float, float, float]) -> float | None:
    """1 on ``[full_low, full_high]``, linear to 0 at the outer edges, ``None`` outside them."""
    zero_low, full_low, full_high, zero_high = shape
    if x < zero_low or x > zero_high:
        return None
    if x < full_low:
        return (x - zero_low) / (full_low - zero_low)
    if x > full_high:
        return 1.0 - (x - full_high) / (zero_high - full_high)
    return 1.0


def transition_score(text: str) -> float:
    """T: 0 without transition phrases, else 0.4 + 0.05 per extra category, at most 1."""
    used = len({m.lastgroup for m in _TRANSITION_PATTERN.finditer(text.lower())})
    return 0.0 if used == 0 else min(0.4 + 0.05 * (used - 1), 1.0)


def writing_reward(c1: str, c2: str, table: WritingRewardTable) -> dict[str, float]:
    """Components of the joint reward: structure, length_ratio, vocabulary, coherence,
    consistency, total (plus the raw ``rho``, ``u``, ``T`` and ``J`` when computed)."""
    out = dict.fromkeys(
        ("structure", "length_ratio", "vocabulary", "coherence", "consistency"), 0.0
    )
    n1, n2 = len(c1.split()), len(c2.split())
    if not (table.min_words <= n1 <= table.max_words and table.min_words <= n2 <= table.max_words):
        return _total(out)
    out["structure"] = STRUCTURE_POINTS

    out["rho"] = rho = len(c2) / len(c1)
    length = trapezoid(rho, table.rho)
    if length is None:
        return _total(out)
    out["length_ratio"] = LENGTH_POINTS * length

    words1, words2 = _WORD.findall(c1.lower()), _WORD.findall(c2.lower())
    unique1, unique2 = set(words1), set(words2)
    if not unique1:
        return _total(out)
    out["u"] = u = len(unique2) / len(unique1)
    vocabulary = trapezoid(u, table.u)
    if vocabulary is None:
        return _total(out)
    out["vocabulary"] = VOCABULARY_POINTS * vocabulary

    out["T"] = t = transition_score(c2 if table.transitions_on == "c2" else f"{c1} {c2}")
    content1, content2 = unique1 - STOPWORDS, unique2 - STOPWORDS
    union = content1 | content2
    out["J"] = j = len(content1 & content2) / len(union) if union else 0.0
    out["coherence"] = COHERENCE_WEIGHT * t
    out["consistency"] = CONSISTENCY_WEIGHT * min(j, table.jaccard_cap) / table.jaccard_cap
    return _total(out)


def _total(out: dict[str, float]) -> dict[str, float]:
    out["total"] = (
        out["structure"]
        + out["length_ratio"]
        + out["vocabulary"]
        + out["coherence"]
        + out["consistency"]
    )
    return out


def joint_reward(
    completions_1: list[str], completions_2: list[str], table: WritingRewardTable = TLDR
) -> list[float]:
    """Batched total reward for aligned lists of agent-1 and agent-2 texts."""
    return [
        writing_reward(c1, c2, table)["total"]
        for c1, c2 in zip(completions_1, completions_2, strict=True)
    ]
