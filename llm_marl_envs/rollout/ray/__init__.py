"""Environments on Ray actors: ``rollout(..., executor="ray")``.

* :mod:`~llm_marl_envs.rollout.ray.executor`: :class:`RayExecutor`, the
  :class:`~llm_marl_envs.rollout.executors.EnvExecutor` that keeps the environment copies in
  shards on Ray actors and replays a dead worker's episodes elsewhere;
* :mod:`~llm_marl_envs.rollout.ray.shard`: :class:`EnvShard`, one worker's environment
  copies (a plain class, run as a Ray actor);
* :mod:`~llm_marl_envs.rollout.ray.cluster`: reaching a cluster (its address, a head that
  does not answer) and its failures as one line each.

Ray is an optional extra (``pip install 'llm-marl-envs[ray]'``); importing this package does
not import it. Set-up and recipes: ``docs/ray.md``.
"""

from llm_marl_envs.rollout.ray.cluster import ClusterError
from llm_marl_envs.rollout.ray.executor import (
    RayExecutor,
    RayShutdownError,
    WorkerLostError,
    import_ray,
)
from llm_marl_envs.rollout.ray.shard import EnvShard

__all__ = [
    "ClusterError",
    "EnvShard",
    "RayExecutor",
    "RayShutdownError",
    "WorkerLostError",
    "import_ray",
]
