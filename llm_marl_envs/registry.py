"""The environment registry: ``envs_registry.yaml`` is its one source of truth.

The YAML file sits at the top of the repository; the wheel carries it inside the package
(``setup.py`` copies it at build time), so the same file serves a source checkout, an
editable install and an installed wheel.

**Versions are registry arguments.** Each environment is one class whose defaults are its
v0; a version is an entry whose ``kwargs`` state the arguments that define it (as Gymnasium's
CartPole-v0 and -v1 are one class). :func:`make` and :func:`make_parallel` build the class with
them and stamp the version's name on the made env (``env.metadata["name"]``, an instance copy
of the class's metadata: ``"TLDRSummarization-v1"``), which transcripts show.

Importing this module reads the file and registers every id in PettingZoo's registry too,
through :func:`make` / :func:`make_parallel`, so ``pettingzoo.make("aec",
"llm_marl_envs/GSM8K-v0")`` gives the same env after ``import llm_marl_envs``, and the
single-agent views are in Gymnasium's registry too
(``gymnasium.make("llm_marl_envs/GSM8K-observer_0-v0")``; see
:mod:`llm_marl_envs.integrations.gymnasium`).
Environment modules are imported only when an environment is made.
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pettingzoo
import yaml

from llm_marl_envs.core.simultaneous import TextParallelEnv

__all__ = [
    "DEFAULT_TOKEN_BUDGET",
    "EnvSpec",
    "UnknownEnvironmentError",
    "latest_envs",
    "list_envs",
    "load_registry",
    "make",
    "make_parallel",
    "parse_assignments",
    "parse_env_args",
    "registry_path",
    "spec",
    "token_budget",
]

_FILENAME = "envs_registry.yaml"
_REQUIRED = ("id", "entry_point", "description", "paper", "scripted_policy")


class UnknownEnvironmentError(ValueError):
    """An environment id that is not in the registry (the message suggests close ids)."""


@dataclass(frozen=True)
class EnvSpec:
    """One registry entry.

    Attributes:
        id: ``namespace/Name-vN``.
        entry_point: ``"module:Class"`` of the AEC environment.
        parallel_entry_point: ``"module:Class"`` of the native Parallel environment, or None.
        kwargs: The constructor arguments that define this version (overridden by
            ``make(..., **kwargs)``).
        description: One line.
        paper: The paper the task comes from.
        agents: Agent names, for documentation.
        turns: Turn structure, for documentation.
        reward: Reward summary, for documentation.
        scripted_policy: ``"module:function"`` of the environment's scripted players, called
            as ``function(agent, seed)`` (see :mod:`llm_marl_envs.policies.scripted`).
        max_new_tokens: The generation budget a whole answer needs on this task (tokens per
            turn); ``llm-marl demo``, ``play``, ``rollout`` and the benchmarks use it when no
            budget is given. It does not change the environment.
    """

    id: str
    entry_point: str
    description: str
    paper: str
    parallel_entry_point: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    agents: tuple[str, ...] = ()
    turns: str = ""
    reward: str = ""
    scripted_policy: str | None = None
    max_new_tokens: int | None = None


def registry_path() -> Path:
    """Location of ``envs_registry.yaml``: inside the installed package, else the repo root."""
    here = Path(__file__).resolve().parent
    for candidate in (here / _FILENAME, here.parent / _FILENAME):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"{_FILENAME} was found neither in {here} (installed wheel) nor in {here.parent} "
        "(source checkout); the installation is incomplete"
    )


def load_registry(path: Path | None = None) -> dict[str, EnvSpec]:
    """Parse and validate the registry file into ``{id: EnvSpec}``."""
    path = path or registry_path()
    with path.open(encoding="utf-8") as f:
        entries = yaml.safe_load(f)["environments"]
    specs: dict[str, EnvSpec] = {}
    for entry in entries:
        missing = [k for k in _REQUIRED if not entry.get(k)]
        if missing:
            raise ValueError(f"{path}: entry {entry.get('id', entry)!r} lacks {missing}")
        if entry["id"] in specs:
            raise ValueError(f"{path}: duplicate id {entry['id']!r}")
        entry = dict(entry)
        entry["kwargs"] = dict(entry.get("kwargs") or {})
        entry["agents"] = tuple(entry.get("agents") or ())
        specs[entry["id"]] = EnvSpec(**entry)
    return specs


_SPECS: dict[str, EnvSpec] = load_registry()


def list_envs() -> list[str]:
    """Ids of every registered environment, in registry order."""
    return list(_SPECS)


def latest_envs() -> list[str]:
    """The newest version of each environment (``CoopCoding-v1`` rather than ``-v0``), in
    registry order of their first versions: what demos and summaries play."""
    newest: dict[str, tuple[int, str]] = {}
    for env_id in _SPECS:
        name, _, version = env_id.rpartition("-v")
        if name not in newest or int(version) > newest[name][0]:
            newest[name] = (int(version), env_id)
    return [env_id for _, env_id in newest.values()]


#: The generation budget of an environment whose registry entry names none.
DEFAULT_TOKEN_BUDGET = 128


def token_budget(env_id: str) -> int:
    """Tokens per turn a model needs for a whole answer on ``env_id`` (its registry
    ``max_new_tokens``, else :data:`DEFAULT_TOKEN_BUDGET`).

    >>> token_budget("llm_marl_envs/MazeCollab-v1")
    64
    """
    return spec(env_id).max_new_tokens or DEFAULT_TOKEN_BUDGET


def spec(env_id: str) -> EnvSpec:
    """The :class:`EnvSpec` of ``env_id``; unknown ids raise with the closest known ids."""
    try:
        return _SPECS[env_id]
    except (KeyError, TypeError):
        pass
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, got {type(env_id).__name__}")
    by_lower = {k.lower(): k for k in _SPECS}
    candidates = difflib.get_close_matches(env_id.lower(), list(by_lower), n=3, cutoff=0.4)
    # also compare without the namespace, so "GSM8K-v0" suggests "llm_marl_envs/GSM8K-v0"
    short = {k.split("/")[-1].lower(): k for k in _SPECS}
    candidates += difflib.get_close_matches(
        env_id.lower().split("/")[-1], list(short), n=3, cutoff=0.4
    )
    suggestions = list(dict.fromkeys(by_lower.get(c) or short[c] for c in candidates))
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    raise UnknownEnvironmentError(
        f"Unknown environment id {env_id!r}.{hint} Known ids: {', '.join(_SPECS)}"
    )


def _load(entry_point: str) -> Any:
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


def make(env_id: str, **kwargs: Any) -> pettingzoo.AECEnv:
    """Create the AEC environment ``env_id`` with the registry's defaults updated by ``kwargs``.

    >>> import llm_marl_envs
    >>> env = llm_marl_envs.make("llm_marl_envs/GSM8K-v0", data_source="bundled")
    >>> env.possible_agents
    ['pioneer_0', 'observer_0']
    """
    env_spec = spec(env_id)
    return _named(_load(env_spec.entry_point)(**{**env_spec.kwargs, **kwargs}), env_spec)


def make_parallel(env_id: str, **kwargs: Any) -> pettingzoo.ParallelEnv:
    """Create the Parallel form of ``env_id``; raises ``ValueError`` for turn-based games."""
    env_spec = spec(env_id)
    if env_spec.parallel_entry_point is None:
        raise ValueError(
            f"{env_id} is turn-based ({env_spec.turns}): it has no Parallel form. "
            "Use llm_marl_envs.make() for its AEC form."
        )
    env = _load(env_spec.parallel_entry_point)(**{**env_spec.kwargs, **kwargs})
    if isinstance(env, TextParallelEnv):
        _named(env.aec_env, env_spec)  # the game inside renders the transcripts
    return _named(env, env_spec)


def _named(env: Any, env_spec: EnvSpec) -> Any:
    """``env`` with its version's name in its own copy of the class's ``metadata``."""
    env.metadata = {**env.metadata, "name": env_spec.id.rpartition("/")[2]}
    return env


def parse_assignments(items: Sequence[str] | None, what: str) -> dict[str, Any]:
    """``["key=value", ...]`` to a dict; values are read as YAML (numbers, booleans, lists).
    ``what`` names the option in the error (``"--agent"``).

    >>> parse_assignments(["size=5", "walls=[1, 2]", "name=bob"], "--env-arg")
    {'size': 5, 'walls': [1, 2], 'name': 'bob'}
    """
    result: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} must look like KEY=VALUE, got {item!r}")
        try:
            result[key] = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            result[key] = value
    return result


def parse_env_args(items: str | Sequence[str] | None) -> dict[str, Any]:
    """Environment arguments for :func:`make`, in the one syntax the CLI and both trainers accept.

    Each item is ``KEY=VALUE`` (the value read as YAML: numbers, booleans, lists, ``null``),
    several of them separated by commas (``split=train,num_turns=2``; commas inside brackets
    or quotes stay in the value), or a JSON / YAML mapping (``'{"num_turns": 2}'``). Later
    items override earlier ones.

    >>> parse_env_args(["num_turns=2,turn_weights=[1.2, 0.8]", '{"split": "eval"}'])
    {'num_turns': 2, 'turn_weights': [1.2, 0.8], 'split': 'eval'}
    """
    if items is None:
        return {}
    result: dict[str, Any] = {}
    for item in [items] if isinstance(items, str) else items:
        text = item.strip()
        if not text or text in ("None", "null"):
            continue
        if text.startswith("{"):
            try:
                mapping = yaml.safe_load(text)
            except yaml.YAMLError as error:
                raise ValueError(
                    f"environment arguments: not a mapping: {text!r} ({error})"
                ) from None
            if not isinstance(mapping, dict):
                raise ValueError(f"environment arguments: not a mapping: {text!r}")
            result.update(mapping)
            continue
        result.update(parse_assignments(_split_top_level(text), "an environment argument"))
    return result


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas that are not inside brackets, braces or quotes."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [part for part in parts if part]


def _register_with_pettingzoo() -> None:
    """Both PettingZoo registries make an id through :func:`make` / :func:`make_parallel`."""
    for env_spec in _SPECS.values():
        if env_spec.id not in pettingzoo.aec_registry:
            pettingzoo.register(
                "aec", env_spec.id, entry_point=functools.partial(make, env_spec.id)
            )
        if env_spec.parallel_entry_point and env_spec.id not in pettingzoo.parallel_registry:
            pettingzoo.register(
                "parallel", env_spec.id, entry_point=functools.partial(make_parallel, env_spec.id)
            )


_register_with_pettingzoo()


#: Where Gymnasium finds the single-agent view (imported only when such an env is made).
GYMNASIUM_ENTRY_POINT = "llm_marl_envs.integrations.gymnasium:SingleAgentEnv"


def agent_names(env_id: str) -> list[str]:
    """Every agent of ``env_id`` (the registry's ``[player_0, ..., player_11]`` expanded).

    >>> agent_names("llm_marl_envs/DonorGame-v0")[-1]
    'player_11'
    """
    names = list(spec(env_id).agents)
    if "..." not in names:
        return names
    first, last = names[0], names[-1]
    prefix = first.rstrip("0123456789")
    start, stop = int(first[len(prefix) :]), int(last[len(prefix) :])
    return [f"{prefix}{i}" for i in range(start, stop + 1)]


def agents_of(env_id: str, **env_kwargs: Any) -> list[str]:
    """The agents of the environment ``make(env_id, **env_kwargs)`` builds: the registry's
    (:func:`agent_names`) without arguments; with them, the built environment's own (a Donor
    game of ``num_agents=4`` has ``player_0`` to ``player_3``, not the registry's twelve).

    >>> agents_of("llm_marl_envs/DonorGame-v1", num_agents=4)[-1]
    'player_3'
    """
    if not env_kwargs:
        return agent_names(env_id)
    env = make(env_id, **env_kwargs)
    try:
        return list(env.possible_agents)
    finally:
        env.close()


def gymnasium_id(env_id: str, agent: str | None = None) -> str:
    """The Gymnasium id of ``agent``'s single-agent view of ``env_id`` (``env_id`` itself for
    the view whose learner is the first agent).

    >>> gymnasium_id("llm_marl_envs/GSM8K-v0", "pioneer_0")
    'llm_marl_envs/GSM8K-pioneer_0-v0'
    """
    if agent is None:
        return env_id
    namespace, _, rest = env_id.partition("/")
    name, _, version = rest.rpartition("-v")
    return f"{namespace}/{name}-{agent}-v{version}"


def gymnasium_ids() -> list[tuple[str, dict[str, str]]]:
    """Every single-agent view in Gymnasium's registry: ``(id, kwargs of the view)``, in
    registry order, each environment's own id first, then one per agent.

    >>> gymnasium_ids()[1][1]
    {'env_id': 'llm_marl_envs/GSM8K-v0', 'agent': 'pioneer_0'}
    """
    return [
        (gymnasium_id(env_id, agent), {"env_id": env_id, **({"agent": agent} if agent else {})})
        for env_id in _SPECS
        for agent in (None, *agent_names(env_id))
    ]


def _register_with_gymnasium() -> None:
    """``gymnasium.make("llm_marl_envs/<Env>-<agent>-v0")`` after ``import llm_marl_envs``.

    Only names and a string entry point are registered here, once: the view's module
    (``llm_marl_envs.integrations.gymnasium``) is imported when such an env is made.
    """
    import gymnasium

    for gid, kwargs in gymnasium_ids():
        if gid not in gymnasium.registry:
            gymnasium.register(id=gid, entry_point=GYMNASIUM_ENTRY_POINT, kwargs=kwargs)


_register_with_gymnasium()
