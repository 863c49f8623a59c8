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
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation import run_folder
from llm_marl_envs.evaluation.config import EvalConfig
from llm_marl_envs.evaluation.files import folder_lock
from llm_marl_envs.evaluation.run_folder import EvalError, load_episodes
from llm_marl_envs.evaluation.suite import Item, Plan, Suite, Task, data_hash
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
    "EvalConfig",  # (from config)
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


# --------------------------------------------------------------------------- what is run
def _placement(generation: GenerationConfig | None) -> dict[str, Any]:
    """Where the models run, as ``run.json`` records it: the fields asked for other than the
    defaults (``"auto"``, no compile), so a run of the defaults resumes a run made before they
    existed; where the models did run is in the manifest (its ``policies`` block)."""
    if generation is None:
        return {}
    where = {"device": generation.device, "dtype": generation.dtype, "compile": generation.compile}
    return {name: value for name, value in where.items() if value not in (None, "auto", False)}


def _record_run(
    out: Path, suite: Suite, team: Team, chosen: list[Task], config: EvalConfig
) -> dict:
    """What is being run, as the folder's ``run.json`` records it: the settings a resume must
    match, with the model each ``openai:`` seat's server serves (``served``: a server seat is
    what its server serves, not its URL's text). Written there (a resume may change transport)
    unless the folder holds another evaluation: that is an :class:`EvalError`, one line saying
    what differs."""
    run = {
        "suite": {"name": suite.name, "version": suite.version, "hash": suite.hash()},
        "team": team.describe(),
        "tasks": [t.name for t in chosen],
        "batch_size": config.batch_size,
        "generation": _placement(config.generation),
    }
    servers = [s for s in team.specs() if _is_server(s)]
    if servers:
        from llm_marl_envs.policies.openai import served_identity

        run["served"] = {_bare(s): served_identity(s) for s in servers}
    run_file = out / run_folder.RUN_FILE
    if run_file.exists():
        before = json.loads(run_file.read_text(encoding="utf-8"))
        changed = _plan_changes(before, run, team, listing=_listing)
        if changed:
            raise EvalError(
                f"{out} holds another evaluation ({'; '.join(changed)}); "
                "use a new --out folder, or the same settings to resume it"
            )
    run_folder.write_json(run_file, run)
    (out / run_folder.EPISODES_DIR).mkdir(exist_ok=True)
    return run


def _plan_changes(
    before: dict, run: dict, team: Team, listing: Callable[[str], Any] | None = None
) -> list[str]:
    """How ``run`` differs from the ``before`` run of an evaluation folder in what is played
    (empty: it resumes it), each as ``"<key> differ"`` (the team's naming each seat that
    differs, then and now: :func:`_seat_changes`). Transport is not what is played: an
    ``openai:`` seat's options (``?concurrency=...``) and its URL's text (it is the model its
    server serves), and the batch size when no seat runs a model in this process (a server
    batches as it likes; scripted and random players answer the same at any batch size).
    ``listing(spec)``: the models a server seat's server lists, asked for a message only."""
    changed = []
    for key in run:
        if key == "served":
            continue  # compared through the team
        if key == "batch_size" and not any(map(_in_process_model, team.specs())):
            continue
        if key == "team":
            served = (before.get("served") or {}, run.get("served") or {})
            seats = _seat_changes(before.get(key), run[key], served, listing)
            changed += [f"team differ: {'; '.join(seats)}"] if seats else []
        elif before.get(key) != run[key]:
            changed.append(f"{key} differ")
    return changed


def _seat_changes(
    then: Any, now: Any, served: tuple[Mapping, Mapping], listing: Callable | None = None
) -> list[str]:
    """The seats of two team descriptions (:meth:`Team.describe`) that play differently, each
    as ``"seat 0: <then> then, <now> now"``. An ``openai:`` seat is the model its server
    serves where both runs could ask it (``served``: then's and now's spec -> the model id its
    server reported), else its URL; its transport options do not count either way."""
    before, after = _seats(then), _seats(now)
    changes = []
    for seat in dict.fromkeys([*before, *after]):
        was, is_now = before.get(seat), after.get(seat)
        if not _same_seat(was, is_now, served):
            then_text, now_text = _seat_text(was, served[0]), _seat_text(is_now, served[1], listing)
            changes.append(f"{seat}: {then_text} then, {now_text} now")
    return changes


def _same_seat(was: Any, now: Any, served: tuple[Mapping, Mapping]) -> bool:
    """Whether two specs of a seat play the same (:func:`_seat_changes`)."""
    if not (_is_server(was) and _is_server(now)):
        return was == now
    then_model, now_model = served[0].get(_bare(was)), served[1].get(_bare(now))
    if then_model and now_model:
        return then_model == now_model
    return _bare(was) == _bare(now)


