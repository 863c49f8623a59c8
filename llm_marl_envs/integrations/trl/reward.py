"""The TRL integration's second way in: :func:`env_reward`, a reward function that replays each
completion's episode in the real environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from llm_marl_envs.integrations.gymnasium import SingleAgentEnv
from llm_marl_envs.integrations.trl.replay import (
    Partners,
    PartnerSpec,
    check_prompt,
    continuation_policy,
    learner_return,
    learner_view,
)
from llm_marl_envs.rewards.inputs import completion_text, per_row

__all__ = ["env_reward"]


def env_reward(
    env_id: str,
    agent: str,
    *,
    partners: Partners = "scripted",
    continuation: PartnerSpec | None = "scripted",
    env_kwargs: Mapping[str, Any] | None = None,
    partner_seed: int = 0,
) -> Callable[..., list[float]]:
    """A reward function (TRL's signature) that replays each completion's episode.

    For each completion: reset the env with the row's ``seed`` column, let the partners play
    until the learner's first turn, play the completion as its action, then the rest of the
    episode (the learner's later turns by ``continuation``); the reward is the learner's
    return from its action to the end (in GSM8K's collective mode: r1 + r2, the partner's
    answer included). The row's prompt is checked against the replay.

    Args:
        env_id: As for :func:`env_dataset`.
        agent: As for :func:`env_dataset` (the same value).
        partners: As for :func:`env_dataset` (the same value).
        env_kwargs: As for :func:`env_dataset` (the same value).
        partner_seed: As for :func:`env_dataset` (the same value).
        continuation: The learner's later turns in multi-turn games: a spec or policy, or
            None for empty replies (format failures).
    """
    state: dict[str, Any] = {}

    def setup() -> SingleAgentEnv:
        if "view" not in state:
            view = learner_view(env_id, agent, partners, partner_seed, env_kwargs)
            state["view"] = view
            state["continuation"] = continuation_policy(view, continuation, partner_seed)
        return state["view"]

    def env_reward(completions: list[Any], seed: Any = None, **kwargs: Any) -> list[float]:
        if seed is None:
            raise TypeError("env_reward needs the dataset's 'seed' column (see env_dataset)")
        view = setup()
        seeds = per_row(seed, len(completions), "seed")
        prompts = kwargs.get("prompts")
        prompts = [None] * len(completions) if prompts is None else list(prompts)
        rewards = []
        for completion, episode_seed, prompt in zip(completions, seeds, prompts, strict=True):
            observation, info = view.reset(seed=int(episode_seed))
            if prompt is not None:
                check_prompt(prompt, observation, info, int(episode_seed))
            action = completion_text(completion)
            rewards.append(learner_return(view, action, state["continuation"]))
        return rewards

    return env_reward
