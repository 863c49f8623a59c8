"""The batched rollout engine: many copies of an environment, played in lockstep.

:func:`rollout` keeps ``batch_size`` copies of an AEC environment busy. At each step it
gathers the pending turn of every live copy, groups the prompts by policy (each agent's
policy, or one shared policy for several agents), calls each policy once with its whole
batch, and feeds the answers back. A copy whose episode ends starts the next episode at once
(continuous batching), so copies never wait for the slowest episode of a batch.

:class:`RolloutEngine` does this in four parts, one method each, read top to bottom:

1. **Pending turns** (:meth:`~RolloutEngine._pending_turns`): the slots whose episode waits
   for an agent's action.
2. **Policy batches** (:meth:`~RolloutEngine._ask_policies`): those turns grouped by policy,
   one ``generate`` call per policy.
3. **Environment steps** (:meth:`~RolloutEngine._apply_actions`): the answers handed to the
   executor, whose updates (rewards, infos, the next prompt) are folded into the records.
4. **Records** (:meth:`~RolloutEngine._finish_episode`): a finished episode is written out
   and its slot starts the next one.

**The executor seam.** The engine sees only slot indices and what the environments report
(observations, rewards, infos); an :class:`~llm_marl_envs.rollout.executors.EnvExecutor`
owns the environment copies and decides where resets and steps run. The default
:class:`~llm_marl_envs.rollout.executors.LocalExecutor` runs them in this process; see
:mod:`llm_marl_envs.rollout.executors` for the interface.

* **Seeds and groups.** Episode ``i`` belongs to group ``i // group_size`` and resets with
  ``seed + group``: the ``group_size`` copies of a group play the same task (GRPO / MAGRPO
  groups); with sampling their answers differ. A frozen episode list (an evaluation suite)
  names each group's seed instead (``seeds``), and may pin each group's task with reset
  options (``reset_options``, e.g. ``{"row_index": 12}``: row 12 of the env's split).
* **CPU-heavy steps.** When an environment's ``step`` does real work (CoopCoding-v0 runs
  tests in the sandbox; such envs set ``heavy_step = True``) the local executor runs the steps
  in worker threads while the model generates for the other copies; a copy sits out while its
  step is running.
* **Records.** Every finished episode becomes an
  :class:`~llm_marl_envs.rollout.records.EpisodeRecord`, appended to ``out`` (JSONL) as soon
  as it finishes, as one complete line written at once and flushed (see
  :mod:`llm_marl_envs.rollout.records` for what a killed writer leaves and how it is read).
  A record longer than ``max_record_bytes`` is not written (a ``RecordTooLargeWarning``; its
  episode index goes to ``RolloutResult.unwritten_episodes``).
* **Failures.** If a policy fails, or the executor is lost (Ray shut down, its workers dead
  too often: an :class:`~llm_marl_envs.rollout.executors.ExecutorLostError`),
  :class:`RolloutError` is raised after the finished episodes are saved; ``error.result``
  holds them. Ctrl-C (``KeyboardInterrupt``) likewise
  raises :class:`RolloutInterrupted`, a ``KeyboardInterrupt`` that carries ``result``. Either
  way the file holds exactly the finished episodes, each on a complete line.

>>> from llm_marl_envs.rollout import rollout
>>> from llm_marl_envs.policies.scripted import scripted_policy
>>> result = rollout("llm_marl_envs/GSM8K-v0", {
...     "pioneer_0": scripted_policy("llm_marl_envs/GSM8K-v0", "pioneer_0"),
...     "observer_0": scripted_policy("llm_marl_envs/GSM8K-v0", "observer_0"),
... }, episodes=4, batch_size=2, env_kwargs={"data_source": "bundled"}, progress=False)
>>> len(result.episodes), result.episodes[0].turns[0].agent
(4, 'pioneer_0')
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pettingzoo import AECEnv, ParallelEnv

import llm_marl_envs
from llm_marl_envs.core.validation import check_int
from llm_marl_envs.policies.base import Completion, Policy, PolicyError, Prompt, as_policy
from llm_marl_envs.rollout.executors import (
    EnvExecutor,
    EnvUpdate,
    ExecutorLostError,
    LocalExecutor,
)
from llm_marl_envs.rollout.ray_executor import RayExecutor
from llm_marl_envs.rollout.records import (
    DEFAULT_MAX_RECORD_BYTES,
    EpisodeRecord,
    RecordTooLargeWarning,
    TurnRecord,
    append_line,
    encode_record,
    json_safe,
)

__all__ = [
    "KEEP_MODES",
    "AgentStats",
    "RolloutEngine",
    "RolloutError",
    "RolloutInterrupted",
    "RolloutResult",
    "rollout",
]

#: What :func:`rollout` keeps of each finished episode in ``RolloutResult.episodes``.
KEEP_MODES = ("all", "summaries", "none")

# infos keys that are large or repeated in the turns; left out of an episode's final_infos.
_SKIP_FINAL_INFO = ("messages",)


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


def _add_to_stats(stats: dict[str, AgentStats], record: EpisodeRecord) -> None:
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
            _add_to_stats(stats, record)
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


def rollout(
    env: str | Callable[[], AECEnv | ParallelEnv],
    policies: Policy | Callable | Mapping[str, Policy | Callable],
    *,
    episodes: int | None = None,
    batch_size: int = 8,
    seed: int = 0,
    group_size: int = 1,
    env_kwargs: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    include_tokens: bool = False,
    progress: bool | None = None,
    env_workers: int | None = None,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    executor: EnvExecutor | str | None = None,
    seeds: Sequence[int] | None = None,
    reset_options: Sequence[Mapping[str, Any] | None] | None = None,
    num_workers: int | None = None,
    keep: str = "all",
    episode_numbers: Sequence[int] | None = None,
) -> RolloutResult:
    """Play ``episodes`` episodes of ``env`` with ``policies``, ``batch_size`` at a time.

    Args:
        env: A registered id (made with ``llm_marl_envs.make(env, **env_kwargs)``) or a
            function returning an AEC or Parallel env.
        policies: One policy for every agent, or ``{agent: policy}``; a policy is a
            :class:`~llm_marl_envs.policies.Policy` or a function ``(observation, info) -> str``.
        episodes: Number of episodes (default with ``seeds``: ``len(seeds) * group_size``).
        batch_size: Environment copies played in lockstep (1 = one episode at a time).
        seed: Seed of the first group; group ``g`` resets with ``seed + g``.
        group_size: Consecutive episodes that share a seed (same task).
        env_kwargs: Constructor arguments when ``env`` is an id.
        out: Append each finished episode to this JSONL file (created or truncated first).
        include_tokens: Also write token ids and log-probabilities to ``out``.
        progress: Show a progress bar (default: when stderr is a terminal).
        env_workers: Threads for env steps of the default executor (default: one per copy,
            at most 8, for envs with ``heavy_step = True``, else 0, i.e. steps run inline).
            With ``executor``, leave it None.
        max_record_bytes: Longest record (one JSONL line, in bytes) written to ``out``; a
            longer one is skipped whole with a warning and listed in
            ``RolloutResult.unwritten_episodes``. None: no cap.
        executor: Where the environment copies live and step: ``"local"`` (the default, a
            :class:`~llm_marl_envs.rollout.executors.LocalExecutor`), ``"ray"`` (shards on
            ``num_workers`` Ray actors, a
            :class:`~llm_marl_envs.rollout.ray_executor.RayExecutor`; needs the ``ray``
            extra) or an :class:`~llm_marl_envs.rollout.executors.EnvExecutor`. It is opened
            for this rollout and closed at its end, also after an error.
        seeds: The seed of each group, in order, instead of ``seed + g`` (a frozen episode
            list); ``episodes`` is then ``len(seeds) * group_size``.
        reset_options: Options of each group's ``reset`` (``None`` or a dict per group, e.g.
            ``{"row_index": i}``), recorded in each episode's record.
        num_workers: Ray actors for ``executor="ray"`` (default: one per CPU of the cluster).
        keep: What ``RolloutResult.episodes`` keeps of each finished episode: ``"all"`` (full
            records, the default), ``"summaries"`` (records without their turns: seeds,
            returns, final infos) or ``"none"``. With ``out`` the records are in the file, so
            ``"none"`` keeps the memory of a rollout flat however many episodes it plays;
            ``RolloutResult.stats`` and ``finished`` count every episode either way.
        episode_numbers: The number each episode's record carries (``record.episode``;
            ``record.group`` is ``number // group_size``), default ``0, 1, ...``. A resumed
            run passes the numbers an uninterrupted run would have given its remaining
            episodes, so their records match that run's. Without ``seeds`` a group resets
            with ``seed + record.group``; ``seeds`` and ``reset_options`` stay one entry per
            group of this call, in order. Distinct, ``>= 0``, and with ``group_size > 1``
            each group of this call must lie in one numbered group.

    Returns:
        A :class:`RolloutResult`. Raises :class:`RolloutError` if a policy fails and
        :class:`RolloutInterrupted` on Ctrl-C, both after the finished episodes are saved.
    """
    check_int("batch_size", batch_size, 1)
    check_int("group_size", group_size, 1)
    episodes, seeds, reset_options = _episode_plan(episodes, group_size, seeds, reset_options)
    if keep not in KEEP_MODES:
        raise ValueError(f"keep must be one of {', '.join(KEEP_MODES)}, got {keep!r}")
    numbers = _episode_numbers(episode_numbers, episodes, group_size)
    executor = make_executor(executor, num_workers=num_workers, env_workers=env_workers)
    copies = min(batch_size, max(episodes, 1))
    try:
        described = executor.open(env, env_kwargs, copies)
        engine = RolloutEngine(
            executor,
            _resolve_policies(policies, described.possible_agents),
            env_id=described.env_id,
            env_kwargs=dict(env_kwargs or {}),
            episodes=episodes,
            copies=copies,
            seed=seed,
            group_size=group_size,
            seeds=seeds,
            reset_options=reset_options,
            out=out,
            include_tokens=include_tokens,
            progress=progress,
            max_record_bytes=max_record_bytes,
            keep=keep,
            episode_numbers=numbers,
        )
        return engine.run()
    finally:
        executor.close()


def make_executor(
    executor: EnvExecutor | str | None,
    *,
    num_workers: int | None = None,
    env_workers: int | None = None,
) -> EnvExecutor:
    """The executor ``rollout`` uses: an instance as given, ``"local"`` / None, or ``"ray"``."""
    if executor is None or executor == "local":
        if num_workers is not None:
            raise ValueError("num_workers applies to executor='ray'; the local executor has none")
        return LocalExecutor(env_workers)
    if executor == "ray":
        if env_workers is not None:
            raise ValueError(
                "env_workers configures the local executor; with executor='ray' each worker "
                "steps heavy envs on one thread per CPU it reserves"
            )
        return RayExecutor(num_workers)
    if isinstance(executor, str):
        raise ValueError(f"executor must be 'local', 'ray' or an EnvExecutor, got {executor!r}")
    if not isinstance(executor, EnvExecutor):
        raise TypeError(f"executor must be 'local', 'ray' or an EnvExecutor, got {executor!r}")
    if env_workers is not None:
        raise ValueError(
            "env_workers configures the default executor; "
            "pass LocalExecutor(env_workers=...) as executor instead"
        )
    if num_workers is not None:
        raise ValueError("num_workers configures executor='ray'; pass RayExecutor(num_workers=...)")
    return executor


def _episode_numbers(numbers, episodes: int, group_size: int) -> tuple[int, ...] | None:
    """Check ``episode_numbers`` (see :func:`rollout`); None stays None (``0, 1, ...``)."""
    if numbers is None:
        return None
    if isinstance(numbers, (str, bytes, Mapping)) or not isinstance(numbers, Iterable):
        raise TypeError(f"episode_numbers must be a list of ints, got {numbers!r:.80}")
    numbers = tuple(check_int("episode_numbers[]", n, 0) for n in numbers)
    if len(numbers) != episodes:
        raise ValueError(
            f"episode_numbers has {len(numbers)} numbers for {episodes} episodes; give one each"
        )
    if len(set(numbers)) != len(numbers):
        raise ValueError("episode_numbers must be distinct (each record's number is unique)")
    for start in range(0, episodes, group_size):
        chunk = numbers[start : start + group_size]
        if len({n // group_size for n in chunk}) != 1:
            raise ValueError(
                f"episode_numbers {list(chunk)} play one group of this call but lie in "
                f"different groups of {group_size}; number whole groups"
            )
    return numbers


def _episode_plan(episodes, group_size, seeds, reset_options):
    """Check ``episodes`` / ``seeds`` / ``reset_options`` together; returns them with the
    episode count filled in and the lists made tuples."""
    if seeds is not None:
        if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
            raise TypeError(f"seeds must be a list of ints (one per group), got {seeds!r}")
        seeds = tuple(check_int("seeds[]", s, 0) for s in seeds)
        if episodes is None:
            episodes = len(seeds) * group_size
        elif episodes != len(seeds) * group_size:
            raise ValueError(
                f"episodes={episodes} but {len(seeds)} seeds x group_size={group_size} give "
                f"{len(seeds) * group_size}; leave episodes out"
            )
    elif episodes is None:
        raise TypeError("rollout() needs episodes=N (or seeds=[...], one per group)")
    check_int("episodes", episodes, 0)
    if reset_options is not None:
        groups = -(-episodes // group_size)
        if isinstance(reset_options, Mapping) or len(reset_options) != groups:
            raise ValueError(
                f"reset_options must be a list with one dict (or None) per group: {groups} "
                f"groups, got {reset_options!r:.80}"
            )
        for options in reset_options:
            if options is not None and not isinstance(options, Mapping):
                raise TypeError(f"each reset_options entry must be a dict or None, got {options!r}")
        reset_options = tuple(None if o is None else dict(o) for o in reset_options)
    return episodes, seeds, reset_options


class _Slot:
    """The episode playing in one slot (its environment lives in the executor)."""

    def __init__(self) -> None:
        self.episode = -1  # index of the episode started by the last reset
        self.record: EpisodeRecord | None = None
        self.last_turn: dict[str, TurnRecord] = {}
        self.prompt: Prompt | None = None
        self.pending: Future[EnvUpdate] | None = None  # a reset or step in flight


class RolloutEngine:
    """One rollout: slots of an opened executor played until ``episodes`` have finished.

    :func:`rollout` builds it (after checking arguments, opening the executor and resolving
    the policies) and closes the executor afterwards. :meth:`run` plays once.
    """

    def __init__(
        self,
        executor: EnvExecutor,
        policies: Mapping[str, Policy],
        *,
        env_id: str,
        env_kwargs: Mapping[str, Any],
        episodes: int,
        copies: int,
        seed: int,
        group_size: int,
        out: str | Path | None,
        seeds: Sequence[int] | None = None,
        reset_options: Sequence[dict | None] | None = None,
        include_tokens: bool,
        progress: bool | None,
        max_record_bytes: int | None,
        keep: str = "all",
        episode_numbers: Sequence[int] | None = None,
    ) -> None:
        self.executor = executor
        self.policies = dict(policies)
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs)
        self.episodes, self.seed, self.group_size = episodes, seed, group_size
        self.seeds, self.reset_options = seeds, reset_options
        self.out, self.include_tokens, self.progress = out, include_tokens, progress
        self.max_record_bytes = max_record_bytes
        self.keep = keep
        self.numbers = tuple(episode_numbers) if episode_numbers is not None else None
        self.slots = [_Slot() for _ in range(copies)]
        self.queue = deque(range(episodes))
        self.result = RolloutResult()
        self.finished: dict[int, EpisodeRecord] = {}
        self.env_seconds = 0.0
        self._handle = None
        self._bar: Any = None

    def run(self) -> RolloutResult:
        """Play every episode; see :func:`rollout` for the errors it raises."""
        # Unbuffered: each record goes to the OS in one write (append_line), so a killed
        # process leaves at most its last line cut short.
        if self.out is not None:
            self._handle = open(self.out, "wb", buffering=0)  # noqa: SIM115
        self._bar = _progress_bar(self.episodes, self.env_id, self.progress)
        started = time.perf_counter()
        try:
            self._settle(self._start_episodes(range(len(self.slots))))
            while True:
                if self.executor.lockstep:
                    self._wait_for_all_envs()
                self._settle(
                    i
                    for i, s in enumerate(self.slots)
                    if s.pending is not None and s.pending.done()
                )
                ready = self._pending_turns()
                if ready:
                    self._ask_policies(ready)
                elif not self._wait_for_envs():
                    break
        except (PolicyError, ExecutorLostError, KeyboardInterrupt) as error:
            # let running steps end before we return (a lost executor's never end)
            wait_s = 0 if isinstance(error, ExecutorLostError) else None
            for slot in self.slots:
                if slot.pending is not None:
                    try:
                        slot.pending.exception(timeout=wait_s)
                    except (TimeoutError, CancelledError):
                        pass
            self._finalise(started)
            kept = _kept(self.result, self.out)
            if isinstance(error, KeyboardInterrupt):
                raise RolloutInterrupted(f"interrupted (Ctrl-C); {kept}", self.result) from error
            raise RolloutError(f"{error}; {kept}", self.result) from error
        finally:
            self._bar.close()
            if self._handle is not None:
                self._handle.close()
        self._finalise(started)
        return self.result

    # ------------------------------------------------------------------ 1. pending turns
    def _pending_turns(self) -> list[int]:
        """Slots whose episode waits for an action (and whose env is not busy)."""
        return [i for i, s in enumerate(self.slots) if s.pending is None and s.prompt is not None]

    def _wait_for_envs(self) -> bool:
        """Wait a little for env work in flight; False when there is none (all done)."""
        running = [s.pending for s in self.slots if s.pending is not None]
        if not running:
            return False
        # a timeout, so that a Ctrl-C delivered to another thread is seen here
        if not wait(running, timeout=0.2, return_when=FIRST_COMPLETED).done:
            self.executor.check()  # work that can never finish (Ray shut down) ends the wait
        return True

    def _wait_for_all_envs(self) -> None:
        """Wait until no env work is in flight (lockstep executors)."""
        while True:
            running = [s.pending for s in self.slots if s.pending is not None]
            if not running or all(f.done() for f in running):
                return
            wait(running, timeout=0.2)  # a timeout, so that a Ctrl-C is seen here
            self.executor.check()  # work that can never finish (Ray shut down) ends the wait

    # ------------------------------------------------------------------ 2. policy batches
    def _ask_policies(self, ready: list[int]) -> None:
        """One ``generate`` call per policy for its pending turns, each batch then stepped."""
        batches: dict[int, list[int]] = defaultdict(list)
        for i in ready:
            batches[id(self.policies[self.slots[i].prompt.agent])].append(i)
        for batch in batches.values():
            policy = self.policies[self.slots[batch[0]].prompt.agent]
            completions = self._generate(policy, [self.slots[i].prompt for i in batch])
            self._apply_actions(batch, completions)

    def _generate(self, policy: Policy, prompts: list[Prompt]) -> list[Completion]:
        tick = time.perf_counter()
        try:
            completions = policy.generate(prompts)
        except PolicyError:
            raise
        except Exception as error:  # a policy bug or a model error: report it the same way
            raise PolicyError(
                f"policy {policy.name!r} failed: {type(error).__name__}: {error}"
            ) from error
        elapsed = time.perf_counter() - tick
        result = self.result
        result.policy_seconds[policy.name] = result.policy_seconds.get(policy.name, 0.0) + elapsed
        result.policy_calls[policy.name] = result.policy_calls.get(policy.name, 0) + 1
        if len(completions) != len(prompts):
            raise PolicyError(
                f"policy {policy.name!r} returned {len(completions)} completions "
                f"for {len(prompts)} prompts"
            )
        for completion in completions:
            if not isinstance(completion, Completion) or not isinstance(completion.text, str):
                raise PolicyError(
                    f"policy {policy.name!r} must return Completion objects with "
                    f"str text, got {completion!r}"
                )
        return completions

    # ------------------------------------------------------------------ 3. environment steps
    def _apply_actions(self, batch: list[int], completions: list[Completion]) -> None:
        """Record each turn, hand the actions to the executor, fold in the updates ready."""
        for i, completion in zip(batch, completions, strict=True):
            slot = self.slots[i]
            prompt = slot.prompt
            turn = TurnRecord(
                agent=prompt.agent,
                role=prompt.info.get("role"),
                observation=prompt.observation,
                messages=prompt.messages,
                action=completion.text,
                prompt_ids=completion.prompt_ids,
                completion_ids=completion.completion_ids,
                logprobs=completion.logprobs,
            )
            slot.record.turns.append(turn)
            slot.last_turn[prompt.agent] = turn
            slot.prompt = None
            self.result.turns += 1
        self._settle(self._track(batch, self.executor.step(batch, [c.text for c in completions])))

    def _start_episodes(self, free: Iterable[int]) -> list[int]:
        """Reset each free slot into the next queued episode (a slot idles once none is left).

        Returns the slots whose reset is already done (to be settled by the caller).
        """
        slots, seeds, groups = [], [], []
        for i in free:
            self.slots[i].prompt = None
            if not self.queue:
                continue
            index = self.queue.popleft()
            self.slots[i].episode = index
            slots.append(i)
            groups.append(self._number(index) // self.group_size)
            seeds.append(self._group_seed(index))
        if not slots:
            return []
        if self.reset_options is None:
            return self._track(slots, self.executor.reset(slots, seeds, groups))
        options = [self.reset_options[self.slots[i].episode // self.group_size] for i in slots]
        return self._track(slots, self.executor.reset(slots, seeds, groups, options=options))

    def _number(self, index: int) -> int:
        """The number the record of this call's ``index``-th episode carries."""
        return index if self.numbers is None else self.numbers[index]

    def _group_seed(self, index: int) -> int:
        """The reset seed of this call's ``index``-th episode: ``seeds`` of its group of this
        call, else ``seed`` + its numbered group."""
        if self.seeds is not None:
            return self.seeds[index // self.group_size]
        return self.seed + self._number(index) // self.group_size

    def _track(self, batch: list[int], futures: list[Future[EnvUpdate]]) -> list[int]:
        """Note the executor's work in flight; return the slots whose work is already done."""
        if len(futures) != len(batch):
            raise RuntimeError(
                f"the executor returned {len(futures)} futures for {len(batch)} slots"
            )
        for i, future in zip(batch, futures, strict=True):
            self.slots[i].pending = future
        return [i for i in batch if self.slots[i].pending.done()]

    def _settle(self, done: Iterable[int]) -> None:
        """Fold finished env work into the records (in the order given, which is slot order);
        start the next episode in each slot whose episode ended."""
        done = list(done)
        while done:  # a loop, not recursion: an episode may also end at its reset
            ended = []
            for i in done:
                slot = self.slots[i]
                update = slot.pending.result()  # an env's exception is raised here
                slot.pending = None
                self.env_seconds += update.seconds
                if update.start is not None:
                    self._open_record(slot, update)
                self._absorb(slot, update)
                if update.done:
                    self._finish_episode(slot)
                    ended.append(i)
            done = self._start_episodes(ended)

    def _open_record(self, slot: _Slot, update: EnvUpdate) -> None:
        start, index = update.start, slot.episode
        number = self._number(index)
        agents = start.possible_agents
        slot.record = EpisodeRecord(
            env_id=self.env_id,
            seed=self._group_seed(index),
            episode=number,
            group=number // self.group_size,
            returns={a: 0.0 for a in agents},
            data_source=start.data_source,
            row_id=start.row_id,
            reward_impl=start.reward_impl,
            env_kwargs=json_safe(self.env_kwargs),
            policies={a: self.policies[a].name for a in agents},
            package_version=llm_marl_envs.__version__,
            reset_options=(
                None if self.reset_options is None else self.reset_options[index // self.group_size]
            ),
        )
        slot.last_turn = {}

    def _absorb(self, slot: _Slot, update: EnvUpdate) -> None:
        """Rewards and infos of each ``last()`` into the record; the live turn as a prompt."""
        record = slot.record
        for view in update.views:
            agent, info = view.agent, view.info
            record.returns[agent] = record.returns.get(agent, 0.0) + view.reward
            previous = slot.last_turn.get(agent)
            if previous is not None:
                previous.reward += view.reward
                previous.reward_components = dict(info.get("reward_components") or {})
                previous.format_error = info.get("format_error")
            if view.terminated or view.truncated:
                record.final_infos[agent] = json_safe(
                    {k: v for k, v in info.items() if k not in _SKIP_FINAL_INFO}
                )
            else:
                slot.prompt = Prompt(
                    agent, view.observation, list(info.get("messages") or []), info
                )
        if not update.done and slot.prompt is None:
            raise RuntimeError(
                f"the executor's update for episode {record.episode} has neither "
                "a live turn nor the end of the episode"
            )

    # ------------------------------------------------------------------ 4. records
    def _finish_episode(self, slot: _Slot) -> None:
        """Write the slot's finished episode (unless over the cap), count it in the stats and
        keep what ``keep`` says of it."""
        record = slot.record
        if self._handle is not None:  # written before it counts as kept
            line = encode_record(record, self.include_tokens)
            cap = self.max_record_bytes
            if cap is not None and len(line) > cap:
                self.result.unwritten_episodes.append(record.episode)
                warnings.warn(
                    f"{self.out}: episode {record.episode} not written: its record is "
                    f"{len(line)} bytes, more than max_record_bytes={cap}",
                    RecordTooLargeWarning,
                    stacklevel=2,
                )
            else:
                append_line(self._handle, line)
        _add_to_stats(self.result.stats, record)
        self.result.finished += 1
        if self.keep == "all":
            self.finished[record.episode] = record
        elif self.keep == "summaries":
            record.turns = []
            self.finished[record.episode] = record
        self._bar.update(1)
        slot.record = None

    def _finalise(self, started: float) -> None:
        result = self.result
        result.episodes = [self.finished[i] for i in sorted(self.finished)]
        result.wall_seconds = time.perf_counter() - started
        result.env_seconds = self.env_seconds


def _kept(result: RolloutResult, out: str | Path | None) -> str:
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


def _resolve_policies(policies, agents: list[str]) -> dict[str, Policy]:
    if isinstance(policies, Mapping):
        missing = [a for a in agents if a not in policies]
        unknown = [a for a in policies if a not in agents]
        if missing or unknown:
            raise ValueError(
                f"policies must cover the agents {agents}; missing {missing}, unknown {unknown}"
            )
        converted: dict[int, Policy] = {}
        resolved = {}
        for agent in agents:  # the same object for several agents stays one policy (one batch)
            value = policies[agent]
            resolved[agent] = converted.setdefault(id(value), as_policy(value))
        return resolved
    shared = as_policy(policies)
    return {agent: shared for agent in agents}


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, env_id: str, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _LineBar(total, env_id)
    return tqdm(total=total, desc=env_id.split("/")[-1], unit="episode", file=sys.stderr)


class _LineBar:
    """A plain-text progress line for installs without tqdm."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.count = total, label, 0

    def update(self, n: int) -> None:
        self.count += n
        print(
            f"\r{self.label}: {self.count}/{self.total} episodes",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        print(file=sys.stderr)
