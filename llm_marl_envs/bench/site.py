"""The static leaderboard site: HTML files that open from ``file://``, no server, no network.

:func:`build_site` turns the board data (:func:`llm_marl_envs.bench.leaderboard.build_board`)
into:

* ``index.html``: the overall table and one table per task (rank, entry, every metric as
  ``mean [lo, hi] (n)`` with an interval bar; tie groups shaded alike; every column sortable by
  a click), the cross-play heatmaps with the collaboration gaps and seat-order effects;
* ``entries/<id>.html``: an entry's team, verification and manifest;
* ``transcripts/<id>/<task>.html``: an entry's episodes of a task, turn by turn (each score in
  the tables links to its transcripts);
* ``style.css`` and ``sort.js``: the page's look and its column sorting.

The tables are written as HTML (readable with JavaScript off); ``sort.js`` only reorders rows
by each cell's ``data-sort`` value. All text from the data is escaped (model answers may hold
anything). The output depends only on the board data, so two builds are byte-identical.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["build_site"]

_REQUIRED = {
    "": ("title", "suite", "rank_rule", "tasks", "entries"),
    "suite": ("name", "version", "hash"),
    "task": ("name", "env", "primary", "metrics"),
    "entry": ("id", "name", "tasks", "manifest"),
}
BAR_WIDTH = 120


def _check(board: dict) -> None:
    """A ValueError naming the first missing key path of ``board``."""
    for key in _REQUIRED[""]:
        if key not in board:
            raise ValueError(f"board data lacks {key!r}")
    for key in _REQUIRED["suite"]:
        if key not in board["suite"]:
            raise ValueError(f"board data lacks 'suite.{key}'")
    for i, task in enumerate(board["tasks"]):
        for key in _REQUIRED["task"]:
            if key not in task:
                raise ValueError(f"board data lacks 'tasks[{i}].{key}'")
    for i, entry in enumerate(board["entries"]):
        for key in _REQUIRED["entry"]:
            if key not in entry:
                raise ValueError(f"board data lacks 'entries[{i}].{key}'")


def file_id(entry_id: str) -> str:
    """A file name for an entry id (ids may hold ``/`` or ``:``): a slug plus a short hash."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", entry_id).strip("-.")[:60] or "entry"
    return f"{slug}-{hashlib.sha256(entry_id.encode()).hexdigest()[:8]}"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def _bar(interval: dict, low: float, high: float) -> str:
    """An inline SVG: the interval as a band, the mean as a tick, on [low, high]."""
    span = (high - low) or 1.0

    def x(value: float) -> float:
        return round(BAR_WIDTH * (min(max(value, low), high) - low) / span, 1)

    lo, hi, mean = x(interval["lo"]), x(interval["hi"]), x(interval["mean"])
    return (
        f'<svg class="bar" width="{BAR_WIDTH}" height="10" role="img" '
        f'aria-label="95% interval {_fmt(interval["lo"])} to {_fmt(interval["hi"])}">'
        f'<rect x="0" y="4" width="{BAR_WIDTH}" height="2" class="axis"/>'
        f'<rect x="{lo}" y="1" width="{max(hi - lo, 1.0)}" height="8" class="ci"/>'
        f'<rect x="{max(mean - 1, 0)}" y="0" width="2" height="10" class="mean"/></svg>'
    )


def _value_cell(interval: dict | None, low: float, high: float, link: str | None = None) -> str:
    if not interval:
        return '<td class="num" data-sort="">-</td>'
    text = (
        f"{_fmt(interval['mean'])} <small>[{_fmt(interval['lo'])}, {_fmt(interval['hi'])}] "
        f"({interval['n']})</small>"
    )
    if link:
        text = f'<a href="{_e(link)}">{text}</a>'
    return (
        f'<td class="num" data-sort="{interval["mean"]!r}">{_bar(interval, low, high)} {text}</td>'
    )


