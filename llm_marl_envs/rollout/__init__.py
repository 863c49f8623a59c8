"""Playing environments: the batched rollout engine, episode records, scripted policies."""

from llm_marl_envs.rollout.engine import RolloutError, RolloutInterrupted, RolloutResult, rollout
from llm_marl_envs.rollout.records import EpisodeRecord, TurnRecord, read_jsonl, sft_examples, write_jsonl
from llm_marl_envs.rollout.scripted import Policy, play_episode, scripted_policy

__all__ = [
    "EpisodeRecord",
    "Policy",
    "RolloutError",
    "RolloutInterrupted",
    "RolloutResult",
    "TurnRecord",
    "play_episode",
    "read_jsonl",
    "rollout",
    "scripted_policy",
    "sft_examples",
    "write_jsonl",
]
