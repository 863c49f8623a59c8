"""Tests of the stratified verification sample sized by the score a forgery could gain.

The allocations :func:`allocate` gives for the lite and full suites (weights ``1 / (7 N_t)``,
power 0.95), as measured when the module was written::

    lite {gsm8k: 16, imdb: 32, tldr: 13, arxiv: 5, coding: 16, maze: 16, donor: 16}, 114 episodes
      gain 0.01: gsm8k 14, imdb 20, tldr 13, arxiv 5, coding 14, maze 14, donor 14  = 94
      gain 0.02: gsm8k 11, imdb 16, tldr 10, arxiv 5, coding 11, maze 11, donor 11  = 75
      gain 0.03: gsm8k  9, imdb 13, tldr  9, arxiv 5, coding  9, maze  9, donor  9  = 63
      gain 0.05: gsm8k  7, imdb  7, tldr  6, arxiv 5, coding  7, maze  7, donor  7  = 46
    full {gsm8k: 6595, imdb: 1000, tldr: 1000, arxiv: 100, coding: 48, maze: 100, donor: 10}
      gain 0.02: gsm8k 22, imdb 21, tldr 21, arxiv 19, coding 18, maze 19, donor 9 = 129

On lite these totals are the smallest possible (an exhaustive search over every allocation, up
to the symmetry of the four tasks of 16 episodes, found none smaller).
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from llm_marl_envs.leaderboard.sampling import (
    allocate,
    catch_power,
    draw,
    miss,
    overall_weights,
    worst_forgery,
)

LITE = {"gsm8k": 16, "imdb": 32, "tldr": 13, "arxiv": 5, "coding": 16, "maze": 16, "donor": 16}
FULL = {
    "gsm8k": 6595,
    "imdb": 1000,
    "tldr": 1000,
    "arxiv": 100,
    "coding": 48,
    "maze": 100,
    "donor": 10,
}


def mean_of_means(sizes: dict[str, int]) -> dict[str, float]:
    """One episode's weight when the overall score is the mean of the task means."""
    return {task: 1 / (len(sizes) * size) for task, size in sizes.items()}


def brute_power(sizes, weights, drawn, gain) -> Fraction:
    """``power(n, X)`` by enumerating every forgery, in exact arithmetic."""
    tasks = list(sizes)
    misses = [
        [
            Fraction(math.comb(sizes[t] - k, drawn[t]), math.comb(sizes[t], drawn[t]))
            for k in range(sizes[t] + 1)
        ]
        for t in tasks
    ]
    worst, reachable = Fraction(0), False
    for spread in itertools.product(*(range(sizes[t] + 1) for t in tasks)):
        if sum(k * Fraction(weights[t]) for k, t in zip(spread, tasks, strict=True)) >= gain:
            reachable = True
            chance = math.prod(misses[i][k] for i, k in enumerate(spread))
            worst = max(worst, chance)
    return 1 - worst if reachable else Fraction(1)


def random_instance(rng: random.Random, fractions: bool):
    """2 to 4 tasks of 1 to 8 episodes, rational weights, some draws and a gain."""
    count = rng.randint(2, 4)
    sizes = {f"t{i}": rng.randint(1, 8) for i in range(count)}
    weights = {
        t: Fraction(rng.randint(1, 3), rng.randint(1, 4) * count * n) for t, n in sizes.items()
    }
    if not fractions:
        weights = {t: float(w) for t, w in weights.items()}
    drawn = {t: rng.randint(1, max(1, n - 1)) for t, n in sizes.items()}
    total = sum(n * Fraction(weights[t]) for t, n in sizes.items())
    gain = total * Fraction(rng.randint(1, 21), 40)  # a few beyond reach
    return sizes, weights, drawn, gain if fractions else float(gain)