def _range(intervals: list[dict | None]) -> tuple[float, float]:
    present = [i for i in intervals if i]
    if not present:
        return 0.0, 1.0
    low = min(0.0, min(i["lo"] for i in present))
    high = max(i["hi"] for i in present)
    return low, max(high, low + 1e-9)


def _header(columns: list[tuple[str, str]]) -> str:
    cells = "".join(
        f'<th scope="col" data-type="{kind}" aria-sort="none"><button type="button">'
        f"{_e(label)}</button></th>"
        for label, kind in columns
    )
    return f"<thead><tr>{cells}</tr></thead>"


def _tie_class(rank: int | None, previous: int | None, shade: bool) -> tuple[str, bool]:
    if rank is not None and rank != previous:
        shade = not shade
    return ("tie-a" if shade else "tie-b"), shade


def _overall_table(board: dict) -> str:
    tasks = board["tasks"]
    columns = [("rank", "num"), ("entry", "text"), ("kind", "text"), ("verified", "text")]
    columns += [("overall score", "num")] + [(f"{t['name']}: {t['primary']}", "num") for t in tasks]
    overall_range = _range([e.get("overall") for e in board["entries"]])
    task_ranges = [
        _range(
            [
                (e["tasks"].get(t["name"]) or {}).get("metrics", {}).get(t["primary"])
                for e in board["entries"]
            ]
        )
        for t in tasks
    ]
    rows, previous, shade = [], None, False
    for entry in board["entries"]:
        overall = entry.get("overall")
        rank = overall.get("rank") if overall else None
        tie, shade = _tie_class(rank, previous, shade)
        previous = rank
        page = f"entries/{file_id(entry['id'])}.html"
        verified = {True: "verified", False: "not reproduced", None: "-"}[entry.get("verified")]
        cells = [
            f'<td class="num" data-sort="{rank if rank is not None else ""}">{_e(rank or "-")}</td>',
            f'<td data-sort="{_e(entry["name"])}"><a href="{page}">{_e(entry["name"])}</a></td>',
            f'<td data-sort="{_e(entry.get("kind", ""))}">{_e(entry.get("kind", ""))}</td>',
            f'<td data-sort="{verified}" class="v-{verified.split()[0]}">{verified}</td>',
            _value_cell(overall, *overall_range),
        ]
        for task, (low, high) in zip(tasks, task_ranges, strict=True):
            block = entry["tasks"].get(task["name"]) or {}
            link = f"transcripts/{file_id(entry['id'])}/{_slug_task(task['name'])}.html"
            cells.append(
                _value_cell(
                    block.get("metrics", {}).get(task["primary"]),
                    low,
                    high,
                    link if block else None,
                )
            )
        rows.append(f'<tr class="{tie}">{"".join(cells)}</tr>')
    return f'<table class="sortable" id="overall">{_header(columns)}<tbody>{"".join(rows)}</tbody></table>'


def _slug_task(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name) or "task"


def _task_table(board: dict, task: dict) -> str:
    metrics = task["metrics"]
    have = [e for e in board["entries"] if task["name"] in e["tasks"]]
    have.sort(key=lambda e: e["tasks"][task["name"]].get("rank") or 10**9)
    columns = [("rank", "num"), ("entry", "text")] + [(m, "num") for m in metrics]
    ranges = [_range([e["tasks"][task["name"]]["metrics"].get(m) for e in have]) for m in metrics]
    rows, previous, shade = [], None, False
    for entry in have:
        block = entry["tasks"][task["name"]]
        rank = block.get("rank")
        tie, shade = _tie_class(rank, previous, shade)
        previous = rank
        link = f"transcripts/{file_id(entry['id'])}/{_slug_task(task['name'])}.html"
        cells = [
            f'<td class="num" data-sort="{rank if rank is not None else ""}">{_e(rank or "-")}</td>',
            f'<td data-sort="{_e(entry["name"])}"><a href="entries/{file_id(entry["id"])}.html">'
            f"{_e(entry['name'])}</a></td>",
        ]
        for metric, (low, high) in zip(metrics, ranges, strict=True):
            cells.append(_value_cell(block["metrics"].get(metric), low, high, link))
        rows.append(f'<tr class="{tie}">{"".join(cells)}</tr>')
    better = task.get("higher_is_better", {})
    lower = [m for m in metrics if better.get(m) is False]
    note = f" Lower is better for {', '.join(lower)}." if lower else ""
    return (
        f'<section id="task-{_e(_slug_task(task["name"]))}"><h3>{_e(task["name"])} '
        f"<small>{_e(task['env'])}</small></h3><p>{_e(task.get('description', ''))} Primary "
        f"metric: <code>{_e(task['primary'])}</code>.{_e(note)}</p>"
        f'<table class="sortable">{_header(columns)}<tbody>{"".join(rows)}</tbody></table></section>'
    )


