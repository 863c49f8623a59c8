"""An entry replayed whole and scored from the replay alone: what ``leaderboard add`` checks
and publishes (and ``scripts/ship_leaderboard_entries.py`` checks for the shipped entries).

:func:`replay_entry` streams every episode of an open entry through
:func:`~llm_marl_envs.leaderboard.replay.replay_stream`, scores the entry from the replayed
records and, given a folder, writes the checked records there as the board keeps them (each
with the replay's values: :func:`~llm_marl_envs.leaderboard.replay.published`);
:func:`score_problems` says where the scores a result claims differ from its replay's.
"""

from __future__ import annotations

import gzip
import json
import os
from contextlib import contextmanager
from pathlib import Path

from llm_marl_envs.evaluation import run_folder
from llm_marl_envs.evaluation.results import item_values, score_items
from llm_marl_envs.evaluation.run_folder import episode_line
from llm_marl_envs.evaluation.suite import data_hash
from llm_marl_envs.leaderboard.entry import EntryFolder
from llm_marl_envs.leaderboard.replay import first_difference, published, replay_stream
from llm_marl_envs.leaderboard.rules import seats

__all__ = ["replay_entry", "score_problems", "write_synced"]


def replay_entry(entry: EntryFolder, out: Path | None = None) -> tuple[dict, dict, list[str]]:
    """Replay every episode of the open ``entry`` (streamed: a chunk at a time) and score it
    from the replay alone: the scores, the replay's count and where episodes differ from their
    replay (task, item, sample, field). With ``out``, the checked records are written, gzipped,
    into ``out/episodes`` as they are replayed (what ``add`` publishes): each with the replay's
    values of what was played and paid (:func:`~llm_marl_envs.leaderboard.replay.published`)."""
    if out is not None:
        (out / run_folder.EPISODES_DIR).mkdir()
    per_task, differ, total = {}, [], 0
    for task in entry.tasks():
        per_item: dict[str, dict] = {}
        with _episodes_writer(out, task.name) as write:
            group: list = []
            for (item, sample, record), again, found in replay_stream(task, entry.episodes(task)):
                total += 1
                if found:
                    differ.append(f"task {task.name}, item {item.key} sample {sample}: {found}")
                if out is not None:  # the replay's values, kept (an entry that differs is refused)
                    kept = record.to_dict(shallow=True) if found else published(record, again)
                    line = json.dumps(kept, ensure_ascii=False)
                    write((episode_line(task, item, sample, line) + "\n").encode("utf-8"))
                group.append(again)
                if sample == task.samples - 1:  # the item's last sample (plan order)
                    per_item[item.key] = item_values(task, group)
                    group = []
        if out is not None:
            meta = {
                "wall_seconds": entry.meta.get(task.name, {}).get("wall_seconds"),
                "data_hash": data_hash(task),
            }
            write_synced(run_folder.meta_file(out, task.name), json.dumps(meta) + "\n")
        per_task[task.name] = (per_item, seats(entry.results)[task.name])
    rescored = score_items(entry.suite, per_task, entry=str(entry.results.get("entry")), team=None)
    return rescored, {"replayed": total - len(differ), "episodes": total}, differ


@contextmanager
def _episodes_writer(out: Path | None, task: str):
    """A function that appends bytes to ``out/episodes/<task>.jsonl.gz`` (fsync-ed at the
    end), or discards them when ``out`` is None."""
    if out is None:
        yield lambda data: None
        return
    with open(run_folder.episodes_file(out, task, gz=True), "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
            yield packed.write
        raw.flush()
        os.fsync(raw.fileno())


def score_problems(results: dict, rescored: dict) -> list[str]:
    """Where the scores ``results`` claims differ from the ones its replay gives."""
    problems = []
    for name in sorted(set(results["tasks"]) | set(rescored["tasks"])):
        found = first_difference(
            results["tasks"].get(name), rescored["tasks"].get(name), f"tasks.{name}"
        )
        if found:
            problems.append(f"task {name}: the scores do not follow from its episodes ({found})")
    for key in ("overall", "complete"):
        found = first_difference(results.get(key), rescored[key], key)
        if found:
            problems.append(f"{key}: the score does not follow from the episodes ({found})")
    return problems


def write_synced(path: Path, data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` and fsync it before returning."""
    with open(path, "wb") as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        handle.flush()
        os.fsync(handle.fileno())
