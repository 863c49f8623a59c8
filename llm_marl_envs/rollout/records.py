"""Episode records: what a rollout keeps of every episode, and their JSONL form.

One :class:`EpisodeRecord` per episode holds where it came from (env id, package version, env
arguments, seed, data source and row, and the reward implementation for envs that offer more
than one: ``reward_impl``) and every turn: the agent, its prompt (observation text
and chat messages), its action, the reward it received for that action and the reward
components. One JSON object per episode per line makes a file that :func:`read_jsonl` reads
back into the same records and :func:`sft_examples` turns into chat-format SFT data.

A turn's ``reward`` follows AEC semantics: everything the agent received from its action until
its next turn (or the end of the episode), which is what ``env.last()`` reports to it then.
An episode's ``returns`` hold every reward an agent received, including any that arrived before
its first action (in the maze the team is paid at every turn, so the second mover receives the
first mover's step penalty before it acts); such rewards belong to no turn.

**Crash safety of the JSONL files.** Each record is encoded to one complete line (JSON plus
``\n``) in memory and appended with a single ``write`` of the whole line, then flushed
(:func:`append_line`), so the file only ever grows by whole lines, except when the writing
process is killed during that ``write`` (``kill -9``, the OOM killer): then the last line is
cut short. If the ``write`` itself fails or is interrupted (disk full, Ctrl-C) the file is cut
back to where the line began. Lines are flushed to the operating system, not ``fsync``-ed to
disk: they survive the writer being killed, not a power cut or an OS crash (measured on a
virtual disk: writing a 20 KB record takes ~0.02 ms, with an ``fsync`` 0.2-0.4 ms, and far more
on network file systems; a killed process loses nothing that was flushed).

:func:`iter_jsonl` / :func:`read_jsonl` skip an incomplete *last* line (no final newline and not
valid JSON), with an :class:`IncompleteLineWarning` naming the file and line, and return the
records before it; any other bad line is a ``ValueError`` naming the file and line.
:func:`write_jsonl` with ``append=True`` first cuts such an incomplete last line off (with the
same warning), so appending after a crash gives a valid file.

**Record size cap.** A record whose line is longer than ``max_record_bytes`` (default
:data:`DEFAULT_MAX_RECORD_BYTES`, 64 MiB; measured with the scripted policies, a 72-turn
DonorGame episode is 0.2 MB and a 15-turn maze 0.07 MB) is not written: it is skipped whole,
with a :class:`RecordTooLargeWarning` naming the episode and its size, and counted by the
writer (the rollout engine lists such episodes in
``RolloutResult.unwritten_episodes``; they stay in ``RolloutResult.episodes``). Records are
never truncated, so every line in a file is a complete episode.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "EpisodeRecord",
    "IncompleteLineWarning",
    "RecordTooLargeWarning",
    "TurnRecord",
    "append_line",
    "encode_record",
    "iter_jsonl",
    "json_safe",
    "read_jsonl",
    "sft_examples",
    "write_jsonl",
]

#: Default cap on one JSONL record (one episode), in bytes of its UTF-8 line.
DEFAULT_MAX_RECORD_BYTES = 64 * 2**20


class IncompleteLineWarning(UserWarning):
    """A JSONL file ends in a cut-off line (its writer was killed mid-write); it was skipped."""


class RecordTooLargeWarning(UserWarning):
    """A record is longer than the record size cap and was not written."""


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
        completion_tokens: ``len(completion_ids)`` when the policy gave them (always written,
            so a record says how many tokens were generated; left out when unknown).
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
    completion_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.completion_tokens is None and self.completion_ids is not None:
            self.completion_tokens = len(self.completion_ids)


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
    reward_impl: str | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    policies: dict[str, str] = field(default_factory=dict)
    package_version: str = ""
    reset_options: dict[str, Any] | None = None

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    def to_dict(self, include_tokens: bool = False, *, shallow: bool = False) -> dict[str, Any]:
        """A JSON-ready dict (token ids and log-probabilities only if asked for).
        ``shallow=True``: the record's own values, neither copied nor made JSON-safe, for a
        record read from JSON (already JSON-safe): the same dict at a fraction of the cost
        when a record holds many values."""
        if shallow:
            data = {f.name: getattr(self, f.name) for f in fields(self)}
            data["turns"] = [{f.name: getattr(t, f.name) for f in fields(t)} for t in self.turns]
        else:
            data = asdict(self)
        if data["reset_options"] is None:  # only frozen episode lists pin a reset's options
            del data["reset_options"]
        for turn in data["turns"]:
            if turn["completion_tokens"] is None:
                del turn["completion_tokens"]
            if not include_tokens:
                for key in ("prompt_ids", "completion_ids", "logprobs"):
                    turn.pop(key)
        return data if shallow else json_safe(data)

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


def encode_record(record: EpisodeRecord, include_tokens: bool = False) -> bytes:
    """The record as one complete JSONL line: UTF-8 JSON and a final ``\n``."""
    return (json.dumps(record.to_dict(include_tokens), ensure_ascii=False) + "\n").encode("utf-8")


def append_line(handle: BinaryIO, line: bytes) -> None:
    """Append ``line`` with one ``write`` and flush it; on failure cut the file back.

    ``handle`` is a binary file open for writing at its end (the rollout uses an unbuffered
    one, so the line goes to the OS in one system call). A regular file takes the whole line in
    one ``write``; the loop only matters if the OS accepts part of it (disk nearly full). If
    writing raises (an ``OSError``, a ``KeyboardInterrupt`` between two partial writes), the
    file is truncated to where the line started, so it still ends on a complete record.
    """
    start = handle.tell()
    try:
        view = memoryview(line)
        while view:
            written = handle.write(view)
            view = view[written if written is not None else len(view) :]
        handle.flush()
    except BaseException:
        try:
            handle.truncate(start)
            handle.seek(start)
        except OSError:
            pass  # the original error is the one to report
        raise


def _oversized(line: bytes, record: EpisodeRecord, max_record_bytes: int | None, path: Any) -> bool:
    """True (with a warning) when ``line`` is over the cap and must not be written."""
    if max_record_bytes is None or len(line) <= max_record_bytes:
        return False
    warnings.warn(
        f"{path}: episode {record.episode} not written: its record is {len(line)} bytes, more "
        f"than max_record_bytes={max_record_bytes}",
        RecordTooLargeWarning,
        stacklevel=3,
    )
    return True


def _drop_incomplete_tail(handle: BinaryIO, path: Any) -> None:
    """Cut off a last line without its newline (a killed writer's), so appends start clean."""
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return
    end = size  # find the last newline, reading backwards in blocks
    while end > 0:
        begin = max(0, end - 65536)
        handle.seek(begin)
        newline = handle.read(end - begin).rfind(b"\n")
        if newline >= 0:
            keep = begin + newline + 1
            break
        end = begin
    else:
        keep = 0
    warnings.warn(
        f"{path}: dropped an incomplete last line ({size - keep} bytes, no newline) "
        "before appending",
        IncompleteLineWarning,
        stacklevel=3,
    )
    handle.truncate(keep)
    handle.seek(keep)


def write_jsonl(
    records: Iterable[EpisodeRecord],
    path: str | Path,
    *,
    append: bool = False,
    include_tokens: bool = False,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
) -> int:
    """Write one JSON object per episode per line; returns how many were written.

    Each line is appended with :func:`append_line`. A record longer than ``max_record_bytes``
    (None: no cap) is skipped with a :class:`RecordTooLargeWarning` and not counted. With
    ``append=True`` an incomplete last line left by a killed writer is cut off first.
    """
    count = 0
    if append and os.path.exists(path):
        handle = open(path, "r+b", buffering=0)  # noqa: SIM115 - closed below
        try:
            _drop_incomplete_tail(handle, path)
        except BaseException:
            handle.close()
            raise
    else:
        handle = open(path, "wb", buffering=0)  # noqa: SIM115 - closed below
    with handle:
        for record in records:
            line = encode_record(record, include_tokens)
            if _oversized(line, record, max_record_bytes, path):
                continue
            append_line(handle, line)
            count += 1
    return count


def iter_jsonl(path: str | Path) -> Iterator[EpisodeRecord]:
    """Read episode records one by one (blank lines are skipped).

    A last line without its newline that is not valid JSON (a writer killed mid-write) is
    skipped with an :class:`IncompleteLineWarning`; any other bad line raises ``ValueError``
    naming the file and line.
    """
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)  # bytes: cut UTF-8 sequences fail here too
            except ValueError as error:
                # Only the last line of a file can lack its newline, and every line is written
                # with its newline in one write: this one was cut off by a killed writer.
                if not line.endswith(b"\n"):
                    warnings.warn(
                        f"{path}:{number}: skipped an incomplete last line ({len(line)} bytes, "
                        "no newline; the writer was probably killed mid-write)",
                        IncompleteLineWarning,
                        stacklevel=2,
                    )
                    return
                raise ValueError(f"{path}:{number}: not an episode record ({error})") from error
            try:
                record = EpisodeRecord.from_dict(data)
            except (ValueError, TypeError) as error:
                raise ValueError(f"{path}:{number}: not an episode record ({error})") from error
            yield record


def read_jsonl(path: str | Path) -> list[EpisodeRecord]:
    """All episode records of a JSONL file written by :func:`write_jsonl` or a rollout.

    An incomplete last line is skipped with a warning (see :func:`iter_jsonl`).
    """
    return list(iter_jsonl(path))


def sft_examples(
    records: Iterable[EpisodeRecord],
    *,
    min_return: float | None = None,
    agents: Iterable[str] | None = None,
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
