"""``llm-marl eval``: play a suite with a team of policies, resumably; write the records.

:func:`evaluate` plays every task of a :class:`~llm_marl_envs.evaluation.suite.Suite` on the
batched rollout engine with a :class:`Team` (a policy spec per seat), then scores it
(:mod:`llm_marl_envs.evaluation.results`). The output folder holds:

* ``run.json``: what is being run (suite hash, team, batch size), written first; a resume
  with other settings is refused;
* ``.eval.lock``: the folder's lock while an evaluation runs in it (an ``flock``, which the
  kernel releases when the process ends, however it ends): a second ``llm-marl eval`` on the
  same folder is refused with one line naming the process that holds it;
* ``episodes/<task>.jsonl``: one line per episode once a task is complete: the task, item key,
  sample, seed and reset options, and the full episode record (every turn's prompt, action,
  reward components, format error, tokens generated). It is written (atomically) only with
  every (item, sample) of the task's frozen plan, each once; its records are numbered
  (``episode``, ``group``) by their place in the plan, as an uninterrupted run numbers them,
  however many resumes it took. A rerun checks it against the plan: a line lost, cut short
  or edited is left out (a status line names the file and line) and its episode is played
  again;
* ``progress/<task>.<n>.jsonl`` and ``.plan.json`` while a task is running: the engine writes
  each finished episode as one complete line the moment it ends, and the plan maps its lines
  to (item, sample). A run stopped in any way (Ctrl-C, a crash, ``kill -9``) keeps them; the
  same command resumes and plays only the episodes no file holds, so nothing is played twice
  and nothing finished is lost. A complete task's progress files are merged into its
  ``episodes`` file and removed;
* ``results.json``: the scores with their intervals, per-item values and the manifest.

Model policies are loaded once per spec (a :class:`~llm_marl_envs.policies.ModelCache`) and
shared by every seat and task that names them (the engine batches their turns together); each
task plays them with its own :class:`~llm_marl_envs.policies.GenerationConfig`: the task's
generation settings (greedy unless the suite samples, the task's token budget) and a seed
derived from the suite seed and the task (:func:`task_policies`).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.files import folder_lock, write_atomic
from llm_marl_envs.evaluation.suite import Item, Suite, Task, data_hash
from llm_marl_envs.policies import (
    GenerationConfig,
    ModelCache,
    Policy,
    PolicyFactory,
    build_policies,
)
from llm_marl_envs.registry import make
from llm_marl_envs.rollout.records import EpisodeRecord
from llm_marl_envs.rollout.executors import EnvExecutor

__all__ = [
    "EvalError",
    "Team",
    "TaskRun",
    "evaluate",
    "load_episodes",
    "load_runs",
    "task_policies",
]

RESULTS_SCHEMA = "llm-marl-envs/results/1"


class EvalError(ValueError):
    """A user mistake in an evaluation (bad team, an output folder of another run, ...)."""


def slug(text: str, fallback: str, sep: str = "-", max_chars: int = 80) -> str:
    """``text`` as an entry id or a folder name: letters, digits and ``._+-`` kept, every other
    run of characters replaced by ``sep``; ``fallback`` when nothing is left.

    >>> slug("hf:Qwen/Qwen2.5 0.5B", "model", sep="_")
    'hf_Qwen_Qwen2.5_0.5B'
    """
    return re.sub(r"[^A-Za-z0-9_.+-]+", sep, text).strip(sep)[:max_chars] or fallback


@dataclass(frozen=True)
class Team:
    """A policy spec per seat: ``cycle[i % len(cycle)]`` for seat ``i`` of a task's agents,
    unless ``named`` names the agent (``{"observer_0": "tiny"}``).

    ``Team.parse("default")`` puts one spec in every seat; ``Team.parse(team=["0=default",
    "1=tiny"])`` alternates two (seat 0, 2, ... and 1, 3, ...: the heterogeneous pairs of
    :mod:`llm_marl_envs.evaluation.pairings`); ``observer_0=tiny`` names one agent.
    """

    cycle: tuple[str, ...]
    named: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, policy: str | None = None, team: Sequence[str] | Mapping | None = None) -> Team:
        if isinstance(team, Mapping):
            team = [f"{k}={v}" for k, v in team.items()]
        if bool(policy) == bool(team):
            raise EvalError("give --policy SPEC (every seat) or --team SEAT=SPEC ..., not both")
        if policy:
            return cls((policy,))
        indexed, named = {}, {}
        for entry in team:
            seat, sep, spec = str(entry).partition("=")
            if not sep or not seat or not spec:
                raise EvalError(f"--team takes SEAT=SPEC (SEAT: an index or agent), got {entry!r}")
            if seat.isdigit():
                indexed[int(seat)] = spec
            else:
                named[seat] = spec
        if indexed and sorted(indexed) != list(range(len(indexed))):
            raise EvalError(
                f"--team seat indices must be 0..n-1 without gaps, got {sorted(indexed)}"
            )
        cycle = tuple(indexed[i] for i in range(len(indexed)))
        if not cycle and named:
            raise EvalError(
                "--team names agents only; add 0=SPEC for the other seats (or use --policy)"
            )
        return cls(cycle, tuple(sorted(named.items())))

    def assign(self, agents: Sequence[str]) -> dict[str, str]:
        named = dict(self.named)
        return {a: named.get(a, self.cycle[i % len(self.cycle)]) for i, a in enumerate(agents)}

    def specs(self) -> list[str]:
        return sorted(set(self.cycle) | {spec for _, spec in self.named})

    def describe(self) -> dict[str, Any]:
        return {"seats": list(self.cycle), "agents": dict(self.named)}

    @property
    def label(self) -> str:
        text = " + ".join(self.cycle)
        if self.named:
            text += " (" + ", ".join(f"{a}={s}" for a, s in self.named) + ")"
        return text


@dataclass
class TaskRun:
    """A finished task: its episodes as (item, sample, record), and what it cost."""

    task: Task
    episodes: list[tuple[Item, int, EpisodeRecord]]
    wall_seconds: float
    data_hash: str | None
    assignment: dict[str, str]


def task_policies(
    models: ModelCache,
    task: Task,
    env: Any,
    assignment: Mapping[str, str],
    seed: int,
    generation: GenerationConfig | None = None,
) -> dict[str, Policy]:
    """The policies of ``task``'s seats (``assignment``: agent -> spec; ``env``: one of the
    task's environments) over ``models``: the task's generation settings (greedy unless the
    suite samples, the task's token budget) and ``seed`` on ``generation`` (where models run).
    Every seat's player is seeded with ``seed``, random players too (one stream for all seats,
    not one per agent: how every evaluation's records were made)."""
    config = (generation or GenerationConfig()).replace(**task.generation_settings(), seed=seed)
    factory = PolicyFactory(task.env, generation=config, models=models, agent_streams=False)
    return build_policies(factory, env, assignment)


def _placement(generation: GenerationConfig | None) -> dict[str, Any]:
    """Where the models run, as ``run.json`` records it: the fields asked for other than the
    defaults (``"auto"``, no compile), so a run of the defaults resumes a run made before they
    existed; where the models did run is in the manifest (its ``policies`` block)."""
    if generation is None:
        return {}
    where = {"device": generation.device, "dtype": generation.dtype, "compile": generation.compile}
    return {name: value for name, value in where.items() if value not in (None, "auto", False)}


def _plan_changes(before: dict, run: dict, team: Team) -> list[str]:
    """How ``run`` differs from the ``before`` run of an evaluation folder in what is played
    (empty: it resumes it). Transport is not what is played: an ``openai:`` seat's options
    (``?concurrency=...``) and its URL's text (it is the model its server serves), and the
    batch size when no seat runs a model in this process (a server batches as it likes;
    scripted and random players answer the same at any batch size)."""
    changed = []
    for key in run:
        if key == "served":
            continue  # compared through the team
        was, now = before.get(key), run[key]
        if key == "team":
            # By what the servers serve where both runs could ask them, else by URL.
            served_then, served_now = before.get("served") or {}, run.get("served") or {}
            known = all([*served_then.values(), *served_now.values()])
            known = known and bool(served_then) and bool(served_now)
            was = _played_team(was, served_then if known else {})
            now = _played_team(now, served_now if known else {})
        if key == "batch_size" and not any(map(_in_process_model, team.specs())):
            continue
        if was != now:
            said = f": {was!r} then, {now!r} now" if key == "team" else ""
            changed.append(f"{key} differ{said}")
    return changed


def _bare(spec: str) -> str:
    """An ``openai:`` spec without its transport options (``?concurrency=...``)."""
    return spec.partition("?")[0] if spec.startswith("openai:") else spec


def _played_team(described: Any, served: Mapping[str, Any]) -> Any:
    """A team's description as what is played: an ``openai:`` seat without its transport
    options, and by the model its server serves (``served``: spec -> the server's model id)
    where that is known, so one server reached by another URL is the same seat."""
    if not isinstance(described, dict):
        return described

    def played(spec: Any) -> Any:
        if not isinstance(spec, str) or not spec.startswith("openai:"):
            return spec
        identity = served.get(_bare(spec))
        return f"openai-served:{identity}" if identity else _bare(spec)

    return {
        "seats": [played(s) for s in described.get("seats") or []],
        "agents": {a: played(s) for a, s in (described.get("agents") or {}).items()},
    }


def _in_process_model(spec: str) -> bool:
    """Whether a seat's spec runs a model in this process (its records may depend on how its
    turns are batched)."""
    return not spec.startswith("openai:") and spec not in ("scripted", "random", "human")


def _task_seed(suite_seed: int, task_index: int) -> int:
    return suite_seed * 1_000 + task_index


# --------------------------------------------------------------------------- files
def _write_json(path: Path, value: Any) -> None:
    """``value`` as JSON at ``path``, atomically (a reader never sees half a file; a unique
    temporary name, ``fsync``-ed, then renamed)."""
    write_atomic(path, json.dumps(value, indent=1, ensure_ascii=False) + "\n")


def _episode_line(task: Task, item: Item, sample: int, record_line: str) -> str:
    """One line of ``episodes/<task>.jsonl``: where the episode sits in the suite, then its
    record (spliced in as the engine wrote it, not encoded again)."""
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


def _episode_lines(path: str | Path) -> Iterator[tuple[int, str | None, dict | None, str]]:
    """``(line number, text, parsed, problem)`` for each non-blank line of an episodes file
    (``.jsonl`` or ``.jsonl.gz``): ``parsed`` None and ``problem`` set for a line that is not
    JSON (``"cut short"`` when it is the last one and lacks its newline: a killed writer)."""
    import gzip
    import zlib

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
    """The lines of an ``episodes/<task>.jsonl`` file, each with its record as an
    :class:`~llm_marl_envs.rollout.records.EpisodeRecord`. A line that is not an episode
    (a file cut short, edited by hand) is an :class:`EvalError` naming the file and line."""
    lines = []
    for number, _, data, problem in _episode_lines(path):
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


def load_runs(
    suite: Suite, folder: str | Path, assignments: Mapping[str, dict] | None = None
) -> list[TaskRun]:
    """The finished tasks of an evaluation folder (its ``episodes/<task>.jsonl[.gz]`` and
    ``.meta.json`` files), in suite order, as :class:`TaskRun` objects: what scoring needs.
    ``assignments``: each task's seat -> policy spec (a result's ``tasks[name]["team"]``)."""
    runs = []
    for task in suite.tasks:
        run = _load_run(task, Path(folder), dict((assignments or {}).get(task.name) or {}))
        if run is not None:
            runs.append(run)
    return runs


def _episodes_path(task: Task, folder: Path) -> Path | None:
    path = folder / "episodes" / f"{task.name}.jsonl"
    if not path.exists():
        path = path.with_name(path.name + ".gz")
    return path if path.exists() else None


def _meta(task: Task, folder: Path) -> dict:
    meta_file = folder / "episodes" / f"{task.name}.meta.json"
    return json.loads(meta_file.read_text()) if meta_file.exists() else {}


def _load_run(task: Task, folder: Path, assignment: dict[str, str]) -> TaskRun | None:
    """``task``'s finished run in ``folder``, or None when it has no episodes file. An
    episode of no item of the task is an :class:`EvalError` naming the file and line."""
    path = _episodes_path(task, folder)
    if path is None:
        return None
    items = {item.index: item for item in task.items}
    episodes = []
    for number, line in enumerate(load_episodes(path), 1):
        if line.get("item") not in items:
            raise EvalError(
                f"{path}:{number}: item {line.get('item')!r} is not one of {task.name}'s"
            )
        episodes.append((items[line["item"]], line["sample"], line["record"]))
    meta = _meta(task, folder)
    return TaskRun(task, episodes, meta.get("wall_seconds", 0.0), meta.get("data_hash"), assignment)


def _plan_index(task: Task) -> dict[tuple[int, int], int]:
    """(item, sample) -> its place in the task's frozen episode plan: the ``episode`` (and,
    one episode per group, ``group``) number it has in an uninterrupted run."""
    return {(item.index, sample): k for k, (item, sample) in enumerate(task.episode_plan())}


def _saved(task: Task, out: Path, write) -> tuple[dict[tuple[int, int], str], list[str]]:
    """The episodes of ``task``'s ``episodes`` file by (item, sample), each as its record's
    JSON, and what was wrong with the file (lines cut short or not JSON, episodes not in the
    plan or played twice): those are left out and played again."""
    path = _episodes_path(task, out)
    if path is None:
        return {}, []
    plan = _plan_index(task)
    kept: dict[tuple[int, int], str] = {}
    problems = []
    for number, _, data, problem in _episode_lines(path):
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


def _finished(task: Task, progress: Path) -> dict[tuple[int, int], str]:
    """Episodes of ``task`` finished so far (by this run or stopped ones), by (item, sample):
    each its record's JSON line as the engine wrote it."""
    done: dict[tuple[int, int], str] = {}
    for plan_file in sorted(progress.glob(f"{task.name}.*.plan.json")):
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


def _play_task(
    task: Task,
    policies: dict,
    out: Path,
    batch_size: int,
    progress: bool | None,
    write,
    executor: str | EnvExecutor | None = None,
    num_workers: int | None = None,
    saved: Mapping[tuple[int, int], str] | None = None,
) -> dict[tuple[int, int], str]:
    """Play the episodes of ``task`` that no earlier run finished (``saved``: those of its
    episodes file; the rest from the progress files); return all of them, by (item, sample),
    as record lines."""
    from llm_marl_envs.rollout import rollout

    progress_dir = out / "progress"
    progress_dir.mkdir(parents=True, exist_ok=True)
    done = {**_finished(task, progress_dir), **(saved or {})}
    plan = [
        (item, sample) for item, sample in task.episode_plan() if (item.index, sample) not in done
    ]
    if done and plan:
        write(f"  {task.name}: resuming, {len(done)} episodes kept, {len(plan)} to play")
    if plan:
        shard_no = len(list(progress_dir.glob(f"{task.name}.*.plan.json")))
        shard = progress_dir / f"{task.name}.{shard_no}.jsonl"
        _write_json(
            shard.with_name(f"{task.name}.{shard_no}.plan.json"),
            {"episodes": [[item.index, sample] for item, sample in plan]},
        )
        rollout(
            task.env,
            policies,
            seeds=[item.seed for item, _ in plan],
            reset_options=[item.options for item, _ in plan],
            batch_size=batch_size,
            env_kwargs=task.kwargs,
            out=shard,
            keep="none",  # the records are read back from the shard: memory stays flat
            progress=progress,
            executor=executor,
            num_workers=num_workers,
        )
        done = {**_finished(task, progress_dir), **(saved or {})}
    return done


def _renumbered(line: str, number: int) -> str:
    """A record line with ``episode`` and ``group`` set to ``number`` (its place in the plan),
    as an uninterrupted run numbers it (a resumed shard's engine counted from 0)."""
    data = json.loads(line)
    if data.get("episode") == number and data.get("group") == number:
        return line
    data["episode"] = data["group"] = number
    return json.dumps(data, ensure_ascii=False)


def _save_task(
    task: Task, lines: dict[tuple[int, int], str], assignment: dict, out: Path, seconds: float
) -> TaskRun:
    """Write a finished task's ``episodes/<task>.jsonl`` and ``.meta.json`` (and remove its
    progress files); return it as a :class:`TaskRun`. Refuses (:class:`EvalError`, the file
    untouched) unless ``lines`` hold every (item, sample) of the task's frozen plan."""
    problem = task.plan_difference(lines)
    if problem:
        raise EvalError(
            f"task {task.name}: {problem}; episodes/{task.name}.jsonl is not written; run the "
            "same command again to play what is missing"
        )
    hashed = data_hash(task)
    plan = _plan_index(task)
    ordered = [(item, sample) for item, sample in task.episode_plan()]
    records = [_renumbered(lines[(i.index, s)], plan[(i.index, s)]) for i, s in ordered]
    text = "".join(
        _episode_line(task, item, sample, line) + "\n"
        for (item, sample), line in zip(ordered, records, strict=True)
    )
    episodes = [
        (item, sample, EpisodeRecord.from_dict(json.loads(line)))
        for (item, sample), line in zip(ordered, records, strict=True)
    ]
    _write_json(
        out / "episodes" / f"{task.name}.meta.json", {"wall_seconds": seconds, "data_hash": hashed}
    )
    write_atomic(out / "episodes" / f"{task.name}.jsonl", text)
    _clear_progress(task, out)
    return TaskRun(task, episodes, seconds, hashed, assignment)


def _clear_progress(task: Task, out: Path) -> None:
    for leftover in (out / "progress").glob(f"{task.name}.*"):
        leftover.unlink()


def evaluate(
    suite: Suite,
    team: Team,
    out_dir: str | Path,
    *,
    tasks: Sequence[str] | None = None,
    batch_size: int = 8,
    progress: bool | None = None,
    entry: str | None = None,
    generation: GenerationConfig | None = None,
    write: Callable[[str], None] | None = None,
    executor: str | EnvExecutor | None = None,
    num_workers: int | None = None,
    server_options: Mapping[str, Any] | None = None,
) -> dict:
    """Play ``suite`` (or its ``tasks``) with ``team``; write and return ``results.json``.

    Args:
        suite: The suite (:func:`~llm_marl_envs.evaluation.suite.load_suite`).
        team: Who plays each seat (:class:`Team`).
        out_dir: Output folder; an earlier, stopped run of the same settings is resumed.
        tasks: Task names to play (default: all).
        batch_size: Episodes played in lockstep per task.
        progress: A progress bar per task (default: on a terminal).
        entry: The entry's name in the results (default: the team's label).
        generation: Where model policies run (``GenerationConfig(dtype="bfloat16")``); each
            task's settings from the suite (sampling, token budget) and its seed replace the
            other fields.
        write: Where status lines go (default: stderr).
        executor: Where the environments step: ``"local"`` (default), ``"ray"`` (shards on
            ``num_workers`` Ray actors; the records, and so the scores, are the same) or an
            executor (a configured ``RayExecutor``: the CLI's ``--ray-*`` options).
        num_workers: Ray actors per task with ``executor="ray"``.
        server_options: How requests travel to ``openai:`` seats (``OpenAIPolicy`` arguments:
            ``concurrency``, ``timeout``, ``max_retries``): transport, not part of what is
            played, so a resumed evaluation may change them (and, when every seat is a server
            or a model-free player, ``batch_size`` too).

    Raises :class:`EvalError` for an output folder that holds another run,
    :class:`~llm_marl_envs.evaluation.files.FolderBusy` while another process evaluates in
    it, and the rollout's ``RolloutInterrupted`` / ``RolloutError`` after saving the finished
    episodes.
    """
    write = write or (lambda line: print(line, file=sys.stderr, flush=True))
    out = Path(out_dir)
    chosen = [suite.task(name) for name in tasks] if tasks else list(suite.tasks)
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(
        out,
        LOCK_FILE,
        "another llm-marl eval",
        "wait for it to finish (or stop it), or give another --out",
    ):
        return _evaluate(
            suite,
            team,
            out,
            chosen,
            batch_size,
            progress,
            entry,
            generation,
            write,
            executor,
            num_workers,
            server_options,
        )


#: The lock file of an evaluation folder in use (:func:`~llm_marl_envs.evaluation.files.
#: folder_lock`: released by the kernel when its process ends, however it ends).
LOCK_FILE = ".eval.lock"


def _evaluate(
    suite,
    team,
    out,
    chosen,
    batch_size,
    progress,
    entry,
    generation,
    write,
    executor,
    num_workers,
    server_options=None,
) -> dict:
    """:func:`evaluate` with the folder locked."""
    from llm_marl_envs.evaluation import results as scoring

    run = {
        "suite": {"name": suite.name, "version": suite.version, "hash": suite.hash()},
        "team": team.describe(),
        "tasks": [t.name for t in chosen],
        "batch_size": batch_size,
        "generation": _placement(generation),
    }
    servers = [s for s in team.specs() if s.startswith("openai:")]
    if servers:  # a server seat is what it serves, not its URL's text
        from llm_marl_envs.policies.openai_compat import served_identity

        run["served"] = {_bare(s): served_identity(s) for s in servers}
    run_file = out / "run.json"
    if run_file.exists():
        before = json.loads(run_file.read_text(encoding="utf-8"))
        changed = _plan_changes(before, run, team)
        if changed:
            raise EvalError(
                f"{out} holds another evaluation ({'; '.join(changed)}); "
                "use a new --out folder, or the same settings to resume it"
            )
    _write_json(run_file, run)  # the settings of the latest run (transport may change)
    (out / "episodes").mkdir(exist_ok=True)

    write(
        f"{suite.label}: {len(chosen)} tasks, "
        f"{sum(len(t.episode_plan()) for t in chosen)} episodes, team {team.label}; "
        f"records in {out}"
    )
    # what each task's episodes file holds: complete (every episode of the plan, nothing
    # else), or to be completed (a line lost, cut short or edited: played again)
    saved = {task.name: _saved(task, out, write) for task in chosen}
    whole = {
        name
        for name, (lines, problems) in saved.items()
        if not problems and lines and not suite.task(name).plan_difference(lines)
    }
    finished = out / "results.json"
    if finished.exists() and whole == {t.name for t in chosen}:
        try:
            done = json.loads(finished.read_text(encoding="utf-8"))
        except ValueError:  # damaged by hand: scored again from the episodes below
            done = None
        if isinstance(done, dict):
            write(f"{out}: this evaluation is complete; its results are in {finished}")
            return done
    models = ModelCache(server_options)
    started = time.time()
    runs: list[TaskRun] = []
    try:
        for task in chosen:
            with closing(make(task.env, **task.kwargs)) as env:
                assignment = team.assign(env.possible_agents)
                if task.name not in whole:
                    # the task's place in the suite, not among the tasks chosen: a task plays
                    # the same episodes whichever other tasks run beside it (and verify
                    # regenerates it with this seed)
                    seed = _task_seed(suite.raw.get("seed", 0), suite.tasks.index(task))
                    policies = task_policies(models, task, env, assignment, seed, generation)
            lines = saved[task.name][0]
            if task.name in whole:
                earlier = _saved_run(task, lines, out, assignment)
                write(f"  {task.name}: done earlier ({len(earlier.episodes)} episodes)")
                _clear_progress(task, out)  # left by a run stopped just after saving it
                runs.append(earlier)
                continue
            if lines:
                missing = len(task.episode_plan()) - len(lines)
                write(
                    f"  {task.name}: episodes/{task.name}.jsonl lacks {missing} of its "
                    f"{len(task.episode_plan())} episodes; playing them again"
                )
            tick = time.perf_counter()
            lines = _play_task(
                task, policies, out, batch_size, progress, write, executor, num_workers, lines
            )
            runs.append(_save_task(task, lines, assignment, out, time.perf_counter() - tick))
            write(
                f"  {task.name}: {len(runs[-1].episodes)} episodes in {runs[-1].wall_seconds:.0f} s"
            )
        results = scoring.score(suite, runs, entry=entry or team.label, team=team)
        results["manifest"] = scoring.manifest(suite, team, runs, models.describe(), run, started)
    finally:
        models.close()
    _write_json(out / "results.json", results)
    return results


def _saved_run(task: Task, lines: Mapping[tuple[int, int], str], out: Path, assignment) -> TaskRun:
    """A complete task's episodes file (read by :func:`_saved`) as a :class:`TaskRun`."""
    episodes = [
        (item, sample, EpisodeRecord.from_dict(json.loads(lines[(item.index, sample)])))
        for item, sample in task.episode_plan()
    ]
    meta = _meta(task, out)
    return TaskRun(task, episodes, meta.get("wall_seconds", 0.0), meta.get("data_hash"), assignment)
