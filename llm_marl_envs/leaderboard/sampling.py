"""Stratified verification samples sized by the score a forgery could gain.

A leaderboard entry is a set of recorded episodes grouped in tasks. Task ``t`` has ``N_t``
episodes, and one episode of task ``t`` can move the entry's overall score by at most ``w_t``
(:func:`overall_weights`; ``1 / (T N_t)`` when the overall score is the mean of ``T`` task
means). A forger may replace episodes by forged ones: forging ``k_t`` episodes of task ``t``
raises the overall score by at most ``sum_t k_t w_t``.

A verifier regenerates a secret stratified sample: ``n_t`` episodes of each task ``t``, drawn
uniformly without replacement (:func:`draw`). A forgery is caught when the sample holds at
least one forged episode. The ``n_t`` drawn from ``N_t`` miss all ``k_t`` forged ones with the
hypergeometric probability (:func:`miss`)::

    miss_t(k_t) = C(N_t - k_t, n_t) / C(N_t, n_t) = prod_{i < k_t} (N_t - n_t - i) / (N_t - i)

(0 when ``k_t > N_t - n_t``), and the tasks are drawn independently. A forger who knows the
allocation ``n`` (but not the secret draw) and wants to gain at least ``X`` spreads the forged
episodes to be missed as often as possible, so the guarantee "every forgery that raises the
overall score by at least ``X`` is caught with probability at least ``p``" holds for
``p = power(n, X)`` (:func:`catch_power`), with::

    power(n, X) = 1 - max { prod_t miss_t(k_t) : integers 0 <= k_t <= N_t, sum_t k_t w_t >= X }

and ``power = 1`` when no forgery reaches ``X`` (``sum_t N_t w_t < X``). The maximising
``k`` is :func:`worst_forgery`; :func:`allocate` finds a small ``n`` with ``power(n, X) >= p``.

**Why the stated power is conservative** (it may understate the true chance of catching a
forgery, never overstate it):

* ``w_t`` bounds what one forged episode can gain, so every real forgery that gains at least
  ``X`` is among the ``k`` the maximum runs over. A real forgery that gains less than ``w_t``
  per episode needs more forged episodes, which only lowers its chance of being missed.
* The forger is granted the allocation ``n``; a forger who does not know it does no better.
* The maximum is computed by dynamic programming over the tasks (Bellman, 1957, *Dynamic
  Programming*; here a covering knapsack, Kellerer, Pferschy & Pisinger, 2004, *Knapsack
  Problems*, ch. 1 and 13), the state being the weight forged so far in integer units, capped
  at the target (a forgery past ``X`` gains nothing more). When the weights are multiples of
  a common unit ``u`` (their greatest common divisor as fractions) and ``X / u`` is at most
  ``EXACT_STATES``, the units are exact and so is the result (a weight given as a float is
  read as the simplest fraction within a few units in the last place, so ``1 / 112`` counts
  as exactly ``1/112``). Otherwise the unit is ``X / GRID`` and the weight of ``k`` forged
  episodes of a task is rounded **up** to whole units, ``ceil(k w_t GRID / X)``. Every real
  forgery then still reaches the target, so the maximum runs over a superset of the real
  forgeries and can only grow: the power can only shrink. Since each task rounds up by less
  than one unit, the quantised power is at least the exact power for the smaller gain
  ``X (1 - T / GRID)``.
* ``k_t`` runs up to ``min(N_t - n_t, ceil(X / w_t))``: a task with more forged episodes than
  undrawn ones is caught for certain, and forging past ``X`` in one task only lowers the miss.

The continuous optimum behind :func:`allocate`: with a sampled fraction ``f_t``, each forged
episode of task ``t`` survives with probability about ``1 - f_t`` and gains ``w_t``, so the
forger's log-miss per unit of gain is ``log(1 - f_t) / w_t``. The verifier equalises it across
tasks, ``f_t = 1 - exp(-c w_t)``, and the worst forgery is then missed with probability about
``exp(-c X)``. The smallest ``c`` that meets the power is found by bisection; the rounded
allocation is then improved by a local search over single draws, since on small tasks the
hypergeometric law and the whole number of forged episodes a gain needs move the optimum away
from the continuous one (on lite at ``X = 0.02`` it saves 2 of 77 draws).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from llm_marl_envs.leaderboard.forgery import (  # EXACT_STATES, GRID: importable here, as before
    EXACT_STATES as EXACT_STATES,
    GRID as GRID,
    Number,
    drawn_counts,
    plan_power,
    prepare,
    rational,
    solve,
)

__all__ = [
    "EXACT_STATES",
    "GRID",
    "allocate",
    "catch_power",
    "draw",
    "miss",
    "overall_weights",
    "worst_forgery",
]

T = TypeVar("T")


# --------------------------------------------------------------------------- one task
def miss(size: int, drawn: int, forged: int) -> float:
    """The probability that ``drawn`` of ``size`` episodes, drawn uniformly without
    replacement, avoid all ``forged`` of them (hypergeometric)::

        C(size - forged, drawn) / C(size, drawn) = prod_{i < forged} (size - drawn - i) / (size - i)

    which is 0 when ``forged > size - drawn``.
    """
    if not 0 <= drawn <= size or not 0 <= forged <= size:
        raise ValueError(f"need 0 <= drawn, forged <= size, got {size=}, {drawn=}, {forged=}")
    if forged > size - drawn:
        return 0.0
    chance = 1.0
    for i in range(forged):
        chance *= (size - drawn - i) / (size - i)
    return chance


# --------------------------------------------------------------------------- public
def catch_power(
    sizes: Mapping[str, int],
    weights: Mapping[str, Number],
    drawn: Mapping[str, int],
    gain: Number,
    *,
    _grid: int | None = None,
) -> float:
    """The probability that a stratified sample (``drawn[t]`` of ``sizes[t]`` episodes of each
    task) catches every forgery that raises the overall score by at least ``gain``, one forged
    episode of task ``t`` gaining at most ``weights[t]``: ``power(n, X)`` of the module
    docstring, the forger spreading the forged episodes in the worst way for the verifier.

    Exact when the weights are multiples of a unit ``u`` with ``gain / u <= EXACT_STATES``
    (like ``1 / (T N_t)`` on small suites); otherwise (or when ``_grid`` is given, for tests)
    quantised to ``_grid or GRID`` units per gain, rounding the forger's gains up, which can
    only understate the power. ``1.0`` when no forgery reaches ``gain``; ``0.0`` when
    ``gain <= 0`` (forging nothing reaches it, and is never caught).
    """
    plan = prepare(sizes, weights, gain, _grid)
    return plan_power(plan, drawn_counts(plan, drawn))


def worst_forgery(
    sizes: Mapping[str, int],
    weights: Mapping[str, Number],
    drawn: Mapping[str, int],
    gain: Number,
    *,
    _grid: int | None = None,
) -> dict[str, int]:
    """The forger's best spread: forged episodes ``k_t`` per task (every task of ``sizes``,
    in its order) that reach ``gain`` and are missed by the sample with the largest
    probability, ``1 - catch_power(...)``. Ties are broken deterministically (fewest forged
    episodes in the task with the most possible forgeries, then in the later tasks).

    When every forgery reaching ``gain`` is caught for certain, one of them: whole tasks
    forged, heaviest weight first, only as many episodes of the last as the gain needs.
    Raises ``ValueError`` when no forgery reaches ``gain``.
    """
    plan = prepare(sizes, weights, gain, _grid)
    if not plan.reachable:
        raise ValueError(f"no forgery reaches a gain of {gain}: forging everything gains less")
    _, forged = solve(plan, drawn_counts(plan, drawn), track=True)
    if forged is not None:
        by_task = dict(zip(plan.tasks, forged, strict=True))
        return {task: by_task[task] for task in sizes}
    spread, left = dict.fromkeys(sizes, 0), rational(gain)
    names = list(sizes)
    for task in sorted(names, key=lambda t: (-rational(weights[t]), names.index(t))):
        weight = rational(weights[task])
        if left <= 0 or weight <= 0:
            break
        spread[task] = min(sizes[task], math.ceil(left / weight))
        left -= spread[task] * weight
    return spread


def allocate(
    sizes: Mapping[str, int],
    weights: Mapping[str, Number],
    gain: Number,
    power: float = 0.95,
    minimum: int = 1,
) -> dict[str, int]:
    """A stratified allocation ``n_t`` (at least ``min(minimum, N_t)``, at most ``N_t``) with
    ``catch_power(sizes, weights, n, gain) >= power`` and few draws in all.

    The start is the continuous optimum ``n_t = ceil(N_t (1 - exp(-c w_t)))`` (module
    docstring) with the smallest ``c`` found by bisection that meets ``power``; then a local
    search removes draws while the power stays met, and tries adding a few draws to one task
    to remove more from the others (:func:`_improve`). Every episode when even that is needed
    (or not enough: ``gain <= 0``, ``power > 1``).
    """
    plan = prepare(sizes, weights, gain, None)
    floor = {task: max(0, min(minimum, size)) for task, size in sizes.items()}
    full = dict(sizes)
    rate = {task: float(rational(weights[task])) for task in sizes}

    def power_of(counts: Mapping[str, int]) -> float:
        return plan_power(plan, drawn_counts(plan, counts))

    def meets(counts: Mapping[str, int]) -> bool:
        return power_of(counts) >= power

    if not meets(full):
        return full
    if meets(floor):
        return floor

    def continuous(c: float) -> dict[str, int]:
        return {
            task: min(size, max(floor[task], math.ceil(-size * math.expm1(-c * rate[task]) - 1e-9)))
            for task, size in sizes.items()
        }

    # Forging nothing in a task of weight 0 gains nothing, so its draws never matter.
    limit = {task: size if rate[task] > 0 else floor[task] for task, size in sizes.items()}
    low, high = 0.0, -math.log(max(1.0 - power, 1e-12)) / max(float(rational(gain)), 1e-12)
    while not meets(continuous(high)):
        if continuous(high) == limit:
            break  # as good as drawing everything, which meets the power
        low, high = high, 2.0 * high
    for _ in range(100):
        if sum(continuous(high).values()) - sum(continuous(low).values()) <= 1:
            break
        middle = (low + high) / 2.0
        if meets(continuous(middle)):
            high = middle
        else:
            low = middle
    counts = continuous(high)
    while not meets(counts):  # a guard: the bisection ends where the power is met
        counts = max(
            ({**counts, t: counts[t] + 1} for t in sizes if counts[t] < sizes[t]), key=power_of
        )
    return _improve(sizes, floor, counts, power_of, power)


def _trim(
    counts: dict[str, int],
    floor: Mapping[str, int],
    power_of: Callable[[Mapping[str, int]], float],
    power: float,
    keep: str | None = None,
) -> dict[str, int]:
    """Remove single draws (never of task ``keep``) while the power stays met, each time the
    one that leaves the power highest (the first such task on a tie)."""
    while True:
        fewer = [
            {**counts, task: counts[task] - 1}
            for task in counts
            if counts[task] > floor[task] and task != keep
        ]
        scores = [power_of(candidate) for candidate in fewer]
        met = [score for score in scores if score >= power]
        if not met:
            return counts
        counts = fewer[scores.index(max(met))]


def _improve(
    sizes: Mapping[str, int],
    floor: Mapping[str, int],
    counts: dict[str, int],
    power_of: Callable[[Mapping[str, int]], float],
    power: float,
) -> dict[str, int]:
    """Local search from an allocation that meets ``power``: trim it (:func:`_trim`); then, for
    each task, add one to three draws there and trim the others, keeping the result when it
    has fewer draws in all (an iterated local search: Lourenço, Martin & Stützle, 2003, in
    *Handbook of Metaheuristics*, ch. 11). This finds the trades a single move cannot, such as
    two more draws of a light task letting one go in each of four heavier ones. Each kept
    change removes a draw, so it ends."""
    counts = _trim(counts, floor, power_of, power)
    improved = True
    while improved:
        improved = False
        for task in sizes:
            for more in (1, 2, 3):
                if counts[task] + more > sizes[task]:
                    break
                changed = {**counts, task: counts[task] + more}
                changed = _trim(changed, floor, power_of, power, keep=task)
                if sum(changed.values()) < sum(counts.values()):
                    counts, improved = changed, True
    return counts


def draw(
    pool: Mapping[str, Sequence[T]], drawn: Mapping[str, int], secret: int
) -> list[tuple[str, T]]:
    """``drawn[t]`` elements of each task's ``pool[t]``, chosen without replacement by a local
    ``random.Random(secret)`` (never the global generator): task by task in ``pool``'s order,
    each task's choice ``rng.sample(list(pool[t]), drawn[t])``, as the verification's draw
    (:mod:`llm_marl_envs.leaderboard.verify`). Recorded secrets depend on this exact
    behaviour, so it must not change."""
    rng = random.Random(secret)
    return [(task, item) for task in pool for item in rng.sample(list(pool[task]), drawn[task])]


def overall_weights(tasks: Mapping[str, tuple[int, int, float]]) -> dict[str, float]:
    """Each episode's largest possible weight in the overall score, per task.

    ``tasks[t] = (items, samples, per_sample_share)``: task ``t`` scores the mean of its
    ``items`` values (each in 0..1), an item being played ``samples`` times (``items *
    samples`` episodes), and ``per_sample_share`` is the largest change one sample can make to
    its item's value (``1 / samples`` when an item's value is the mean of its samples; ``1``
    when one sample can decide it, as with a best-of). The overall score is the mean of the
    ``T`` task scores, so one episode moves it by at most::

        per_sample_share / (T * items)

    (0 for a task without items).
    """
    count = len(tasks)
    weights = {}
    for task, (items, samples, share) in tasks.items():
        if items < 0 or samples < 1 or not 0 <= share <= 1:
            raise ValueError(f"task {task!r}: need items >= 0, samples >= 1, 0 <= share <= 1")
        weights[task] = float(share) / (count * items) if items else 0.0
    return weights