def _seats(described: Any) -> dict[str, Any]:
    """A team's description as seat -> spec (``seat 0``, ..., ``agent observer_0``)."""
    if not isinstance(described, dict):
        return {"the team": described}
    seats = {f"seat {i}": spec for i, spec in enumerate(described.get("seats") or [])}
    agents = described.get("agents") or {}
    return {**seats, **{f"agent {a}": spec for a, spec in agents.items()}}


def _seat_text(spec: Any, served: Mapping, listing: Callable | None = None) -> str:
    """A seat's spec as a refusal names it: a server seat by the model its server reported
    (else by what ``listing`` says its server lists now)."""
    if not _is_server(spec):
        return "none" if spec is None else repr(spec)
    bare = _bare(spec)
    if served.get(bare):
        return f"model {served[bare]!r} ({bare})"
    if listing is None:
        return bare
    listed = listing(bare)
    if not listed:
        return f"{bare} (its server did not say what it serves)"
    model = bare.partition("#")[2]
    serves = ", ".join(map(repr, listed)) + (f", not {model!r}" if model else "")
    return f"{bare} (its server serves {serves})"


def _listing(spec: str) -> list[str] | None:
    """The models an ``openai:`` seat's server lists (None: it does not say)."""
    from llm_marl_envs.policies.openai import served_models, split_spec

    base_url = split_spec(spec.removeprefix("openai:"))[0].partition("#")[0]
    listed = served_models(base_url, os.environ.get("OPENAI_API_KEY"))
    return sorted(listed) if listed else None


def _is_server(spec: Any) -> bool:
    return isinstance(spec, str) and spec.startswith("openai:")


def _bare(spec: str) -> str:
    """An ``openai:`` spec without its transport options (``?concurrency=...``)."""
    return spec.partition("?")[0] if spec.startswith("openai:") else spec


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
    plan: Plan,
    policies: dict,
    out: Path,
    config: EvalConfig,
    saved: Mapping[tuple[int, int], str] | None = None,
) -> dict[tuple[int, int], str]:
    """Play the episodes of ``plan`` that no earlier run finished (``saved``: those of its
    task's episodes file; the rest from the progress files); return all of them, by (item,
    sample), as record lines."""
    from llm_marl_envs.rollout import EpisodePlan, rollout
    from llm_marl_envs.rollout.engine import make_executor

    task = plan.task
    done = {**run_folder.finished_episodes(task, out), **(saved or {})}
    todo = plan.missing(done)
    if done and todo:
        config.say(f"  {task.name}: resuming, {len(done)} episodes kept, {len(todo)} to play")
    if todo:
        shard = run_folder.new_shard(task, out, todo)
        rollout(
            task.env,
            policies,
            plan=EpisodePlan(
                seeds=[item.seed for item, _ in todo],
                reset_options=[item.options for item, _ in todo],
            ),
            batch_size=config.batch_size,
            env_kwargs=task.kwargs,
            out=shard,
            keep="none",  # the records are read back from the shard: memory stays flat
            progress=config.progress,
            executor=make_executor(config.executor, num_workers=config.num_workers),
        )
        done = {**run_folder.finished_episodes(task, out), **(saved or {})}
    return done


def _save_task(
    plan: Plan, lines: dict[tuple[int, int], str], assignment: dict, out: Path, seconds: float
) -> TaskRun:
    """Write a finished task's ``episodes/<task>.jsonl`` and ``.meta.json`` (and remove its
    progress files); return it as a :class:`TaskRun`. Refuses (:class:`EvalError`, the file
    untouched) unless ``lines`` hold every (item, sample) of the task's frozen ``plan``."""
    task = plan.task
    problem = plan.difference(lines)
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
    config: EvalConfig | None = None,
) -> dict:
    """Play ``suite`` (or its ``tasks``) with ``team``; write and return ``results.json``.

    Args:
        suite: The suite (:func:`~llm_marl_envs.evaluation.suite.load_suite`).
        team: Who plays each seat (:class:`Team`).
        out_dir: Output folder; an earlier, stopped run of the same settings is resumed.
        config: How it runs (:class:`~llm_marl_envs.evaluation.config.EvalConfig`); or its
            fields one by one as the keywords of the same names (``tasks``, ``batch_size``,
            ``progress``, ``entry``, ``generation``, ``write``, ``executor``, ``num_workers``,
            ``server_options``), described there; not both.

    Raises :class:`EvalError` for an output folder that holds another run,
    :class:`~llm_marl_envs.evaluation.files.FolderBusy` while another process evaluates in
    it, and the rollout's ``RolloutInterrupted`` / ``RolloutError`` after saving the finished
    episodes.
    """
    config = EvalConfig.given(
        config,
        tasks=tasks,
        batch_size=batch_size,
        progress=progress,
        entry=entry,
        generation=generation,
        write=write,
        executor=executor,
        num_workers=num_workers,
        server_options=server_options,
    )
    out = Path(out_dir)
    chosen = [suite.task(name) for name in config.tasks] if config.tasks else list(suite.tasks)
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(
        out,
        run_folder.LOCK_FILE,
        "another llm-marl eval",
        "wait for it to finish (or stop it), or give another --out",
    ):
        return _evaluate(suite, team, out, chosen, config)


