"""Playing environments: the batched rollout engine, episode records, one-episode play."""

from llm_marl_envs.rollout.engine import RolloutError, RolloutInterrupted, RolloutResult, rollout
from llm_marl_envs.rollout.records import EpisodeRecord, TurnRecord, read_jsonl, sft_examples, write_jsonl
from llm_marl_envs.policies.scripted import scripted_policy  # its home is policies.scripted
from llm_marl_envs.rollout.play import play_episode

__all__ = [
    "EpisodeRecord",
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
