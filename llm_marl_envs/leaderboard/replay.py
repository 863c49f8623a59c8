"""Replays of recorded episodes: what an entry's actions score in this package's environments.

A leaderboard entry's scores must follow from its actions. :func:`replay_task` plays each
recorded episode of a task again, through the environment this package makes (the suite's
env id and arguments, the episode's seed and reset options; the coding task's tests in this
package's sandbox), with the recorded actions in their order as the only policy
(:class:`RecordedActions`). The rollout engine makes the records of the replay exactly as it
made the evaluation's, so :func:`episode_difference` can compare the two field by field: every
observation, reward, reward component, format error, return and final info. What was played
by whom (policy names, tokens generated, package version, where the data was read from) is
not part of the game and is not compared.

**Equal means equal.** Two values are one when they are of the same JSON type and equal:
integers, booleans, strings and null exactly, floats exactly where either is a whole number
(an outcome: a ``correct`` is 0.0 or 1.0, never ``5e-324``) and otherwise within
:data:`FLOAT_REL_TOL` of each other (the last bits another machine's maths library may round
differently), never by an absolute tolerance. What a board keeps of an episode that replayed
is the replay's values (:func:`published`), so no submitted float is ever scored.

Each episode is replayed on its own environment; environments whose steps do real work
(``heavy_step``: CoopCoding runs 16 sandboxed programs per episode) are replayed on threads,
as the rollout engine steps them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from itertools import islice
from typing import Any

from llm_marl_envs.evaluation.suite import Item, Task
from llm_marl_envs.policies.base import Completion, Policy, Prompt
from llm_marl_envs.registry import make
from llm_marl_envs.rollout.records import EpisodeRecord, TurnRecord

__all__ = [
    "RecordedActions",
    "episode_difference",
    "first_difference",
    "published",
    "replay_episode",
    "replay_stream",
    "replay_task",
]

#: Episodes replayed at a time by :func:`replay_stream`: what it holds in memory at once.
STREAM_CHUNK = 16

#: Threads replaying a task whose environment steps do real work (the rollout engine's cap).
HEAVY_STEP_THREADS = 8

# Who played and where it ran, not what was played: left out of the comparison.
_NOT_PLAYED = ("episode", "group", "policies", "package_version", "data_source")


class RecordedActions(Policy):
    """A policy that answers with the recorded actions of one episode, in order (an empty
    action once they run out, so an environment that asks for more turns ends its episode and
    the replay shows the extra turns)."""

    name = "replay"

    def __init__(self, turns: Sequence[TurnRecord]) -> None:
        self._actions: Iterator[str] = (turn.action for turn in turns)

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return [Completion(next(self._actions, "")) for _ in prompts]


def replay_episode(task: Task, item: Item, record: EpisodeRecord) -> EpisodeRecord:
    """The record of ``record``'s actions played again on ``task``'s environment for ``item``."""
    from llm_marl_envs.rollout import EpisodePlan, LocalExecutor, rollout

    played = rollout(
        task.env,
        RecordedActions(record.turns),
        plan=EpisodePlan(seeds=[item.seed], reset_options=[item.options]),
        batch_size=1,
        env_kwargs=task.kwargs,
        # this episode alone: its steps run inline, episodes run on threads
        executor=LocalExecutor(env_workers=0),
        progress=False,
    )
    return played.episodes[0]


def replay_task(
    task: Task, episodes: Sequence[tuple[Item, int, EpisodeRecord]]
) -> list[EpisodeRecord]:
    """The replayed record of each of ``task``'s episodes (item, sample, record), in order."""
    with closing(make(task.env, **task.kwargs)) as env:
        heavy = getattr(env.unwrapped, "heavy_step", False)
    threads = min(HEAVY_STEP_THREADS, len(episodes)) if heavy else 1
    if threads <= 1:
        return [replay_episode(task, item, record) for item, _, record in episodes]
    with ThreadPoolExecutor(threads, thread_name_prefix="replay") as pool:
        return list(
            pool.map(lambda episode: replay_episode(task, episode[0], episode[2]), episodes)
        )


def replay_stream(
    task: Task, episodes: Iterable[tuple[Item, int, EpisodeRecord]], chunk: int = STREAM_CHUNK
) -> Iterator[tuple[tuple[Item, int, EpisodeRecord], EpisodeRecord, str | None]]:
    """Each of ``task``'s episodes (item, sample, record), read from ``episodes`` a chunk at a
    time, with its replayed record and where the two differ (:func:`episode_difference`;
    None: they played the same game): the replay of a stream that never holds more than
    ``chunk`` episodes (and their replays) at once."""
    episodes = iter(episodes)
    while batch := list(islice(episodes, chunk)):
        for episode, again in zip(batch, replay_task(task, batch), strict=True):
            yield episode, again, episode_difference(episode[2], again, read=True)


