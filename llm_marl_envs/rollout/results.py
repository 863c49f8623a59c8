"""What a rollout returns: its result, each agent's running totals, and the two errors.

:class:`RolloutResult` (with :class:`AgentStats`, one agent's totals kept in constant memory),
:class:`RolloutError` and :class:`RolloutInterrupted` (which carry the result of the episodes that
finished before a failure or a Ctrl-C) are plain data: they hold what the loop of
:mod:`llm_marl_envs.rollout.loop` fills in and know nothing of environments, executors or
policies. They live apart from the loop so that it and :func:`~llm_marl_envs.rollout.rollout`
both import them from below. Import them from :mod:`llm_marl_envs.rollout` (or
:mod:`llm_marl_envs.rollout.engine`, which re-exports them). :func:`add_to_stats` and
:func:`kept_summary` are the loop's: a record added to the totals, and the line that says
what a stopped rollout kept.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_marl_envs.rollout.records import EpisodeRecord


@dataclass
class AgentStats:
    """One agent's running totals over the finished episodes (constant memory).

    The rollout keeps these for every episode whatever it keeps of the records, so a summary
    of a long rollout written to a file needs no record in memory.
    """

    episodes: int = 0
    mean: float = 0.0
    m2: float = 0.0  # sum of squared deviations from the mean (Welford)
    min: float = float("inf")
    max: float = float("-inf")
    successes: int = 0
    success_reported: int = 0  # episodes whose final info has a bool "success"
    turns: int = 0
    format_failures: int = 0

    def add(self, episode_return: float, turns: int, failures: int, success: Any) -> None:
        self.episodes += 1
        delta = episode_return - self.mean
        self.mean += delta / self.episodes
        self.m2 += delta * (episode_return - self.mean)
        self.min = min(self.min, episode_return)
        self.max = max(self.max, episode_return)
        self.turns += turns
        self.format_failures += failures
        if isinstance(success, bool):
            self.success_reported += 1
            self.successes += success

    @property
    def std(self) -> float:
        """Population standard deviation of the returns."""
        return (self.m2 / self.episodes) ** 0.5 if self.episodes else 0.0

    @property
    def success_rate(self) -> float | None:
        """Share of successes, or None unless every episode reported a bool ``success``."""
        if not self.episodes or self.success_reported != self.episodes:
            return None
        return self.successes / self.episodes


def add_to_stats(stats: dict[str, AgentStats], record: EpisodeRecord) -> None:
    """Add a finished episode's returns, turns, format failures and success to ``stats``."""
    turns: dict[str, int] = defaultdict(int)
    failures: dict[str, int] = defaultdict(int)
    for turn in record.turns:
        turns[turn.agent] += 1
        failures[turn.agent] += turn.format_error is not None
    for agent, value in record.returns.items():
        success = record.final_infos.get(agent, {}).get("success")
        stats.setdefault(agent, AgentStats()).add(value, turns[agent], failures[agent], success)


@dataclass
class RolloutResult:
    """What :func:`rollout` returns.

    Attributes:
        episodes: Finished episodes, in the order of their index: full records with
            ``keep="all"`` (the default), records without their turns with
            ``keep="summaries"``, none with ``keep="none"``.
        finished: Number of finished episodes (whatever ``keep`` kept of them).
        stats: Each agent's running totals (returns, success, turns, format failures) over
            every finished episode, kept whatever ``keep`` says.
        wall_seconds: Total time of the rollout.
        policy_seconds: Time inside each policy's ``generate`` (by policy name).
        env_seconds: Time inside the environments (reset, last, step), summed over copies.
        policy_calls: Number of ``generate`` calls (by policy name).
        turns: Number of agent turns played.
        unwritten_episodes: Indices of finished episodes whose record was longer than
            ``max_record_bytes`` and so was not written to ``out`` (they are in ``episodes``).
    """

    episodes: list[EpisodeRecord] = field(default_factory=list)
    wall_seconds: float = 0.0
    policy_seconds: dict[str, float] = field(default_factory=dict)
    env_seconds: float = 0.0
    policy_calls: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    unwritten_episodes: list[int] = field(default_factory=list)
    finished: int = 0
    stats: dict[str, AgentStats] = field(default_factory=dict)

    @property
    def episode_count(self) -> int:
        """Finished episodes (also for a result built by hand from ``episodes`` alone)."""
        return max(self.finished, len(self.episodes))

    def agent_stats(self) -> dict[str, AgentStats]:
        """Each agent's totals: ``stats``, or computed from ``episodes`` when not tracked."""
        if self.stats or not self.episodes:
            return self.stats
        stats: dict[str, AgentStats] = {}
        for record in self.episodes:
            add_to_stats(stats, record)
        return stats

    def mean_returns(self) -> dict[str, float]:
        """Each agent's mean return over the finished episodes."""
        return {agent: s.mean for agent, s in self.agent_stats().items()}


class RolloutError(RuntimeError):
    """A policy failed mid-rollout; ``result`` holds the episodes that finished before."""

    def __init__(self, message: str, result: RolloutResult) -> None:
        super().__init__(message)
        self.result = result


class RolloutInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a rollout; ``result`` holds the episodes that finished before.

    A ``KeyboardInterrupt`` (not an ``Exception``), so code that does not know about it still
    stops as it would on any Ctrl-C.
    """

    def __init__(self, message: str, result: RolloutResult) -> None:
        super().__init__(message)
        self.result = result


def kept_summary(result: RolloutResult, out: str | Path | None) -> str:
    """``"N finished episode(s) kept (written to FILE)"``, with the records left out if any."""
    count = result.episode_count
    text = f"{count} finished episode(s) kept"
    if out is None:
        return text
    unwritten = result.unwritten_episodes
    if not unwritten:
        return text + f" (written to {out})"
    return (
        text + f" ({count - len(unwritten)} written to {out}; "
        f"{len(unwritten)} over the record size cap not written: episodes {sorted(unwritten)})"
    )
