"""The HTML pieces of the leaderboard site's index: safe text, file names, interval bars,
score and rank cells, the overall and task tables (the cross-play heatmaps are in
:mod:`~llm_marl_envs.leaderboard.site.crossplay`).

Separate from :mod:`llm_marl_envs.leaderboard.site.pages`, which re-exports these names and keeps the
whole pages (index, entry, transcript) and the one-swap install: everything here is pure (board
data in, an HTML string out), writes no file and escapes every piece of text from the data
with :func:`escape`.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from collections import Counter
from typing import Any

_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# C0 controls (but tab, newline, carriage return), DEL and lone surrogates cannot be written
# as HTML text in UTF-8: they show as U+FFFD.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
VERIFIED = {True: "verified", False: "not reproduced", None: "not checked"}


# --------------------------------------------------------------------------- text
def file_id(entry_id: str) -> str:
    """A file name for an entry id (ids may hold ``/`` or ``:``): a slug plus 64 bits of the
    id's sha256 (32 bits could be matched by trying ids; two ids whose names still meet, or
    differ only in case, leave the later one out of the board: :func:`~llm_marl_envs.
    leaderboard.standings.build_board`)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", entry_id).strip("-.")[:60] or "entry"
    return f"{slug}-{hashlib.sha256(entry_id.encode('utf-8', 'replace')).hexdigest()[:16]}"


def task_file(name: str) -> str:
    """A file name for a task: the name itself when it is safe, else a slug plus a hash."""
    if _SAFE.fullmatch(name) and len(name) <= 60:
        return name
    return file_id(name)


def escape(value: Any) -> str:
    """``value`` as HTML text, safe in element content and in quoted attributes."""
    text = html.escape(str(value), quote=True)
    return _UNPRINTABLE.sub("\ufffd", text) if _UNPRINTABLE.search(text) else text


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number_text(value: Any) -> str:
    """A number as a cell shows it: three decimals (thousands grouped past 1000), a dash for
    None, anything else escaped as text."""
    if value is None:
        return "—"
    if not _finite(value):
        return escape(value)
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def sort_key(value: Any) -> str:
    """A ``data-sort`` number: ``repr`` of a finite float, else empty (sorted last)."""
    return repr(float(value)) if _finite(value) else ""


