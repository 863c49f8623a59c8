"""Statistics of the leaderboard: score intervals, paired comparisons and tied ranks.

**Scores.** Every score is reported as an :class:`Interval`: the mean over items, its number
of observations ``n``, and a 95% interval from :func:`score_interval`, which picks by what the
values are (the point estimate is always the plain mean, ``math.fsum``, independent of order):

* **0/1 outcomes** (every value at an end of the metric's range ``[low, high]``: pass/fail,
  solved/unsolved) get the **Wilson score interval** (Wilson, 1927, JASA 22:209; recommended
  for small n by Brown, Cai & DasGupta, 2001, "Interval Estimation for a Binomial
  Proportion", Statistical Science 16:101). With ``k`` of ``n`` at the top end,
  ``p = k / n`` and ``z`` the normal quantile of the level (1.96 at 95%)::

      centre = (p + z^2 / 2n) / (1 + z^2 / n)
      half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)
      [lo, hi] = [centre - half, centre + half], mapped back onto [low, high]

  It stays honest at 0/n and n/n, where the bootstrap (and the Wald interval) collapse to a
  point: 0 of 16 gives [0, 0.194], 16 of 16 gives [0.806, 1]. Wilson rather than Jeffreys:
  both have near-nominal coverage at small n, but Wilson is closed-form (no beta quantiles,
  so no SciPy) and its bounds are exactly 0 and 1 at the ends.
* **Bounded continuous scores** (a range ``[low, high]``, values inside it) get a 95%
  **percentile bootstrap** (Efron & Tibshirani, 1993, *An Introduction to the Bootstrap*,
  ch. 13; :func:`bootstrap_mean`) **with a floor on its width of one item's swing**,
  ``(high - low) / n``: the change of the mean when one item moves from one end of the range
  to the other. A bootstrap only sees the spread the sample shows, so n identical scores give
  a zero-width interval that claims a precision no n items can show, and the tie rule below
  would then separate entries on nothing (16 Donor games at exactly 0.500 would rank strictly
  above 0.465 [0.433, 0.498]). The floor keeps the interval centred on the mean where it can
  and shifts it inside the range where it cannot.
* **Unbounded metrics** (``joint_reward``, ``steps_ratio``, ``final_resources``) keep the
  plain bootstrap: there is no range to scale a floor by. They are shown, never ranked (a
  task is ranked on its primary metric, which must be bounded).

**Comparisons.** Two entries are compared on the episodes both played (same task, same seed:
the same key), by the mean of the per-episode differences with a **paired bootstrap** interval
(the keys are resampled, each carrying its pair of scores). Pairing removes the variation that
comes from the tasks themselves (some episodes are hard for everyone), so a small but
consistent difference is resolved where two separate intervals would overlap.

**Ranks.** :func:`tie_ranks` uses the rule of the LMArena leaderboard (Chiang et al., 2024,
"Chatbot Arena: An Open Platform for Evaluating LLMs by Human Preference", arXiv:2403.04132):

    rank(i) = 1 + #{j : lo(j) > hi(i)}

one plus the number of entries that are *clearly better*, i.e. whose whole interval lies above
this entry's interval. Why this rule:

* an entry only loses places to entries whose intervals lie entirely above its own, so an
  overlap alone never costs a place; conversely an entry that is clearly better than another
  always ranks strictly higher, and ranks never contradict the order of the upper bounds;
* entries whose intervals overlap usually share a place (the leaders of a close race all rank
  1). The rule is not transitive, so a chain of overlaps can still end on different places
  (A clearly above C, B overlapping both: A and B rank 1, C ranks 2 although it overlaps B);
* the strict alternative, ranking an entry below another only when a test separates them
  pairwise for every entry above, is what it approximates; the LMArena rule needs no
  multiple-testing correction and is a simple, published, widely read convention;
* it depends only on the intervals, not on the order the entries are listed in.

**Determinism.** Nothing here uses the global random state: every bootstrap draws from
``numpy.random.default_rng(seed)``, and :func:`stable_seed` derives a seed from names (entry,
task, metric) with sha256, so the same records always give the same numbers, on any machine
and in any process. The bootstrap of a mean only depends on the multiset of values, and the
implementation sorts (or counts) them first, so the order of the records does not matter
either.

**Speed.** Pass/fail outcomes and scores on a grid take few distinct values; for them the
bootstrap draws multinomial counts over the distinct values (cost ``resamples x distinct``)
instead of resampling indices (cost ``resamples x n``, done in chunks of about a million
indices so the memory stays bounded). 100,000 episodes take milliseconds with 0/1 outcomes and
under a second with continuous rewards on a 2-core CPU (``docs/benchmarks/bench_stats.md``).
"""

