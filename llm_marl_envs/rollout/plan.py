"""What a rollout fixes per episode: :class:`EpisodePlan`.

A plain rollout plays episodes ``0, 1, ...`` and resets group ``g`` with ``seed + g``. A frozen
episode list (an evaluation suite) fixes more: each group's seed, each group's reset options
(the task: ``{"row_index": 12}`` is row 12 of the env's split), and, for a run resumed after
an interruption, the number each episode's record carries. :class:`EpisodePlan` holds these
three together, checked once, and is passed whole: ``rollout(..., plan=EpisodePlan(...))``.

>>> from llm_marl_envs.rollout import EpisodePlan
>>> plan = EpisodePlan(seeds=[5, 7], reset_options=[{"row_index": 0}, None])
>>> plan.episode_count(None, group_size=2)
4
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_marl_envs.core.validation import check_int

__all__ = ["EpisodePlan"]


@dataclass(frozen=True)
class EpisodePlan:
    """The seeds, reset options and record numbers a rollout's episodes are played with.

    Each field is optional; None keeps :func:`~llm_marl_envs.rollout.rollout`'s default. The
    lists are stored as tuples (each options dict copied).

    Attributes:
        seeds: The seed of each group, in order, instead of ``seed + g``; the rollout then
            plays ``len(seeds) * group_size`` episodes (``episodes`` may be left out).
        reset_options: Options of each group's ``reset`` (``None`` or a dict per group, e.g.
            ``{"row_index": i}``), recorded in each episode's record.
        episode_numbers: The number each episode's record carries (``record.episode``;
            ``record.group`` is ``number // group_size``), default ``0, 1, ...``. A resumed
            run passes the numbers an uninterrupted run would have given its remaining
            episodes, so their records match that run's. Without ``seeds`` a group resets
            with ``seed + record.group``; ``seeds`` and ``reset_options`` stay one entry per
            group of this rollout, in order. Distinct, ``>= 0``, and with ``group_size > 1``
            each group of the rollout must lie in one numbered group.
    """

    seeds: Sequence[int] | None = None
    reset_options: Sequence[Mapping[str, Any] | None] | None = None
    episode_numbers: Sequence[int] | None = None

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # frozen: the checked values replace the given ones
        set_field(self, "seeds", _seeds(self.seeds))
        set_field(self, "reset_options", _options(self.reset_options))
        set_field(self, "episode_numbers", _numbers(self.episode_numbers))

    def episode_count(self, episodes: int | None, group_size: int) -> int:
        """The rollout's number of episodes (``episodes``, or ``len(seeds) * group_size``),
        checked against every list of the plan."""
        if self.seeds is not None:
            planned = len(self.seeds) * group_size
            if episodes is None:
                episodes = planned
            elif episodes != planned:
                raise ValueError(
                    f"episodes={episodes} but {len(self.seeds)} seeds x group_size={group_size} "
                    f"give {planned}; leave episodes out"
                )
        elif episodes is None:
            raise TypeError(
                "rollout() needs episodes=N (or plan=EpisodePlan(seeds=[...]), one per group)"
            )
        check_int("episodes", episodes, 0)
        groups = -(-episodes // group_size)
        if self.reset_options is not None and len(self.reset_options) != groups:
            raise ValueError(
                f"reset_options must be a list with one dict (or None) per group: {groups} "
                f"groups, got {list(self.reset_options)!r:.80}"
            )
        if self.episode_numbers is not None:
            _check_groups(self.episode_numbers, episodes, group_size)
        return episodes


def _seeds(seeds: Any) -> tuple[int, ...] | None:
    if seeds is None:
        return None
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
        raise TypeError(f"seeds must be a list of ints (one per group), got {seeds!r}")
    return tuple(check_int("seeds[]", s, 0) for s in seeds)


def _options(options: Any) -> tuple[dict | None, ...] | None:
    if options is None:
        return None
    if isinstance(options, (Mapping, str, bytes)) or not isinstance(options, Iterable):
        raise ValueError(
            f"reset_options must be a list with one dict (or None) per group, got {options!r:.80}"
        )
    options = tuple(options)
    for entry in options:
        if entry is not None and not isinstance(entry, Mapping):
            raise TypeError(f"each reset_options entry must be a dict or None, got {entry!r}")
    return tuple(None if entry is None else dict(entry) for entry in options)


def _numbers(numbers: Any) -> tuple[int, ...] | None:
    if numbers is None:
        return None
    if isinstance(numbers, (str, bytes, Mapping)) or not isinstance(numbers, Iterable):
        raise TypeError(f"episode_numbers must be a list of ints, got {numbers!r:.80}")
    numbers = tuple(check_int("episode_numbers[]", n, 0) for n in numbers)
    if len(set(numbers)) != len(numbers):
        raise ValueError("episode_numbers must be distinct (each record's number is unique)")
    return numbers


def _check_groups(numbers: tuple[int, ...], episodes: int, group_size: int) -> None:
    """One number per episode, and each group of the rollout inside one numbered group."""
    if len(numbers) != episodes:
        raise ValueError(
            f"episode_numbers has {len(numbers)} numbers for {episodes} episodes; give one each"
        )
    for start in range(0, episodes, group_size):
        chunk = numbers[start : start + group_size]
        if len({n // group_size for n in chunk}) != 1:
            raise ValueError(
                f"episode_numbers {list(chunk)} play one group of this call but lie in "
                f"different groups of {group_size}; number whole groups"
            )
