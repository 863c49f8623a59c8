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
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

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
#: A weight or a gain: a float, or an exact ``int`` or ``Fraction``.
Number = int | float | Fraction

#: The largest number of exact weight units (``X / u``) the exact computation uses; beyond it
#: the weights are quantised (rounded up) to a grid of ``GRID`` units per ``X``.
EXACT_STATES = 20_000
#: Units per gain ``X`` of the quantised computation.
GRID = 4_096
#: A float weight is read as the simplest fraction this close to it (relative), ...
_RATIONAL_TOLERANCE = 4e-16
#: ... of denominator at most this.
_RATIONAL_DENOMINATOR = 10**9


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


def _log_miss(size: int, drawn: int, most: int) -> np.ndarray:
    """``log miss(size, drawn, k)`` for ``k = 0 .. min(most, size - drawn)`` (the ``k`` whose
    miss is not 0), as cumulative sums of ``log1p(-drawn / (size - i))``."""
    import numpy as np

    top = min(most, size - drawn)
    steps = np.log1p(-drawn / (size - np.arange(top, dtype=np.float64)))
    return np.concatenate(([0.0], np.cumsum(steps)))


# --------------------------------------------------------------------------- the forger's problem
def _rational(value: Number) -> Fraction:
    """``value`` as a fraction: exact for ``int`` and ``Fraction``; a float as the simplest
    fraction within a few units in its last place (``1 / 112`` gives ``1/112``), or exactly."""
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    exact = Fraction(value)
    simple = exact.limit_denominator(_RATIONAL_DENOMINATOR)
    return simple if abs(simple - exact) <= abs(exact) * _RATIONAL_TOLERANCE else exact


@dataclass(frozen=True)
class _Plan:
    """The forger's problem, independent of the allocation: the tasks in the order the dynamic
    programme visits them (the one with the most useful forgeries last), their sizes, and for
    each ``k = 0 .. most`` the state units that ``k`` forged episodes add (capped at
    ``target``, the units of the gain)."""

    tasks: tuple[str, ...]
    sizes: tuple[int, ...]
    steps: tuple[np.ndarray, ...]
    target: int
    exact: bool
    reachable: bool


