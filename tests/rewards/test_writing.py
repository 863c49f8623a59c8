"""Writing reward (TL;DR and arXiv), table-driven at every level boundary (MAGRPO, arXiv:2508.04652)."""

from __future__ import annotations

import pytest

from llm_marl_envs.rewards.writing import (
    ARXIV,
    TLDR,
    joint_reward,
    transition_score,
    trapezoid,
    writing_reward,
)
from llm_marl_envs.rewards.writing_tables import TRANSITIONS


def make_text(n_words: int, n_chars: int, prefix: str) -> str:
    """``n_words`` distinct words (``prefix`` + index), padded to exactly ``n_chars`` characters."""
    words = [f"{prefix}{i}" for i in range(n_words)]
    base = " ".join(words)
    assert len(base) <= n_chars, (n_words, n_chars)
    words[0] += "q" * (n_chars - len(base))
    text = " ".join(words)
    assert len(text) == n_chars and len(text.split()) == n_words
    return text


C1 = make_text(10, 100, "a")  # 10 unique words, 100 characters


@pytest.mark.parametrize(
    ("chars2", "length_points", "climbs_on"),
    [
        (100, 0.0, False),  # rho 1.0 < 1.1: stop
        (110, 0.0, True),  # rho 1.1: ramp starts, 0 points, next level still scored
        (135, 0.5, True),  # rho 1.35
        (160, 1.0, True),  # rho 1.6: plateau
        (320, 1.0, True),  # rho 3.2: plateau
        (410, 0.5, True),  # rho 4.1
        (500, 0.0, True),  # rho 5.0: ramp ends, 0 points, still scored
        (501, 0.0, False),  # rho 5.01: stop
    ],
)
def test_tldr_length_ratio_boundaries(chars2, length_points, climbs_on):
    out = writing_reward(C1, make_text(12, chars2, "b"), TLDR)
    assert out["structure"] == 0.5
    assert out["rho"] == pytest.approx(chars2 / 100)
    assert out["length_ratio"] == pytest.approx(length_points)
    assert ("u" in out) is climbs_on


@pytest.mark.parametrize(
    ("unique2", "vocab_points", "climbs_on"),
    [
        (12, 0.0, False),  # u 1.2 < 1.3: stop
        (13, 0.0, True),  # u 1.3: ramp starts
        (17, 0.5 * 0.4 / 0.7, True),
        (20, 0.5, True),  # u 2.0: full
        (40, 0.5, True),  # open-ended above 2.0
    ],
)
def test_tldr_vocabulary_boundaries(unique2, vocab_points, climbs_on):
    c1 = make_text(10, 100, "a")
    c2 = make_text(unique2, 250, "b")  # rho 2.5: full length points
    out = writing_reward(c1, c2, TLDR)
    assert out["length_ratio"] == 1.0
    assert out["u"] == pytest.approx(unique2 / 10)
    assert out["vocabulary"] == pytest.approx(vocab_points)
    assert ("T" in out) is climbs_on


@pytest.mark.parametrize(
    ("words1", "words2", "passes"),
    [
        (8, 30, True),
        (7, 30, False),
        (8, 256, True),
        (8, 257, False),
        (256, 256, True),
        (257, 300, False),
    ],
)
def test_tldr_structure_word_limits(words1, words2, passes):
    c1 = " ".join(["w"] * words1)
    c2 = " ".join(["x"] * words2)
    out = writing_reward(c1, c2, TLDR)
    assert out["structure"] == (0.5 if passes else 0.0)
    if not passes:
        assert out["total"] == 0.0


@pytest.mark.parametrize(
    ("categories", "expected"),
    [(0, 0.0), (1, 0.4), (3, 0.5), (12, 0.95), (13, 1.0)],
)
def test_transition_score(categories, expected):
    phrases = [phrases[0] for phrases in list(TRANSITIONS.values())[:categories]]
    text = "plain words " + " and ".join(phrases)
    assert transition_score(text) == pytest.approx(expected)


def test_transitions_match_whole_words_only():
    assert transition_score("butter thenceforth ifs") == 0.0
    assert transition_score("HOWEVER it rained") == 0.4


def test_consistency_cap_and_stopwords():
    c1 = "the landlord kept my deposit after the lease ended last month"
    c2 = c1 + " " + " ".join(f"extra{i}" for i in range(10))
    out = writing_reward(c1, c2, TLDR)
    assert out["J"] > 0.03 and out["consistency"] == pytest.approx(0.6)
    disjoint = writing_reward(make_text(10, 100, "a"), make_text(25, 250, "b"), TLDR)
    assert disjoint["J"] == 0.0 and disjoint["consistency"] == 0.0