def _heat(value: dict | None) -> str:
    if not value:
        return '<td class="num heat" data-sort="">-</td>'
    share = min(max(value["mean"], 0.0), 1.0)
    title = f"{_fmt(value['mean'])} [{_fmt(value['lo'])}, {_fmt(value['hi'])}] n={value['n']}"
    return (
        f'<td class="num heat" data-sort="{value["mean"]!r}" title="{_e(title)}" '
        f'style="background: hsl({round(share * 120)}, 60%, 80%)">{_fmt(value["mean"])}</td>'
    )


def _crossplay(board: dict) -> str:
    blocks = []
    for task, data in sorted(board.get("crossplay", {}).items()):
        models = data["models"]
        seats = data.get("seats") or ["seat 0", "seat 1"]
        head = "".join(f'<th scope="col">{_e(m)}</th>' for m in models)
        rows = "".join(
            f'<tr><th scope="row">{_e(model)}</th>{"".join(_heat(v) for v in row)}</tr>'
            for model, row in zip(models, data["matrix"], strict=True)
        )
        gaps = "".join(
            f"<li>{_e(model)}: solo {_fmt(data['solo'][model]['mean'])}, collaboration gap "
            f"{_fmt(gap['mean'])} [{_fmt(gap['lo'])}, {_fmt(gap['hi'])}] (n={gap['n']})</li>"
            for model, gap in data.get("gap", {}).items()
        )
        orders = "".join(
            f"<li>{_e(pair.replace('|', ' first vs '))} first: {_fmt(effect['mean'])} "
            f"[{_fmt(effect['lo'])}, {_fmt(effect['hi'])}] (n={effect['n']})</li>"
            for pair, effect in data.get("seat_order", {}).items()
        )
        blocks.append(
            f'<section class="crossplay"><h3>{_e(task)} <small>{_e(data.get("primary", ""))}, '
            f'0..1</small></h3><table class="heatmap"><caption>row: the model in '
            f"{_e(seats[0])}, column: the model in {_e(seats[-1])}</caption><thead><tr><th></th>"
            f"{head}</tr></thead><tbody>{rows}</tbody></table>"
            + (f"<h4>Collaboration gaps (pair minus solo)</h4><ul>{gaps}</ul>" if gaps else "")
            + (f"<h4>Seat order</h4><ul>{orders}</ul>" if orders else "")
            + "</section>"
        )
    if not blocks:
        return ""
    return '<h2 id="crossplay">Cross-play</h2>' + "".join(blocks)


def _page(title: str, body: str, depth: int = 0) -> str:
    up = "../" * depth
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title>"
        f'<link rel="stylesheet" href="{up}style.css"></head>\n<body>\n{body}\n'
        f'<script src="{up}sort.js"></script>\n</body></html>\n'
    )


