"""Where a rollout's environments live and step: the executor seam of the rollout engine.

The engine (:mod:`llm_marl_envs.rollout.engine`) never touches an environment. It knows a
fixed number of *slots* (``0 .. copies-1``), each playing one episode at a time, and asks an
:class:`EnvExecutor` to start episodes in slots and to apply actions to them. The executor
owns the environment copies: it makes them (from a registered id and its keyword arguments,
or from an env factory), resets and steps them wherever it likes, and hands back, per slot,
an :class:`EnvUpdate`: every ``env.last()`` it saw (as :class:`AgentView`) up to the slot's
next live turn, or the end of the episode.

Calls return one :class:`~concurrent.futures.Future` per slot, so an executor may work in
the background while the model generates for the other slots; an executor that works
in-process returns futures that are already done.

* :class:`LocalExecutor` (the default) keeps the copies in this process. It steps them inline,
  or, for environments whose class sets ``heavy_step = True`` (CoopCoding-v0 runs tests in the
  sandbox), in worker threads named ``env-step-*``; resets always run inline.
* :class:`~llm_marl_envs.rollout.ray.executor.RayExecutor` (``executor="ray"``) keeps them
  in shards on Ray actors (``docs/ray.md``).
* A sharded executor (environments on remote workers) implements the same four methods.
  ``reset`` names each episode's group, so such an executor can keep the ``group_size``
  episodes of one GRPO group on one shard: a slot is only the engine's handle for "the episode
  playing here", and an executor may bind it to any environment copy at each reset.

:func:`advance` is the one piece of AEC protocol every executor shares: from the current
state of an env, it records each ``last()``, steps finished agents out with ``step(None)``,
and stops at the next agent that must act (or when no agent is left).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

import llm_marl_envs
from llm_marl_envs.core.text_env import TextAECEnv
from llm_marl_envs.core.validation import check_int

__all__ = [
    "AgentView",
    "EnvDescription",
    "EnvExecutor",
    "EnvUpdate",
    "EpisodeStart",
    "ExecutorLostError",
    "LocalExecutor",
    "advance",
    "env_maker",
    "reset_env",
    "step_env",
]

#: A registered env id, or a function returning an AEC or Parallel env.
EnvSource = str | Callable[[], AECEnv | ParallelEnv]


class ExecutorLostError(RuntimeError):
    """The executor can no longer run the environments (its Ray workers died too often, Ray
    was shut down). The engine stops the rollout with a
    :class:`~llm_marl_envs.rollout.RolloutError` that keeps the finished episodes."""


@dataclass
class AgentView:
    """One ``env.last()``: the agent to move and what it has received since its last move.

    Attributes:
        agent: ``env.agent_selection``.
        reward: The reward accumulated for ``agent`` since its last action.
        terminated, truncated: Whether ``agent`` is out (the executor then steps it out).
        info: The agent's info dict; a shallow copy taken at that moment when ``agent`` is out
            (its env steps on before the engine reads it), the env's own dict otherwise.
        observation: The observation as text when ``agent`` must act, else None.
    """

    agent: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    observation: str | None = None


@dataclass
class EpisodeStart:
    """What the engine records about a new episode, read from the env just after its reset."""

    possible_agents: list[str]
    data_source: str | None = None
    row_id: str | int | None = None
    reward_impl: str | None = None


@dataclass
class EnvUpdate:
    """What one slot did in one executor call: ``views`` up to its next live turn.

    Attributes:
        views: Every ``env.last()`` in order. Unless ``done``, the last one is the live turn
            (``observation`` set); the ones before are agents that were out.
        done: No agent is left: the episode is over.
        seconds: Time spent inside the env (reset or step, ``last``, dead steps).
        start: Set by ``reset`` only: the new episode's agents and data row.
    """

    views: list[AgentView] = field(default_factory=list)
    done: bool = False
    seconds: float = 0.0
    start: EpisodeStart | None = None


@dataclass
class EnvDescription:
    """What :meth:`EnvExecutor.open` tells the engine about the environment."""

    env_id: str
    possible_agents: list[str]


class EnvExecutor(ABC):
    """Owns the environment copies of one rollout at a time and runs their resets and steps.

    The engine calls :meth:`open` once, then :meth:`reset` and :meth:`step` for slots whose
    previous call has finished (never two calls in flight for one slot), and :meth:`close` at
    the end, also after an error (one in ``open`` included). An exception raised by ``reset``
    or ``step``, or set on a future, stops the rollout as it is; an
    :class:`ExecutorLostError` (the executor itself is gone) stops it with a ``RolloutError``
    that keeps the finished episodes. An executor may be opened
    again after it is closed.

    ``lockstep``: when True, the engine asks the policies only once no env work is in flight,
    so each policy sees the batches the in-process executor would give it (the same prompts
    together: a model's batched numerics, and so its log-probabilities, come out the same).
    When False it goes on with whatever slots are ready.
    """

    lockstep: bool = False

    @abstractmethod
    def open(
        self, env: EnvSource, env_kwargs: Mapping[str, Any] | None, copies: int
    ) -> EnvDescription:
        """Make ``copies`` copies of ``env`` (a registered id made with ``env_kwargs``, or a
        function returning an env, with ``env_kwargs`` empty); raise as
        ``llm_marl_envs.make`` would for a bad id or arguments."""

    @abstractmethod
    def reset(
        self,
        slots: Sequence[int],
        seeds: Sequence[int],
        groups: Sequence[int],
        options: Sequence[dict | None] | None = None,
    ) -> list[Future[EnvUpdate]]:
        """Start a new episode in each slot (``env.reset(seed=..., options=...)``);
        ``groups[i]`` is the episode's group (the episodes of a group share a seed);
        ``options[i]`` the reset options of slot ``i``'s episode (the engine passes them only
        when a rollout pins them; executors that predate them keep working without them);
        one future per slot."""

    @abstractmethod
    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[Future[EnvUpdate]]:
        """Apply each slot's action to its live turn (``env.step(action)``); one future per
        slot."""

    @abstractmethod
    def close(self) -> None:
        """Wait for work in flight and release the copies (and any workers)."""

    def check(self) -> None:
        """Raise :class:`ExecutorLostError` if the work in flight can no longer finish (the
        engine calls it while it waits, a few times a second). Default: nothing to check."""
        return None


def advance(env: AECEnv) -> EnvUpdate:
    """Run ``env`` to its next live turn: record each ``last()``, step finished agents out."""
    tick = time.perf_counter()
    update = EnvUpdate()
    while env.agents:
        observation, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            update.views.append(
                AgentView(env.agent_selection, float(reward), terminated, truncated, dict(info))
            )
            env.step(None)
            continue
        update.views.append(
            AgentView(
                env.agent_selection, float(reward), terminated, truncated, info, str(observation)
            )
        )
        break
    update.done = not env.agents
    update.seconds = time.perf_counter() - tick
    return update


def env_maker(
    env: EnvSource, env_kwargs: Mapping[str, Any] | None
) -> tuple[Callable[[], AECEnv], str]:
    """A function that makes one AEC copy of ``env``, and the env's id (or name).

    A registered id is checked at once (an unknown one raises with close matches); a factory
    is called once to learn its name, and the env it made is the first copy handed out.
    """
    kwargs = dict(env_kwargs or {})
    if isinstance(env, str):
        spec = llm_marl_envs.spec(env)  # raises with close matches for unknown ids
        return (lambda: llm_marl_envs.make(env, **kwargs)), spec.id
    if not callable(env):
        raise TypeError(f"env must be a registered id or a function returning an env, got {env!r}")
    if kwargs:
        raise ValueError(
            "env_kwargs apply to registered ids; pass a function that builds the env instead"
        )

    def make_aec() -> AECEnv:
        made = env()
        if isinstance(made, ParallelEnv):
            made = parallel_to_aec(made)
        if not isinstance(made, AECEnv):
            raise TypeError(
                f"the env function returned {type(made).__name__}, not a PettingZoo env"
            )
        return made

    probe = make_aec()
    name = probe.metadata.get("name", type(probe.unwrapped).__name__)
    first = [probe]
    return (lambda: first.pop() if first else make_aec()), name


def _done(update: EnvUpdate) -> Future[EnvUpdate]:
    future: Future[EnvUpdate] = Future()
    future.set_result(update)
    return future


class LocalExecutor(EnvExecutor):
    """The copies in this process; heavy steps (``heavy_step = True``) in worker threads.

    Args:
        env_workers: Threads for env steps (default: one per copy, at most 8, for envs whose
            class sets ``heavy_step = True``; else 0, i.e. steps run inline). Resets run
            inline.
    """

    def __init__(self, env_workers: int | None = None) -> None:
        self.env_workers = check_int("env_workers", env_workers, 0, none_ok=True)
        self.envs: list[AECEnv] = []
        self._pool: ThreadPoolExecutor | None = None

    def open(
        self, env: EnvSource, env_kwargs: Mapping[str, Any] | None, copies: int
    ) -> EnvDescription:
        make_env, env_id = env_maker(env, env_kwargs)
        self.envs = [make_env() for _ in range(check_int("copies", copies, 1))]
        workers = self.env_workers
        if workers is None:
            heavy = getattr(self.envs[0].unwrapped, "heavy_step", False)
            workers = min(copies, 8) if heavy else 0
        if workers:
            self._pool = ThreadPoolExecutor(workers, thread_name_prefix="env-step")
        return EnvDescription(env_id, list(self.envs[0].possible_agents))

    def reset(
        self,
        slots: Sequence[int],
        seeds: Sequence[int],
        groups: Sequence[int],
        options: Sequence[dict | None] | None = None,
    ) -> list[Future[EnvUpdate]]:
        options = options or [None] * len(slots)
        return [
            _done(self._reset_one(slot, seed, option))
            for slot, seed, option in zip(slots, seeds, options, strict=True)
        ]

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[Future[EnvUpdate]]:
        if self._pool is None:
            return [
                _done(self._step_one(slot, action))
                for slot, action in zip(slots, actions, strict=True)
            ]
        return [
            self._pool.submit(self._step_one, slot, action)
            for slot, action in zip(slots, actions, strict=True)
        ]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.envs = []

    def _reset_one(self, slot: int, seed: int, options: dict | None = None) -> EnvUpdate:
        return reset_env(self.envs[slot], seed, options)

    def _step_one(self, slot: int, action: str) -> EnvUpdate:
        return step_env(self.envs[slot], action)


def reset_env(env: AECEnv, seed: int, options: dict | None = None) -> EnvUpdate:
    """``env.reset(seed=seed, options=options)``, then :func:`advance`; the update names the
    episode's agents and data row (``start``) and counts the reset's time."""
    tick = time.perf_counter()
    env.reset(seed=seed, options=options)
    game = env.unwrapped
    start = EpisodeStart(list(env.possible_agents))
    if isinstance(game, TextAECEnv):  # where the package's envs declare their data and reward
        start.data_source, start.row_id = game.data_source, game.row_id
        start.reward_impl = game.reward_impl
    seconds = time.perf_counter() - tick
    update = advance(env)
    update.start, update.seconds = start, update.seconds + seconds
    return update


def step_env(env: AECEnv, action: str) -> EnvUpdate:
    """``env.step(action)`` for the live turn, then :func:`advance`."""
    tick = time.perf_counter()
    env.step(action)
    seconds = time.perf_counter() - tick
    update = advance(env)
    update.seconds += seconds
    return update