def _evaluate(suite: Suite, team: Team, out: Path, chosen: list[Task], config: EvalConfig) -> dict:
    """:func:`evaluate` with the folder locked: the results of an evaluation found complete,
    else every chosen task played (or taken complete from the folder) and scored."""
    from llm_marl_envs.evaluation import results as scoring

    run = _record_run(out, suite, team, chosen, config)
    plans = [task.plan() for task in chosen]
    config.say(
        f"{suite.label}: {len(chosen)} tasks, {sum(map(len, plans))} episodes, "
        f"team {team.label}; records in {out}"
    )
    saved = {plan.task.name: _saved(plan, out, config.say) for plan in plans}
    done = _finished_results(out) if all(whole for _, whole in saved.values()) else None
    if done is not None:
        finished = out / run_folder.RESULTS_FILE
        config.say(f"{out}: this evaluation is complete; its results are in {finished}")
        return done
    models = ModelCache(config.server_options)
    started = time.time()
    try:
        runs = [
            _task_run(
                plan, saved[plan.task.name], team, models, _seed(suite, plan.task), out, config
            )
            for plan in plans
        ]
        results = scoring.score(suite, runs, entry=config.entry or team.label, team=team)
        results["manifest"] = scoring.manifest(suite, team, runs, models.describe(), run, started)
    finally:
        models.close()
    run_folder.write_json(out / run_folder.RESULTS_FILE, results)
    return results


def _saved(
    plan: Plan, out: Path, say: Callable[[str], Any]
) -> tuple[dict[tuple[int, int], str], bool]:
    """What ``plan``'s episodes file holds, by (item, sample), and whether it is complete
    (every episode of the plan, nothing else); else a line lost, cut short or edited (named
    through ``say``) is played again."""
    lines, problems = run_folder.saved_episodes(plan.task, out, say)
    return lines, bool(lines) and not problems and not plan.difference(lines)


def _finished_results(out: Path) -> dict | None:
    """The folder's ``results.json``, or None when it has none (or one damaged by hand: it is
    scored again from the episodes)."""
    finished = out / run_folder.RESULTS_FILE
    if not finished.exists():
        return None
    try:
        done = json.loads(finished.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return done if isinstance(done, dict) else None


def _seed(suite: Suite, task: Task) -> int:
    """A task's seed: its place in the suite, not among the tasks chosen (a task plays the same
    episodes whichever other tasks run beside it, and verify regenerates it with this seed)."""
    return _task_seed(suite.raw.get("seed", 0), suite.tasks.index(task))


def _task_run(
    plan: Plan,
    saved: tuple[dict[tuple[int, int], str], bool],
    team: Team,
    models: ModelCache,
    seed: int,
    out: Path,
    config: EvalConfig,
) -> TaskRun:
    """``plan``'s task, taken from its episodes file when that is complete (``saved``: its lines
    and whether they are), else played where it lacks episodes and saved."""
    task, (lines, whole) = plan.task, saved
    with closing(make(task.env, **task.kwargs)) as env:
        assignment = team.assign(env.possible_agents)
        if not whole:
            policies = task_policies(models, task, env, assignment, seed, config.generation)
    if whole:
        earlier = _saved_run(plan, lines, out, assignment)
        config.say(f"  {task.name}: done earlier ({len(earlier.episodes)} episodes)")
        run_folder.clear_progress(task, out)  # left by a run stopped just after saving
        return earlier
    if lines:
        config.say(
            f"  {task.name}: episodes/{task.name}.jsonl lacks {len(plan) - len(lines)} of its "
            f"{len(plan)} episodes; playing them again"
        )
    tick = time.perf_counter()
    lines = _play_task(plan, policies, out, config, lines)
    done = _save_task(plan, lines, assignment, out, time.perf_counter() - tick)
    config.say(f"  {task.name}: {len(done.episodes)} episodes in {done.wall_seconds:.0f} s")
    return done


def _saved_run(
    plan: Plan, lines: Mapping[tuple[int, int], str], out: Path, assignment: dict[str, str]
) -> TaskRun:
    """A complete task's episodes file (read by :func:`_saved`) as a :class:`TaskRun`."""
    episodes = [
        (item, sample, EpisodeRecord.from_dict(json.loads(line)))
        for item, sample, line in plan.ordered(lines)
    ]
    meta = run_folder.read_meta(out, plan.task.name)
    return TaskRun(
        plan.task, episodes, meta.get("wall_seconds", 0.0), meta.get("data_hash"), assignment
    )
