"""The Donor game's rules (``games.donor_rules``): the pairing schedule, reply parsing,
reputation traces, amounts as the prompts show them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_marl_envs.games.donor_rules import (
    format_units,
    pairing_schedule,
    parse_donation,
    reputation_trace,
)


def _players(n: int) -> list[str]:
    return [f"player_{i}" for i in range(n)]


# ------------------------------------------------------------------ schedule
@pytest.mark.parametrize("num_agents", [2, 4, 12, 20])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_schedule_properties(num_agents, seed):
    players = _players(num_agents)
    schedule = pairing_schedule(np.random.default_rng(seed), players, num_agents)
    assert len(schedule) == num_agents
    seen_pairs = set()
    for r, pairs in enumerate(schedule):
        members = [a for pair in pairs for a in pair]
        assert sorted(members) == sorted(players)  # each agent in exactly one pair
        donors = [d for d, _ in pairs]
        assert donors == sorted(donors, key=lambda a: int(a.split("_")[1]))  # seat order
        for pair in pairs:
            assert pair not in seen_pairs
            seen_pairs.add(pair)
        if r:
            previous_recipients = {rec for _, rec in schedule[r - 1]}
            assert set(donors) == previous_recipients  # roles alternate
    # with N rounds every donor gives exactly once to each player of the other half
    for agent in players:
        recipients = [rec for pairs in schedule for d, rec in pairs if d == agent]
        assert len(recipients) == len(set(recipients)) == num_agents // 2


def test_reverse_schedule_swaps_every_pair_of_the_same_draw():
    forward = pairing_schedule(np.random.default_rng(3), _players(6), 4)
    backward = pairing_schedule(np.random.default_rng(3), _players(6), 4, reverse=True)
    for f, b in zip(forward, backward, strict=True):
        assert sorted((rec, d) for d, rec in f) == sorted(b)


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    ("text", "punishment", "expected"),
    [
        ("Answer: 3", False, ("donate", 3.0, None)),
        ("answer: 3\nOn reflection... ANSWER: 5", False, ("donate", 5.0, None)),
        ("Answer: 2 first, then Answer: nothing", False, ("donate", 2.0, None)),
        ("**Answer:** 6", False, ("donate", 6.0, None)),
        ("4.5", False, ("donate", 4.5, None)),
        ("  $1,000  ", False, ("donate", 1000.0, None)),
        ("Answer: $1,234.5 units", False, ("donate", 1234.5, None)),
        ("Answer: 2e3", False, ("donate", 2000.0, None)),
        ("Answer: -4", False, ("donate", -4.0, None)),
        ("-4", False, ("donate", -4.0, None)),
        ("Donate, 2", True, ("donate", 2.0, None)),
        ("I think... punish, 2", True, ("punish", 2.0, None)),
        ("Answer: Punish, 2.5", True, ("punish", 2.5, None)),
        ("Answer: donate 7", True, ("donate", 7.0, None)),
        ("Answer: Donate, 7", False, ("donate", 7.0, None)),
        ("Punish, 2", False, ("donate", None, "punish_not_allowed")),
        ("Answer: Punish, 2", False, ("donate", None, "punish_not_allowed")),
        ("I give nothing", False, ("donate", None, "no_amount")),
        ("I give 5 units", False, ("donate", None, "no_amount")),
        ("Answer: half", False, ("donate", None, "no_amount")),
        ("", False, ("donate", None, "no_amount")),
        ("Answer: inf", False, ("donate", None, "non_finite")),
        ("Answer: NaN", False, ("donate", None, "non_finite")),
        ("infinity", False, ("donate", None, "non_finite")),
        ("Answer: information", False, ("donate", None, "no_amount")),
        ("Je donne — Answer: 5 😀 日本語", False, ("donate", 5.0, None)),
        ("Answer: \u22123", False, ("donate", -3.0, None)),
    ],
)
def test_parse_donation(text, punishment, expected):
    assert parse_donation(text, punishment) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Answer:" + " " * 8000 + "x",
        "Answer: punish" + " " * 4000 + "," + " " * 4000,
        "Answer: -" + " " * 4000 + "$" + " " * 4000 + "x",
        "donate" + " " * 8000 + ",",
        "- " * 4000,
    ],
)
def test_parse_adversarial_whitespace_finishes(text):
    """Whitespace runs cannot trade characters (a regex with adjacent ``\\s*`` would hang)."""
    assert parse_donation(text, punishment=True) == ("donate", None, "no_amount")


def test_parse_huge_digit_string_is_finite():
    kind, amount, error = parse_donation("Answer: " + "9" * 400)
    assert (kind, error) == ("donate", None) and math.isfinite(amount) and amount > 1e300


# ------------------------------------------------------------------ traces and amounts
def _gift(donor: str, recipient: str, round_number: int) -> dict:
    return {"donor": donor, "recipient": recipient, "round": round_number}


def test_reputation_trace_follows_each_partner_back_in_time():
    given = {
        "a": [_gift("a", "b", 1), _gift("a", "c", 3)],
        "b": [_gift("b", "c", 2)],
        "c": [_gift("c", "a", 1)],
    }
    assert reputation_trace(given, "a", 4, depth=5) == [
        _gift("a", "c", 3),  # a's newest gift before round 4
        _gift("c", "a", 1),  # then what c did before round 3
    ]  # a gave nothing before round 1: the trace ends
    assert reputation_trace(given, "a", 3, depth=5) == [_gift("a", "b", 1)]
    assert reputation_trace(given, "b", 4, depth=1) == [_gift("b", "c", 2)]
    assert reputation_trace(given, "b", 4, depth=0) == []


@pytest.mark.parametrize(
    ("amount", "shown"),
    [(10.0, "10"), (2.5, "2.5"), (1 / 3, "0.33"), (2.999, "3"), (-4.0, "-4"), (math.inf, "inf")],
)
def test_format_units(amount, shown):
    assert format_units(amount) == shown
