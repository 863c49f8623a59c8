"""The TRL integration's fourth way in: :func:`tool_environment`, a class for
``GRPOTrainer(environment_factory=...)``, and the classes behind it.

TRL's ``environment_factory`` makes one instance of a class per rollout and exposes its
public methods as the model's tools. :class:`ToolEnvironment` plays one agent of a game
through the learner's view (reset, a turn per tool call, the return); its subclasses hold
each game's tools (MazeCollab ``move``, DonorGame ``donate`` and ``punish``, any other env
``act``). :func:`tool_environment` picks one (:func:`tools_of`) and fills in its class
attributes.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from llm_marl_envs.integrations.trl.replay import (
    Partners,
    PartnerSpec,
    ask,
    chat_messages,
    continuation_policy,
    learner_return,
    learner_view,
)
from llm_marl_envs.policies.base import Policy
from llm_marl_envs.rewards.inputs import message_text, prompt_text

__all__ = [
    "DonorPunishTools",
    "DonorTools",
    "MazeTools",
    "TextTools",
    "ToolEnvironment",
    "tool_environment",
    "tools_of",
]

#: The module the classes :func:`tool_environment` makes name as theirs: the public package.
PACKAGE = __name__.rpartition(".")[0]


class ToolEnvironment:
    """A TRL ``environment_factory`` environment over one agent of a game (see
    :func:`tool_environment`); public methods of subclasses are the model's tools."""

    _env_id: str = ""
    _agent: str = ""
    _env_kwargs: dict[str, Any] = {}
    _partners: dict[str, Policy] = {}  # one set of policies per class: TRL makes many instances
    _partner_seed: int = 0
    _continuation: Policy | None = None
    _seeds: Any = None

    def __init__(self) -> None:
        self._view = learner_view(
            self._env_id, self._agent, self._partners, self._partner_seed, self._env_kwargs
        )
        self._started = self._live = False
        self._total = 0.0

    def reset(self, **kwargs: Any) -> str | None:
        """Start the row's episode (its ``seed`` column, else the next seed of the factory).

        Returns the learner's observation, which TRL appends to the prompt's last message,
        or None when the prompt already holds it (a row of :func:`env_dataset`).
        """
        seed = kwargs.get("seed")
        seed = next(self._seeds) if seed is None else int(seed)
        observation, info = self._view.reset(seed=seed)
        self._started = self._live = True
        self._total, self._last = 0.0, (observation, info)
        prompt = kwargs.get("prompt")
        if prompt is not None and prompt_text(prompt) in (
            str(observation),
            prompt_text(chat_messages(observation, info)),
        ):
            return None
        return str(observation)

    def get_reward(self) -> float:
        """The learner's return from its first action; turns it did not play are played by
        the continuation (default: empty replies, i.e. format failures)."""
        if self._live:
            self._live = False
            view, then = self._view, self._continuation
            action = "" if then is None else ask(then, self._agent, *self._last)
            self._total += learner_return(view, action, then)
        return self._total

    def _act(self, action: str) -> str:
        if not self._live:
            return "The game is over; no more moves." if self._started else "No game is running."
        observation, reward, terminated, truncated, info = self._view.step(action)
        self._total += reward
        if terminated or truncated:
            self._live = False
            return f"The game is over. Your total reward: {self._total:g}."
        self._last = (observation, info)
        users = [m for m in info.get("messages") or [] if m.get("role") == "user"]
        return message_text(users[-1]) if users else str(observation)


class MazeTools(ToolEnvironment):
    def move(self, direction: str, message: str = "") -> str:
        """Move the shared token one cell, and say something to your partner.

        Args:
            direction: up, down, left, right or stay.
            message: A short message for your partner (optional).

        Returns:
            What you see at your next turn, or how the game ended.
        """
        say = " ".join(str(message).split())
        return self._act(f"MOVE: {direction}\nSAY: {say}" if say else f"MOVE: {direction}")


