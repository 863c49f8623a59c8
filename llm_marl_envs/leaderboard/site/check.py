"""The checks of the leaderboard site's board data: :func:`validate_board` and its helpers.

Separate from :mod:`llm_marl_envs.leaderboard.site.pages` (which re-exports :func:`validate_board`)
because they only read the board's shape (the keys and types its docstring lists) and build no
HTML: a ValueError names the first bad key path, before any page is written.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

INTERVAL_KEYS = ("mean", "lo", "hi", "n")


# --------------------------------------------------------------------------- checks
def _fail(path: str, problem: str = "is missing") -> None:
    raise ValueError(f"leaderboard board data: '{path}' {problem}")


def _need(obj: dict, key: str, path: str, kind: type | tuple[type, ...] | None = None) -> Any:
    """``obj[key]``, or a ValueError naming ``path.key`` when it is missing or of a wrong type."""
    where = f"{path}.{key}" if path else key
    if key not in obj:
        _fail(where)
    value = obj[key]
    if kind is not None and not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        _fail(where, f"must be a {names}, not {type(value).__name__}")
    return value


def _check_interval(value: Any, path: str, optional: bool = True) -> None:
    if value is None and optional:
        return
    if not isinstance(value, dict):
        _fail(path, f"must be an interval {{mean, lo, hi, n}}, not {type(value).__name__}")
    for key in INTERVAL_KEYS:
        number = _need(value, key, path, (int, float))
        if isinstance(number, bool):
            _fail(f"{path}.{key}", "must be a number, not bool")


def validate_board(board: Any) -> None:
    """Check the shape :func:`build_site` needs; a ValueError names the first bad key path
    (``entries[2].tasks.maze.metrics.success.lo``)."""
    if not isinstance(board, dict):
        raise ValueError(f"leaderboard board data must be a dict, not {type(board).__name__}")
    _need(board, "title", "", str)
    suite = _need(board, "suite", "", dict)
    for key in ("name", "version", "hash"):
        _need(suite, key, "suite")
    _need(board, "rank_rule", "", str)
    tasks = _need(board, "tasks", "", list)
    names = []
    for i, task in enumerate(tasks):
        path = f"tasks[{i}]"
        if not isinstance(task, dict):
            _fail(path, "must be a dict")
        names.append(_need(task, "name", path, str))
        _need(task, "env", path)
        _need(task, "primary", path, str)
        for j, metric in enumerate(_need(task, "metrics", path, list)):
            if not isinstance(metric, str):
                _fail(f"{path}.metrics[{j}]", "must be a str")
        if "higher_is_better" in task:
            _need(task, "higher_is_better", path, dict)
    for name, count in Counter(names).items():
        if count > 1:
            _fail(f"tasks[{names.index(name)}].name", f"repeats the task name {name!r}")
    entries = _need(board, "entries", "", list)
    ids = []
    for i, entry in enumerate(entries):
        path = f"entries[{i}]"
        if not isinstance(entry, dict):
            _fail(path, "must be a dict")
        ids.append(_need(entry, "id", path, str))
        _need(entry, "name", path, str)
        _need(entry, "manifest", path)
        _check_interval(entry.get("overall"), f"{path}.overall")
        for name, block in _need(entry, "tasks", path, dict).items():
            _check_task_block(block, f"{path}.tasks.{name}")
    for entry_id, count in Counter(ids).items():
        if count > 1:
            _fail(f"entries[{ids.index(entry_id)}].id", f"repeats the entry id {entry_id!r}")
    crossplay = board.get("crossplay") or {}
    if not isinstance(crossplay, dict):
        _fail("crossplay", "must be a dict")
    for name, block in crossplay.items():
        _check_crossplay(block, f"crossplay.{name}")


def _check_task_block(block: Any, path: str) -> None:
    if not isinstance(block, dict):
        _fail(path, "must be a dict")
    for metric, value in _need(block, "metrics", path, dict).items():
        _check_interval(value, f"{path}.metrics.{metric}")
    for k, episode in enumerate(block.get("episodes") or []):
        where = f"{path}.episodes[{k}]"
        if not isinstance(episode, dict):
            _fail(where, "must be a dict")
        _need(episode, "key", where)
        for t, turn in enumerate(_need(episode, "turns", where, list)):
            if not isinstance(turn, dict):
                _fail(f"{where}.turns[{t}]", "must be a dict")
            for key in ("agent", "observation", "action"):
                _need(turn, key, f"{where}.turns[{t}]")


def _check_crossplay(block: Any, path: str) -> None:
    if not isinstance(block, dict):
        _fail(path, "must be a dict")
    models = _need(block, "models", path, list)
    matrix = _need(block, "matrix", path, list)
    if len(matrix) != len(models):
        _fail(f"{path}.matrix", f"has {len(matrix)} rows for {len(models)} models")
    for r, row in enumerate(matrix):
        if not isinstance(row, list) or len(row) != len(models):
            _fail(f"{path}.matrix[{r}]", f"must be a list of {len(models)} cells")
        for c, cell in enumerate(row):
            _check_interval(cell, f"{path}.matrix[{r}][{c}]")
    for key in ("solo", "gap", "seat_order"):
        for name, value in (_need(block, key, path, dict) if key in block else {}).items():
            _check_interval(value, f"{path}.{key}.{name}")