def _index(board: dict) -> str:
    suite = board["suite"]
    tasks = "".join(_task_table(board, task) for task in board["tasks"])
    return _page(
        board["title"],
        f"<header><h1>{_e(board['title'])}</h1><p>Suite <code>{_e(suite['name'])}</code> "
        f"version {_e(suite['version'])}, hash <code>{_e(suite['hash'])}</code>. "
        f"{len(board['entries'])} entries. Scores are means with 95% bootstrap intervals and n; "
        f"{_e(board['rank_rule'])}. Rows of one colour band share a rank. Click a column to "
        f"sort it, a score to read its episodes.</p></header>"
        f"<h2>Overall</h2>{_overall_table(board)}<h2>Tasks</h2>{tasks}{_crossplay(board)}",
    )


def _entry_page(board: dict, entry: dict) -> str:
    fid = file_id(entry["id"])
    links = "".join(
        f'<li><a href="../transcripts/{fid}/{_slug_task(name)}.html">{_e(name)}</a></li>'
        for name in entry["tasks"]
    )
    verified = {True: "verified by replay", False: "replay did not reproduce", None: "not verified"}
    manifest = json.dumps(entry["manifest"], indent=1, sort_keys=True, ensure_ascii=False)
    return _page(
        entry["name"],
        f'<p><a href="../index.html">&larr; leaderboard</a></p><h1>{_e(entry["name"])}</h1>'
        f"<p>Entry <code>{_e(entry['id'])}</code>, {_e(entry.get('kind', ''))}, "
        f"{verified[entry.get('verified')]}. Team: <code>{_e(json.dumps(entry.get('team')))}</code></p>"
        f"<h2>Transcripts</h2><ul>{links}</ul><h2>Manifest</h2><pre>{_e(manifest)}</pre>",
        depth=1,
    )


def _transcript_page(entry: dict, task: str, block: dict) -> str:
    episodes = []
    for episode in block.get("episodes", []):
        turns = "".join(
            f'<div class="turn"><p class="who">{_e(t["agent"])} <small>reward '
            f"{_fmt(t.get('reward'))}"
            + (f", format error: {_e(t['format_error'])}" if t.get("format_error") else "")
            + f"</small></p><details><summary>prompt</summary><pre>{_e(t['observation'])}</pre>"
            f'</details><pre class="action">{_e(t["action"])}</pre></div>'
            for t in episode["turns"]
        )
        episodes.append(
            f'<details class="episode" open><summary>{_e(episode["key"])}: score '
            f"{_fmt(episode.get('score'))}</summary>{turns}</details>"
        )
    team = block.get("team") or entry.get("team")
    return _page(
        f"{entry['name']}: {task}",
        f'<p><a href="../../index.html">&larr; leaderboard</a> | <a href="../../entries/'
        f'{file_id(entry["id"])}.html">{_e(entry["name"])}</a></p><h1>{_e(entry["name"])}: '
        f"{_e(task)}</h1><p>Seats: <code>{_e(json.dumps(team))}</code>. The first "
        f"{len(block.get('episodes', []))} episodes, in item order.</p>{''.join(episodes)}",
        depth=2,
    )


def build_site(board: dict, out_dir: str | Path) -> Path:
    """Write the site for ``board`` into ``out_dir`` (replaced whole); returns its
    ``index.html``."""
    _check(board)
    out = Path(out_dir)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "entries").mkdir(parents=True)
    assets = resources.files("llm_marl_envs.bench") / "site_assets"
    for name in ("style.css", "sort.js"):
        (tmp / name).write_bytes((assets / name).read_bytes())
    (tmp / "index.html").write_text(_index(board), encoding="utf-8")
    for entry in board["entries"]:
        fid = file_id(entry["id"])
        (tmp / "entries" / f"{fid}.html").write_text(_entry_page(board, entry), encoding="utf-8")
        folder = tmp / "transcripts" / fid
        folder.mkdir(parents=True)
        for task, block in entry["tasks"].items():
            page = _transcript_page(entry, task, block)
            (folder / f"{_slug_task(task)}.html").write_text(page, encoding="utf-8")
    if out.exists():
        old = out.with_name(out.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)
    return out / "index.html"
