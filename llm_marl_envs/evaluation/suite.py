"""Versioned evaluation suites: what a benchmark result was measured on, frozen.

A suite is a YAML file (the packaged ones live in ``llm_marl_envs/evaluation/suites/``):

.. code-block:: yaml

    name: lite
    version: 2
    seed: 0                      # episode seeds of a task: seed + item index, unless listed
    tasks:
      - name: gsm8k
        env: llm_marl_envs/GSM8K-v0
        kwargs: {data_source: bundled, split: test}
        rows: "0:16"             # row indices of the split (a slice or a list): dataset tasks
        samples: 1               # episodes per item (pass@k needs k sampled answers)
        generation: {}           # greedy unless told (do_sample, temperature, top_p)
        max_new_tokens: null     # null: the env's registry budget (llm_marl_envs.token_budget)
        solo_kwargs: null        # the fully observed variant, if any (maze: {variant: full})
        metrics: [pass@1, pass@1/pioneer_0, format_failure/pioneer_0, format_failure/observer_0]
        primary: pass@1

A task's **items** are its frozen episode list: the rows of a named split (``rows``) or, for
procedural tasks and games, seeds (``seeds``). Item ``i`` resets with seed ``seed + i`` (or
``seeds[i]``) and, for dataset tasks, ``options={"row_index": rows[i]}``; each item is played
``samples`` times (same seed, same row; sampled answers differ).

Hashes make a result say what it saw: :meth:`Suite.hash` covers the whole suite file's
meaning (canonical JSON of the parsed suite, not its comments), :meth:`Task.spec_hash` the env's
registry entry, its version, the task's kwargs and generation settings, and
:func:`data_hash` the exact rows an evaluation used.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "PlanError",
    "Item",
    "Plan",
    "Suite",
    "SuiteError",
    "Task",
    "available_suites",
    "canonical_hash",
    "data_hash",
    "load_suite",
    "packaged_version",
]

#: Keys a task may have; anything else is a typo and refused.
_TASK_KEYS = {
    "name",
    "env",
    "kwargs",
    "rows",
    "seeds",
    "samples",
    "generation",
    "max_new_tokens",
    "metrics",
    "primary",
    "max_reward",
    "description",
    "solo_kwargs",
}
_GENERATION_KEYS = {"do_sample", "temperature", "top_p"}


_T = TypeVar("_T")


class SuiteError(ValueError):
    """A suite file that cannot be used (the message names the file, task and key)."""


def canonical_hash(value: Any) -> str:
    """``sha256:<hex>`` of ``value`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class PlanError(ValueError):
    """Episodes that are not a task's frozen plan (each item x sample exactly once)."""


@dataclass(frozen=True)
class Item:
    """One frozen episode of a task: the seed it resets with and its reset options."""

    index: int
    seed: int
    options: dict[str, Any] | None

    @property
    def key(self) -> str:
        """A stable name, ``row-12`` or ``seed-7``, used to pair episodes across entries."""
        if self.options and "row_index" in self.options:
            return f"row-{self.options['row_index']}"
        return f"seed-{self.seed}"


@dataclass(frozen=True)
class Task:
    """One task of a suite (see the module docstring for the fields)."""

    name: str
    env: str
    kwargs: dict[str, Any]
    items: tuple[Item, ...]
    samples: int = 1
    generation: dict[str, Any] = field(default_factory=dict)
    max_new_tokens: int | None = None
    metrics: tuple[str, ...] = ()
    primary: str = ""
    max_reward: float | None = None
    description: str = ""
    solo_kwargs: dict[str, Any] | None = None

    def solo(self) -> Task | None:
        """The task's fully observed variant (``solo_kwargs``, e.g. the maze's
        ``variant: full``: one player sees everything), where it has one; the "solo"
        condition of cross-play (:mod:`llm_marl_envs.evaluation.pairings`)."""
        if not self.solo_kwargs:
            return None
        return replace(self, kwargs={**self.kwargs, **self.solo_kwargs}, solo_kwargs=None)

    def token_budget(self) -> int:
        """Tokens per turn: the task's ``max_new_tokens``, else the env's registry budget."""
        from llm_marl_envs.registry import token_budget

        return self.max_new_tokens or token_budget(self.env)

    def generation_settings(self) -> dict[str, Any]:
        """Generation settings every policy of this task uses (greedy unless sampled)."""
        settings = {"do_sample": False, "temperature": 1.0, "top_p": 1.0}
        settings.update(self.generation)
        settings["max_new_tokens"] = self.token_budget()
        return settings

    def spec_hash(self) -> str:
        """Hash of the env's registry entry (its version included), the task's kwargs (all but
        ``data_source``: :func:`data_hash` covers the rows) and its generation settings: two
        results with the same spec hash played the same game."""
        from llm_marl_envs.registry import spec

        entry = spec(self.env)
        # where the data came from is not part of the game: data_hash() says which rows
        kwargs = {k: v for k, v in self.kwargs.items() if k != "data_source"}
        return canonical_hash(
            {
                "env": self.env,
                "entry_point": entry.entry_point,
                "registry_kwargs": {k: v for k, v in entry.kwargs.items() if k != "data_source"},
                "kwargs": kwargs,
                "generation": self.generation_settings(),
                "samples": self.samples,
            }
        )

    def plan(self) -> Plan:
        """The task's frozen episode plan (:class:`Plan`): every (item, sample) it plays, in
        order, numbered."""
        return Plan(self, tuple((item, s) for item in self.items for s in range(self.samples)))

    def episode_plan(self) -> list[tuple[Item, int]]:
        """Every (item, sample) this task plays, in order (:meth:`plan`'s episodes)."""
        return list(self.plan().episodes)

    def plan_difference(self, played: Iterable[tuple[int, int]]) -> str | None:
        """Why ``played`` ((item index, sample) pairs) is not this task's frozen plan
        (:meth:`Plan.difference`; None: it is)."""
        return self.plan().difference(played)


@dataclass(frozen=True)
class Plan:
    """A task's frozen episode plan: each of its items x samples once, in order (item by item,
    its samples together). An episode is named by its key, (item index, sample); its number is
    its place in the plan (the ``episode`` and ``group`` an uninterrupted run gives it).

    Attributes:
        task: The task.
        episodes: Every (item, sample), in order.
    """

    task: Task
    episodes: tuple[tuple[Item, int], ...]

    def __len__(self) -> int:
        return len(self.episodes)

    def __iter__(self) -> Iterator[tuple[Item, int]]:
        return iter(self.episodes)

    @functools.cached_property
    def numbering(self) -> dict[tuple[int, int], int]:
        """(item index, sample) -> the episode's number, its place in the plan."""
        return {(item.index, sample): k for k, (item, sample) in enumerate(self.episodes)}

    def missing(self, done: Container[tuple[int, int]]) -> list[tuple[Item, int]]:
        """The episodes, in order, whose keys ``done`` does not hold: what a resume plays."""
        return [
            (item, sample) for item, sample in self.episodes if (item.index, sample) not in done
        ]

    def ordered(self, by_key: Mapping[tuple[int, int], _T]) -> list[tuple[Item, int, _T]]:
        """``(item, sample, by_key[key])`` for every episode, in order (``by_key`` holds the
        whole plan)."""
        return [(item, sample, by_key[(item.index, sample)]) for item, sample in self.episodes]

    def difference(self, played: Iterable[tuple[int, int]]) -> str | None:
        """Why ``played`` ((item index, sample) pairs) is not this plan, each episode exactly
        once: the episodes missing, those not in the plan, those played twice (None: it is)."""
        plan = {(item.index, sample): (item, sample) for item, sample in self.episodes}
        counts: dict[tuple[int, int], int] = {}
        for pair in played:
            pair = tuple(pair)
            counts[pair] = counts.get(pair, 0) + 1
        missing = [plan[k] for k in plan if k not in counts]
        extra = [k for k in counts if k not in plan]
        twice = [k for k, n in counts.items() if n > 1 and k in plan]
        parts = []
        if missing:
            item, sample = missing[0]
            parts.append(
                f"{len(missing)} of its {len(plan)} episodes ({len(self.task.items)} items x "
                f"{self.task.samples} samples) are missing (first: {item.key} sample {sample})"
            )
        if extra:
            parts.append(
                f"{len(extra)} episode(s) are not in its plan (first: item {extra[0][0]!r} "
                f"sample {extra[0][1]!r})"
            )
        if twice:
            item, sample = plan[twice[0]]
            parts.append(
                f"{len(twice)} episode(s) appear twice (first: {item.key} sample {sample})"
            )
        return "; ".join(parts) or None


@dataclass(frozen=True)
class Suite:
    """A parsed suite: its name, version, tasks and the data it was read from."""

    name: str
    version: int
    tasks: tuple[Task, ...]
    description: str = ""
    source: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.name}-v{self.version}"

    def hash(self) -> str:
        """Hash of the parsed suite (comments and formatting do not count)."""
        return canonical_hash(self.raw)

    def with_data_sources(self, sources: dict[str, str]) -> Suite:
        """The suite with ``data_source`` set per task (``{"gsm8k": "/data/gsm8k"}``): a local
        copy in the Hub's schema instead of the Hub. The suite hash stays; each result's data
        hash says which rows were read."""
        unknown = sorted(set(sources) - {t.name for t in self.tasks})
        if unknown:
            raise SuiteError(
                f"--data names no task of {self.label}: {unknown}; its tasks: "
                + ", ".join(t.name for t in self.tasks)
            )
        tasks = tuple(
            replace(t, kwargs={**t.kwargs, "data_source": sources[t.name]})
            if t.name in sources
            else t
            for t in self.tasks
        )
        return replace(self, tasks=tasks)

    def task(self, name: str) -> Task:
        for task in self.tasks:
            if task.name == name:
                return task
        raise SuiteError(
            f"suite {self.label} has no task {name!r}; its tasks: "
            + ", ".join(t.name for t in self.tasks)
        )


def available_suites() -> list[str]:
    """Names of the packaged suites (``llm-marl eval lite`` takes one of them): each suite's
    newest version by its plain name (``lite``) and every older version that stays playable by
    its label (``lite-v1``)."""
    folder = resources.files("llm_marl_envs.evaluation") / "suites"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


#: ``<name>-v<version>``: a packaged suite at one version.
_LABEL = re.compile(r"(?P<name>[A-Za-z0-9_]+)-v(?P<version>[0-9]+)")


def _yaml(text: str) -> Any:
    """``text`` parsed as YAML, a fresh copy each call (the parse of each text is kept: the
    leaderboard reads the packaged suites once per entry it checks)."""
    return copy.deepcopy(_parsed(text))


@functools.lru_cache(maxsize=32)
def _parsed(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


def _packaged(name: str) -> tuple[str, str] | None:
    """(YAML text, source) of the packaged suite ``name``: a plain name is its newest version
    (``lite``), a label one version (``lite-v1``: a kept older file, or the newest when that
    is its version); None when the package has no such suite."""
    import yaml

    folder = resources.files("llm_marl_envs.evaluation") / "suites"
    own = folder / f"{name}.yaml"
    if own.is_file():
        return own.read_text(encoding="utf-8"), f"package:{name}"
    label = _LABEL.fullmatch(name)
    newest = folder / f"{label['name']}.yaml" if label else None
    if newest is None or not newest.is_file():
        return None
    text = newest.read_text(encoding="utf-8")
    try:
        raw = _yaml(text)
    except yaml.YAMLError:
        return None
    if isinstance(raw, dict) and raw.get("version") == int(label["version"]):
        return text, f"package:{label['name']}"
    return None


def load_suite(name_or_path: str | Path) -> Suite:
    """A packaged suite by name (``"lite"``, ``"full"``: the newest version), by label
    (``"lite-v1"``: an older version, which stays playable) or a suite YAML file by path."""
    import yaml

    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise SuiteError(f"no suite file {path}")
        text, source = path.read_text(encoding="utf-8"), str(path)
    else:
        found = _packaged(str(name_or_path))
        if found is None:
            raise SuiteError(
                f"unknown suite {str(name_or_path)!r}: use one of {', '.join(available_suites())} "
                "or the path of a suite YAML file"
            )
        text, source = found
    try:
        raw = _yaml(text)
    except yaml.YAMLError as error:
        raise SuiteError(f"{source}: not valid YAML ({error})") from None
    return parse_suite(raw, source)


def packaged_version(name: str, version: int) -> Suite | None:
    """The packaged suite ``name`` at ``version`` (the newest or a kept older one), or None
    when this package does not have that version."""
    label = f"{name}-v{version}"
    if type(version) is not int or not _LABEL.fullmatch(label) or _packaged(label) is None:
        return None
    suite = load_suite(label)
    return suite if (suite.name, suite.version) == (name, version) else None


def parse_suite(raw: Any, source: str = "<suite>") -> Suite:
    """A :class:`Suite` from a parsed YAML document; every problem is one clear SuiteError."""
    if not isinstance(raw, dict):
        raise SuiteError(f"{source}: a suite is a mapping with name, version and tasks")
    for key in ("name", "version", "tasks"):
        if key not in raw:
            raise SuiteError(f"{source}: missing {key!r}")
    if not isinstance(raw["version"], int) or raw["version"] < 1:
        raise SuiteError(f"{source}: version must be a positive integer, got {raw['version']!r}")
    if not isinstance(raw["tasks"], list) or not raw["tasks"]:
        raise SuiteError(f"{source}: tasks must be a non-empty list")
    seed = raw.get("seed", 0)
    if not isinstance(seed, int) or seed < 0:
        raise SuiteError(f"{source}: seed must be a non-negative integer, got {seed!r}")
    tasks = [_parse_task(t, seed, f"{source}: task {i}") for i, t in enumerate(raw["tasks"])]
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise SuiteError(f"{source}: task names repeat: {names}")
    return Suite(
        str(raw["name"]),
        raw["version"],
        tuple(tasks),
        str(raw.get("description", "")).strip(),
        source,
        raw,
    )


def _parse_task(raw: Any, seed: int, where: str) -> Task:
    import llm_marl_envs

    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: a task is a mapping")
    where = f"{where} ({raw.get('name', '?')})"
    unknown = set(raw) - _TASK_KEYS
    if unknown:
        raise SuiteError(f"{where}: unknown keys {sorted(unknown)}; known: {sorted(_TASK_KEYS)}")
    for key in ("name", "env", "metrics", "primary"):
        if key not in raw:
            raise SuiteError(f"{where}: missing {key!r}")
    try:
        llm_marl_envs.spec(raw["env"])
    except Exception as error:  # unknown id: the registry's message names close matches
        raise SuiteError(f"{where}: {error}") from None
    if ("rows" in raw) == ("seeds" in raw):
        raise SuiteError(f"{where}: give exactly one of 'rows' (dataset rows) or 'seeds'")
    listed = _indices(raw.get("rows", raw.get("seeds")), where)
    if "rows" in raw:
        items = [Item(i, seed + i, {"row_index": r}) for i, r in enumerate(listed)]
    else:
        items = [Item(i, s, None) for i, s in enumerate(listed)]
    generation = dict(raw.get("generation") or {})
    if set(generation) - _GENERATION_KEYS:
        raise SuiteError(
            f"{where}: generation takes {sorted(_GENERATION_KEYS)}, got {sorted(generation)}"
        )
    samples = raw.get("samples", 1)
    if not isinstance(samples, int) or samples < 1:
        raise SuiteError(f"{where}: samples must be a positive integer, got {samples!r}")
    from llm_marl_envs.evaluation.metrics import check_metric

    metrics = tuple(raw["metrics"])
    for metric in metrics:
        problem = check_metric(metric, samples)
        if problem:
            raise SuiteError(f"{where}: metric {metric!r}: {problem}")
    if raw["primary"] not in metrics:
        raise SuiteError(f"{where}: primary {raw['primary']!r} is not one of its metrics")
    return Task(
        name=str(raw["name"]),
        env=raw["env"],
        kwargs=dict(raw.get("kwargs") or {}),
        items=tuple(items),
        samples=samples,
        generation=generation,
        max_new_tokens=raw.get("max_new_tokens"),
        metrics=metrics,
        primary=raw["primary"],
        max_reward=raw.get("max_reward"),
        description=str(raw.get("description", "")).strip(),
        solo_kwargs=_solo_kwargs(raw, where),
    )


def _solo_kwargs(raw: dict, where: str) -> dict[str, Any] | None:
    """The task's ``solo_kwargs``, checked: the env must accept them."""
    solo = raw.get("solo_kwargs")
    if solo is None:
        return None
    if not isinstance(solo, dict) or not solo:
        raise SuiteError(f"{where}: solo_kwargs must be a non-empty mapping")
    import llm_marl_envs

    try:
        llm_marl_envs.make(raw["env"], **{**(raw.get("kwargs") or {}), **solo})
    except Exception as error:  # a wrong argument: the env's own message
        raise SuiteError(f"{where}: solo_kwargs {solo}: {error}") from None
    return dict(solo)


def _indices(value: Any, where: str) -> list[int]:
    """A list of non-negative ints from ``[1, 2, 5]`` or a slice string ``"0:16"``."""
    if isinstance(value, str):
        parts = value.split(":")
        if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
            start, stop = int(parts[0]), int(parts[1])
            if stop > start:
                return list(range(start, stop))
        raise SuiteError(f"{where}: a range is 'START:STOP' with START < STOP, got {value!r}")
    if isinstance(value, list) and value and all(isinstance(v, int) and v >= 0 for v in value):
        if len(set(value)) != len(value):
            raise SuiteError(f"{where}: the episode list repeats an entry")
        return list(value)
    raise SuiteError(f"{where}: rows/seeds must be 'START:STOP' or a list of integers >= 0")


def data_hash(task: Task, env: Any = None) -> str | None:
    """Hash of the exact data rows ``task`` plays (in item order), with the data's source,
    name and split; None for tasks without a dataset (procedural tasks and games).

    ``env``: an env made with the task's kwargs (made here when not given).
    """
    rows = [item.options["row_index"] for item in task.items if item.options]
    if not rows:
        return None
    if env is None:
        import llm_marl_envs

        env = llm_marl_envs.make(task.env, **task.kwargs)
    data = getattr(env.unwrapped, "data", None)
    if data is None:
        return None
    try:
        used = [{"row_id": data.row_ids[r], "row": data.rows[r]} for r in rows]
    except IndexError:
        raise SuiteError(
            f"task {task.name}: rows up to {max(rows)} asked for, but {data.name}/{data.split} "
            f"from {data.source} has {len(data.rows)} rows"
        ) from None
    return canonical_hash({"name": data.name, "split": data.split, "rows": used})
