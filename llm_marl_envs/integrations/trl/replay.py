"""The learner's view and its replays, shared by the TRL integration's four ways in.

:mod:`llm_marl_envs.integrations.trl` builds datasets, rewards, a rollout function and tool
environments; each of them sees an episode through the same pieces, held here: the learner's
:class:`~llm_marl_envs.integrations.gymnasium.SingleAgentEnv` view with its seeded partners,
its prompts (text or chat messages) and the check that a replay gives a row's prompt, the
learner's return from an action on, the continuation policy of its later turns, and the
columns a dataset row carries for its reward. Each way in has a module of its own beside this
one (``dataset``, ``reward``, ``rollout_func``, ``tools``); the package exports their API.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from llm_marl_envs.core.simultaneous import SimultaneousTextEnv
from llm_marl_envs.integrations.gymnasium import SingleAgentEnv
from llm_marl_envs.policies.base import Policy, Prompt, as_policy
from llm_marl_envs.policies.specs import PolicyFactory
from llm_marl_envs.rewards.inputs import message_text

#: A partner: a policy spec (``"scripted"``, ``"random"``, ``"tiny"``, ``"hf:..."``,
#: ``"openai:..."``), a :class:`~llm_marl_envs.policies.Policy`, or a function
#: ``(observation, info) -> str``. In :func:`env_rollout_func`, ``"learner"`` too (self-play).
PartnerSpec = str | Policy | Callable[[str, dict], str]
Partners = PartnerSpec | Mapping[str, PartnerSpec]


def learner_view(
    env_id: str,
    agent: str,
    partners: Partners | Mapping[str, Policy],
    partner_seed: int,
    env_kwargs: Mapping[str, Any] | None,
) -> SingleAgentEnv:
    """The learner's view of ``env_id``, its partners seeded with ``partner_seed`` in every
    episode (a row's replay then meets the partners that built it)."""
    if is_self_play(partners):
        raise ValueError("the 'learner' partner (self-play) exists in env_rollout_func only")
    return SingleAgentEnv(
        env_id, agent, partners, partner_seed=partner_seed, **dict(env_kwargs or {})
    )


def is_self_play(partners: Partners) -> bool:
    """Whether a partner is ``"learner"`` (the trained model plays it too)."""
    specs = partners.values() if isinstance(partners, Mapping) else [partners]
    return any(isinstance(spec, str) and spec == "learner" for spec in specs)


def ask(policy: Policy, agent: str, observation: Any, info: dict) -> str:
    """``policy``'s text for ``agent``'s turn (one prompt, one call)."""
    prompt = Prompt(agent, str(observation), list(info.get("messages") or []), info)
    return policy.generate([prompt])[0].text


def chat_messages(observation: Any, info: dict) -> list[dict[str, str]]:
    """The learner's prompt as chat messages: the env's ``messages``, else the observation."""
    messages = info.get("messages") or [{"role": "user", "content": str(observation)}]
    return [{"role": m["role"], "content": message_text(m)} for m in messages]


def prompt_key(prompt: Any) -> str:
    """The same key for a text prompt, or for chat messages whatever extra keys they carry."""
    if isinstance(prompt, str):
        return prompt
    return json.dumps([[m.get("role"), message_text(m)] for m in prompt], ensure_ascii=False)


def check_prompt(given: Any, observation: Any, info: dict, seed: int) -> None:
    """A ``ValueError`` when the replay of ``seed`` does not give the row's prompt ``given``."""
    expected = str(observation) if isinstance(given, str) else chat_messages(observation, info)
    if prompt_key(given) != prompt_key(expected):
        raise ValueError(
            f"replaying seed {seed} does not give the row's prompt: build the dataset and the "
            "reward (or rollout) with the same env_id, agent, env_kwargs, partners and partner_seed"
        )


def learner_return(view: SingleAgentEnv, action: str, continuation: Policy | None) -> float:
    """Play ``action`` as the learner's turn, then its later turns by ``continuation`` (None:
    empty replies) until the end: the learner's return from ``action`` on."""
    total, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = view.step(action)
        total += reward
        done = terminated or truncated
        if not done:
            action = (
                "" if continuation is None else ask(continuation, view.agent, observation, info)
            )
    return total


def task_columns(env: Any, agent: str) -> dict[str, Any]:
    """The columns the matching reward of :mod:`llm_marl_envs.rewards` reads to pay what the
    env pays: the task, and every env argument the reward depends on."""
    game = env.unwrapped
    columns: dict[str, Any] = {"max_action_length": game.action_space(agent).max_length}
    if game.reward_impl is not None:  # envs with more than one implementation
        columns["reward_impl"] = game.reward_impl
    if hasattr(game, "reward_mode"):  # CORY's pioneer -> observer envs
        columns.update(team_columns(game, agent))
    if hasattr(game, "gold") and hasattr(game, "question"):  # GSM8K
        columns.update(question=game.question, answer=game.gold)
    if hasattr(game, "query"):  # IMDBSentiment
        columns.update(query=game.query, reject_echo=game.reject_echo)
        if game.scorer_name is not None:
            columns["scorer"] = game.scorer_name
    if hasattr(game, "source_text"):  # the writing tasks
        position = ("first", "second")[list(game.possible_agents).index(agent)]
        columns.update(source=game.source_text, task=game.TASK, learner=position)
    problem = getattr(game, "problem", None)
    if isinstance(problem, dict) and "entry_point" in problem:  # CoopCoding
        columns.update(
            problem_prompt=problem["prompt"],
            test=problem["test"],
            entry_point=problem["entry_point"],
            authors_harness=game.authors_harness,
        )
    return columns


def team_columns(game: Any, agent: str) -> dict[str, Any]:
    """CORY's ``reward_mode``, and the partner's task reward where it is known when the learner
    acts (the observer's rows: the pioneer has been scored; the pioneer's rows have none)."""
    columns: dict[str, Any] = {"reward_mode": game.reward_mode}
    for other in game.possible_agents:
        paid = game.infos[other].get("reward_components", {}).get("task_reward")
        if other != agent and paid is not None:
            columns["partner_reward"] = paid
    return columns


def partner_column(view: SingleAgentEnv) -> dict[str, str]:
    """Two-agent games: the partner's text of this round (simultaneous games: what it will
    play; turn-based: what it played before the learner's first turn, or "")."""
    env = view.aec_env
    others = [a for a in view.possible_agents if a != view.agent]
    if len(others) != 1:
        return {}
    partner = others[0]
    text = next((action for agent, action in view.partner_actions if agent == partner), None)
    if text is None and isinstance(env.unwrapped, SimultaneousTextEnv) and partner in env.agents:
        policy = view.partner_policies()[partner]
        text = ask(policy, partner, env.observe(partner), env.infos[partner])
    return {"partner_completion": text or ""}


def continuation_policy(
    view: SingleAgentEnv, spec: PartnerSpec | None, partner_seed: int
) -> Policy | None:
    """The policy of the learner's later turns: ``spec`` built for its seat (None: none)."""
    if spec is None:
        return None
    if isinstance(spec, str):
        factory = PolicyFactory(view.env_id, seed=partner_seed)
        return factory(spec, view.agent, view.action_space)
    return as_policy(spec)
