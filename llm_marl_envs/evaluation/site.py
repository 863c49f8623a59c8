"""The static leaderboard site: HTML files that open from ``file://``, no server, no network.

:func:`build_site` turns the board data (made by
:func:`llm_marl_envs.evaluation.leaderboard.build_board`; the shape is checked, see below) into:

* ``index.html``: the suite, the rank rule, the overall table (rank, entry with its kind and
  verification, the overall score and the task scores it averages: each task's primary metric
  on 0..1, 1 best) and one table per task (every metric, raw; caveats under the table where a
  secondary metric is not a measure of quality), each score as ``mean [lo, hi] (n)``, the
  overall and primary ones with an interval bar on the metric's own range (0..1 for shares,
  the metric's bounds otherwise) with a zero line; rows by rank, by score within a rank, and
  the rows of one rank shaded alike (a tie group, ``2=``); entries that did not play every
  item unranked and marked incomplete; every column sortable by a click; then the cross-play
  heatmaps by model name, with the solo scores, collaboration gaps and seat-order effects;

and, in the version folder ``site-<hash>/`` that the index links into (see :func:`build_site`:
the site is installed in one swap of ``index.html``):

* ``entries/<id>.html``: an entry's team, verification, scores with their tie marks, manifest;
* ``transcripts/<id>/<task>.html``: an entry's kept episodes of a task, turn by turn (each score
  in the tables links here); an action over :data:`ACTION_LIMIT` characters (an observation
  over :data:`OBSERVATION_LIMIT`) is cut with a note, and episodes past :data:`PAGE_LIMIT`
  bytes of page are left out with a note, so a hostile transcript cannot make a page no
  browser loads;
* ``style.css`` and ``sort.js``: the look and the column sorting (no libraries, no network).

The tables are plain HTML, readable with JavaScript off; ``sort.js`` only reorders rows by
each cell's ``data-sort`` value (and keeps ``aria-sort`` on the headers). Every piece of text
from the data is escaped, so model output shows as text, never as markup. The output depends
only on the board (no clock, stable order), so two builds of one board are byte-identical.

Entry ids may hold ``/`` or ``:`` (``hf:Qwen/Qwen2.5-0.5B``): their files are named by
:func:`file_id`, a safe slug plus a short hash of the id.

The board (keys marked ``?`` may be left out)::

    {"title", "suite": {"name", "version", "hash"}, "generated"?, "rank_rule",
     "tasks": [{"name", "env", "primary", "metrics": [...], "higher_is_better"?: {metric: bool},
                "bounds"?: {metric: [low | None, high | None]}, "caveats"?: {metric: text},
                "description"?}],
     "entries": [{"id", "name", "kind"?, "verified"?: True | False | None, "team"?,
                  "verification"?: {"summary"?: text}, "complete"?: bool,
                  "items"?: {"played", "expected"},
                  "overall"?: {"mean", "lo", "hi", "n", "rank"?} | None,
                  "tasks": {task: {"rank"?, "team"?, "metrics": {metric: interval | None},
                                   "score"?: interval (the primary metric on 0..1),
                                   "episodes"?: [{"key", "score"?, "turns": [{"agent",
                                   "observation", "action", "reward"?, "format_error"?}]}]}},
                  "manifest": {...}}],
     "crossplay"?: {task: {"models": [...], "names"?: {model: display name}, "seats"?,
                           "seat_groups"?: [[row seats], [column seats]], "primary"?,
                           "matrix": [[interval | None]] (row: the model in the first seat),
                           "solo"?, "gap"?, "seat_order"?: {"A|B": interval},
                           "measured_on"?: the older suite version it was played on}}}

where an interval is ``{"mean", "lo", "hi", "n"}``. A metric without ``bounds`` is drawn on
0..1 where its values fit there, else on the column's own extent (0 included); a task block
without ``score`` shows its primary metric in the overall table.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import re
import shutil
import tempfile
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.files import folder_flock, fsync_folder, write_atomic

__all__ = ["build_site", "file_id", "rank_order", "validate_board"]

ASSETS = ("style.css", "sort.js")
INTERVAL_KEYS = ("mean", "lo", "hi", "n")
_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# C0 controls (but tab, newline, carriage return), DEL and lone surrogates cannot be written
# as HTML text in UTF-8: they show as U+FFFD.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
VERIFIED = {True: "verified", False: "not reproduced", None: "not checked"}
#: Characters of an action (of an observation) shown in a transcript page; the rest is cut.
ACTION_LIMIT = 4_000
OBSERVATION_LIMIT = 16_000
#: Bytes of transcript page past which further episodes are left out (with a note).
PAGE_LIMIT = 4_000_000


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


# --------------------------------------------------------------------------- text
def file_id(entry_id: str) -> str:
    """A file name for an entry id (ids may hold ``/`` or ``:``): a slug plus a short hash."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", entry_id).strip("-.")[:60] or "entry"
    return f"{slug}-{hashlib.sha256(entry_id.encode('utf-8', 'replace')).hexdigest()[:8]}"


