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
  names each group's seed instead, and may pin each group's task with reset options (e.g.
  ``{"row_index": 12}``: row 12 of the env's split): an
  :class:`~llm_marl_envs.rollout.plan.EpisodePlan`, passed as ``plan=``.
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

import warnings
from collections.abc import Callable, Mapping
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
from llm_marl_envs.rollout.executors import EnvExecutor, EnvSource, LocalExecutor
from llm_marl_envs.rollout.plan import EpisodePlan
from llm_marl_envs.rollout.ray import RayExecutor
from llm_marl_envs.rollout.records import DEFAULT_MAX_RECORD_BYTES

__all__ = [
    "KEEP_MODES",
    "AgentStats",
    "EpisodePlan",
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
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    executor: EnvExecutor | str | None = None,
    keep: str = "all",
    plan: EpisodePlan | None = None,
    **deprecated: Any,
) -> RolloutResult:
    """Play ``episodes`` episodes of ``env`` with ``policies``, ``batch_size`` at a time.

    Args:
        env: A registered id (made with ``llm_marl_envs.make(env, **env_kwargs)``) or a
            function returning an AEC or Parallel env.
        policies: One policy for every agent, or ``{agent: policy}``; a policy is a
            :class:`~llm_marl_envs.policies.Policy` or a function ``(observation, info) -> str``.
        episodes: Number of episodes (default with ``plan.seeds``: one group per seed).
        batch_size: Environment copies played in lockstep (1 = one episode at a time).
        seed: Seed of the first group; group ``g`` resets with ``seed + g``.
        group_size: Consecutive episodes that share a seed (same task).
        env_kwargs: Constructor arguments when ``env`` is an id.
        out: Append each finished episode to this JSONL file (created or truncated first).
        include_tokens: Also write token ids and log-probabilities to ``out``.
        progress: Show a progress bar (default: when stderr is a terminal).
        max_record_bytes: Longest record written to ``out`` (a longer one is skipped with a
            warning and listed in ``unwritten_episodes``); None: no cap.
        executor: Where the env copies live and step, opened for this rollout and closed
            after it: ``"local"`` (the default), ``"ray"`` (the ``ray`` extra), or an
            :class:`~llm_marl_envs.rollout.executors.EnvExecutor` with its own settings
            (``LocalExecutor(env_workers=4)``, ``RayExecutor(num_workers=8)``).
        keep: What ``RolloutResult.episodes`` keeps: ``"all"``, ``"summaries"`` (no turns)
            or ``"none"``; ``stats`` and ``finished`` count every episode either way.
        plan: An :class:`~llm_marl_envs.rollout.plan.EpisodePlan`: each group's seed and
            reset options, each record's number (an evaluation's frozen episodes).
        **deprecated: ``seeds``, ``reset_options``, ``episode_numbers`` (now ``plan``'s),
            ``env_workers``, ``num_workers`` (now the executor's): one more release, warned.

    Returns:
        A :class:`RolloutResult`. Raises :class:`RolloutError` (a policy failed) or
        :class:`RolloutInterrupted` (Ctrl-C), both after the finished episodes are saved.
    """
    plan, workers = _arguments(batch_size, group_size, keep, plan, deprecated)
    episodes = plan.episode_count(episodes, group_size)
    settings = dict(episodes=episodes, seed=seed, group_size=group_size, out=out, keep=keep)
    settings.update(include_tokens=include_tokens, progress=progress, plan=plan)
    settings.update(max_record_bytes=max_record_bytes, copies=min(batch_size, max(episodes, 1)))
    return _play(make_executor(executor, **workers), env, env_kwargs, policies, settings)


def _play(
    executor: EnvExecutor,
    env: EnvSource,
    env_kwargs: Mapping[str, Any] | None,
    policies: Any,
    settings: dict[str, Any],
) -> RolloutResult:
    """Open ``executor`` for ``settings["copies"]`` copies of ``env``, play them with one
    :class:`RolloutEngine` (``settings``: its keywords), and close it, also after an error."""
    try:
        described = executor.open(env, env_kwargs, settings["copies"])
        players = _resolve_policies(policies, described.possible_agents)
        engine = RolloutEngine(
            executor,
            players,
            env_id=described.env_id,
            env_kwargs=dict(env_kwargs or {}),
            **settings,
        )
        return engine.run()
    finally:
        executor.close()


#: The keywords :func:`rollout` took before :class:`EpisodePlan` and the executors' own
#: settings, and what replaces each (kept one release, with a ``DeprecationWarning``).
OLD_KEYWORDS = {
    "seeds": "plan=EpisodePlan(seeds=...)",
    "reset_options": "plan=EpisodePlan(reset_options=...)",
    "episode_numbers": "plan=EpisodePlan(episode_numbers=...)",
    "env_workers": "executor=LocalExecutor(env_workers=...)",
    "num_workers": "executor=RayExecutor(num_workers=...)",
}


def _arguments(
    batch_size: int, group_size: int, keep: str, plan: EpisodePlan | None, given: Mapping
) -> tuple[EpisodePlan, dict[str, Any]]:
    """Check :func:`rollout`'s arguments; return ``plan`` (or the plan the old keywords give)
    and the old executor settings, each old keyword warned of with its replacement."""
    check_int("batch_size", batch_size, 1)
    check_int("group_size", group_size, 1)
    if keep not in KEEP_MODES:
        raise ValueError(f"keep must be one of {', '.join(KEEP_MODES)}, got {keep!r}")
    for name in given:
        if name not in OLD_KEYWORDS:
            raise TypeError(f"rollout() got an unexpected keyword argument {name!r}")
        warnings.warn(
            f"rollout({name}=...) is deprecated: pass {OLD_KEYWORDS[name]} instead",
            DeprecationWarning,
            stacklevel=3,
        )
    fields = {k: given[k] for k in ("seeds", "reset_options", "episode_numbers") if k in given}
    if fields and plan is not None:
        raise TypeError(f"rollout() got plan= and {', '.join(fields)}=: put them in the plan")
    if plan is not None and not isinstance(plan, EpisodePlan):
        raise TypeError(f"plan must be an EpisodePlan, got {plan!r:.80}")
    workers = {k: given[k] for k in ("env_workers", "num_workers") if k in given}
    return plan if plan is not None else EpisodePlan(**fields), workers


def make_executor(
    executor: EnvExecutor | str | None,
    *,
    num_workers: int | None = None,
    env_workers: int | None = None,
) -> EnvExecutor:
    """The executor ``rollout`` uses: an instance as given, ``"local"`` / None, or ``"ray"``
    (``num_workers`` and ``env_workers``: the deprecated keywords of :func:`rollout`)."""
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
