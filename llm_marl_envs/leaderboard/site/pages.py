"""The static leaderboard site: HTML files that open from ``file://``, no server, no network.

:func:`build_site` turns the board data (made by
:func:`llm_marl_envs.leaderboard.board.build_board`; the shape is checked, see below) into:

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

* ``entries/<id>.html``: who played the entry (its seats, with the models a verification
  loaded), its verification, scores with their tie marks, what the board checked and, apart,
  what the result only claims;
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

This module holds the pages and the install; the board checks (:func:`validate_board`) live in
``check.py``, the index's HTML pieces (cells, tables, :func:`file_id`, :func:`rank_order`) in
``html.py`` and its cross-play heatmaps in ``crossplay.py``, all re-exported here.

The board (keys marked ``?`` may be left out)::

    {"title", "suite": {"name", "version", "hash"}, "generated"?, "rank_rule",
     "ledger"?: {"length", "head"} (the board's ledger as the page saw it),
     "tasks": [{"name", "env", "primary", "metrics": [...], "higher_is_better"?: {metric: bool},
                "bounds"?: {metric: [low | None, high | None]}, "caveats"?: {metric: text},
                "description"?}],
     "entries": [{"id", "name", "digest"?, "kind"?, "verified"?: True | False | None, "team"?,
                  "played_by"?: [{"spec", "model_id"?}], "claimed"?: {...},
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
import json
import os
import re
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.files import folder_flock, fsync_folder, write_atomic

# The board checks and the index's HTML pieces live in siblings: check.py, html.py and
# crossplay.py (this module keeps the pages and the install). Their public names that were
# importable from this module before they were split off still are (``name as name``: a
# re-export where this module does not use it).
from llm_marl_envs.leaderboard.site.check import INTERVAL_KEYS as INTERVAL_KEYS, validate_board
from llm_marl_envs.leaderboard.site.crossplay import (
    CROSSPLAY_INTRO as CROSSPLAY_INTRO,
    crossplay_section,
)
from llm_marl_envs.leaderboard.site.html import (
    DIFFERENCE as DIFFERENCE,
    OVERALL_TIP as OVERALL_TIP,
    SHARE as SHARE,
    VERIFIED as VERIFIED,
    Scale as Scale,
    entry_badges,
    escape,
    file_id,
    number_text,
    interval_text,
    overall_table,
    played_by,
    rank_order,
    rank_text,
    task_file,
    task_section,
    transcript_link,
)

__all__ = ["build_site", "file_id", "rank_order", "validate_board"]

ASSETS = ("style.css", "sort.js")
#: Characters of an action (of an observation) shown in a transcript page; the rest is cut.
ACTION_LIMIT = 4_000
OBSERVATION_LIMIT = 16_000
#: Bytes of transcript page past which further episodes are left out (with a note).
PAGE_LIMIT = 4_000_000


# --------------------------------------------------------------------------- pages
def _page(title: str, body: str, depth: int = 0, script: bool = False) -> str:
    up = "../" * depth
    tail = f'<script src="{up}sort.js"></script>\n' if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="{up}style.css"></head>\n'
        f"<body>\n{body}\n{tail}</body></html>\n"
    )


def _ledger_line(board: dict) -> str:
    """The board's ledger as this page saw it: a page published later shows a longer ledger
    whose line at this length is this head; a board rolled back shows less."""
    ledger = board.get("ledger")
    if not isinstance(ledger, dict):
        return ""
    return (
        f'<p class="ledger">Ledger: <span id="ledger-length">{escape(ledger.get("length"))}'
        f'</span> lines, head <code id="ledger-head">{escape(ledger.get("head"))}</code>. A later '
        "page of this board shows a ledger at least this long; a shorter one, or another head "
        "at this length, is a board rolled back.</p>"
    )


def _index(board: dict) -> str:
    suite = board["suite"]
    generated = f", generated {escape(board['generated'])}" if board.get("generated") else ""
    nav = "".join(
        f'<a href="#task-{escape(task_file(t["name"]))}">{escape(t["name"])}</a>'
        for t in board["tasks"]
    )
    if board.get("crossplay"):
        nav += '<a href="#crossplay">cross-play</a>'
    tasks = "".join(task_section(board, task) for task in board["tasks"])
    body = (
        f"<header><h1>{escape(board['title'])}</h1><p>Suite <code>{escape(suite['name'])}</code> "
        f"version {escape(suite['version'])}, hash <code>{escape(suite['hash'])}</code>; "
        f"{len(board['entries'])} entries{generated}.</p>{_ledger_line(board)}"
        f'<p class="rule"><strong>Ranks.</strong> {escape(board["rank_rule"].rstrip("."))}.</p>'
        "<p>Each score is <em>mean [lo, hi] (n)</em>: the mean, its 95% interval (Wilson for "
        "pass/fail outcomes, else a bootstrap at least one item's swing wide) and the number "
        "of items. The bar draws the interval on the metric's own range (0..1 for shares), "
        "the tick is the mean and the thin line is 0. Rows go by rank, then by score; rows in "
        "one shade share a rank (a tie group, marked <em>=</em>). Click a column name to "
        "sort, a score to read its episodes, an entry for its manifest.</p></header>"
        f'<nav><a href="#overall-section">overall</a>{nav}</nav>'
        f'<main><section id="overall-section"><h2>Overall</h2>{overall_table(board)}</section>'
        f"<h2>Tasks</h2>{tasks}{crossplay_section(board)}</main>"
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


def _task_rows(board: dict, entry: dict, shared: dict[str, int]) -> list[str]:
    """The rows of an entry page's task table: each task's rank (``shared``: how many entries
    share it), primary metric (linked to the transcripts) and episodes kept."""
    rows = []
    for task in board["tasks"]:
        name = task["name"]
        block = entry["tasks"].get(name)
        if block is None:
            rows.append(
                f'<tr><th scope="row">{escape(name)}</th><td class="num">—</td>'
                '<td class="num none">— (not run)</td><td class="num">0</td></tr>'
            )
            continue
        value = (block.get("metrics") or {}).get(task["primary"])
        text = interval_text(value) if value else "—"
        rank = rank_text(block.get("rank"), shared.get(name, 0))
        rows.append(
            f'<tr><th scope="row">{escape(name)}</th><td class="num rank">{escape(rank)}</td>'
            f'<td class="num"><a href="../{transcript_link(entry, name)}">{text}</a> '
            f"<small>{escape(task['primary'])}</small></td>"
            f'<td class="num">{len(block.get("episodes") or [])}</td></tr>'
        )
    return rows


def _entry_page(board: dict, entry: dict) -> str:
    shared_overall, shared = _shared_ranks(board, entry)
    rows = _task_rows(board, entry, shared)
    overall = entry.get("overall")
    rank = rank_text(overall.get("rank"), shared_overall) if overall else "—"
    summary = (
        f"Overall {interval_text(overall)}, rank {escape(rank)}."
        if overall
        else "No overall score."
    )
    manifest = json.dumps(entry["manifest"], indent=2, ensure_ascii=False, default=str)
    claimed = json.dumps(entry.get("claimed") or {}, indent=2, ensure_ascii=False, default=str)
    team = json.dumps(entry.get("team"), ensure_ascii=False, default=str)
    kind = f"{escape(entry['kind'])}, " if entry.get("kind") else ""
    checked = "checked" if entry.get("verified") else "claimed, not verified"
    body = (
        f'<nav><a href="../../index.html">&larr; leaderboard</a></nav>'
        f'<h1 class="name">{escape(entry["name"])}</h1>'
        f"<p>Entry <code>{escape(entry['id'])}</code>, "
        f"{kind}{entry_badges(entry)}. {summary}</p>"
        + (
            f'<p>Content digest <code class="digest">{escape(entry["digest"])}</code>: what the '
            "board knows this entry by (its episodes and what the score depends on); its id "
            "and name are labels.</p>"
            if entry.get("digest")
            else ""
        )
        + f"<p>Played by {escape(played_by(entry))} ({checked}). "
        f"Seats: <code>{escape(team)}</code></p>"
        '<h2>Tasks</h2><div class="scroll"><table class="plain"><thead><tr>'
        '<th scope="col">task</th><th scope="col">rank</th><th scope="col">primary metric '
        '(links to the transcripts)</th><th scope="col">episodes kept</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        "<h2>Checked</h2><p>What the board checked: the suite and its hash, each task's "
        "environment spec, data rows and generation settings, and, for a verified entry, the "
        "seats whose answers a regeneration reproduced and the models it loaded (their "
        "weights hashed).</p>"
        f'<pre class="manifest">{escape(manifest)}</pre>'
        "<h2>Claimed</h2><p>What the result says about itself that nobody checked (package "
        "version, libraries, hardware, times, and the seats and models of an entry that is "
        "not verified: a replay checks what the actions score, not who wrote them).</p>"
        f'<pre class="claims">{escape(claimed)}</pre>'
    )
    return _page(f"{entry['name']}: {board['title']}", body, depth=1)


def _cut(text: Any, limit: int) -> str:
    """``text``, or its first ``limit`` characters and a note of how many were cut."""
    text = str(text)
    if len(text) <= limit:
        return escape(text)
    return (
        f'{escape(text[:limit])}<span class="cut">[… {len(text) - limit:,} more characters not '
        "shown; the episode file holds them all]</span>"
    )


def _turn(turn: dict) -> str:
    error = turn.get("format_error")
    flag = f' <span class="error">format error: {_cut(error, ACTION_LIMIT)}</span>' if error else ""
    reward = f" <small>reward {number_text(turn.get('reward'))}</small>" if "reward" in turn else ""
    return (
        f'<li class="turn"><p class="who">{escape(turn["agent"])}{reward}{flag}</p>'
        f"<details><summary>observation</summary><pre>"
        f"{_cut(turn['observation'], OBSERVATION_LIMIT)}</pre></details>"
        f'<pre class="action">{_cut(turn["action"], ACTION_LIMIT)}</pre></li>'
    )


def _episodes(episodes: list[dict]) -> tuple[list[str], int]:
    """The episodes' HTML, as many as fit in :data:`PAGE_LIMIT` bytes, and how many are left
    out."""
    parts, size = [], 0
    for k, episode in enumerate(episodes):
        score = f": score {number_text(episode.get('score'))}" if "score" in episode else ""
        part = (
            f'<details class="episode" id="episode-{k}"{" open" if k == 0 else ""}><summary>'
            f"{escape(episode['key'])}{score} <small>({len(episode['turns'])} turns)</small>"
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
        f'{file_id(entry["id"])}.html">{escape(entry["name"])}</a></nav>'
        f'<h1 class="name">{escape(entry["name"])}: {escape(task)}</h1>'
        f"<p>Seats: <code>{escape(team)}"
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
    assets = resources.files("llm_marl_envs.leaderboard.site") / "assets"
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