from __future__ import annotations

import hashlib
import math
from statistics import NormalDist
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "LEVEL",
    "RESAMPLES",
    "Interval",
    "bootstrap_mean",
    "paired_difference",
    "score_interval",
    "stable_seed",
    "summarize",
    "tie_ranks",
    "widen",
    "wilson",
]

#: Default confidence level of every interval.
LEVEL = 0.95
#: Default number of bootstrap resamples.
RESAMPLES = 2000
#: Indices drawn per chunk on the index path (8 MiB of int64), bounding its memory.
_CHUNK_ELEMENTS = 1 << 20
#: The multinomial path is used when there are at most ``n / _COUNTS_RATIO`` distinct values:
#: one multinomial category costs about as much as 30 to 50 resampled indices.
_COUNTS_RATIO = 32
_METHODS = ("auto", "counts", "indices")


@dataclass(frozen=True)
class Interval:
    """A mean with its confidence interval ``[lo, hi]`` and the number of observations ``n``.

    The fields are plain finite floats (and an int), ``lo <= mean <= hi`` and ``n >= 1``, so
    :meth:`to_dict` is always valid JSON (never NaN or infinity).
    """

    mean: float
    lo: float
    hi: float
    n: int

    def __post_init__(self) -> None:
        for name in ("mean", "lo", "hi"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise TypeError(f"Interval.{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"Interval.{name} must be finite, got {value!r}")
            object.__setattr__(self, name, float(value))
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 1:
            raise ValueError(f"Interval.n must be a positive integer, got {self.n!r}")
        object.__setattr__(self, "n", int(self.n))
        if not self.lo <= self.mean <= self.hi:
            raise ValueError(
                f"Interval needs lo <= mean <= hi, got lo={self.lo!r}, mean={self.mean!r}, "
                f"hi={self.hi!r}"
            )

    @property
    def width(self) -> float:
        """``hi - lo``."""
        return self.hi - self.lo

    def to_dict(self) -> dict[str, Any]:
        """``{"mean", "lo", "hi", "n"}``, JSON-safe."""
        return {"mean": self.mean, "lo": self.lo, "hi": self.hi, "n": self.n}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interval:
        """The inverse of :meth:`to_dict`."""
        return cls(float(data["mean"]), float(data["lo"]), float(data["hi"]), int(data["n"]))

    def __str__(self) -> str:
        return f"{self.mean:.4g} [{self.lo:.4g}, {self.hi:.4g}] (n={self.n})"


# --------------------------------------------------------------------------- validation
def _as_values(values: Iterable[float], what: str = "values") -> np.ndarray:
    """A 1-D float64 array of finite values; ValueError (saying what is wrong) otherwise."""
    if not hasattr(values, "__len__"):
        values = list(values)
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be real numbers: {exc}") from None
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{what} is empty: a bootstrap interval needs at least one value")
    finite = np.isfinite(array)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise ValueError(
            f"{what} must be finite: {bad.size} of {array.size} are not "
            f"(first at index {bad[0]}: {array[bad[0]]!r})"
        )
    return array


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1 (exclusive), got {level!r}")


def _check_options(level: float, resamples: int, method: str = "auto") -> None:
    _check_level(level)
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)):
        raise ValueError(f"resamples must be an integer, got {resamples!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")


