"""Episode records: what a rollout keeps of every episode, and their JSONL form.

One :class:`EpisodeRecord` per episode holds where it came from (env id, package version, env
arguments, seed, data source and row) and every turn: the agent, its prompt (observation text
and chat messages), its action, the reward it received for that action and the reward
components. One JSON object per episode per line makes a file that :func:`read_jsonl` reads
back into the same records and :func:`sft_examples` turns into chat-format SFT data.

A turn's ``reward`` follows AEC semantics: everything the agent received from its action until
its next turn (or the end of the episode), which is what ``env.last()`` reports to it then.
An episode's ``returns`` hold every reward an agent received, including any that arrived before
its first action (in the maze the team is paid at every turn, so the second mover receives the
first mover's step penalty before it acts); such rewards belong to no turn.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["EpisodeRecord", "TurnRecord", "json_safe", "read_jsonl", "sft_examples", "write_jsonl"]


@dataclass
class TurnRecord:
    """One agent's turn.

    Attributes:
        agent: Who acted.
        role: ``info["role"]`` at the turn.
        observation: The prompt text.
        messages: The prompt as chat messages.
        action: The text the policy returned (before the env's cleaning).
        reward: Reward received for this action (see the module docstring).
        reward_components: The env's named parts of that reward.
        format_error: Why the action was a format failure, or None.
        prompt_ids, completion_ids, logprobs: From the policy when it gives them (transformers
            policies do); written to JSONL only with ``include_tokens=True``.
    """

    agent: str
    role: str | None
    observation: str
    messages: list[dict[str, str]]
    action: str
    reward: float = 0.0
    reward_components: dict[str, float] = field(default_factory=dict)
    format_error: str | None = None
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None


@dataclass
class EpisodeRecord:
    """One episode (see the module docstring)."""

    env_id: str
    seed: int | None
    episode: int
    group: int
    turns: list[TurnRecord] = field(default_factory=list)
    returns: dict[str, float] = field(default_factory=dict)
    final_infos: dict[str, dict[str, Any]] = field(default_factory=dict)
    data_source: str | None = None
    row_id: str | int | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    policies: dict[str, str] = field(default_factory=dict)
    package_version: str = ""

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    def to_dict(self, include_tokens: bool = False) -> dict[str, Any]:
        """A JSON-ready dict (token ids and log-probabilities only if asked for)."""
        data = asdict(self)
        if not include_tokens:
            for turn in data["turns"]:
                for key in ("prompt_ids", "completion_ids", "logprobs"):
                    turn.pop(key)
        return json_safe(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        data = dict(data)
        turns = [TurnRecord(**turn) for turn in data.pop("turns", [])]
        return cls(turns=turns, **data)


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars, tuples and non-finite floats made JSON-compatible.

    Non-finite floats become None; objects JSON cannot hold become their ``repr``.
    """
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    return repr(value)


def write_jsonl(
    records: Iterable[EpisodeRecord], path: str | Path, *, append: bool = False, include_tokens: bool = False
) -> int:
    """Write one JSON object per episode per line; returns how many were written."""
    count = 0
    with open(path, "a" if append else "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(include_tokens), ensure_ascii=False) + "\n")
            count += 1
    return count


def iter_jsonl(path: str | Path) -> Iterator[EpisodeRecord]:
    """Read episode records one by one (blank lines are skipped)."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield EpisodeRecord.from_dict(json.loads(line))
            except (ValueError, TypeError) as error:
                raise ValueError(f"{path}:{number}: not an episode record ({error})") from error


def read_jsonl(path: str | Path) -> list[EpisodeRecord]:
    """All episode records of a JSONL file written by :func:`write_jsonl` or a rollout."""
    return list(iter_jsonl(path))


def sft_examples(
    records: Iterable[EpisodeRecord], *, min_return: float | None = None, agents: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """Chat-format SFT examples: each turn's prompt messages plus the action as the answer.

    Args:
        min_return: Keep only episodes where the acting agent's return is at least this.
        agents: Keep only these agents' turns.
    """
    wanted = None if agents is None else set(agents)
    examples = []
    for record in records:
        for turn in record.turns:
            if wanted is not None and turn.agent not in wanted:
                continue
            if min_return is not None and record.returns.get(turn.agent, -math.inf) < min_return:
                continue
            messages = list(turn.messages) or [{"role": "user", "content": turn.observation}]
            examples.append(
                {
                    "messages": [*messages, {"role": "assistant", "content": turn.action}],
                    "env_id": record.env_id,
                    "agent": turn.agent,
                    "reward": turn.reward,
                    "return": record.returns.get(turn.agent),
                }
            )
    return examples
