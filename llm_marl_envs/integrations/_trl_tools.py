"""The classes behind :func:`llm_marl_envs.integrations.trl.tool_environment`.

TRL's ``environment_factory`` makes one instance of a class per rollout and exposes its
public methods as the model's tools. :class:`_ToolEnvironment` plays one agent of a game
through the learner's view (reset, a turn per tool call, the return); its subclasses hold
each game's tools (MazeCollab ``move``, DonorGame ``donate`` and ``punish``, any other env
``act``). They are separate from the public module, which picks one and fills in its
class attributes.
"""

from __future__ import annotations

from typing import Any

from llm_marl_envs.integrations._trl_replay import _ask, _learner_return, _messages, _view
from llm_marl_envs.policies.base import Policy
from llm_marl_envs.rewards.inputs import message_text, prompt_text


class _ToolEnvironment:
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
        self._view = _view(
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
            prompt_text(_messages(observation, info)),
        ):
            return None
        return str(observation)

    def get_reward(self) -> float:
        """The learner's return from its first action; turns it did not play are played by
        the continuation (default: empty replies, i.e. format failures)."""
        if self._live:
            self._live = False
            view, then = self._view, self._continuation
            action = "" if then is None else _ask(then, self._agent, *self._last)
            self._total += _learner_return(view, action, then)
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


class _MazeTools(_ToolEnvironment):
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


class _DonorTools(_ToolEnvironment):
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


class _DonorPunishTools(_DonorTools):
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


class _TextTools(_ToolEnvironment):
    def act(self, action: str) -> str:
        """Play your turn.

        Args:
            action: Your reply, as the game's instructions ask for it.

        Returns:
            What you see at your next turn, or how the game ended.
        """
        return self._act(str(action))
