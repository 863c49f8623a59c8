"""``llm-marl eval``: play a suite with a team of policies, resumably; write the records.

:func:`evaluate` plays every task of a :class:`~llm_marl_envs.evaluation.suite.Suite` on the
batched rollout engine with a :class:`Team` (a policy spec per seat), then scores it
(:mod:`llm_marl_envs.evaluation.results`). The output folder's files (``run.json``,
``.eval.lock``, ``episodes/``, ``progress/``, ``results.json``), the episode line and the
readers that resume from them are :mod:`~llm_marl_envs.evaluation.run_folder`'s, the one home
of the format.

Model policies are loaded once per spec (a :class:`~llm_marl_envs.policies.ModelCache`) and
shared by every seat and task that names them (the engine batches their turns together); each
task plays them with its own :class:`~llm_marl_envs.policies.GenerationConfig`: the task's
generation settings (greedy unless the suite samples, the task's token budget) and a seed
derived from the suite seed and the task (:func:`task_policies`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation import run_folder
from llm_marl_envs.evaluation.files import folder_lock
from llm_marl_envs.evaluation.run_folder import EvalError, load_episodes
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
    "EvalError",  # (from run_folder, where it is raised too)
    "Team",
    "TaskRun",
    "evaluate",
    "load_episodes",
    "load_runs",
    "task_policies",
]


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


# --------------------------------------------------------------------------- the folder
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


def _load_run(task: Task, folder: Path, assignment: dict[str, str]) -> TaskRun | None:
    """``task``'s finished run in ``folder``, or None when it has no episodes file. An
    episode of no item of the task is an :class:`EvalError` naming the file and line."""
    path = run_folder.find_episodes(folder, task.name)
    if path is None:
        return None
    items = {item.index: item for item in task.items}
    episodes = []
    for number, line in enumerate(run_folder.load_episodes(path), 1):
        if line.get("item") not in items:
            raise EvalError(
                f"{path}:{number}: item {line.get('item')!r} is not one of {task.name}'s"
            )
        episodes.append((items[line["item"]], line["sample"], line["record"]))
    meta = run_folder.read_meta(folder, task.name)
    return TaskRun(task, episodes, meta.get("wall_seconds", 0.0), meta.get("data_hash"), assignment)


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

    done = {**run_folder.finished_episodes(task, out), **(saved or {})}
    plan = [
        (item, sample) for item, sample in task.episode_plan() if (item.index, sample) not in done
    ]
    if done and plan:
        write(f"  {task.name}: resuming, {len(done)} episodes kept, {len(plan)} to play")
    if plan:
        shard = run_folder.new_shard(task, out, plan)
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
        done = {**run_folder.finished_episodes(task, out), **(saved or {})}
    return done


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
    written = run_folder.write_task(
        task, lines, out, {"wall_seconds": seconds, "data_hash": hashed}
    )
    episodes = [
        (item, sample, EpisodeRecord.from_dict(json.loads(line))) for item, sample, line in written
    ]
    return TaskRun(task, episodes, seconds, hashed, assignment)


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
        run_folder.LOCK_FILE,
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
    run_file = out / run_folder.RUN_FILE
    if run_file.exists():
        before = json.loads(run_file.read_text(encoding="utf-8"))
        changed = _plan_changes(before, run, team)
        if changed:
            raise EvalError(
                f"{out} holds another evaluation ({'; '.join(changed)}); "
                "use a new --out folder, or the same settings to resume it"
            )
    run_folder.write_json(run_file, run)  # the settings of the latest run (may change transport)
    (out / run_folder.EPISODES_DIR).mkdir(exist_ok=True)

    write(
        f"{suite.label}: {len(chosen)} tasks, "
        f"{sum(len(t.episode_plan()) for t in chosen)} episodes, team {team.label}; "
        f"records in {out}"
    )
    # what each task's episodes file holds: complete (every episode of the plan, nothing
    # else), or to be completed (a line lost, cut short or edited: played again)
    saved = {task.name: run_folder.saved_episodes(task, out, write) for task in chosen}
    whole = {
        name
        for name, (lines, problems) in saved.items()
        if not problems and lines and not suite.task(name).plan_difference(lines)
    }
    finished = out / run_folder.RESULTS_FILE
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
                run_folder.clear_progress(task, out)  # left by a run stopped just after saving
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
    run_folder.write_json(out / run_folder.RESULTS_FILE, results)
    return results


def _saved_run(task: Task, lines: Mapping[tuple[int, int], str], out: Path, assignment) -> TaskRun:
    """A complete task's episodes file (read by :func:`_saved`) as a :class:`TaskRun`."""
    episodes = [
        (item, sample, EpisodeRecord.from_dict(json.loads(lines[(item.index, sample)])))
        for item, sample in task.episode_plan()
    ]
    meta = run_folder.read_meta(out, task.name)
    return TaskRun(task, episodes, meta.get("wall_seconds", 0.0), meta.get("data_hash"), assignment)
