"""What reward functions receive from a trainer, as text: TRL's two dataset formats.

TRL's ``GRPOTrainer`` calls a reward function as ``f(prompts=..., completions=...,
completion_ids=..., trainer_state=..., log_extra=..., log_metric=..., **columns)``: one list
entry per completion, and every other dataset column repeated to match. Prompts and
completions are strings (*standard* format) or chat messages (*conversational* format:
``[{"role": ..., "content": ...}, ...]``). The helpers here turn either into the text a
reward scores, so each reward accepts both.

>>> completion_text([{"role": "assistant", "content": "The answer is 4."}])
'The answer is 4.'
>>> prompt_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}])
'2+2?'
>>> per_row("tldr", 2, "task")
['tldr', 'tldr']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_marl_envs.core.text_env import DEFAULT_MAX_ACTION_LENGTH, clean_text

__all__ = [
    "REWARD_MODES",
    "answer_text",
    "completion_text",
    "message_text",
    "per_row",
    "prompt_text",
    "team_rewards",
]

#: CORY's reward modes (Ma et al., NeurIPS 2024): both agents paid r1 + r2, or each its own.
REWARD_MODES = ("collective", "individual")


def message_text(message: Any) -> str:
    """The text of one chat message (``content`` as a string or as typed text blocks)."""
    content = message.get("content", "") if isinstance(message, dict) else message
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image"}, ...]
        return "".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _last(messages: Sequence[Any], role: str) -> Any:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == role:
            return message
    return messages[-1] if messages else ""


def completion_text(completion: Any) -> str:
    """A completion as text: a string as it is; a conversation's last assistant message."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return message_text(completion)
    if isinstance(completion, (list, tuple)):
        return message_text(_last(completion, "assistant"))
    raise TypeError(
        "a completion must be a str or a list of chat messages ({'role', 'content'}), "
        f"got {type(completion).__name__}"
    )


def prompt_text(prompt: Any) -> str:
    """A prompt as text: a string as it is; a conversation's last user message."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict):
        return message_text(prompt)
    if isinstance(prompt, (list, tuple)):
        return message_text(_last(prompt, "user"))
    raise TypeError(
        "a prompt must be a str or a list of chat messages ({'role', 'content'}), "
        f"got {type(prompt).__name__}"
    )


def per_row(value: Any, n: int, name: str) -> list[Any]:
    """A dataset column (``n`` values: a list, a tuple, a ``datasets`` column) as a list, or
    one value (a string, a number, ...) repeated ``n`` times."""
    if isinstance(value, (str, bytes, dict)) or not (
        hasattr(value, "__len__") and hasattr(value, "__iter__")
    ):
        return [value] * n
    values = list(value)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} values for {n} completions")
    return values


def answer_text(completion: Any, max_length: int = DEFAULT_MAX_ACTION_LENGTH) -> str | None:
    """A completion as the environments read an action: control characters dropped; ``None``
    for a format failure (nothing but whitespace, or over ``max_length`` characters)."""
    text = completion_text(completion)
    if len(text) > max_length:
        return None
    text = clean_text(text)
    return text if text.strip() else None


def team_rewards(
    own: list[float], reward_mode: Any, partner_reward: Any, reward_name: str
) -> list[float]:
    """What CORY's environments pay each row: its own task reward (``"individual"``), or its
    own plus its partner's (``"collective"``: the ``partner_reward`` column).

    A collective row without its partner's reward (the pioneer's: the observer has not answered
    when the pioneer's completion is scored) is refused: only a replay can pay it.
    """
    n = len(own)
    modes = per_row(reward_mode, n, "reward_mode")
    partners = per_row(partner_reward, n, "partner_reward")
    paid = []
    for reward, mode, partner in zip(own, modes, partners, strict=True):
        if mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {list(REWARD_MODES)}, got {mode!r}")
        if mode == "individual":
            paid.append(reward)
        elif partner is None:
            raise ValueError(
                f"{reward_name} cannot pay a collective reward without the partner's "
                "(no partner_reward column: the partner answers after this agent); use "
                "llm_marl_envs.integrations.trl.env_reward, or reward_mode='individual'"
            )
        else:
            paid.append(float(partner) + reward)
    return paid