class DonorTools(ToolEnvironment):
    def donate(self, amount: float) -> str:
        """Give units of your resources to this round's recipient.

        Args:
            amount: How many units to give (0 up to your resources).

        Returns:
            What you see at your next turn as donor, or how the game ended.
        """
        try:
            value = float(amount)
        except (TypeError, ValueError):
            return f"amount must be a number, got {amount!r}"
        punishment = getattr(self._view.aec_env.unwrapped, "punishment", False)
        return self._act(f"Answer: Donate, {value!r}" if punishment else f"Answer: {value!r}")


class DonorPunishTools(DonorTools):
    def punish(self, amount: float) -> str:
        """Spend units of your resources to take resources from this round's recipient.

        Args:
            amount: How many units to spend (0 up to your resources).

        Returns:
            What you see at your next turn as donor, or how the game ended.
        """
        try:
            value = float(amount)
        except (TypeError, ValueError):
            return f"amount must be a number, got {amount!r}"
        return self._act(f"Answer: Punish, {value!r}")


class TextTools(ToolEnvironment):
    def act(self, action: str) -> str:
        """Play your turn.

        Args:
            action: Your reply, as the game's instructions ask for it.

        Returns:
            What you see at your next turn, or how the game ended.
        """
        return self._act(str(action))


def tool_environment(
    env_id: str,
    agent: str,
    *,
    partners: Partners = "scripted",
    env_kwargs: Mapping[str, Any] | None = None,
    partner_seed: int = 0,
    continuation: PartnerSpec | None = None,
    seed: int = 0,
) -> type:
    """A class to pass as ``GRPOTrainer(environment_factory=...)``: ``agent`` of ``env_id``.

    TRL makes one instance per rollout, calls ``reset(**row)`` (the row's ``seed`` picks the
    episode; without a dataset, seeds ``seed, seed + 1, ...`` in turn), exposes the public
    methods as tools, executes the model's tool calls (each plays one turn of the learner;
    partners then play until its next turn, whose new observation is the tool's result), and
    logs ``get_reward()`` (the learner's return) under the class's name. MazeCollab:
    ``move(direction, message)``; DonorGame: ``donate(amount)`` (and ``punish(amount)``
    with ``punishment=True``); other envs: ``act(action)``.

    TRL needs a chat template that renders tool calls (``user -> assistant with tool_calls ->
    tool``; checked by ``trl.chat_template_utils.supports_tool_calling``) and a response
    parser for the model's tool calls (``add_response_schema`` sets one for the templates TRL
    knows, e.g. Qwen3's, shipped in ``trl/chat_templates/``).

    Args:
        env_id: As for :func:`env_dataset`.
        agent: As for :func:`env_dataset`.
        partners: As for :func:`env_dataset`.
        env_kwargs: As for :func:`env_dataset`.
        partner_seed: As for :func:`env_dataset`.
        continuation: Turns the model did not play when ``get_reward`` is called (it stopped
            calling tools): a spec or policy, or None for empty replies (format failures).
        seed: First episode seed when rows carry none.
    """
    probe = learner_view(env_id, agent, partners, partner_seed, env_kwargs)
    name = str(probe.aec_env.metadata.get("name", "Env")).split("-v")[0].replace("-", "")
    base = tools_of(name, probe.aec_env.unwrapped)
    policies = probe.partner_policies()
    then = continuation_policy(probe, continuation, partner_seed)
    probe.aec_env.close()  # the partners' policies stay in use
    return type(
        f"{name}Environment",
        (base,),
        {
            "__module__": PACKAGE,
            "__doc__": f"{env_id} as a TRL environment: the learner is {agent}.",
            "_env_id": env_id,
            "_agent": agent,
            "_env_kwargs": dict(env_kwargs or {}),
            "_partners": policies,
            "_partner_seed": partner_seed,
            "_continuation": then,
            "_seeds": itertools.count(seed),
        },
    )


def tools_of(name: str, game: Any) -> type[ToolEnvironment]:
    """The tool class of the game named ``name`` (its id without the version): MazeCollab's
    ``move``, DonorGame's ``donate`` (and ``punish`` when ``game`` punishes), else ``act``."""
    if name == "MazeCollab":
        return MazeTools
    if name == "DonorGame":
        return DonorPunishTools if getattr(game, "punishment", False) else DonorTools
    return TextTools