# --------------------------------------------------------------------------- bootstrap
def _replicates_by_counts(
    distinct: np.ndarray, counts: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap means from multinomial counts over the distinct values."""
    n = int(counts.sum())
    draws = rng.multinomial(n, counts / n, size=resamples)
    return (draws @ distinct) / n


def _replicates_by_indices(
    values: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap means from resampled indices, about ``_CHUNK_ELEMENTS`` indices at a time."""
    n = values.size
    rows = max(1, _CHUNK_ELEMENTS // n)
    out = np.empty(resamples)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        indices = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = values[indices].sum(axis=1)
    return out / n


def bootstrap_mean(
    values: Iterable[float],
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
    method: str = "auto",
) -> Interval:
    """The mean of ``values`` with a percentile bootstrap interval (Efron & Tibshirani, 1993).

    ``resamples`` samples of ``n`` values are drawn with replacement, and the interval is the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of their means, widened if need be to
    contain the mean itself. Deterministic given the multiset of values, ``level``,
    ``resamples`` and ``seed`` (``numpy.random.default_rng(seed)``; the order of the values
    does not matter). With one value, or all values equal, ``lo == hi == mean``.

    Two ways to draw the resamples, which give the same distribution (they agree within
    Monte-Carlo error, not bit for bit):

    * ``"counts"``: a resample of n values only matters through how many times it holds each
      distinct value, a multinomial draw over the k distinct values with their observed
      frequencies; cost ``resamples x k``. The natural way for pass/fail outcomes (k = 2) and
      scores on a grid.
    * ``"indices"``: resample indices into the sorted values, in chunks of about a million
      indices (never ``resamples x n`` at once); cost ``resamples x n``.

    ``"auto"`` (the default) takes ``"counts"`` when ``32 * k <= n`` and ``"indices"``
    otherwise, whichever is faster.

    Raises ValueError for an empty input, a non-finite or non-numeric value, a ``level``
    outside (0, 1) or ``resamples < 1``.
    """
    _check_options(level, resamples, method)
    array = _as_values(values)
    n = array.size
    mean = math.fsum(array.tolist()) / n
    if n == 1 or bool(np.all(array == array[0])):
        constant = float(array[0])
        return Interval(constant, constant, constant, n)

    distinct, counts = np.unique(array, return_counts=True)
    rng = np.random.default_rng(seed)
    if method == "counts" or (method == "auto" and distinct.size * _COUNTS_RATIO <= n):
        replicates = _replicates_by_counts(distinct, counts, resamples, rng)
    else:
        replicates = _replicates_by_indices(np.sort(array), resamples, rng)

    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(replicates, [tail, 1.0 - tail])
    return Interval(mean, min(float(lo), mean), max(float(hi), mean), n)


def summarize(values: Iterable[float]) -> Interval:
    """:func:`bootstrap_mean` with the defaults (95%, 2,000 resamples, seed 0)."""
    return bootstrap_mean(values)


def wilson(successes: int, n: int, *, level: float = LEVEL) -> Interval:
    """The Wilson score interval of ``successes`` out of ``n`` (module docstring): never of
    zero width, exactly 0 below at 0/n and exactly 1 above at n/n."""
    if not 0 <= successes <= n or n < 1:
        raise ValueError(f"wilson needs 0 <= successes <= n and n >= 1, got {successes} of {n}")
    _check_level(level)
    z = NormalDist().inv_cdf((1.0 + level) / 2.0)
    p = successes / n
    shrink = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / shrink
    half = z / shrink * math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n))
    lo = 0.0 if successes == 0 else min(p, max(0.0, centre - half))
    hi = 1.0 if successes == n else max(p, min(1.0, centre + half))
    return Interval(p, lo, hi, n)


def widen(interval: Interval, width: float, low: float, high: float) -> Interval:
    """``interval`` widened, if need be, to at least ``width`` inside ``[low, high]``: centred
    on the mean where the range allows, shifted inside it where it does not."""
    lo = min(interval.lo, interval.mean - width / 2)
    hi = max(interval.hi, interval.mean + width / 2)
    if lo < low:
        lo, hi = low, max(hi, low + width)
    if hi > high:
        lo, hi = min(lo, high - width), high
    return Interval(interval.mean, max(lo, low), min(hi, high), interval.n)


