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
batched form, ``f(completions_1, completions_2) -> list[float]`` or, as a TRL reward function,
``f(completions, partner_completion=..., learner=..., **columns) -> list[float]``.

**Implementations** (``reward_impl``, named in :mod:`llm_marl_envs.rewards.impls`; see
``docs/magrpo_parity.md``):

* ``"paper"``: the description above, as written from the paper (TLDRSummarization-v0,
  ArxivExpansion-v0; the default);
* ``"authors"``: bit for bit what the authors' released code computes today
  (``OpenMLRL/LLM_Collab_Writing``, ``rewards/*_rewards.py``): transition phrases matched as
  plain substrings, per category, from their 12 categories and their stopword list (see
  :mod:`~llm_marl_envs.rewards.writing_tables`); the Jaccard similarity of two empty
  content-word sets is 1.0; arXiv's length plateau is [1.3, 1.6] with ramps from 0.8 and
  to 2.0 (changed by the authors on 2025-12-31), and its transitions are searched in
  ``c1 + c2`` with no separator; every sum and ramp is evaluated in their order;
* ``"authors-2025"``: their code as released in 2025, before that change (arXiv's plateau
  [1.0, 1.3], ramps from 0.8 and to 1.5: the table of the paper and of its figures); for
  TL;DR the same as ``"authors"``.

:func:`writing_scorer` picks the implementation of a task by name, once, for the
environments, :func:`writing_components` and :func:`joint_reward`.

>>> writing_reward("a b c", "d e f", TLDR)["total"]  # fewer than 8 words: no level passes
0.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from llm_marl_envs.rewards.impls import DEFAULT_REWARD_IMPL, check_reward_impl
from llm_marl_envs.core.text_env import DEFAULT_MAX_ACTION_LENGTH
from llm_marl_envs.rewards.inputs import answer_text, per_row
from llm_marl_envs.rewards.writing_tables import (
    AUTHORS_STOPWORDS,
    AUTHORS_TRANSITIONS,
    STOPWORDS,
    TRANSITIONS,
)

__all__ = [
    "ARXIV",
    "AUTHORS_TABLES",
    "TABLES",
    "TLDR",
    "AuthorsWritingTable",
    "WritingRewardTable",
    "authors_writing_reward",
    "joint_reward",
    "trapezoid",
    "writing_components",
    "writing_reward",
    "writing_scorer",
]

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


# ---------------------------------------------------------------------------------------------
# The authors' released code, bit for bit


@dataclass(frozen=True)
class AuthorsWritingTable:
    """The numbers of one task in the authors' code, and the two places their files differ.

    Attributes:
        min_words, max_words: Structure gate (inclusive) on both texts.
        rho: ``(zero_low, full_low, full_high, zero_high)`` of the length-ratio trapezoid.
        u: The same for the vocabulary ratio (``math.inf`` for an open end).
        transitions_on: ``"c2"`` (TL;DR) or ``"c1+c2"`` (arXiv: the texts concatenated as
            they are, with no separator, so a phrase may straddle the join).
        jaccard_cap: J at which consistency is full.
        vocabulary_points_first: How the rising vocabulary ramp is written: arXiv's file
            computes ``0.5 * (u - lo) / (full - lo)`` (the product first), TL;DR's
            ``((u - lo) / (full - lo)) * 0.5``. The two differ in the last bit for some u.
    """

    min_words: int
    max_words: int
    rho: tuple[float, float, float, float]
    u: tuple[float, float, float, float]
    transitions_on: str
    jaccard_cap: float
    vocabulary_points_first: bool


AUTHORS_TLDR = AuthorsWritingTable(
    8, 256, (1.1, 1.6, 3.2, 5.0), (1.3, 2.0, math.inf, math.inf), "c2", 0.03, False
)
AUTHORS_ARXIV = AuthorsWritingTable(
    128, 256, (0.8, 1.3, 1.6, 2.0), (0.5, 0.7, 1.3, 1.7), "c1+c2", 0.23, True
)
AUTHORS_ARXIV_2025 = AuthorsWritingTable(
    128, 256, (0.8, 1.0, 1.3, 1.5), (0.5, 0.7, 1.3, 1.7), "c1+c2", 0.23, True
)
#: ``{(task, reward_impl): table}`` for the authors' implementations.
AUTHORS_TABLES = {
    ("tldr", "authors"): AUTHORS_TLDR,
    ("tldr", "authors-2025"): AUTHORS_TLDR,
    ("arxiv", "authors"): AUTHORS_ARXIV,
    ("arxiv", "authors-2025"): AUTHORS_ARXIV_2025,
}


def _authors_vocabulary(u: float, table: AuthorsWritingTable) -> float | None:
    """Level 3's points (0..0.5) as their files write them, or ``None`` (stop)."""
    zero_low, full_low, full_high, zero_high = table.u
    if full_low <= u <= full_high:
        return VOCABULARY_POINTS
    if zero_low <= u < full_low:
        if table.vocabulary_points_first:
            return VOCABULARY_POINTS * (u - zero_low) / (full_low - zero_low)
        return ((u - zero_low) / (full_low - zero_low)) * VOCABULARY_POINTS
    if full_high < u <= zero_high:
        return VOCABULARY_POINTS * (1.0 - ((u - full_high) / (zero_high - full_high)))
    return None


def authors_transition_score(text: str) -> float:
    """T in the authors' code: categories with any phrase as a substring of ``text.lower()``."""
    lowered = text.lower()
    used = sum(
        any(phrase in lowered for phrase in phrases) for phrases in AUTHORS_TRANSITIONS.values()
    )
    if used == 0:
        return 0.0
    return min(0.4 + min((used - 1) * 0.05, 0.6), 1.0)


def authors_writing_reward(c1: str, c2: str, table: AuthorsWritingTable) -> dict[str, float]:
    """The authors' joint reward with our component names; ``total`` is bit-identical to
    what their ``tldr_combined_reward`` / ``arxiv_combined_reward`` return for ``[c1], [c2]``.

    The total is accumulated level by level in their order (0.0 + structure + length +
    vocabulary + (coherence + consistency)), not summed from the components afterwards.
    """
    out = dict.fromkeys(
        ("structure", "length_ratio", "vocabulary", "coherence", "consistency"), 0.0
    )
    total = 0.0
    n1, n2 = len(c1.split()), len(c2.split())
    if not (table.min_words <= n1 <= table.max_words and table.min_words <= n2 <= table.max_words):
        return {**out, "total": total}
    out["structure"] = STRUCTURE_POINTS
    total += STRUCTURE_POINTS

    out["rho"] = rho = len(c2) / len(c1)  # c1 has at least min_words words: not empty
    length = trapezoid(rho, table.rho)  # their length ramps are written as ours are
    if length is None:
        return {**out, "total": total}
    out["length_ratio"] = length
    total += length

    unique1 = set(_WORD.findall(c1.lower()))
    unique2 = set(_WORD.findall(c2.lower()))
    if not unique1:
        return {**out, "total": total}
    out["u"] = u = len(unique2) / len(unique1)
    vocabulary = _authors_vocabulary(u, table)
    if vocabulary is None:
        return {**out, "total": total}
    out["vocabulary"] = vocabulary
    total += vocabulary

    out["T"] = t = authors_transition_score(c2 if table.transitions_on == "c2" else c1 + c2)
    content1, content2 = unique1 - AUTHORS_STOPWORDS, unique2 - AUTHORS_STOPWORDS
    union = content1 | content2
    out["J"] = j = len(content1 & content2) / len(union) if union else 1.0
    out["coherence"] = COHERENCE_WEIGHT * t
    out["consistency"] = CONSISTENCY_WEIGHT * (min(j, table.jaccard_cap) / table.jaccard_cap)
    total += out["coherence"] + out["consistency"]
    return {**out, "total": total}


#: Reward tables by task name (the ``task`` column of the TRL datasets).
TABLES = {"tldr": TLDR, "arxiv": ARXIV}
_POSITIONS = ("first", "second")
#: One writing task's scorer: ``f(c1, c2) -> components`` (``total`` among them).
WritingScorer = Callable[[str, str], dict[str, float]]


def writing_scorer(task: str, reward_impl: str = DEFAULT_REWARD_IMPL) -> WritingScorer:
    """The scorer of ``task`` (``"tldr"`` or ``"arxiv"``) under a named implementation
    (:data:`llm_marl_envs.rewards.impls.REWARD_IMPLS`): the one place the choice is made.

    >>> writing_scorer("tldr", "authors")("a b c", "d e f")["total"]
    0.0
    """
    task = _task_name(task)
    if check_reward_impl(task, reward_impl) == "paper":
        return partial(writing_reward, table=TABLES[task])
    return partial(authors_writing_reward, table=AUTHORS_TABLES[(task, reward_impl)])


def writing_components(
    c1: str, c2: str, task: str, reward_impl: str = DEFAULT_REWARD_IMPL
) -> dict[str, float]:
    """The components of one pair under a named implementation (see :func:`writing_scorer`).

    Args:
        c1: Agent 1's text (TL;DR's concise summary, arXiv's background).
        c2: Agent 2's text.
        task: ``"tldr"`` or ``"arxiv"``.
        reward_impl: ``"paper"``, ``"authors"`` or ``"authors-2025"``.
    """
    return writing_scorer(task, reward_impl)(c1, c2)


def _task_name(task: object) -> str:
    if isinstance(task, str) and task.lower() in TABLES:
        return task.lower()
    raise ValueError(f"table must be a WritingRewardTable or one of {sorted(TABLES)}, got {task!r}")


def _row_scorer(table: WritingRewardTable | str, reward_impl: str) -> WritingScorer:
    """The scorer of one row: a task by name, or a custom table (the paper's reward only)."""
    if not isinstance(table, WritingRewardTable):
        return writing_scorer(table, reward_impl)
    named = next((name for name, known in TABLES.items() if known is table), None)
    if named is not None:
        return writing_scorer(named, reward_impl)
    if check_reward_impl("tldr", reward_impl) != "paper":
        raise ValueError(
            f"reward_impl={reward_impl!r} needs the task by name ('tldr' or 'arxiv'), "
            "not a custom WritingRewardTable"
        )
    return partial(writing_reward, table=table)


def joint_reward(
    completions: list[Any],
    completions_2: list[Any] | None = None,
    table: WritingRewardTable | str | None = None,
    *,
    partner_completion: list[Any] | None = None,
    learner: list[str] | str = "first",
    task: list[str] | str | None = None,
    reward_impl: list[str] | str = DEFAULT_REWARD_IMPL,
    max_action_length: list[int] | int = DEFAULT_MAX_ACTION_LENGTH,
    **kwargs: Any,
) -> list[float]:
    """Batched total reward; both the pairwise form and the TRL reward signature.

    * ``joint_reward(texts_1, texts_2, table)``: aligned lists of agent-1 and agent-2 texts.
    * As a TRL reward (``GRPOTrainer`` passes ``prompts``, ``completions`` and every dataset
      column): ``completions`` are the learner's texts (strings or chat messages) and the
      ``partner_completion`` column holds the other writer's; ``learner`` (a column or one
      value) says whether the learner is the ``"first"`` writer (TL;DR's summarizer, arXiv's
      background) or the ``"second"`` one.

    Args:
        completions: Agent 1's texts (pairwise form) or the learner's.
        completions_2: Agent 2's texts (pairwise form only).
        table: A :class:`WritingRewardTable` or its task name (``"tldr"``, ``"arxiv"``);
            default: the ``task`` column, else :data:`TLDR`.
        partner_completion: The other writer's texts (TRL form).
        learner: ``"first"`` or ``"second"``, per row or for all.
        task: ``"tldr"`` or ``"arxiv"``, per row or for all (the dataset's ``task`` column).
        reward_impl: ``"paper"`` (default), ``"authors"`` or ``"authors-2025"``, per row or
            for all (the dataset's ``reward_impl`` column); the authors' implementations
            need the task by name (``table`` as a string, or ``task``).
        max_action_length: A text over this many characters, or an empty one, is a format
            failure: the pair scores 0, as in the env.
        **kwargs: ``prompts``, other columns and TRL's own keywords, ignored.
    """
    n = len(completions)
    impls = per_row(reward_impl, n, "reward_impl")
    if table is not None:
        tables = [table] * n
    elif task is not None:
        tables = per_row(task, n, "task")
    else:
        tables = [TLDR] * n
    pairs = _pairs(completions, completions_2, partner_completion, learner)
    limits = per_row(max_action_length, n, "max_action_length")
    totals = []
    for (c1, c2), t, impl, limit in zip(pairs, tables, impls, limits, strict=True):
        score = _row_scorer(t, impl)
        texts = answer_text(c1, limit), answer_text(c2, limit)
        totals.append(0.0 if None in texts else score(*texts)["total"])
    return totals


def _pairs(
    completions: list[Any],
    completions_2: list[Any] | None,
    partner_completion: list[Any] | None,
    learner: list[str] | str,
) -> list[tuple[Any, Any]]:
    """``(c1, c2)`` per row, from the pairwise form or from the learner's and its partner's."""
    n = len(completions)
    if completions_2 is not None:
        return list(zip(completions, completions_2, strict=True))
    if partner_completion is None:
        raise TypeError(
            "joint_reward scores two writers: pass completions_2 (agent 2's texts), or, as a "
            "TRL reward, a partner_completion column with the other writer's texts"
        )
    partners = per_row(partner_completion, n, "partner_completion")
    positions = per_row(learner, n, "learner")
    bad = sorted({str(p) for p in positions if p not in _POSITIONS})
    if bad:
        raise ValueError(f"learner must be 'first' or 'second', got {bad}")
    return [
        (mine, other) if position == "first" else (other, mine)
        for mine, other, position in zip(completions, partners, positions, strict=True)
    ]