def episode_difference(
    submitted: EpisodeRecord, replayed: EpisodeRecord, *, read: bool = False
) -> str | None:
    """The first field where ``submitted`` and its replay differ (:func:`first_difference`);
    None when they played the same game with the same outcome. ``read``: ``submitted`` was read
    from JSON (its values are JSON already and need no copy: a record padded with 100,000
    values is compared in milliseconds)."""
    return first_difference(_played(submitted, shallow=read), _played(replayed))


def _played(record: EpisodeRecord, shallow: bool = False) -> dict[str, Any]:
    """What ``record`` says was played and paid (see the module docstring)."""
    data = record.to_dict(shallow=shallow)
    for key in _NOT_PLAYED:
        data.pop(key, None)
    data["env_kwargs"] = {k: v for k, v in data["env_kwargs"].items() if k != "data_source"}
    for turn in data["turns"]:
        turn.pop("completion_tokens", None)
    return data


def first_difference(submitted: Any, replayed: Any, path: str = "") -> str | None:
    """The first place where two JSON values differ, as ``"PATH: A submitted, B on replay"``
    (``PATH`` like ``turns[2].reward``); None when they are the same."""
    if isinstance(submitted, dict) and isinstance(replayed, dict):
        for key in sorted(set(submitted) | set(replayed), key=str):
            if key not in submitted or key not in replayed:
                where = "the submission" if key not in submitted else "the replay"
                return f"{path}.{key}: missing in {where}".lstrip(".")
            found = first_difference(submitted[key], replayed[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(submitted, list) and isinstance(replayed, list):
        if len(submitted) != len(replayed):
            return f"{path.lstrip('.')}: {len(submitted)} submitted, {len(replayed)} on replay"
        for index, (a, b) in enumerate(zip(submitted, replayed, strict=True)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None
    if _same(submitted, replayed):
        return None
    return f"{path.lstrip('.')}: {_short(submitted)} submitted, {_short(replayed)} on replay"


#: How far apart two floats of a record may be and still be one value: the last bits that
#: another machine's maths library may round differently, relative to the replay's value.
FLOAT_REL_TOL = 1e-9


def _same(a: Any, b: Any) -> bool:
    """One value: the same JSON type (a boolean is not 1, an integer is not a float) and equal;
    integers, booleans, strings and null exactly. Floats exactly where either is a whole number
    (0.0 and 1.0 are outcomes: a ``correct``, a ``success``), else within
    :data:`FLOAT_REL_TOL` of each other with the same sign; never by an absolute tolerance
    (``5e-324`` is not ``0.0``). What a board keeps is the replay's value anyway
    (:func:`published`), so the tolerance only decides whether an entry joins."""
    if _kind(a) is not _kind(b):
        return False
    if _kind(a) is float:
        a, b = float(a), float(b)
        if a == b:
            return True
        if a.is_integer() or b.is_integer() or (a < 0) != (b < 0):
            return False
        return math.isclose(a, b, rel_tol=FLOAT_REL_TOL, abs_tol=0.0)
    return a == b


def _kind(value: Any) -> type:
    """The JSON type of ``value`` (numpy's scalars as the Python ones they write as)."""
    if isinstance(value, (bool, str, type(None))):
        return type(value)
    name = type(value).__name__
    if name == "bool_":
        return bool
    if isinstance(value, int) or name.startswith(("int", "uint")):
        return int
    if isinstance(value, float) or name.startswith("float"):
        return float
    return type(value)


def published(submitted: EpisodeRecord, replayed: EpisodeRecord) -> dict[str, Any]:
    """The record a board keeps of an episode whose replay matched (:func:`episode_difference`
    None): every field that was played and paid from the replay, so what the board scores is
    this package's own arithmetic, never a float the submission rounded its own way; who played
    it (policies, tokens generated, package version, where the data was read) from the
    submission. Keys keep the submission's order."""
    kept = submitted.to_dict(shallow=True)
    again = json.loads(json.dumps(_played(replayed), ensure_ascii=False))
    out = {}
    for key, value in kept.items():
        if key == "env_kwargs":
            source = {k: v for k, v in value.items() if k == "data_source"}
            out[key] = {k: source[k] if k in source else again[key][k] for k in value}
        elif key == "turns":
            out[key] = [
                {k: turn[k] if k == "completion_tokens" else played[k] for k in turn}
                for turn, played in zip(value, again["turns"], strict=True)
            ]
        else:
            out[key] = again[key] if key in again else value
    return out


def _short(value: Any, chars: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= chars else text[: chars - 3] + "..."
