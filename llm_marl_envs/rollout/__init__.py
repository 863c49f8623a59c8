"""Playing environments: the batched rollout engine, episode records, one-episode play."""

from llm_marl_envs.policies.scripted import scripted_policy  # its home is policies.scripted
from llm_marl_envs.rollout.engine import (
    KEEP_MODES,
    AgentStats,
    RolloutEngine,
    RolloutError,
    RolloutInterrupted,
    RolloutResult,
    rollout,
)
from llm_marl_envs.rollout.executors import EnvExecutor, LocalExecutor
from llm_marl_envs.rollout.plan import EpisodePlan
from llm_marl_envs.rollout.play import play_episode
from llm_marl_envs.rollout.ray import RayExecutor, WorkerLostError
from llm_marl_envs.rollout.records import (
    EpisodeRecord,
    TurnRecord,
    read_jsonl,
    sft_examples,
    write_jsonl,
)

__all__ = [
    "KEEP_MODES",
    "AgentStats",
    "EnvExecutor",
    "EpisodePlan",
    "EpisodeRecord",
    "LocalExecutor",
    "RayExecutor",
    "RolloutEngine",
    "RolloutError",
    "RolloutInterrupted",
    "RolloutResult",
    "TurnRecord",
    "WorkerLostError",
    "play_episode",
    "read_jsonl",
    "rollout",
    "scripted_policy",
    "sft_examples",
    "write_jsonl",
]
