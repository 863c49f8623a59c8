"""The shape of an entry's ``results.json``: every field the leaderboard reads, with its type.

``results.json`` comes from a submitter, so every field the board reads or shows is checked
before it is used: a number where a string belongs (``manifest.finished: 5``), a null where an
object belongs, a 10,000-character "version" or a key that is not text would otherwise surface
as a ``TypeError`` deep inside ``build``, or as attacker text on every page. :func:`check`
returns the first field that is not of its shape, as ``manifest.tasks.maze.seats: ...`` (the
caller names the file); fields this module does not name are allowed (a newer package may
write more) and never read or shown.

The shape follows what :func:`llm_marl_envs.evaluation.results.score` and
:func:`llm_marl_envs.evaluation.results.manifest` write, plus the ``board`` block that
``leaderboard add`` writes into an entry (its id, display name and kind).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from llm_marl_envs.evaluation.run_folder import RESULTS_SCHEMA

__all__ = ["KINDS", "MAX_TEXT", "check"]

#: What an entry may be: a model (or a team of models), a baseline or a trained model.
KINDS = ("model", "baseline", "trained")
#: The longest text any checked field may hold (a policy spec, a model id, a hash, a version).
MAX_TEXT = 1_000
#: The most keys any checked mapping may hold (tasks, seats, policies, libraries, ...).
MAX_KEYS = 1_000

Check = Callable[[Any, str], "str | None"]


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def text(limit: int = MAX_TEXT) -> Check:
    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, str):
            return f"{path} must be text, not {_type_name(value)}"
        if len(value) > limit:
            return f"{path} is {len(value):,} characters, over {limit:,}"
        return None

    return check


def integer(low: int, high: int) -> Check:
    def check(value: Any, path: str) -> str | None:
        if type(value) is not int:
            return f"{path} must be an integer, not {_type_name(value)}"
        if not low <= value <= high:
            return f"{path} is {value}, outside {low}..{high}"
        return None

    return check


def number(value: Any, path: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{path} must be a number, not {_type_name(value)}"
    return None


def boolean(value: Any, path: str) -> str | None:
    return None if isinstance(value, bool) else f"{path} must be true or false"


def scalar(value: Any, path: str) -> str | None:
    """Text, a number, true/false or null: what a described field (hardware, a policy's
    description, generation settings) may hold."""
    if value is None or isinstance(value, (bool, int, float)):
        return None
    return text()(value, path)


def json_value(value: Any, path: str) -> str | None:
    """Any JSON value (its size and depth are bounded when it is parsed)."""
    return None


def optional(inner: Check) -> Check:
    return lambda value, path: None if value is None else inner(value, path)


def one_of(*values: Any) -> Check:
    def check(value: Any, path: str) -> str | None:
        if value in values and type(value) in {type(v) for v in values}:
            return None
        return f"{path} must be one of {', '.join(map(repr, values))}, not {str(value)[:40]!r}"

    return check


def mapping(values: Check, keys: Check | None = None, limit: int = MAX_KEYS) -> Check:
    """An object of any keys (text, checked by ``keys`` too) whose values pass ``values``."""

    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, dict):
            return f"{path} must be an object, not {_type_name(value)}"
        if len(value) > limit:
            return f"{path} has {len(value):,} keys, over {limit:,}"
        for key, item in value.items():
            problem = text(200)(key, f"{path} key") or (keys and keys(key, f"{path} key"))
            problem = problem or values(item, f"{path}.{key}")
            if problem:
                return problem
        return None

    return check


def array(items: Check, limit: int = 1_000_000) -> Check:
    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, list):
            return f"{path} must be an array, not {_type_name(value)}"
        if len(value) > limit:
            return f"{path} has {len(value):,} items, over {limit:,}"
        for index, item in enumerate(value):
            problem = items(item, f"{path}[{index}]")
            if problem:
                return problem
        return None

    return check


def fields(required: Mapping[str, Check], optional_fields: Mapping[str, Check] = ()) -> Check:
    """An object with the ``required`` keys and, when present, the ``optional_fields`` ones,
    each of its shape; other keys are allowed and never read."""
    optional_fields = dict(optional_fields)

    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, dict):
            return f"{path} must be an object, not {_type_name(value)}"
        for key, inner in required.items():
            if key not in value:
                return f"{path}.{key} is missing".lstrip(".")
            problem = inner(value[key], f"{path}.{key}".lstrip("."))
            if problem:
                return problem
        for key, inner in optional_fields.items():
            if key in value:
                problem = inner(value[key], f"{path}.{key}".lstrip("."))
                if problem:
                    return problem
        return None

    return check


INTERVAL = fields({"mean": number, "lo": number, "hi": number, "n": integer(0, 2**62)})
SUITE = fields({"name": text(100), "version": integer(0, 10_000), "hash": text(100)})
TASK_MANIFEST = fields(
    {
        "env": text(),
        "env_spec_hash": text(100),
        "samples": integer(1, 10_000),
        "generation": mapping(scalar),
        "seats": mapping(text()),
    },
    {
        "env_kwargs": mapping(json_value),
        "data_hash": optional(text(100)),
        "data_source": optional(text()),
        "items": array(json_value),
        "wall_seconds": optional(number),
        "tokens_generated": optional(integer(0, 2**62)),
    },
)
MANIFEST = fields(
    {
        "package": fields(
            {"version": text(100)}, {"name": text(100), "commit": optional(text(100))}
        ),
        "suite": SUITE,
        "tasks": mapping(TASK_MANIFEST),
        "team": mapping(json_value),
        "policies": mapping(mapping(scalar)),
        "batch_size": integer(1, 65_536),
    },
    {
        "libraries": mapping(text(100)),
        "hardware": mapping(scalar),
        "wall_seconds": optional(number),
        "tokens_generated": optional(integer(0, 2**62)),
        "started": text(40),
        "finished": text(40),
    },
)
BOARD = fields({"id": text(200), "name": text(), "kind": one_of(*KINDS)})
RESULTS = fields(
    {
        "schema": one_of(RESULTS_SCHEMA),
        "suite": SUITE,
        "manifest": MANIFEST,
        "tasks": mapping(mapping(json_value)),
    },
    {
        "entry": optional(text()),
        "team": json_value,
        "complete": boolean,
        "overall": optional(INTERVAL),
        "board": BOARD,
    },
)


def check(results: Any) -> str | None:
    """The first field of ``results`` (a parsed ``results.json``) that is not of its shape, as
    a phrase naming its path; None when every field the board reads is."""
    return RESULTS(results, "")
