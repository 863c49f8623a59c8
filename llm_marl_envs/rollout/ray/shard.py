"""The environment copies of one Ray worker (:class:`EnvShard`), a plain class that
:class:`~llm_marl_envs.rollout.ray.executor.RayExecutor` runs as a Ray actor.

Copies are made on demand and bound to the engine's slot numbers; steps of CPU-heavy
environments (``heavy_step = True``: CoopCoding's sandbox) run on the shard's own threads;
a slot moved to another shard is released here and its copy reused; ``replay`` rebuilds
episodes lost with another worker from their seeds and actions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from pettingzoo import AECEnv

from llm_marl_envs.core.validation import check_int
from llm_marl_envs.rollout.executors import (
    EnvDescription,
    EnvSource,
    EnvUpdate,
    env_maker,
    reset_env,
    step_env,
)

__all__ = ["EnvShard"]


class EnvShard:
    """The environment copies of one worker; :class:`RayExecutor` runs it as a Ray actor.

    A plain class (usable without Ray): copies are made on demand and bound to the engine's
    slot numbers; a slot that moves to another shard is released here and its copy reused.

    Args:
        env: A registered id or a function returning an env (as for ``rollout``).
        env_kwargs: Constructor arguments for a registered id.
        step_threads: Threads for the steps of envs with ``heavy_step = True`` (at least 1;
            with 1 they run inline). One per CPU the worker reserves.
    """

    def __init__(
        self, env: EnvSource, env_kwargs: Mapping[str, Any] | None, step_threads: int = 1
    ) -> None:
        # nothing is made here: an error in an actor's constructor reaches the driver as
        # "actor died", one in a method as itself (describe() makes the first copy)
        self._source, self._kwargs = env, env_kwargs
        self._threads = check_int("step_threads", step_threads, 1)
        self._make: Any = None
        self._envs: dict[int, AECEnv] = {}
        self._spare: list[AECEnv] = []
        self._pool: ThreadPoolExecutor | None = None
        self._described: EnvDescription | None = None

    def describe(self) -> EnvDescription:
        """Make the first copy (a bad env or argument raises here); the env's id and agents
        (what ``EnvExecutor.open`` returns)."""
        if self._described is None:
            self._make, env_id = env_maker(self._source, self._kwargs)
            first = self._make()
            self._spare.append(first)
            if getattr(first.unwrapped, "heavy_step", False) and self._threads > 1:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="env-step")
            self._described = EnvDescription(env_id, list(first.possible_agents))
        return self._described

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        return os.getpid()

    def node(self) -> str | None:
        """The Ray node this worker runs on (None outside Ray): where a cluster put it."""
        try:
            import ray

            return ray.get_runtime_context().get_node_id()
        except Exception:  # noqa: BLE001 - not in a Ray worker
            return None

    def reset(
        self,
        slots: Sequence[int],
        seeds: Sequence[int],
        options: Sequence[dict | None],
        release: Sequence[int] = (),
    ) -> list[EnvUpdate]:
        """Release ``release`` (slots now played elsewhere), then start an episode per slot."""
        self.describe()
        for slot in release:
            env = self._envs.pop(slot, None)
            if env is not None:
                self._spare.append(env)
        return [
            reset_env(self._env(slot), seed, option)
            for slot, seed, option in zip(slots, seeds, options, strict=True)
        ]

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[EnvUpdate]:
        """Apply each slot's action; heavy steps in parallel on the shard's threads."""
        pairs = list(zip(slots, actions, strict=True))
        if self._pool is None or len(pairs) == 1:
            return [step_env(self._envs[slot], action) for slot, action in pairs]
        futures = [self._pool.submit(step_env, self._envs[slot], action) for slot, action in pairs]
        wait(futures)
        return [future.result() for future in futures]

    def replay(
        self, episodes: Sequence[tuple[int, int, dict | None, Sequence[str]]]
    ) -> list[EnvUpdate]:
        """Rebuild episodes lost with another worker: for each ``(slot, seed, options,
        actions)``, reset and apply the actions in order; the update of the last of these
        calls is returned (the one the lost call would have given), its ``seconds`` the
        whole replay's."""
        self.describe()
        updates = []
        for slot, seed, option, actions in episodes:
            env = self._env(slot)
            update = reset_env(env, seed, option)
            seconds = update.seconds
            for action in actions:
                update = step_env(env, action)
                seconds += update.seconds
            update.seconds = seconds
            updates.append(update)
        return updates

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for env in [*self._envs.values(), *self._spare]:
            env.close()
        self._envs, self._spare = {}, []

    def _env(self, slot: int) -> AECEnv:
        env = self._envs.get(slot)
        if env is None:
            env = self._envs[slot] = self._spare.pop() if self._spare else self._make()
        return env
