"""An ``llm-marl eval`` output folder: the one home of its format.

The harness writes it (:mod:`~llm_marl_envs.evaluation.evaluate`), resumes from it and scores
it; the leaderboard's entry reader and its board read and re-write it. Every name of a file in
it, the episode line and the readers of both live here, so the three agree by construction.
The folder holds:

* ``run.json`` (:data:`RUN_FILE`): what is being run (suite hash, team, batch size), written
  first; a resume with other settings is refused;
* ``.eval.lock`` (:data:`LOCK_FILE`): the folder's lock while an evaluation runs in it (an
  ``flock``, which the kernel releases when the process ends, however it ends): a second
  ``llm-marl eval`` on the same folder is refused with one line naming the process that holds
  it;
* ``episodes/<task>.jsonl`` (:func:`episodes_file`; a board keeps it gzipped,
  ``<task>.jsonl.gz``): one line per episode once a task is complete (:func:`episode_line`:
  the task, item key, sample, seed and reset options, and the full episode record: every
  turn's prompt, action, reward components, format error, tokens generated). It is written
  (atomically) only with every (item, sample) of the task's frozen plan, each once; its
  records are numbered (``episode``, ``group``) by their place in the plan, as an
  uninterrupted run numbers them, however many resumes it took (:func:`renumbered`). A rerun
  checks it against the plan (:func:`saved_episodes`): a line lost, cut short or edited is
  left out (a status line names the file and line) and its episode is played again;
* ``episodes/<task>.meta.json`` (:func:`meta_file`): the task's wall time and data hash;
* ``progress/<task>.<n>.jsonl`` and ``.plan.json`` while a task is running
  (:func:`new_shard`): the engine writes each finished episode as one complete line the
  moment it ends, and the plan maps its lines to (item, sample). A run stopped in any way
  (Ctrl-C, a crash, ``kill -9``) keeps them; the same command resumes and plays only the
  episodes no file holds (:func:`finished_episodes`), so nothing is played twice and nothing
  finished is lost. A complete task's progress files are merged into its ``episodes`` file
  and removed (:func:`clear_progress`);
* ``results.json`` (:data:`RESULTS_FILE`): the scores with their intervals, per-item values
  and the manifest (:data:`RESULTS_SCHEMA`).

``run.json``, ``.eval.lock`` and ``progress/`` are the harness's working files
(:data:`WORKING_FILES`): a leaderboard never reads them.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.files import write_atomic
from llm_marl_envs.evaluation.suite import Item, Task
from llm_marl_envs.rollout.records import EpisodeRecord

__all__ = [
    "EPISODES_DIR",
    "EPISODE_FORMS",
    "LINE_KEYS",
    "LOCK_FILE",
    "META_FORM",
    "PROGRESS_DIR",
    "PROGRESS_FILE",
    "RESULTS_FILE",
    "RESULTS_SCHEMA",
    "RUN_FILE",
    "WORKING_FILES",
    "EvalError",
    "clear_progress",
    "episode_line",
    "episode_lines",
    "episodes_file",
    "find_episodes",
    "finished_episodes",
    "load_episodes",
    "meta_file",
    "new_shard",
    "plan_index",
    "read_meta",
    "renumbered",
    "saved_episodes",
    "slug",
    "write_json",
    "write_task",
]

#: The schema id of a ``results.json``.
RESULTS_SCHEMA = "llm-marl-envs/results/1"
#: The scores, their intervals and the manifest.
RESULTS_FILE = "results.json"
#: What is being run (the settings a resume must match).
RUN_FILE = "run.json"
#: The lock file of an evaluation folder in use (:func:`~llm_marl_envs.evaluation.files.
#: folder_lock`: released by the kernel when its process ends, however it ends).
LOCK_FILE = ".eval.lock"
#: The folder of the finished tasks' episodes files and meta files.
EPISODES_DIR = "episodes"
#: The folder of the running tasks' shards and plans.
PROGRESS_DIR = "progress"
#: The name of a file in ``progress/``: a shard ``<task>.<n>.jsonl`` or its ``.plan.json``.
PROGRESS_FILE = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*\.[0-9]+\.(jsonl|plan\.json)")
#: The forms of a task's episodes file: as ``llm-marl eval`` writes it, and gzipped.
EPISODE_FORMS = ("jsonl", "jsonl.gz")
#: The form of a task's meta file (``episodes/<task>.meta.json``).
META_FORM = "meta.json"
#: The harness's own working files, by name, and whether each is a file or a folder: a
#: reader of results (the leaderboard) never reads them.
WORKING_FILES = {LOCK_FILE: "file", RUN_FILE: "file", PROGRESS_DIR: "folder"}
#: The keys of one line of an episodes file (:func:`episode_line`).
LINE_KEYS = frozenset({"task", "key", "item", "sample", "seed", "options", "record"})


class EvalError(ValueError):
    """A user mistake in an evaluation (bad team, an output folder of another run, ...) or an
    evaluation folder that cannot be read as one (a damaged episodes file)."""


def slug(text: str, fallback: str, sep: str = "-", max_chars: int = 80) -> str:
    """``text`` as an entry id or a folder name: letters, digits and ``._+-`` kept, every other
    run of characters replaced by ``sep``; ``fallback`` when nothing is left.

    >>> slug("hf:Qwen/Qwen2.5 0.5B", "model", sep="_")
    'hf_Qwen_Qwen2.5_0.5B'
    """
    return re.sub(r"[^A-Za-z0-9_.+-]+", sep, text).strip(sep)[:max_chars] or fallback


# --------------------------------------------------------------------------- names
def episodes_file(folder: Path, task: str, gz: bool = False) -> Path:
    """Where ``task``'s episodes file is written in ``folder`` (``gz``: a board's form)."""
    return Path(folder) / EPISODES_DIR / f"{task}.{EPISODE_FORMS[1 if gz else 0]}"


def find_episodes(folder: Path, task: str) -> Path | None:
    """``task``'s episodes file in ``folder`` (``.jsonl``, else ``.jsonl.gz``), or None."""
    for gz in (False, True):
        path = episodes_file(folder, task, gz)
        if path.exists():
            return path
    return None


