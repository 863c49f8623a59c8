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

**Where the code lives.** This module is the front door: :func:`rollout`, which checks its
arguments, opens the executor, resolves the policies and builds one engine. The loop itself,
:class:`RolloutEngine`, is in :mod:`llm_marl_envs.rollout.loop`; what a rollout returns
(:class:`RolloutResult`, :class:`AgentStats`, :class:`RolloutError`,
:class:`RolloutInterrupted`) is in :mod:`llm_marl_envs.rollout.results`. Their public names
are re-exported here and by :mod:`llm_marl_envs.rollout`.

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

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pettingzoo import AECEnv, ParallelEnv

from llm_marl_envs.core.validation import check_int
from llm_marl_envs.policies.base import Policy, as_policy
from llm_marl_envs.rollout.loop import RolloutEngine
from llm_marl_envs.rollout.results import (
    AgentStats,
    RolloutError,
    RolloutInterrupted,
    RolloutResult,
)
from llm_marl_envs.rollout.executors import EnvExecutor, LocalExecutor
from llm_marl_envs.rollout.ray import RayExecutor
from llm_marl_envs.rollout.records import DEFAULT_MAX_RECORD_BYTES

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
            :class:`~llm_marl_envs.rollout.ray.executor.RayExecutor`; needs the ``ray``
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