def interval_text(value: dict) -> str:
    """An interval as ``mean [lo, hi] (n)``, in HTML."""
    return (
        f"{number_text(value['mean'])} "
        f"<small>[{number_text(value['lo'])}, {number_text(value['hi'])}] "
        f"({escape(value['n'])})</small>"
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


def score_cell(value: dict | None, scale: Scale | None, link: str | None = None) -> str:
    """A table cell: the bar (when there is a ``scale``) and ``mean [lo, hi] (n)``, linked; a
    dash when there is no value."""
    if not value:
        return '<td class="num none" data-sort="">—</td>'
    text = interval_text(value)
    if link:
        text = f'<a href="{escape(link)}">{text}</a>'
    if scale is None:
        return f'<td class="num" data-sort="{sort_key(value["mean"])}">{text}</td>'
    return f'<td class="num b" data-sort="{sort_key(value["mean"])}">{scale.bar(value)}{text}</td>'


def _header(columns: list[tuple[str, str, str]]) -> str:
    """``<thead>`` of sortable columns: (label, "num" | "text", tooltip)."""
    cells = "".join(
        f'<th scope="col" data-type="{kind}" aria-sort="none"'
        + (f' title="{escape(tip)}"' if tip else "")
        + f'><button type="button">{escape(label).replace("/", "/<wbr>")}</button></th>'
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


def rank_text(rank: int | None, shared: int) -> str:
    """A rank as shown: ``2=`` when ``shared`` by more than one entry, a dash when unranked."""
    return "—" if rank is None else (f"{rank}=" if shared > 1 else str(rank))


def _rank_rows(
    ranks: list[int | None], reasons: list[str | None] | None = None
) -> list[tuple[str, str]]:
    """Per row (in rank order): its band class, alternating from one tie group to the next,
    and its rank cell (``2=`` when the rank is shared, a dash when unranked, with the
    row's reason from ``reasons`` as its tooltip)."""
    counts = Counter(r for r in ranks if r is not None)
    rows, band, previous = [], 1, object()
    reasons = reasons or [None] * len(ranks)
    for rank, reason in zip(ranks, reasons, strict=True):
        if rank != previous:
            band, previous = 1 - band, rank
        shared = counts[rank] if rank is not None else 0
        tip = (
            f' title="{shared} entries share rank {rank}"'
            if shared > 1
            else f' title="{escape(reason or "not ranked: it did not play every item")}"'
            if rank is None
            else ""
        )
        cell = (
            f'<td class="num rank" data-sort="{sort_key(rank)}"{tip}>{rank_text(rank, shared)}</td>'
        )
        rows.append((f"band{band}", cell))
    return rows


def _verification(entry: dict) -> tuple[str, str]:
    """The badge's class and text: the board's summary of what was checked (made by
    the leaderboard's verify), else whether a replay reproduced the entry."""
    state = VERIFIED.get(entry.get("verified"), "not checked")
    summary = (entry.get("verification") or {}).get("summary")
    return state.replace(" ", "-"), str(summary) if summary else state


def entry_badges(entry: dict) -> str:
    """The entry's verification badge, an incomplete mark for a partial run, and why a complete
    entry is not ranked (a seat no replay can regenerate, a failed verification)."""
    css, text = _verification(entry)
    badges = f'<span class="badge {css}">{escape(text)}</span>'
    if entry.get("complete") is False:
        items = entry.get("items") or {}
        played = f": {items['played']} of {items['expected']} episodes" if items else ""
        badges += f' <span class="badge incomplete">incomplete{escape(played)}</span>'
    why = entry.get("unranked")
    if why and entry.get("complete") is not False:  # (an incomplete one says so above)
        badges += f' <span class="badge incomplete">{escape(why)}</span>'
    return badges


def played_by(entry: dict) -> str:
    """Who played an entry, as one line: every policy spec of its seats, never cut (a seat
    hidden past a cut would show a team as less than it was), with the model id a
    verification loaded for it (the board data's ``played_by``). Its length is bounded by the
    seats the suite's environments have and the checked length of a spec."""
    shown = []
    for policy in entry.get("played_by") or []:
        model = policy.get("model_id")
        shown.append(f"{policy['spec']} ({model})" if model else str(policy["spec"]))
    text = ", ".join(shown) or "—"
    return text


def _entry_cell(entry: dict) -> str:
    """The entry's name (linked to its page), who played it, its kind and badges."""
    kind = f'<span class="kind">{escape(entry["kind"])}</span> ' if entry.get("kind") else ""
    claim = "" if entry.get("verified") else " (claimed)"
    played = (
        f'<span class="played">played by {escape(played_by(entry))}{claim}</span>'
        if entry.get("played_by")
        else ""
    )
    return (
        f'<td class="name" data-sort="{escape(entry["name"].lower())}"><a href="entries/'
        f'{file_id(entry["id"])}.html">{escape(entry["name"])}</a>{played}'
        f'<span class="meta">{kind}{entry_badges(entry)}</span></td>'
    )


def transcript_link(entry: dict, task: str) -> str:
    """The path of an entry's transcript page of ``task``, relative to the version folder."""
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


def overall_table(board: dict) -> str:
    """The index's overall table: rank, entry, overall score and the task scores it averages."""
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
    reasons = [e.get("unranked") for e in entries]
    rows = []
    for entry, (band, rank_cell) in zip(entries, _rank_rows(ranks, reasons), strict=True):
        cells = [rank_cell, _entry_cell(entry), score_cell(entry.get("overall"), SHARE)]
        for task in tasks:
            ran = task["name"] in entry["tasks"]
            link = transcript_link(entry, task["name"]) if ran else None
            cells.append(score_cell(_task_score(entry, task), SHARE, link))
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


def task_section(board: dict, task: dict) -> str:
    """The index's section of one task: its table of every metric, and its caveats."""
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
    reasons = [e["tasks"][name].get("unranked") for e in ran]
    rows = []
    for entry, (band, rank_cell) in zip(ran, _rank_rows(ranks, reasons), strict=True):
        block = entry["tasks"][name]
        link = transcript_link(entry, name)
        cells = [rank_cell, _entry_cell(entry)]
        for metric in metrics:
            shown = scale if metric == primary else None
            cells.append(score_cell(block["metrics"].get(metric), shown, link))
        rows.append(f'<tr class="{band}">{"".join(cells)}</tr>')
    missing = len(board["entries"]) - len(ran)
    note = f" {missing} entries did not run it." if missing else ""
    description = f"{escape(task['description'].rstrip('.'))}. " if task.get("description") else ""
    caveats = "".join(
        f"<li><code>{escape(metric)}</code>: {escape(text)}</li>"
        for metric, text in _caveats(task).items()
    )
    if caveats:
        caveats = f'<div class="caveats"><p>Not measures of quality:</p><ul>{caveats}</ul></div>'

    return (
        f'<section class="task" id="task-{escape(task_file(name))}"><h3>{escape(name)} '
        f"<small>{escape(task['env'])}</small></h3><p>{description}Ranked by "
        f"<code>{escape(primary)}</code>; hover a column name for its direction.{note}</p>"
        f'<div class="scroll"><table class="sortable">{_header(columns)}<tbody>{"".join(rows)}'
        f"</tbody></table></div>{caveats}</section>"
    )


def _ranked(block: dict, primary: str) -> dict | None:
    """A task block's primary interval with the block's rank."""
    value = (block.get("metrics") or {}).get(primary)
    return {**value, "rank": block.get("rank")} if value else {"rank": block.get("rank")}