def meta_file(folder: Path, task: str) -> Path:
    """``task``'s meta file (its wall time and data hash) in ``folder``."""
    return Path(folder) / EPISODES_DIR / f"{task}.{META_FORM}"


def read_meta(folder: Path, task: str) -> dict:
    """``task``'s meta file as a dict ({} when there is none)."""
    path = meta_file(folder, task)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def write_json(path: Path, value: Any) -> None:
    """``value`` as JSON at ``path``, atomically (a reader never sees half a file; a unique
    temporary name, ``fsync``-ed, then renamed)."""
    write_atomic(path, json.dumps(value, indent=1, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------- episode lines
def episode_line(task: Task, item: Item, sample: int, record_line: str) -> str:
    """One line of an episodes file: where the episode sits in the suite, then its record
    (spliced in as the engine wrote it, not encoded again)."""
    head = json.dumps(
        {
            "task": task.name,
            "key": item.key,
            "item": item.index,
            "sample": sample,
            "seed": item.seed,
            "options": item.options,
        }
    )
    return f'{head[:-1]}, "record": {record_line}}}'


def episode_lines(path: str | Path) -> Iterator[tuple[int, str | None, dict | None, str]]:
    """``(line number, text, parsed, problem)`` for each non-blank line of an episodes file
    (``.jsonl`` or ``.jsonl.gz``): ``parsed`` None and ``problem`` set for a line that is not
    JSON (``"cut short"`` when it is the last one and lacks its newline: a killed writer)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if not raw.strip():
                    continue
                try:
                    data = json.loads(raw)
                    if not isinstance(data, dict):
                        raise ValueError("not a JSON object")
                except ValueError as error:
                    cut = not raw.endswith(b"\n")
                    problem = "cut short (no newline)" if cut else f"not JSON ({error})"
                    yield number, None, None, problem
                    continue
                yield number, raw.decode("utf-8"), data, ""
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise EvalError(f"{path}: the file is cut short or damaged ({error})") from None


def load_episodes(path: str | Path) -> list[dict]:
    """The lines of an episodes file, each with its record as an
    :class:`~llm_marl_envs.rollout.records.EpisodeRecord`. A line that is not an episode
    (a file cut short, edited by hand) is an :class:`EvalError` naming the file and line."""
    lines = []
    for number, _, data, problem in episode_lines(path):
        try:
            if problem:
                raise ValueError(problem)
            data["record"] = EpisodeRecord.from_dict(data["record"])
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise EvalError(
                f"{path}:{number}: not an episode line ({type(error).__name__}: "
                f"{str(error)[:100]}); restore the file, or delete that line and run the same "
                "llm-marl eval again to play its episode again"
            ) from None
        lines.append(data)
    return lines


# --------------------------------------------------------------------------- resume
def plan_index(task: Task) -> dict[tuple[int, int], int]:
    """(item, sample) -> its place in the task's frozen episode plan: the ``episode`` (and,
    one episode per group, ``group``) number it has in an uninterrupted run."""
    return task.plan().numbering


def saved_episodes(
    task: Task, folder: Path, write: Callable[[str], Any]
) -> tuple[dict[tuple[int, int], str], list[str]]:
    """The episodes of ``task``'s episodes file by (item, sample), each as its record's JSON,
    and what was wrong with the file (lines cut short or not JSON, episodes not in the plan or
    played twice): those are left out (the first three named through ``write``) and played
    again."""
    path = find_episodes(folder, task.name)
    if path is None:
        return {}, []
    plan = plan_index(task)
    kept: dict[tuple[int, int], str] = {}
    problems = []
    for number, _, data, problem in episode_lines(path):
        item, sample = (data.get("item"), data.get("sample")) if data else (None, None)
        key = (item, sample) if type(item) is int and type(sample) is int else None
        if problem:
            problems.append(f"{path}:{number}: {problem}")
        elif key not in plan or not isinstance(data.get("record"), dict):
            problems.append(f"{path}:{number}: not an episode of the task's plan")
        elif key in kept:
            problems.append(f"{path}:{number}: item {item} sample {sample} appears twice")
        else:
            try:
                EpisodeRecord.from_dict(data["record"])
            except (ValueError, TypeError, AttributeError) as error:
                problems.append(f"{path}:{number}: not an episode record ({str(error)[:80]})")
                continue
            kept[key] = json.dumps(data["record"], ensure_ascii=False)
    for problem in problems[:3]:
        write(f"  {task.name}: {problem}; left out (its episode is played again)")
    return kept, problems


def finished_episodes(task: Task, folder: Path) -> dict[tuple[int, int], str]:
    """Episodes of ``task`` finished so far in ``folder``'s progress files (by this run or
    stopped ones), by (item, sample): each its record's JSON line as the engine wrote it."""
    done: dict[tuple[int, int], str] = {}
    for plan_file in sorted((Path(folder) / PROGRESS_DIR).glob(f"{task.name}.*.plan.json")):
        plan = json.loads(plan_file.read_text(encoding="utf-8"))
        shard = plan_file.with_name(plan_file.name.replace(".plan.json", ".jsonl"))
        if not shard.exists():
            continue
        with open(shard, encoding="utf-8") as handle:
            for line in handle:
                try:
                    episode = json.loads(line)["episode"]
                    item, sample = plan["episodes"][episode]
                except (ValueError, KeyError, IndexError, TypeError):  # cut short by a kill
                    continue
                done.setdefault((item, sample), line.rstrip("\n"))
    return done