# --------------------------------------------------------------------------- miss
def test_miss_is_the_hypergeometric_ratio():
    for size in range(0, 13):
        for drawn in range(size + 1):
            for forged in range(size + 1):
                expected = Fraction(math.comb(size - forged, drawn), math.comb(size, drawn))
                assert miss(size, drawn, forged) == pytest.approx(float(expected), abs=1e-15)
    with pytest.raises(ValueError):
        miss(5, 6, 1)


# --------------------------------------------------------------------------- catch_power
def test_catch_power_equals_brute_force():
    rng = random.Random(20240601)
    between = 0
    for case in range(40):
        sizes, weights, drawn, gain = random_instance(rng, fractions=case % 2 == 0)
        expected = brute_power(sizes, weights, drawn, Fraction(gain))
        got = catch_power(sizes, weights, drawn, gain)
        assert got == pytest.approx(float(expected), abs=1e-9), (sizes, weights, drawn, gain)
        between += 0 < expected < 1
    assert between >= 20  # most cases are neither certain nor hopeless


def test_lite_is_computed_exactly():
    # Forging three gsm8k episodes (3/112 >= 0.02) is missed by 8 of 16 drawn with
    # C(13, 8) / C(16, 8); with every other task drawn in full nothing else is missed.
    sizes, weights = LITE, mean_of_means(LITE)
    drawn = {**LITE, "gsm8k": 8}
    expected = 1 - math.comb(13, 8) / math.comb(16, 8)
    assert catch_power(sizes, weights, drawn, 0.02) == pytest.approx(expected, abs=1e-12)
    # 0.0267857... = 3/112 is reached with floats read as fractions (a tie counts as reached).
    assert catch_power(sizes, weights, drawn, 3 / 112) == pytest.approx(expected, abs=1e-12)


def test_quantised_power_is_conservative():
    rng = random.Random(7)
    below = 0
    for case in range(30):
        sizes, weights, drawn, gain = random_instance(rng, fractions=case % 2 == 0)
        expected = float(brute_power(sizes, weights, drawn, Fraction(gain)))
        for grid in (3, 16, 1000):
            got = catch_power(sizes, weights, drawn, gain, _grid=grid)
            assert got <= expected + 1e-12, (sizes, weights, drawn, gain, grid)
            below += got < expected - 1e-9
    assert below >= 5  # the coarse grids do round the forger's gains up


def test_edge_cases():
    sizes, weights = {"a": 4, "b": 2}, {"a": 0.1, "b": 0.25}
    assert catch_power(sizes, weights, {"a": 1}, 0.0) == 0.0  # forging nothing "gains" 0
    assert catch_power(sizes, weights, {"a": 1}, 0.95) == 1.0  # 0.9 is all there is to gain
    assert catch_power(sizes, weights, {"a": 4, "b": 2}, 0.5) == 1.0
    with pytest.raises(ValueError):
        worst_forgery(sizes, weights, {"a": 1}, 0.95)
    with pytest.raises(ValueError):
        catch_power(sizes, weights, {"c": 1}, 0.5)
    # Every forgery reaching 0.5 is caught for certain: one of them, heaviest first.
    assert worst_forgery(sizes, weights, {"a": 4, "b": 2}, 0.5) == {"a": 0, "b": 2}


def test_full_suite_uses_the_grid_and_stays_below_the_exact_answer_for_a_coarser_grid():
    weights = mean_of_means(FULL)
    drawn = {t: min(n, 20) for t, n in FULL.items()}
    fine = catch_power(FULL, weights, drawn, 0.02)
    coarse = catch_power(FULL, weights, drawn, 0.02, _grid=512)
    assert 0.9 < coarse <= fine + 1e-12 < 1


