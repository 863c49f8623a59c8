"""The TRL integration's first way in: :func:`env_dataset`, a ``datasets.Dataset`` of the
learner's first prompts with the columns the reward functions of :mod:`llm_marl_envs.rewards`
read (``GRPOTrainer(reward_funcs=..., train_dataset=env_dataset(...))``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.integrations.trl.replay import (
    Partners,
    chat_messages,
    learner_view,
    partner_column,
    task_columns,
)

datasets = require("datasets", "integrations", "the TRL integration")

__all__ = ["env_dataset"]


def env_dataset(
    env_id: str,
    agent: str,
    n: int,
    *,
    seed: int = 0,
    partners: Partners = "scripted",
    conversational: bool = True,
    env_kwargs: Mapping[str, Any] | None = None,
    partner_seed: int = 0,
) -> Any:
    """A ``datasets.Dataset`` of ``n`` episodes, each at the learner's first turn.

    Row ``i`` plays the episode of seed ``seed + i`` until ``agent`` must act (partners play
    the turns before). Columns:

    * ``prompt``: the learner's prompt, chat messages (``conversational=True``: the env's
      ``infos[agent]["messages"]``) or text (its observation);
    * ``seed``, ``agent``;
    * what the matching reward reads to pay what the env pays: ``max_action_length`` (longer
      answers are format failures); ``reward_impl`` where the env offers more than one
      (writing, coding); GSM8K ``question``, ``answer`` (the gold number); IMDB ``query``,
      ``reject_echo``, ``scorer`` (when the env's is named); GSM8K and IMDB ``reward_mode``
      and, on the observer's rows, ``partner_reward`` (the pioneer's task reward: the
      collective reward is r1 + r2; on the pioneer's rows the reward functions refuse it, as
      the observer has not answered yet: use :func:`env_reward`); writing ``source``,
      ``task``, ``learner`` (``"first"``/``"second"``); coding ``problem_prompt``, ``test``,
      ``entry_point``, ``authors_harness``; and, in two-agent games, ``partner_completion``
      (the partner's text of the round, ``""`` if it has none yet).

    Args:
        env_id: A registered id.
        agent: The learner.
        n: Number of rows.
        seed: Seed of the first episode.
        partners: One spec for every partner or ``{agent: spec}`` (see :data:`PartnerSpec`).
        conversational: Chat-message prompts (True) or text prompts.
        env_kwargs: Constructor arguments of the env.
        partner_seed: Seed of the partner policies.
    """
    view = learner_view(env_id, agent, partners, partner_seed, env_kwargs)
    rows = []
    for episode_seed in range(seed, seed + n):
        observation, info = view.reset(seed=episode_seed)
        prompt = chat_messages(observation, info) if conversational else str(observation)
        rows.append(
            {
                "prompt": prompt,
                "seed": episode_seed,
                "agent": agent,
                **task_columns(view.aec_env, agent),
                **partner_column(view),
            }
        )
    view.close()
    return datasets.Dataset.from_list(rows)