def task_file(name: str) -> str:
    """A file name for a task: the name itself when it is safe, else a slug plus a hash."""
    if _SAFE.fullmatch(name) and len(name) <= 60:
        return name
    return file_id(name)


def _e(value: Any) -> str:
    """``value`` as HTML text, safe in element content and in quoted attributes."""
    text = html.escape(str(value), quote=True)
    return _UNPRINTABLE.sub("\ufffd", text) if _UNPRINTABLE.search(text) else text


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if not _finite(value):
        return _e(value)
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def _sort_key(value: Any) -> str:
    """A ``data-sort`` number: ``repr`` of a finite float, else empty (sorted last)."""
    return repr(float(value)) if _finite(value) else ""


def _interval_text(value: dict) -> str:
    return (
        f"{_fmt(value['mean'])} <small>[{_fmt(value['lo'])}, {_fmt(value['hi'])}] "
        f"({_e(value['n'])})</small>"
    )


# --------------------------------------------------------------------------- pieces
class Scale:
    """The range an interval bar is drawn on, ``[low, high]``, with a zero line where 0 lies
    inside it."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = float(low), float(high)
        if self.high - self.low < 1e-12:
            self.high = self.low + 1.0

    @classmethod
    def of(cls, bounds: Any, values: list[dict | None]) -> Scale:
        """The metric's own range (``bounds``: ``[low, high]``, None for an open end); an open
        end takes the column's extent (0 included); no bounds at all: 0..1 when the values
        fit there."""
        seen = [v[k] for v in values if v for k in ("lo", "hi", "mean") if _finite(v[k])]
        low, high = (
            bounds if isinstance(bounds, (list, tuple)) and len(bounds) == 2 else (None,) * 2
        )
        if bounds is None and all(0.0 <= x <= 1.0 for x in seen):
            low, high = 0.0, 1.0
        low = low if _finite(low) else min([0.0, *seen])
        high = high if _finite(high) else max([low, *seen])
        return cls(low, high)

    def pct(self, value: Any) -> float:
        """Where ``value`` lies on the scale, in percent (clamped)."""
        if not _finite(value):
            return 0.0
        share = (min(max(value, self.low), self.high) - self.low) / (self.high - self.low)
        return round(100 * share, 1)

    def bar(self, value: dict) -> str:
        """The interval as a band, the mean as a tick and 0 as a line (CSS, in percent)."""
        lo, hi, mean = self.pct(value["lo"]), self.pct(value["hi"]), self.pct(value["mean"])
        zero = (
            f'<span class="zero" style="left:{self.pct(0.0)}%"></span>'
            if self.low <= 0.0 <= self.high
            else ""
        )
        return (
            f'<span class="bar" aria-hidden="true">{zero}<span class="ci" style="left:{lo}%;'
            f'width:{max(round(hi - lo, 1), 0.0)}%"></span><span class="mu" '
            f'style="left:{mean}%"></span></span>'
        )


#: The scale of task scores (0..1) and of their differences (cross-play gaps, seat order).
SHARE = Scale(0.0, 1.0)
DIFFERENCE = Scale(-1.0, 1.0)


def _score_cell(value: dict | None, scale: Scale | None, link: str | None = None) -> str:
    """A table cell: the bar (when there is a ``scale``) and ``mean [lo, hi] (n)``, linked; a
    dash when there is no value."""
    if not value:
        return '<td class="num none" data-sort="">—</td>'
    text = _interval_text(value)
    if link:
        text = f'<a href="{_e(link)}">{text}</a>'
    if scale is None:
        return f'<td class="num" data-sort="{_sort_key(value["mean"])}">{text}</td>'
    return f'<td class="num b" data-sort="{_sort_key(value["mean"])}">{scale.bar(value)}{text}</td>'


def _header(columns: list[tuple[str, str, str]]) -> str:
    """``<thead>`` of sortable columns: (label, "num" | "text", tooltip)."""
    cells = "".join(
        f'<th scope="col" data-type="{kind}" aria-sort="none"'
        + (f' title="{_e(tip)}"' if tip else "")
        + f'><button type="button">{_e(label).replace("/", "/<wbr>")}</button></th>'
        for label, kind, tip in columns
    )
    return f"<thead><tr>{cells}</tr></thead>"


def rank_order(entries: list[dict], interval_of, higher_is_better: bool = True) -> list[dict]:
    """Entries by rank (unranked last), by score within a rank (a tie group), then in the
    order given (a stable sort). ``interval_of(entry)``: its ranked interval (with ``rank``)
    or None."""

    def key(entry: dict) -> tuple:
        interval = interval_of(entry) or {}
        rank, mean = interval.get("rank"), interval.get("mean")
        score = mean if _finite(mean) else -math.inf if higher_is_better else math.inf
        return (rank is None, rank or 0, -score if higher_is_better else score)

    return sorted(entries, key=key)


def _rank_text(rank: int | None, shared: int) -> str:
    return "—" if rank is None else (f"{rank}=" if shared > 1 else str(rank))


def _rank_rows(ranks: list[int | None]) -> list[tuple[str, str]]:
    """Per row (in rank order): its band class, alternating from one tie group to the next,
    and its rank cell (``2=`` when the rank is shared, a dash when unranked)."""
    counts = Counter(r for r in ranks if r is not None)
    rows, band, previous = [], 1, object()
    for rank in ranks:
        if rank != previous:
            band, previous = 1 - band, rank
        shared = counts[rank] if rank is not None else 0
        tip = (
            f' title="{shared} entries share rank {rank}"'
            if shared > 1
            else ' title="not ranked: it did not play every item"'
            if rank is None
            else ""
        )
        cell = (
            f'<td class="num rank" data-sort="{_sort_key(rank)}"{tip}>'
            f"{_rank_text(rank, shared)}</td>"
        )
        rows.append((f"band{band}", cell))
    return rows


def _verification(entry: dict) -> tuple[str, str]:
    """The badge's class and text: the board's summary of what was checked (made by
    the leaderboard's verify), else whether a replay reproduced the entry."""
    state = VERIFIED.get(entry.get("verified"), "not checked")
    summary = (entry.get("verification") or {}).get("summary")
    return state.replace(" ", "-"), str(summary) if summary else state


def _badges(entry: dict) -> str:
    """The entry's verification badge, and an incomplete mark for a partial run."""
    css, text = _verification(entry)
    badges = f'<span class="badge {css}">{_e(text)}</span>'
    if entry.get("complete") is False:
        items = entry.get("items") or {}
        played = f": {items['played']} of {items['expected']} episodes" if items else ""
        badges += f' <span class="badge incomplete">incomplete{_e(played)}</span>'
    return badges


def _entry_cell(entry: dict) -> str:
    """The entry's name (linked to its page), its kind and badges on a second line."""
    kind = f'<span class="kind">{_e(entry["kind"])}</span> ' if entry.get("kind") else ""
    return (
        f'<td class="name" data-sort="{_e(entry["name"].lower())}"><a href="entries/'
        f'{file_id(entry["id"])}.html">{_e(entry["name"])}</a>'
        f'<span class="meta">{kind}{_badges(entry)}</span></td>'
    )


def _transcript_link(entry: dict, task: str) -> str:
    return f"transcripts/{file_id(entry['id'])}/{task_file(task)}.html"


def _metric_tip(task: dict, metric: str) -> str:
    better = (task.get("higher_is_better") or {}).get(metric)
    tip = {True: "higher is better", False: "lower is better"}.get(better, "")
    caveat = (task.get("caveats") or {}).get(metric) if metric != task["primary"] else None
    return f"{tip}; {caveat}" if caveat and tip else caveat or tip


def _task_score(entry: dict, task: dict) -> dict | None:
    """The task's score as the overall averages it (its primary metric on 0..1)."""
    block = entry["tasks"].get(task["name"]) or {}
    if "score" in block:
        return block["score"]
    return (block.get("metrics") or {}).get(task["primary"])


OVERALL_TIP = (
    "the mean of the task scores (each task's primary metric on 0..1, 1 best: the columns to "
    "the right), 95% interval, episodes"
)


def _overall_table(board: dict) -> str:
    tasks = board["tasks"]
    entries = rank_order(board["entries"], lambda e: e.get("overall"))
    columns = [
        ("rank", "num", board["rank_rule"]),
        ("entry", "text", "its kind and what was verified below the name"),
        ("overall", "num", OVERALL_TIP),
    ]
    columns += [
        (t["name"], "num", f"task score: {t['primary']} ({t['env']}) on 0..1, 1 best")
        for t in tasks
    ]
    ranks = [(e.get("overall") or {}).get("rank") for e in entries]
    rows = []
    for entry, (band, rank_cell) in zip(entries, _rank_rows(ranks), strict=True):
        cells = [rank_cell, _entry_cell(entry), _score_cell(entry.get("overall"), SHARE)]
        for task in tasks:
            ran = task["name"] in entry["tasks"]
            link = _transcript_link(entry, task["name"]) if ran else None
            cells.append(_score_cell(_task_score(entry, task), SHARE, link))
        rows.append(f'<tr class="{band}">{"".join(cells)}</tr>')
    return (
        '<p class="note">The task columns are the <strong>task scores</strong> the overall '
        "score averages: each task's primary metric on a 0..1 scale where 1 is best (a "
        "sentiment of -1..1 becomes 0..1, so neutral text scores 0.5). The task tables below "
        "show the raw metrics.</p>"
        f'<div class="scroll"><table class="sortable compact" id="overall">{_header(columns)}'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _caveats(task: dict) -> dict[str, str]:
    """Secondary metric (its name before ``/``) -> why it is not a measure of quality."""
    notes: dict[str, str] = {}
    for metric in task["metrics"]:
        text = (task.get("caveats") or {}).get(metric)
        if text and metric != task["primary"]:
            notes.setdefault(metric.partition("/")[0], text)
    return notes


def _task_section(board: dict, task: dict) -> str:
    name, metrics, primary = task["name"], task["metrics"], task["primary"]
    better = (task.get("higher_is_better") or {}).get(primary, True)
    ran = [e for e in board["entries"] if name in e["tasks"]]
    ran = rank_order(ran, lambda e: _ranked(e["tasks"][name], primary), better)
    columns = [("rank", "num", f"by {primary}"), ("entry", "text", "")]
    columns += [(m, "num", _metric_tip(task, m)) for m in metrics]
    # An interval bar for the primary metric (the ranking one), on its own range; the
    # others as numbers, which keeps a 100-entry page light.
    scale = Scale.of(
        (task.get("bounds") or {}).get(primary),
        [e["tasks"][name]["metrics"].get(primary) for e in ran],
    )
    ranks = [e["tasks"][name].get("rank") for e in ran]
    rows = []
    for entry, (band, rank_cell) in zip(ran, _rank_rows(ranks), strict=True):
        block = entry["tasks"][name]
        link = _transcript_link(entry, name)
        cells = [rank_cell, _entry_cell(entry)]
        for metric in metrics:
            shown = scale if metric == primary else None
            cells.append(_score_cell(block["metrics"].get(metric), shown, link))
        rows.append(f'<tr class="{band}">{"".join(cells)}</tr>')
    missing = len(board["entries"]) - len(ran)
    note = f" {missing} entries did not run it." if missing else ""
    description = f"{_e(task['description'].rstrip('.'))}. " if task.get("description") else ""
    caveats = "".join(
        f"<li><code>{_e(metric)}</code>: {_e(text)}</li>" for metric, text in _caveats(task).items()
    )
    if caveats:
        caveats = f'<div class="caveats"><p>Not measures of quality:</p><ul>{caveats}</ul></div>'

    return (
        f'<section class="task" id="task-{_e(task_file(name))}"><h3>{_e(name)} '
        f"<small>{_e(task['env'])}</small></h3><p>{description}Ranked by "
        f"<code>{_e(primary)}</code>; hover a column name for its direction.{note}</p>"
        f'<div class="scroll"><table class="sortable">{_header(columns)}<tbody>{"".join(rows)}'
        f"</tbody></table></div>{caveats}</section>"
    )


def _ranked(block: dict, primary: str) -> dict | None:
    """A task block's primary interval with the block's rank."""
    value = (block.get("metrics") or {}).get(primary)
    return {**value, "rank": block.get("rank")} if value else {"rank": block.get("rank")}


def _heat_cell(value: dict | None, row: str, col: str) -> str:
    if not value:
        return '<td class="num heat none" data-sort="">—</td>'
    share = SHARE.pct(value["mean"]) / 100
    light = round(96 - 52 * share)
    ink = " dark" if light < 62 else ""
    tip = (
        f"{row} with {col}: {_fmt(value['mean'])} [{_fmt(value['lo'])}, {_fmt(value['hi'])}] "
        f"n={value['n']}"
    )
    return (
        f'<td class="num heat{ink}" data-sort="{_sort_key(value["mean"])}" title="{_e(tip)}" '
        f'style="background:hsl(212,62%,{light}%)">{_fmt(value["mean"])}<small>'
        f"[{_fmt(value['lo'])}, {_fmt(value['hi'])}]</small></td>"
    )


def _seats(data: dict) -> tuple[str, str]:
    """The seats of the row model and of the column model, in words."""
    groups = data.get("seat_groups")
    if groups and len(groups) == 2 and all(groups):
        return tuple(" and ".join(str(seat) for seat in group) for group in groups)
    seats = data.get("seats") or ["the first seat", "the second seat"]
    return str(seats[0]), str(seats[-1])


def _effects(data: dict, model) -> str:
    """The solo scores and collaboration gaps, then the seat-order effects, of one task."""
    models = data["models"]
    solo, gap = data.get("solo") or {}, data.get("gap") or {}
    named = [m for m in models if m in solo or m in gap]
    named += sorted(m for m in {*solo, *gap} if m not in named)
    if named:
        effects = (
            '<div class="scroll"><table class="effects"><thead><tr><th scope="col">model</th>'
            '<th scope="col">solo</th><th scope="col">collaboration gap (with itself minus '
            "solo)</th></tr></thead><tbody>"
            + "".join(
                f'<tr><th scope="row">{model(m)}</th>{_score_cell(solo.get(m), SHARE)}'
                f"{_score_cell(gap.get(m), DIFFERENCE)}</tr>"
                for m in named
            )
            + "</tbody></table></div>"
        )
    else:
        effects = (
            '<p class="note">No solo condition: this task has no fully observed variant, so '
            "no collaboration gap.</p>"
        )
    order = data.get("seat_order") or {}
    if order:
        first = _seats(data)[0]
        effects += (
            '<div class="scroll"><table class="effects"><thead><tr><th scope="col">pair A | B'
            f'</th><th scope="col">seat order: A first minus B first (first = {_e(first)})'
            "</th></tr></thead><tbody>"
            + "".join(
                f'<tr><th scope="row">{_pair(pair, model)}</th>{_score_cell(v, DIFFERENCE)}</tr>'
                for pair, v in order.items()
            )
            + "</tbody></table></div>"
        )
    return effects


def _pair(pair: str, model) -> str:
    first, _, second = pair.partition("|")
    return f"{model(first)} | {model(second)}" if second else _e(pair)


CROSSPLAY_INTRO = (
    "Each task's primary metric on 0..1 (1 best) for every pair of models. <strong>Solo</strong>"
    ": the model alone, in every seat of the task's fully observed variant (the maze with one "
    "player who sees all the walls and the treasure); the <strong>collaboration gap</strong> is "
    "the model paired with a copy of itself on the ordinary, partially observed task minus "
    "solo, paired by item (negative: it does worse when the task is split). The "
    "<strong>seat-order effect</strong> of a pair is A first minus B first. Differences are "
    "drawn on -1..1 with a line at 0."
)


def _measured_on(data: dict) -> str:
    """The note on a cross-play block carried over from an older suite version."""
    label = data.get("measured_on")
    if not isinstance(label, str) or not label:
        return ""
    return (
        f" Played on {_e(label)}, which plays this task exactly as this version does (same "
        "environment spec, items and scoring): the same games."
    )


def _crossplay_section(board: dict) -> str:
    crossplay = board.get("crossplay") or {}
    order = [t["name"] for t in board["tasks"] if t["name"] in crossplay]
    order += sorted(name for name in crossplay if name not in order)
    ids = {e["id"] for e in board["entries"]}
    primaries = {t["name"]: t["primary"] for t in board["tasks"]}
    blocks = []
    for name in order:
        data = crossplay[name]
        names = data.get("names") or {}

        def model(spec: str, names: dict = names) -> str:
            label = _e(names.get(spec, spec))
            tip = f' title="policy spec {_e(spec)}"' if names.get(spec, spec) != spec else ""
            if spec in ids:
                return f'<a href="entries/{file_id(spec)}.html"{tip}>{label}</a>'
            return f"<span{tip}>{label}</span>" if tip else label

        models, matrix = data["models"], data["matrix"]
        row_seats, column_seats = _seats(data)
        metric = data.get("primary") or primaries.get(name, "")
        head = "".join(f'<th scope="col">{model(m)}</th>' for m in models)
        rows = "".join(
            f'<tr><th scope="row">{model(m)}</th>'
            + "".join(
                _heat_cell(v, names.get(m, m), names.get(other, other))
                for v, other in zip(row, models, strict=True)
            )
            + "</tr>"
            for m, row in zip(models, matrix, strict=True)
        )
        blocks.append(
            f'<section class="crossplay" id="crossplay-{_e(task_file(name))}"><h3>{_e(name)} '
            f"<small>{_e(metric)}</small></h3>"
            f'<p class="note">Row: the model in {_e(row_seats)}; column: the model in '
            f"{_e(column_seats)}. Mean [95% interval]; darker is higher.{_measured_on(data)}</p>"
            '<div class="scroll"><table class="heatmap"><thead>'
            f"<tr><td></td>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
            f"{_effects(data, model)}</section>"
        )
    if not blocks:
        return ""
    return f'<h2 id="crossplay">Cross-play</h2><p>{CROSSPLAY_INTRO}</p>' + "".join(blocks)


# --------------------------------------------------------------------------- pages
def _page(title: str, body: str, depth: int = 0, script: bool = False) -> str:
    up = "../" * depth
    tail = f'<script src="{up}sort.js"></script>\n' if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{_e(title)}</title><link rel="stylesheet" href="{up}style.css"></head>\n'
        f"<body>\n{body}\n{tail}</body></html>\n"
    )


def _index(board: dict) -> str:
    suite = board["suite"]
    generated = f", generated {_e(board['generated'])}" if board.get("generated") else ""
    nav = "".join(
        f'<a href="#task-{_e(task_file(t["name"]))}">{_e(t["name"])}</a>' for t in board["tasks"]
    )
    if board.get("crossplay"):
        nav += '<a href="#crossplay">cross-play</a>'
    tasks = "".join(_task_section(board, task) for task in board["tasks"])
    body = (
        f"<header><h1>{_e(board['title'])}</h1><p>Suite <code>{_e(suite['name'])}</code> "
        f"version {_e(suite['version'])}, hash <code>{_e(suite['hash'])}</code>; "
        f"{len(board['entries'])} entries{generated}.</p>"
        f'<p class="rule"><strong>Ranks.</strong> {_e(board["rank_rule"].rstrip("."))}.</p>'
        "<p>Each score is <em>mean [lo, hi] (n)</em>: the mean, its 95% interval (Wilson for "
        "pass/fail outcomes, else a bootstrap at least one item's swing wide) and the number "
        "of items. The bar draws the interval on the metric's own range (0..1 for shares), "
        "the tick is the mean and the thin line is 0. Rows go by rank, then by score; rows in "
        "one shade share a rank (a tie group, marked <em>=</em>). Click a column name to "
        "sort, a score to read its episodes, an entry for its manifest.</p></header>"
        f'<nav><a href="#overall-section">overall</a>{nav}</nav>'
        f'<main><section id="overall-section"><h2>Overall</h2>{_overall_table(board)}</section>'
        f"<h2>Tasks</h2>{tasks}{_crossplay_section(board)}</main>"
    )
    return _page(board["title"], body, script=True)


def _shared_ranks(board: dict, entry: dict) -> tuple[int, dict[str, int]]:
    """How many entries share ``entry``'s overall rank, and its rank in each task."""
    rank = (entry.get("overall") or {}).get("rank")
    overall = sum((e.get("overall") or {}).get("rank") == rank for e in board["entries"])
    tasks = {}
    for name, block in entry["tasks"].items():
        mine = block.get("rank")
        tasks[name] = sum(
            (e["tasks"].get(name) or {}).get("rank") == mine for e in board["entries"]
        )
    return overall, tasks


def _entry_page(board: dict, entry: dict) -> str:
    shared_overall, shared = _shared_ranks(board, entry)
    rows = []
    for task in board["tasks"]:
        name = task["name"]
        block = entry["tasks"].get(name)
        if block is None:
            rows.append(
                f'<tr><th scope="row">{_e(name)}</th><td class="num">—</td>'
                '<td class="num none">— (not run)</td><td class="num">0</td></tr>'
            )
            continue
        value = (block.get("metrics") or {}).get(task["primary"])
        text = _interval_text(value) if value else "—"
        rank = _rank_text(block.get("rank"), shared.get(name, 0))
        rows.append(
            f'<tr><th scope="row">{_e(name)}</th><td class="num rank">{_e(rank)}</td>'
            f'<td class="num"><a href="../{_transcript_link(entry, name)}">{text}</a> '
            f"<small>{_e(task['primary'])}</small></td>"
            f'<td class="num">{len(block.get("episodes") or [])}</td></tr>'
        )
    overall = entry.get("overall")
    rank = _rank_text(overall.get("rank"), shared_overall) if overall else "—"
    summary = (
        f"Overall {_interval_text(overall)}, rank {_e(rank)}." if overall else "No overall score."
    )
    manifest = json.dumps(entry["manifest"], indent=2, ensure_ascii=False, default=str)
    team = json.dumps(entry.get("team"), ensure_ascii=False, default=str)
    kind = f"{_e(entry['kind'])}, " if entry.get("kind") else ""
    body = (
        f'<nav><a href="../../index.html">&larr; leaderboard</a></nav>'
        f'<h1 class="name">{_e(entry["name"])}</h1><p>Entry <code>{_e(entry["id"])}</code>, '
        f"{kind}{_badges(entry)}. {summary}</p><p>Team: <code>{_e(team)}</code></p>"
        '<h2>Tasks</h2><div class="scroll"><table class="plain"><thead><tr>'
        '<th scope="col">task</th><th scope="col">rank</th><th scope="col">primary metric '
        '(links to the transcripts)</th><th scope="col">episodes kept</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        f'<h2>Manifest</h2><pre class="manifest">{_e(manifest)}</pre>'
    )
    return _page(f"{entry['name']}: {board['title']}", body, depth=1)


def _cut(text: Any, limit: int) -> str:
    """``text``, or its first ``limit`` characters and a note of how many were cut."""
    text = str(text)
    if len(text) <= limit:
        return _e(text)
    return (
        f'{_e(text[:limit])}<span class="cut">[… {len(text) - limit:,} more characters not '
        "shown; the episode file holds them all]</span>"
    )


def _turn(turn: dict) -> str:
    error = turn.get("format_error")
    flag = f' <span class="error">format error: {_cut(error, ACTION_LIMIT)}</span>' if error else ""
    reward = f" <small>reward {_fmt(turn.get('reward'))}</small>" if "reward" in turn else ""
    return (
        f'<li class="turn"><p class="who">{_e(turn["agent"])}{reward}{flag}</p>'
        f"<details><summary>observation</summary><pre>"
        f"{_cut(turn['observation'], OBSERVATION_LIMIT)}</pre></details>"
        f'<pre class="action">{_cut(turn["action"], ACTION_LIMIT)}</pre></li>'
    )


def _episodes(episodes: list[dict]) -> tuple[list[str], int]:
    """The episodes' HTML, as many as fit in :data:`PAGE_LIMIT` bytes, and how many are left
    out."""
    parts, size = [], 0
    for k, episode in enumerate(episodes):
        score = f": score {_fmt(episode.get('score'))}" if "score" in episode else ""
        part = (
            f'<details class="episode" id="episode-{k}"{" open" if k == 0 else ""}><summary>'
            f"{_e(episode['key'])}{score} <small>({len(episode['turns'])} turns)</small>"
            f'</summary><ol class="turns">{"".join(_turn(t) for t in episode["turns"])}</ol>'
            "</details>"
        )
        size += len(part.encode("utf-8", "replace"))
        if size > PAGE_LIMIT and parts:
            return parts, len(episodes) - k
        parts.append(part)
    return parts, 0


def _transcript_page(board: dict, entry: dict, task: str, block: dict) -> str:
    episodes = block.get("episodes") or []
    parts, left_out = _episodes(episodes)
    team = json.dumps(block.get("team") or entry.get("team"), ensure_ascii=False, default=str)
    shown = (
        f"{len(episodes)} episodes kept, in item order; the first one is open."
        if episodes
        else "No episodes were kept for this task."
    )
    if left_out:
        shown += (
            f" The last {left_out} are left out: this page would pass "
            f"{PAGE_LIMIT // 1_000_000} MB; the episode file holds them."
        )
    body = (
        f'<nav><a href="../../../index.html">&larr; leaderboard</a> · <a href="../../entries/'
        f'{file_id(entry["id"])}.html">{_e(entry["name"])}</a></nav>'
        f'<h1 class="name">{_e(entry["name"])}: {_e(task)}</h1><p>Seats: <code>{_e(team)}'
        f"</code>. {shown}</p>" + "".join(parts)
    )
    return _page(f"{entry['name']}: {task}", body, depth=2)


# --------------------------------------------------------------------------- build
def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="replace", newline="\n")