def _plan(
    sizes: Mapping[str, int], weights: Mapping[str, Number], gain: Number, grid: int | None
) -> _Plan:
    """Measure the weights in integer units of the gain: exact units when they are few enough
    (and ``grid`` is None), else ``grid`` units per gain with each task's forged weight
    rounded up (see the module docstring)."""
    import numpy as np

    names = list(sizes)
    for task in names:
        if sizes[task] < 0 or weights[task] < 0:
            raise ValueError(f"task {task!r}: a size and a weight must be >= 0")
    exact_weights = {task: _rational(weights[task]) for task in names}
    target_gain = _rational(gain)
    live = [task for task in names if sizes[task] > 0 and exact_weights[task] > 0]
    reachable = sum(sizes[t] * exact_weights[t] for t in names) >= target_gain
    if target_gain <= 0 or not live:
        # Forging nothing already "reaches" a gain <= 0; with no live task nothing else helps.
        empty = tuple(np.zeros(1, dtype=np.int64) for _ in names)
        return _Plan(tuple(names), tuple(sizes[t] for t in names), empty, 0, True, reachable)

    denominator = math.lcm(*(exact_weights[t].denominator for t in live))
    numerators = {
        t: exact_weights[t].numerator * (denominator // exact_weights[t].denominator) for t in live
    }
    common = math.gcd(*numerators.values())
    exact_target = math.ceil(target_gain * denominator / common)
    exact = grid is None and exact_target <= EXACT_STATES
    steps: dict[str, np.ndarray] = {}
    if exact:
        target = exact_target
        for task in names:
            unit = numerators.get(task, 0) // common
            most = min(sizes[task], -(-target // unit)) if unit else 0
            steps[task] = np.minimum(np.arange(most + 1, dtype=np.int64) * unit, target)
    else:
        target = GRID if grid is None else grid
        for task in names:
            if task not in numerators:
                steps[task] = np.zeros(1, dtype=np.int64)
                continue
            # k forged episodes weigh k w / gain * target units, rounded up: ceil(k p / q).
            ratio = Fraction(weights[task]) * target / Fraction(gain)
            p, q = ratio.numerator, ratio.denominator
            most = min(sizes[task], -(-target * q // p))
            units = [min(-(-k * p // q), target) for k in range(most + 1)]
            steps[task] = np.array(units, dtype=np.int64)
    # Visit the task with the most useful forgeries last: its step is a vectorised look-up.
    last = max(range(len(names)), key=lambda i: (len(steps[names[i]]), -i))
    order = [*names[:last], *names[last + 1 :], names[last]]
    return _Plan(
        tuple(order),
        tuple(sizes[t] for t in order),
        tuple(steps[t] for t in order),
        target,
        exact,
        reachable,
    )


def _drawn_counts(plan: _Plan, drawn: Mapping[str, int]) -> tuple[int, ...]:
    """The allocation in the plan's task order (0 for a task ``drawn`` leaves out)."""
    unknown = set(drawn) - set(plan.tasks)
    if unknown:
        raise ValueError(f"drawn names tasks without a size: {sorted(unknown)}")
    counts = tuple(drawn.get(task, 0) for task in plan.tasks)
    for task, size, count in zip(plan.tasks, plan.sizes, counts, strict=True):
        if not 0 <= count <= size:
            raise ValueError(f"task {task!r}: cannot draw {count} of {size} episodes")
    return counts


def _solve(plan: _Plan, counts: tuple[int, ...], track: bool) -> tuple[float, list[int] | None]:
    """The largest log-miss of a forgery reaching the target, and (``track``) the forgery
    that attains it (ties: the fewest forged episodes in the later tasks, then the lowest
    state), or ``None`` when every forgery reaching the target is caught for certain.

    ``best[s]`` is the largest log-miss over the tasks visited so far of a forgery that has
    gathered ``s`` units (``target``: at least that many). Adding ``k`` forged episodes of the
    next task moves ``s`` to ``min(s + step[k], target)`` and adds ``log miss(k)``.
    """
    import numpy as np

    target = plan.target
    best = np.full(target + 1, -np.inf)
    best[0] = 0.0
    choices: list[tuple[np.ndarray, np.ndarray] | None] = []
    for size, count, step in zip(plan.sizes[:-1], counts[:-1], plan.steps[:-1], strict=True):
        log_miss = _log_miss(size, count, len(step) - 1)
        if len(log_miss) == 1:
            choices.append(None)  # only k = 0: the states are unchanged
            continue
        new = best.copy()  # k = 0
        taken = np.zeros(target + 1, dtype=np.int64) if track else None
        source = np.arange(target + 1, dtype=np.int64) if track else None
        for k in range(1, len(log_miss)):
            shift = int(step[k])
            candidate = best + log_miss[k]
            if shift < target:
                moved, current = candidate[: target - shift], new[shift:target]
                if track:
                    better = np.nonzero(moved > current)[0]
                    taken[shift + better] = k
                    source[shift + better] = better
                np.maximum(current, moved, out=current)
            tail = candidate[target - shift :]
            j = int(tail.argmax())
            if tail[j] > new[target]:
                new[target] = tail[j]
                if track:
                    taken[target] = k
                    source[target] = target - shift + j
        best = new
        choices.append((taken, source) if track else None)

    if not plan.tasks:
        value = float(best[target])
        return value, ([] if value > -np.inf else None)
    # The last task: the best state at or above target - step[k], for every k at once.
    log_miss = _log_miss(plan.sizes[-1], counts[-1], len(plan.steps[-1]) - 1)
    step = plan.steps[-1][: len(log_miss)]
    suffix = np.maximum.accumulate(best[::-1])[::-1]
    values = suffix[target - step] + log_miss
    last = int(values.argmax())
    value = float(values[last])
    if not track or value == -np.inf:
        return value, None
    forged = [0] * len(plan.tasks)
    forged[-1] = last
    start = target - int(step[last])
    state = start + int(best[start:].argmax())
    for index in reversed(range(len(plan.tasks) - 1)):
        choice = choices[index]
        if choice is not None:
            forged[index] = int(choice[0][state])
            state = int(choice[1][state])
    assert state == 0, "the forgery must trace back to nothing forged"
    return value, forged


def _power(plan: _Plan, counts: tuple[int, ...]) -> float:
    """``power(n, X)`` of a prepared problem: ``1 - exp(largest log-miss)``."""
    if not plan.reachable:
        return 1.0
    value, _ = _solve(plan, counts, track=False)
    return -math.expm1(value)


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
    plan = _plan(sizes, weights, gain, _grid)
    return _power(plan, _drawn_counts(plan, drawn))


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
    plan = _plan(sizes, weights, gain, _grid)
    if not plan.reachable:
        raise ValueError(f"no forgery reaches a gain of {gain}: forging everything gains less")
    _, forged = _solve(plan, _drawn_counts(plan, drawn), track=True)
    if forged is not None:
        by_task = dict(zip(plan.tasks, forged, strict=True))
        return {task: by_task[task] for task in sizes}
    spread, left = dict.fromkeys(sizes, 0), _rational(gain)
    names = list(sizes)
    for task in sorted(names, key=lambda t: (-_rational(weights[t]), names.index(t))):
        weight = _rational(weights[task])
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
    plan = _plan(sizes, weights, gain, None)
    floor = {task: max(0, min(minimum, size)) for task, size in sizes.items()}
    full = dict(sizes)
    rate = {task: float(_rational(weights[task])) for task in sizes}

    def power_of(counts: Mapping[str, int]) -> float:
        return _power(plan, _drawn_counts(plan, counts))

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
    low, high = 0.0, -math.log(max(1.0 - power, 1e-12)) / max(float(_rational(gain)), 1e-12)
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
