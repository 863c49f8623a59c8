"""Playing environments: scripted policies (batched LLM rollouts come in a later version)."""

from llm_marl_envs.rollout.scripted import Policy, play_episode, scripted_policy

__all__ = ["Policy", "play_episode", "scripted_policy"]
