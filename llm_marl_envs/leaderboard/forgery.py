"""The forger's problem behind :mod:`~llm_marl_envs.leaderboard.sampling`: the forgery that a
stratified sample misses most often, by dynamic programming over the tasks.

A problem is prepared once for the sizes, weights and gain (:func:`prepare`: the weights in
integer units of the gain, exact or rounded up to a grid) and then solved for each allocation
(:func:`solve`, :func:`plan_power`). The maths, and why the power it gives is conservative, are
in the docstring of :mod:`~llm_marl_envs.leaderboard.sampling`, whose public functions use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "EXACT_STATES",
    "GRID",
    "Number",
    "Plan",
    "drawn_counts",
    "plan_power",
    "prepare",
    "rational",
    "solve",
]

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


def _log_miss(size: int, drawn: int, most: int) -> np.ndarray:
    """``log miss(size, drawn, k)`` for ``k = 0 .. min(most, size - drawn)`` (the ``k`` whose
    miss is not 0), as cumulative sums of ``log1p(-drawn / (size - i))``."""
    import numpy as np

    top = min(most, size - drawn)
    steps = np.log1p(-drawn / (size - np.arange(top, dtype=np.float64)))
    return np.concatenate(([0.0], np.cumsum(steps)))


def rational(value: Number) -> Fraction:
    """``value`` as a fraction: exact for ``int`` and ``Fraction``; a float as the simplest
    fraction within a few units in its last place (``1 / 112`` gives ``1/112``), or exactly."""
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    exact = Fraction(value)
    simple = exact.limit_denominator(_RATIONAL_DENOMINATOR)
    return simple if abs(simple - exact) <= abs(exact) * _RATIONAL_TOLERANCE else exact


@dataclass(frozen=True)
class Plan:
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


def prepare(
    sizes: Mapping[str, int], weights: Mapping[str, Number], gain: Number, grid: int | None
) -> Plan:
    """Measure the weights in integer units of the gain: exact units when they are few enough
    (and ``grid`` is None), else ``grid`` units per gain with each task's forged weight
    rounded up (see the module docstring)."""
    import numpy as np

    names = list(sizes)
    for task in names:
        if sizes[task] < 0 or weights[task] < 0:
            raise ValueError(f"task {task!r}: a size and a weight must be >= 0")
    exact_weights = {task: rational(weights[task]) for task in names}
    target_gain = rational(gain)
    live = [task for task in names if sizes[task] > 0 and exact_weights[task] > 0]
    reachable = sum(sizes[t] * exact_weights[t] for t in names) >= target_gain
    if target_gain <= 0 or not live:
        # Forging nothing already "reaches" a gain <= 0; with no live task nothing else helps.
        empty = tuple(np.zeros(1, dtype=np.int64) for _ in names)
        return Plan(tuple(names), tuple(sizes[t] for t in names), empty, 0, True, reachable)

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
    return Plan(
        tuple(order),
        tuple(sizes[t] for t in order),
        tuple(steps[t] for t in order),
        target,
        exact,
        reachable,
    )


def drawn_counts(plan: Plan, drawn: Mapping[str, int]) -> tuple[int, ...]:
    """The allocation in the plan's task order (0 for a task ``drawn`` leaves out)."""
    unknown = set(drawn) - set(plan.tasks)
    if unknown:
        raise ValueError(f"drawn names tasks without a size: {sorted(unknown)}")
    counts = tuple(drawn.get(task, 0) for task in plan.tasks)
    for task, size, count in zip(plan.tasks, plan.sizes, counts, strict=True):
        if not 0 <= count <= size:
            raise ValueError(f"task {task!r}: cannot draw {count} of {size} episodes")
    return counts


def solve(plan: Plan, counts: tuple[int, ...], track: bool) -> tuple[float, list[int] | None]:
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
        best, choice = _advance(best, log_miss, step, target, track)
        choices.append(choice)

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


def _advance(
    best: np.ndarray, log_miss: np.ndarray, step: np.ndarray, target: int, track: bool
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """One task of :func:`solve`: ``best`` once ``k`` forged episodes of the task are added
    (each ``k`` of ``log_miss``, moving ``s`` by ``step[k]``), and (``track``) for each state
    the ``k`` that reached it and the state it came from."""
    import numpy as np

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
    return new, ((taken, source) if track else None)


def plan_power(plan: Plan, counts: tuple[int, ...]) -> float:
    """``power(n, X)`` of a prepared problem: ``1 - exp(largest log-miss)``."""
    if not plan.reachable:
        return 1.0
    value, _ = solve(plan, counts, track=False)
    return -math.expm1(value)