def score_interval(
    values: Iterable[float],
    low: float | None = None,
    high: float | None = None,
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval:
    """The mean of a metric's ``values`` on its range ``[low, high]`` with the interval the
    module docstring chooses: Wilson for 0/1 outcomes (every value at ``low`` or ``high``),
    else the bootstrap widened to one item's swing, ``(high - low) / n``; the plain bootstrap
    when the range is not bounded on both sides (``low`` or ``high`` None)."""
    array = _as_values(values)
    if low is None or high is None:
        return bootstrap_mean(array, level=level, resamples=resamples, seed=seed)
    if not low < high or array.min() < low or array.max() > high:
        raise ValueError(f"values must lie in the metric's range [{low}, {high}]")
    at_top = array == high
    if bool(np.all(at_top | (array == low))):
        share = wilson(int(at_top.sum()), array.size, level=level)
        mean = math.fsum(array.tolist()) / array.size
        lo, hi = (low + (high - low) * bound for bound in (share.lo, share.hi))
        return Interval(mean, min(lo, mean), max(hi, mean), array.size)
    interval = bootstrap_mean(array, level=level, resamples=resamples, seed=seed)
    return widen(interval, (high - low) / array.size, low, high)


def paired_difference(
    a: Mapping[Hashable, float],
    b: Mapping[Hashable, float],
    *,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Mean of ``a[k] - b[k]`` over the keys both share, with a paired bootstrap interval.

    ``a`` and ``b`` map episode keys (such as ``"task/seed"``) to one entry's score each. Only
    the shared keys count, and ``n`` of the result is how many there are (compare it with
    ``len(a)`` and ``len(b)`` to see what was left out). Resampling keys with their pair of
    scores is resampling the differences, so this is :func:`bootstrap_mean` of the
    differences; positive means ``a`` scored higher. An interval that excludes 0 says the
    difference is resolved at this level.

    Raises ValueError when the two share no key (naming how many each has) or a shared key's
    score is not a finite number.
    """
    _check_options(level, resamples)
    shared = [key for key in a if key in b]
    if not shared:
        raise ValueError(
            f"paired_difference: the two entries share no episode key ({len(a)} keys in a, "
            f"{len(b)} in b); pairing needs the same tasks and seeds"
        )
    differences = []
    for key in shared:
        x, y = a[key], b[key]
        try:
            x, y = float(x), float(y)
        except (TypeError, ValueError):
            raise ValueError(
                f"paired_difference: scores must be numbers, key {key!r} has {x!r} and {y!r}"
            ) from None
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(
                f"paired_difference: scores must be finite, key {key!r} has {x!r} and {y!r}"
            )
        differences.append(x - y)
    return bootstrap_mean(differences, level=level, resamples=resamples, seed=seed)


# --------------------------------------------------------------------------- ranks
def _bounds(intervals: Sequence[Interval]) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([interval.lo for interval in intervals], dtype=np.float64)
    hi = np.array([interval.hi for interval in intervals], dtype=np.float64)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError("tie_ranks: every interval needs finite bounds")
    if (lo > hi).any():
        raise ValueError("tie_ranks: every interval needs lo <= hi")
    return lo, hi


def tie_ranks(intervals: Sequence[Interval], higher_is_better: bool = True) -> list[int]:
    """Ranks that share a place unless intervals separate (the LMArena rule).

    ``rank(i) = 1 + #{j : lo(j) > hi(i)}``: one plus the number of entries whose interval lies
    entirely above this one's (for ``higher_is_better=False``, entirely below:
    ``1 + #{j : hi(j) < lo(i)}``). Intervals that only touch count as overlapping. Returned in
    the order of ``intervals``; ``[1, 1, 3]`` means two entries share first place and the third
    is clearly behind both. See the module docstring for why this rule. O(m log m).
    """
    if not intervals:
        return []
    lo, hi = _bounds(intervals)
    if higher_is_better:
        # Entries whose lower bound exceeds hi(i): all of sorted(lo) right of hi(i).
        above = lo.size - np.searchsorted(np.sort(lo), hi, side="right")
    else:
        # Entries whose upper bound is below lo(i).
        above = np.searchsorted(np.sort(hi), lo, side="left")
    return [int(rank) for rank in 1 + above]


# --------------------------------------------------------------------------- seeds
def stable_seed(*parts: str | int) -> int:
    """A 63-bit seed from sha256 of ``parts``, the same in every process and on every machine.

    Use it to seed each statistic from what it is about, e.g.
    ``bootstrap_mean(v, seed=stable_seed(entry_id, task, metric))``. Strings and integers are
    told apart (``stable_seed("1") != stable_seed(1)``) and part boundaries count
    (``stable_seed("ab", "c") != stable_seed("a", "bc")``).
    """
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, bool) or not isinstance(part, (str, int, np.integer)):
            raise TypeError(f"stable_seed parts must be str or int, got {part!r}")
        text = f"s{len(part)}:{part}" if isinstance(part, str) else f"i:{int(part)}"
        digest.update(text.encode("utf-8") + b"\x00")
    return int.from_bytes(digest.digest()[:8], "big") >> 1
