"""One episode with per-turn policy functions, unbatched: the simplest way to play an env."""

from __future__ import annotations

from pettingzoo import AECEnv

from llm_marl_envs.policies.base import PolicyFn

__all__ = ["play_episode"]


def play_episode(
    env: AECEnv, policies: dict[str, PolicyFn], seed: int | None = None
) -> dict[str, float]:
    """Play one episode of an AEC env; returns each agent's total reward."""
    env.reset(seed=seed)
    totals = {agent: 0.0 for agent in env.possible_agents}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += float(reward)
        env.step(None if terminated or truncated else policies[agent](observation, info))
    return totals