# --------------------------------------------------------------------------- worst_forgery
def test_worst_forgery_attains_the_power_and_is_caught_as_often_as_stated():
    sizes = {"a": 8, "b": 6, "c": 5}
    weights = {t: Fraction(1, 3 * n) for t, n in sizes.items()}
    drawn = {"a": 3, "b": 2, "c": 2}
    gain = Fraction(1, 5)
    power = catch_power(sizes, weights, drawn, gain)
    forged = worst_forgery(sizes, weights, drawn, gain)
    assert sum(k * weights[t] for t, k in forged.items()) >= gain
    chance = math.prod(miss(sizes[t], drawn[t], k) for t, k in forged.items())
    assert 1 - chance == pytest.approx(power, abs=1e-12)
    assert worst_forgery(sizes, weights, drawn, gain) == forged  # deterministic

    # Forge episodes 0 .. k_t - 1 of each task and draw the sample with many secrets.
    pool = {t: list(range(n)) for t, n in sizes.items()}
    trials = 4000
    caught = sum(
        any(episode < forged[t] for t, episode in draw(pool, drawn, secret))
        for secret in range(trials)
    )
    tolerance = 4 * math.sqrt(power * (1 - power) / trials)
    assert abs(caught / trials - power) <= tolerance


# --------------------------------------------------------------------------- allocate
@pytest.mark.parametrize(
    ("sizes", "gain"),
    [(LITE, 0.01), (LITE, 0.02), (LITE, 0.03), (LITE, 0.05), (FULL, 0.02)],
)
def test_allocate_meets_the_power(sizes, gain):
    weights = mean_of_means(sizes)
    drawn = allocate(sizes, weights, gain, power=0.95)
    assert set(drawn) == set(sizes)
    assert catch_power(sizes, weights, drawn, gain) >= 0.95
    assert all(1 <= drawn[t] <= sizes[t] for t in sizes)
    assert sum(drawn.values()) <= sum(sizes.values())


def test_allocate_lite_at_gain_two_points():
    # The numbers in the module docstring: 75 of lite's 114 episodes, the smallest possible.
    drawn = allocate(LITE, mean_of_means(LITE), 0.02)
    assert sum(drawn.values()) <= 75
    assert drawn["arxiv"] == 5  # one arxiv episode alone gains 1/35 > 0.02


def test_allocate_respects_the_minimum_and_the_limits():
    sizes = {"big": 40, "small": 3, "empty": 0}
    weights = {"big": 0.01, "small": 0.05, "empty": 0.0}
    drawn = allocate(sizes, weights, 0.05, power=0.9, minimum=4)
    assert drawn["big"] >= 4 and drawn["small"] == 3 and drawn["empty"] == 0
    assert catch_power(sizes, weights, drawn, 0.05) >= 0.9
    # Out of reach (0.55 is everything): the minimum suffices; never caught: everything.
    assert allocate(sizes, weights, 0.6, minimum=2) == {"big": 2, "small": 2, "empty": 0}
    assert allocate(sizes, weights, 0.0) == sizes


# --------------------------------------------------------------------------- draw
def test_draw_is_deterministic_and_leaves_the_global_generator_alone():
    pool = {"a": list(range(10)), "b": ["x", "y", "z"], "c": []}
    drawn = {"a": 4, "b": 2, "c": 0}
    state = random.getstate()
    first = draw(pool, drawn, secret=12345)
    assert random.getstate() == state
    assert draw(pool, drawn, secret=12345) == first
    rng = random.Random(12345)
    assert first == [("a", x) for x in rng.sample(pool["a"], 4)] + [
        ("b", x) for x in rng.sample(pool["b"], 2)
    ]
    assert [t for t, _ in first] == ["a"] * 4 + ["b"] * 2


# --------------------------------------------------------------------------- weights
def test_overall_weights():
    weights = overall_weights({"a": (16, 1, 1.0), "b": (10, 4, 0.25), "c": (0, 1, 1.0)})
    assert weights == pytest.approx({"a": 1 / 48, "b": 0.25 / 30, "c": 0.0})
    with pytest.raises(ValueError):
        overall_weights({"a": (4, 0, 1.0)})