def new_shard(task: Task, folder: Path, plan: Sequence[tuple[Item, int]]) -> Path:
    """A new progress shard for ``task`` in ``folder``: its plan (the (item, sample) of each
    line the engine will write) is written first; returns the shard's path."""
    progress = Path(folder) / PROGRESS_DIR
    progress.mkdir(parents=True, exist_ok=True)
    number = len(list(progress.glob(f"{task.name}.*.plan.json")))
    write_json(
        progress / f"{task.name}.{number}.plan.json",
        {"episodes": [[item.index, sample] for item, sample in plan]},
    )
    return progress / f"{task.name}.{number}.jsonl"


def renumbered(line: str, number: int) -> str:
    """A record line with ``episode`` and ``group`` set to ``number`` (its place in the plan),
    as an uninterrupted run numbers it (a resumed shard's engine counted from 0)."""
    data = json.loads(line)
    if data.get("episode") == number and data.get("group") == number:
        return line
    data["episode"] = data["group"] = number
    return json.dumps(data, ensure_ascii=False)


def write_task(
    task: Task, lines: Mapping[tuple[int, int], str], folder: Path, meta: dict
) -> list[tuple[Item, int, str]]:
    """Write ``task``'s episodes file (every (item, sample) of its plan, in plan order,
    renumbered) and its meta file, then remove its progress files; return the episodes as
    (item, sample, record line). ``lines`` must hold the whole plan (the caller checks)."""
    plan = task.plan()
    ordered = [
        (item, sample, renumbered(line, plan.numbering[(item.index, sample)]))
        for item, sample, line in plan.ordered(lines)
    ]
    text = "".join(episode_line(task, item, sample, line) + "\n" for item, sample, line in ordered)
    (Path(folder) / EPISODES_DIR).mkdir(parents=True, exist_ok=True)
    write_json(meta_file(folder, task.name), meta)
    write_atomic(episodes_file(folder, task.name), text)
    clear_progress(task, folder)
    return ordered


def clear_progress(task: Task, folder: Path) -> None:
    """Remove ``task``'s progress shards and plans from ``folder``."""
    for leftover in (Path(folder) / PROGRESS_DIR).glob(f"{task.name}.*"):
        leftover.unlink()
