"""Bit-for-bit parity of ``reward_impl="authors"`` / ``"authors-2025"`` with the MAGRPO authors'
released writing rewards (OpenMLRL/LLM_Collab_Writing, ``rewards/tldr_rewards.py`` and
``rewards/arxiv_rewards.py``; "authors" = their code today, "authors-2025" = before their
2025-12-31 change of the arXiv length table).

Their functions were run outside this repository on the pairs of ``writing_parity_cases``
(10,000 generated pairs per task plus the hand-written edge pairs); ``parity_data/
writing_authors.json.gz`` keeps the totals they returned (as ``float.hex``) and a hash of the
pairs. Equality here is exact: ``float.hex`` of ours == theirs.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
import writing_parity_cases as gen

from llm_marl_envs.rewards.writing import TLDR, joint_reward, writing_components

DATA = Path(__file__).parent / "parity_data" / "writing_authors.json.gz"


@pytest.fixture(scope="module")
def expected() -> dict:
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def generated(expected) -> dict[str, list[tuple[str, str]]]:
    return {
        task: list(gen.pairs(task, expected["n"], expected["seed"])) for task in ("tldr", "arxiv")
    }


def _stop_level(parts: dict[str, float]) -> str:
    """Where the climb stopped (for the coverage check)."""
    if "T" in parts:
        return "style"
    if "u" in parts:
        return "vocabulary"
    if "rho" in parts:
        return "length_ratio"
    return "structure"


@pytest.mark.parametrize("task", ["tldr", "arxiv"])
@pytest.mark.parametrize("impl", ["authors", "authors-2025"])
@pytest.mark.slow
def test_generated_pairs_match_the_authors_code_exactly(expected, generated, task, impl):
    data = expected["sets"][f"{task}/{impl}"]
    items = generated[task]
    assert gen.digest(items) == data["pairs_sha256"], (
        "writing_parity_cases changed: regenerate the expected values with the authors' code"
    )
    assert len(items) >= 10_000
    mismatches, stops = [], Counter()
    for (c1, c2), want in zip(items, data["totals"], strict=True):
        parts = writing_components(c1, c2, task, impl)
        stops[_stop_level(parts)] += 1
        if parts["total"].hex() != want:
            mismatches.append((c1[:60], c2[:60], parts["total"], float.fromhex(want)))
    assert mismatches == [], f"{len(mismatches)} of {len(items)} differ, e.g. {mismatches[:3]}"
    # The pairs exercise every level: each stopping point is reached by many pairs.
    assert (
        min(stops[level] for level in ("structure", "length_ratio", "vocabulary", "style")) > 300
    ), stops


@pytest.mark.parametrize("task", ["tldr", "arxiv"])
@pytest.mark.parametrize("impl", ["authors", "authors-2025"])
def test_edge_pairs_match_the_authors_code_exactly(expected, task, impl):
    edges = [tuple(p) for p in expected["edges"]]
    assert edges == gen.edge_pairs()
    ours = [writing_components(c1, c2, task, impl)["total"].hex() for c1, c2 in edges]
    assert ours == expected["sets"][f"{task}/{impl}"]["edge_totals"]


@pytest.mark.slow
def test_batched_and_trl_forms_use_the_same_implementation(expected, generated):
    items = generated["arxiv"][:300]
    want = [float.fromhex(h) for h in expected["sets"]["arxiv/authors"]["totals"][:300]]
    first, second = [a for a, _ in items], [b for _, b in items]
    assert joint_reward(first, second, "arxiv", reward_impl="authors") == want
    as_trl = joint_reward(
        second, partner_completion=first, learner="second", task="arxiv", reward_impl="authors"
    )
    assert as_trl == want


def test_the_implementations_differ_where_the_issue_says():
    # "so" inside "also" is a transition for the authors, not for us; both empty content-word
    # sets give J = 1.0 for the authors, 0.0 for us.
    c1 = "the cat and the dog were here at home today"
    c2 = "the cat and the dog were also here at home today with them and then some more of it all"
    paper = writing_components(c1, c2, "tldr", "paper")
    authors = writing_components(c1, c2, "tldr", "authors")
    assert authors["T"] > 0
    only_stop_1, only_stop_2 = " ".join(["the"] * 10), " ".join(["and", "of", "to"] * 9)
    assert writing_components(only_stop_1, only_stop_2, "tldr", "authors").get("J") in (None, 1.0)
    assert paper["total"] != authors["total"]
    # arXiv: a ratio of 1.45 is on the 2025 table's falling ramp and on today's plateau.
    base = " ".join(f"w{i}" for i in range(140))
    longer = (base + " " + " ".join(f"v{i}" for i in range(70)))[: round(len(base) * 1.45)]
    now = writing_components(base, longer, "arxiv", "authors")
    before = writing_components(base, longer, "arxiv", "authors-2025")
    assert now["length_ratio"] == 1.0 and 0.0 < before["length_ratio"] < 1.0


def test_unknown_implementation_is_a_one_line_error():
    with pytest.raises(
        ValueError, match=r"reward_impl must be one of \['paper', 'authors', 'authors-2025'\]"
    ):
        writing_components("a", "b", "tldr", "theirs")
    custom = dataclasses.replace(TLDR, jaccard_cap=0.5)
    with pytest.raises(ValueError, match="needs the task by name"):
        joint_reward(["a"], ["b"], custom, reward_impl="authors")
    assert joint_reward(["a"], ["b"], TLDR, reward_impl="authors") == [0.0]