#: A version folder of the site (the pages but ``index.html``), named by its content.
VERSION = re.compile(r"site-[0-9a-f]{16}")
#: The links of ``index.html`` that point into the version folder.
_INTO_VERSION = re.compile(r'(href|src)="(?=entries/|transcripts/|style\.css"|sort\.js")')


def _digest(folder: Path) -> str:
    """sha256 of every file under ``folder``: its path and its bytes."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _remove(path: Path, out: Path) -> None:
    """Remove a folder of ``out`` by renaming it to a hidden scratch name first, so a build
    killed while deleting never leaves a half-deleted version under a version's name."""
    doomed = Path(tempfile.mkdtemp(prefix=".site-build-old-", dir=out))
    os.replace(path, doomed / "x")
    shutil.rmtree(doomed, ignore_errors=True)


def build_site(board: dict, out_dir: str | Path) -> Path:
    """Write the static site of ``board`` into ``out_dir`` and return its ``index.html``.

    The pages but the index go to a version folder, ``site-<hash>/`` (``style.css``,
    ``sort.js``, ``entries/``, ``transcripts/``), named by a hash of its content and built
    under a hidden scratch name (``.site-build-*``) that becomes the version's name in one
    rename, complete. ``index.html``, which links into it, is then replaced in one atomic
    rename: the one swap that publishes the build. A reader (or a build killed at any point)
    sees the old site or the new one, never a mix; the versions no index links to and the
    scratch folders of killed builds are removed by the next build. Builds into one folder
    take turns (an ``flock`` on the folder); other files in ``out_dir`` are kept. Raises
    ValueError, naming the key path, when ``board`` lacks something (see
    :func:`validate_board`).
    """
    validate_board(board)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    with folder_flock(out):
        for stale in out.glob(".site-build-*"):  # left by a killed build: none is running
            shutil.rmtree(stale, ignore_errors=True)
        scratch = Path(tempfile.mkdtemp(prefix=".site-build-", dir=out))
        try:
            version = _build_version(board, scratch)
            if not (out / version).is_dir():  # the same content is already there, whole
                os.chmod(scratch, 0o755)
                os.rename(scratch, out / version)
            index = _INTO_VERSION.sub(rf'\1="{version}/', _index(board))
            fsync_folder(out)
            write_atomic(out / "index.html", index.encode("utf-8", "replace"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        for old in out.iterdir():
            if VERSION.fullmatch(old.name) and old.name != version and old.is_dir():
                _remove(old, out)
    return out / "index.html"


def _build_version(board: dict, folder: Path) -> str:
    """Write the pages but the index into ``folder``; return the version's name."""
    (folder / "entries").mkdir()
    (folder / "transcripts").mkdir()
    assets = resources.files("llm_marl_envs.evaluation") / "site_assets"
    for name in ASSETS:
        (folder / name).write_bytes((assets / name).read_bytes())
    for entry in board["entries"]:
        fid = file_id(entry["id"])
        _write(folder / "entries" / f"{fid}.html", _entry_page(board, entry))
        pages = folder / "transcripts" / fid
        pages.mkdir()
        for task in board["tasks"]:
            block = entry["tasks"].get(task["name"])
            if block is not None:
                page = _transcript_page(board, entry, task["name"], block)
                _write(pages / f"{task_file(task['name'])}.html", page)
    return f"site-{_digest(folder)[:16]}"
