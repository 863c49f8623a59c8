"""A policy that lives on a Ray actor: a model placed on a (GPU) machine of the cluster.

:class:`RayPolicy` builds any :class:`~llm_marl_envs.policies.Policy` inside a Ray actor
(``make_policy`` runs there, so the model loads on the actor's machine) and forwards each
batch of prompts to it: one remote call per ``generate``. The rollout engine sees an ordinary
policy and batches each agent's turns across all environment shards as always, so a rollout
can keep its environments on Ray workers (``executor="ray"``) and its model on a GPU actor::

    from llm_marl_envs.policies.hf import HFPolicy
    from llm_marl_envs.policies.ray_actor import RayPolicy
    from llm_marl_envs.rollout.ray import RayExecutor

    policy = RayPolicy(lambda: HFPolicy.from_spec("default", max_new_tokens=64), num_gpus=1)
    rollout("llm_marl_envs/GSM8K-v0", policy, episodes=512, executor=RayExecutor(num_workers=8))

Torch in the actor runs as many threads as the actor reserves CPUs (Ray's rule; one when it
reserves none), and sums over another thread count round differently: the same model here
with another thread count can give log-probabilities that differ in the last digits. An
exception inside the actor's policy reaches the caller as itself; an actor that died
raises :class:`~llm_marl_envs.policies.PolicyError` (the rollout then stops with
``RolloutError``, its finished episodes kept). Needs the ``ray`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.policies.base import Completion, Policy, PolicyError, Prompt

__all__ = ["RayPolicy", "task_error_cause"]


def task_error_cause(error: BaseException) -> BaseException:
    """The exception raised inside a Ray task or actor method (its own type and message),
    when Ray could carry it back; else ``error`` itself."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


class _PolicyHost:
    """The actor's side: one policy, built where the actor runs."""

    def __init__(self, make_policy: Callable[[], Policy]) -> None:
        self.policy = make_policy()
        if not isinstance(self.policy, Policy):
            raise TypeError(f"make_policy must return a Policy, got {self.policy!r}")

    def name(self) -> str:
        return self.policy.name

    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        return self.policy.generate(prompts)

    def close(self) -> None:
        self.policy.close()


class RayPolicy(Policy):
    """A policy built and run on a Ray actor (see the module docstring).

    Args:
        make_policy: A function returning the policy; it runs in the actor.
        num_gpus: GPUs the actor reserves (Ray places it where they are free).
        num_cpus: CPUs the actor reserves.
        name: Name in records (default: the actor's policy's own name).
        actor_options: More ``.options(...)`` for the actor (``resources``, ``runtime_env``).
    """

    def __init__(
        self,
        make_policy: Callable[[], Policy],
        *,
        num_gpus: float = 0,
        num_cpus: float = 1,
        name: str | None = None,
        actor_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(make_policy):
            raise TypeError(
                f"make_policy must be a function returning a Policy, got {make_policy!r}"
            )
        self._ray = ray = require("ray", "ray", "RayPolicy (a policy on a Ray actor)")
        if not ray.is_initialized():
            ray.init()
        host = ray.remote(_PolicyHost).options(
            num_gpus=num_gpus, num_cpus=num_cpus, **dict(actor_options or {})
        )
        self.actor = host.remote(make_policy)
        self.name = name or self._call(self.actor.name.remote())

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return self._call(self.actor.generate.remote(list(prompts)))

    def close(self) -> None:
        try:
            self._call(self.actor.close.remote())
        except PolicyError:
            pass  # already gone
        self._ray.kill(self.actor)

    def _call(self, ref: Any) -> Any:
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as error:
            raise task_error_cause(error) from None
        except ray.exceptions.RayActorError as error:
            first = str(error).strip().splitlines()[0]
            raise PolicyError(f"the policy's Ray actor is gone: {first}") from None