def test_maximum_is_three():
    c1 = (
        "my landlord kept the whole deposit although the flat was clean and tidy when i left, "
        "and he now claims that scratches on the kitchen floor are new damage from my dog"
    )
    phrases = [p[0] for p in TRANSITIONS.values()]
    c2 = c1 + " " + " ".join(f"{p} detail{i} note{i}" for i, p in enumerate(phrases))
    out = writing_reward(c1, c2, TLDR)
    assert out["T"] == 1.0
    assert out["total"] == pytest.approx(3.0)


def test_components_sum_to_total():
    c1 = make_text(10, 100, "a")
    c2 = make_text(20, 200, "b") + " however because"
    out = writing_reward(c1, c2, TLDR)
    parts = ("structure", "length_ratio", "vocabulary", "coherence", "consistency")
    assert out["total"] == pytest.approx(sum(out[k] for k in parts))


def test_punctuation_only_first_text_stops_at_vocabulary():
    out = writing_reward(" ".join(["!!"] * 10), make_text(20, 100, "b"), TLDR)
    assert out["structure"] == 0.5 and out["vocabulary"] == 0.0 and "u" not in out


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.79, None),
        (0.8, 0.0),
        (0.9, 0.5),
        (1.0, 1.0),
        (1.3, 1.0),
        (1.4, 0.5),
        (1.5, 0.0),
        (1.51, None),
    ],
)
def test_arxiv_length_trapezoid(x, expected):
    value = trapezoid(x, ARXIV.rho)
    assert value == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.49, None),
        (0.5, 0.0),
        (0.6, 0.5),
        (0.7, 1.0),
        (1.3, 1.0),
        (1.5, 0.5),
        (1.7, 0.0),
        (1.71, None),
    ],
)
def test_arxiv_vocabulary_trapezoid(x, expected):
    value = trapezoid(x, ARXIV.u)
    assert value == (None if expected is None else pytest.approx(expected))


def test_arxiv_word_limits_and_transitions_on_both_texts():
    c1 = "however " + make_text(127, 1200, "a")
    c2 = make_text(140, 1300, "b")
    out = writing_reward(c1, c2, ARXIV)
    assert out["structure"] == 0.5 and out["T"] == 0.4  # the transition is in c1 only
    assert writing_reward(make_text(127, 1200, "a"), c2, ARXIV)["structure"] == 0.0
    assert writing_reward(c1, make_text(257, 2000, "b"), ARXIV)["structure"] == 0.0


def test_joint_reward_batches():
    c1 = make_text(10, 100, "a")
    assert joint_reward([c1, c1], [make_text(20, 200, "b"), "short"]) == [
        writing_reward(c1, make_text(20, 200, "b"), TLDR)["total"],
        0.0,
    ]


# --- TRL's calling convention (issue 16, defect 3) -------------------------------------------
def test_joint_reward_takes_trl_keywords_and_the_partner_column():
    """GRPOTrainer calls reward(prompts=..., completions=..., completion_ids=..., **columns);
    this used to raise TypeError: unexpected keyword argument 'prompts'."""
    c1, c2 = make_text(10, 100, "a"), make_text(20, 200, "b")
    expected = writing_reward(c1, c2, TLDR)["total"]
    assert expected > 0
    as_second = joint_reward(
        prompts=["Post: ..."],
        completions=[c2],
        completion_ids=[[1]],
        trainer_state=None,
        partner_completion=[c1],
        learner=["second"],
        seed=[0],
    )
    as_first = joint_reward(
        prompts=["Post: ..."], completions=[c1], partner_completion=[c2], learner=["first"]
    )
    assert as_second == as_first == [expected]


def test_joint_reward_conversational_and_table_by_name():
    c1, c2 = make_text(140, 1000, "a"), make_text(150, 1100, "b")
    chat = joint_reward(
        completions=[[{"role": "assistant", "content": c2}]],
        prompts=[[{"role": "user", "content": "Abstract: ..."}]],
        partner_completion=[c1],
        learner=["second"],
        task=["arxiv"],
    )
    assert chat == [writing_reward(c1, c2, ARXIV)["total"]]
    assert joint_reward([c2], partner_completion=[c1], learner="second", table="arxiv") == chat


def test_joint_reward_without_partner_texts_says_what_is_missing():
    with pytest.raises(TypeError, match="partner_completion"):
        joint_reward(completions=["x"], prompts=["p"])
