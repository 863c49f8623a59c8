"""A leaderboard submission, read without trusting it.

A submission is an ``llm-marl eval`` output folder. :func:`read_results` and
:func:`read_episodes` read only what an entry is made of (``results.json``,
``episodes/<task>.jsonl`` or ``.jsonl.gz``) and refuse, with a :class:`LeaderboardError`
naming the file and the limit or the fix:

* a symlink, or anything but plain files and folders, anywhere in the folder (a link would
  copy a file from outside the submission into the board);
* a cross-play result (``crossplay.json``): cross-play enters the board only as the file
  that ships with the package;
* anything over the size limits: :data:`MAX_ACTION_BYTES` for one action,
  :data:`MAX_RECORD_BYTES` for one episode record, :data:`MAX_EPISODE_FILE_BYTES` for one
  task's episodes (unpacked: a small gzip cannot unpack into gigabytes),
  :data:`MAX_RESULTS_BYTES` for ``results.json`` and :data:`MAX_ENTRY_BYTES` for the
  whole entry (unpacked);
* a line that is not an episode of the suite: an item the suite does not have (or whose seed
  and reset options are not the suite's), a sample beyond the suite's samples per item, an
  item played twice. **A task is complete or absent**: each of its items x samples exactly
  once; a task with missing episodes is refused (choosing the items is choosing the score).
  A result without some tasks is accepted with ``complete: false`` and no overall score.

:func:`display_name` cleans an entry's name (format and control characters such as bidi
overrides removed, whitespace collapsed) and bounds its length (:data:`MAX_NAME_CHARS`).
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import unicodedata
import zlib
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.suite import Item, Suite, Task
from llm_marl_envs.rollout.records import EpisodeRecord

__all__ = [
    "MAX_ACTION_BYTES",
    "MAX_ENTRY_BYTES",
    "MAX_EPISODE_FILE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_RECORD_BYTES",
    "MAX_RESULTS_BYTES",
    "LeaderboardError",
    "display_name",
    "name_key",
    "read_episodes",
    "read_results",
]

#: One action (a turn's answer), in UTF-8 bytes; the longest of the shipped entries is 12 KB.
MAX_ACTION_BYTES = 64 * 2**10
#: One episode record (one JSONL line); the longest of the shipped entries is 124 KB.
MAX_RECORD_BYTES = 4 * 2**20
#: One task's episodes file, unpacked; the largest of the shipped entries is 1.8 MB.
MAX_EPISODE_FILE_BYTES = 256 * 2**20
#: ``results.json``; the shipped ones are 45 KB.
MAX_RESULTS_BYTES = 16 * 2**20
#: A whole entry, its episodes unpacked; the largest shipped one is 4.7 MB.
MAX_ENTRY_BYTES = 2**30
#: An entry's display name, in characters (after cleaning).
MAX_NAME_CHARS = 80

# Unicode categories left out of names: control, format (bidi overrides, zero-width
# characters), surrogates, private use, unassigned, line and paragraph separators.
_NOT_IN_NAMES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


class LeaderboardError(ValueError):
    """A result that cannot join the board, or an entry that is not there."""


def read_results(folder: str | Path) -> dict[str, Any]:
    """The ``results.json`` of the submission in ``folder``, after checking the folder's
    files (no links, no cross-play; see the module docstring)."""
    folder = Path(folder)
    _check_files(folder)
    return _read_results(folder)


def read_episodes(
    folder: str | Path, suite: Suite
) -> dict[str, list[tuple[Item, int, EpisodeRecord]]]:
    """Each present task's episodes as (item, sample, record) in the suite's episode order,
    after checking them against the limits and the suite (see the module docstring)."""
    budget = [MAX_ENTRY_BYTES]
    episodes = {}
    for task in suite.tasks:
        path = _episodes_file(Path(folder), task)
        if path is not None:
            episodes[task.name] = _complete(task, _read_episodes(path, budget), path)
    return episodes


def _check_files(folder: Path) -> None:
    """Not a cross-play result; a results.json; no links, nothing but plain files and
    folders."""
    if (folder / "crossplay.json").exists():
        raise LeaderboardError(
            f"{folder} is a cross-play result: cross-play cannot be added to a board (the "
            "board shows the cross-play that ships with the package); add each entry's own "
            "llm-marl eval folder"
        )
    if not (folder / "results.json").is_file():
        raise LeaderboardError(f"no results.json in {folder}: run llm-marl eval first")
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise LeaderboardError(
                    f"{path} is a symlink: a submission holds its own files only; copy the "
                    "file in its place"
                )
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise LeaderboardError(f"{path} is not a plain file or folder: remove it")


def _read_results(folder: Path) -> dict[str, Any]:
    path = folder / "results.json"
    size = path.stat().st_size
    if size > MAX_RESULTS_BYTES:
        raise LeaderboardError(
            f"{path} is {size:,} bytes, over the limit of {MAX_RESULTS_BYTES:,} bytes "
            "(MAX_RESULTS_BYTES): submit results.json as llm-marl eval wrote it"
        )
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise LeaderboardError(f"{path} is not JSON ({error})") from None
    if not isinstance(results, dict) or results.get("schema") != "llm-marl-envs/results/1":
        raise LeaderboardError(f"{folder}: not an llm-marl eval result (schema)")
    return results


def _episodes_file(folder: Path, task: Task) -> Path | None:
    for name in (f"{task.name}.jsonl", f"{task.name}.jsonl.gz"):
        if (folder / "episodes" / name).is_file():
            return folder / "episodes" / name
    return None


def _read_episodes(path: Path, budget: list[int]) -> list[dict[str, Any]]:
    """The lines of one episodes file, each checked against the limits and parsed."""
    lines, total = [], 0
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            while line := handle.readline(MAX_RECORD_BYTES + 1):
                number = len(lines) + 1
                if len(line) > MAX_RECORD_BYTES:
                    raise LeaderboardError(
                        f"{path} line {number}: an episode record over the limit of "
                        f"{MAX_RECORD_BYTES:,} bytes (MAX_RECORD_BYTES)"
                    )
                total += len(line)
                budget[0] -= len(line)
                if total > MAX_EPISODE_FILE_BYTES:
                    raise LeaderboardError(
                        f"{path}: over the limit of {MAX_EPISODE_FILE_BYTES:,} bytes unpacked "
                        "for one task's episodes (MAX_EPISODE_FILE_BYTES)"
                    )
                if budget[0] < 0:
                    raise LeaderboardError(
                        f"{path.parent.parent}: over the limit of {MAX_ENTRY_BYTES:,} bytes "
                        "unpacked for a whole entry (MAX_ENTRY_BYTES)"
                    )
                if line.strip():
                    lines.append(_episode(line, f"{path} line {number}"))
    except (OSError, EOFError, zlib.error) as error:
        raise LeaderboardError(f"{path} cannot be read ({error})") from None
    return lines


def _episode(line: bytes, where: str) -> dict[str, Any]:
    """One line of an episodes file, parsed, its record an :class:`EpisodeRecord`."""
    try:
        data = json.loads(line)
        data["record"] = EpisodeRecord.from_dict(data["record"])
        actions = [turn.action for turn in data["record"].turns]
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise LeaderboardError(
            f"{where}: not an episode of llm-marl eval ({type(error).__name__}: {str(error)[:80]})"
        ) from None
    for turn, action in enumerate(actions):
        if not isinstance(action, str):
            raise LeaderboardError(f"{where}: turn {turn}'s action is not text")
        if len(action.encode("utf-8")) > MAX_ACTION_BYTES:
            raise LeaderboardError(
                f"{where}: turn {turn}'s action is over the limit of {MAX_ACTION_BYTES:,} "
                "bytes (MAX_ACTION_BYTES)"
            )
    return data


def _complete(
    task: Task, lines: list[dict[str, Any]], path: Path
) -> list[tuple[Item, int, EpisodeRecord]]:
    """``lines`` as (item, sample, record) in the suite's order, when they are each of the
    task's items x samples exactly once."""
    items = {item.key: item for item in task.items}
    found: dict[tuple[int, int], EpisodeRecord] = {}
    for number, line in enumerate(lines, 1):
        key, sample = line.get("key"), line.get("sample")
        item = items.get(key) if isinstance(key, str) else None
        where = f"{path} line {number} ({key!r} sample {sample!r})"
        if item is None or [line.get("item"), line.get("seed"), line.get("options")] != [
            item.index,
            item.seed,
            item.options,
        ]:
            raise LeaderboardError(f"{where}: not an item of task {task.name} of this suite")
        if type(sample) is not int or not 0 <= sample < task.samples:
            raise LeaderboardError(
                f"{where}: the suite plays {task.samples} sample(s) per item (0..)"
            )
        if (item.index, sample) in found:
            raise LeaderboardError(f"{where}: this episode appears twice")
        found[(item.index, sample)] = line["record"]
    missing = [(i, s) for i, s in task.episode_plan() if (i.index, s) not in found]
    if missing:
        item, sample = missing[0]
        raise LeaderboardError(
            f"task {task.name}: {len(missing)} of its {len(task.episode_plan())} episodes are "
            f"missing (first: {item.key} sample {sample}); a task is played in full or left out"
        )
    return [(item, sample, found[(item.index, sample)]) for item, sample in task.episode_plan()]


def display_name(text: str) -> str:
    """``text`` without control and format characters (bidi overrides, zero-width
    characters), its whitespace collapsed; refused when empty or over
    :data:`MAX_NAME_CHARS` characters."""
    name = _clean(text)
    if not name:
        raise LeaderboardError(
            "the entry's name is empty once control and format characters are removed; give --name"
        )
    if len(name) > MAX_NAME_CHARS:
        raise LeaderboardError(
            f"the entry's name is {len(name)} characters, over the limit of {MAX_NAME_CHARS}; "
            "give a shorter --name"
        )
    return name


def name_key(name: str) -> str:
    """What two names must not share to be told apart: cleaned, in Unicode compatibility
    form, case folded."""
    return unicodedata.normalize("NFKC", _clean(name)).casefold()


def _clean(text: str) -> str:
    kept = "".join(c for c in str(text) if unicodedata.category(c) not in _NOT_IN_NAMES)
    return " ".join(kept.split())
