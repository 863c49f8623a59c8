"""The cross-play heatmaps of the leaderboard site's index: for each task, every pair of
models' primary metric, the solo scores, the collaboration gaps and the seat-order effects.

Pure, as :mod:`~llm_marl_envs.leaderboard.site.html` (whose cells and scales it uses): board
data in, an HTML string out, every piece of text escaped.
"""

from __future__ import annotations

from llm_marl_envs.leaderboard.site.html import (
    DIFFERENCE,
    SHARE,
    escape,
    file_id,
    number_text,
    score_cell,
    sort_key,
    task_file,
)


def _heat_cell(value: dict | None, row: str, col: str) -> str:
    if not value:
        return '<td class="num heat none" data-sort="">—</td>'
    share = SHARE.pct(value["mean"]) / 100
    light = round(96 - 52 * share)
    ink = " dark" if light < 62 else ""
    tip = (
        f"{row} with {col}: {number_text(value['mean'])} "
        f"[{number_text(value['lo'])}, {number_text(value['hi'])}] "
        f"n={value['n']}"
    )
    return (
        f'<td class="num heat{ink}" data-sort="{sort_key(value["mean"])}" title="{escape(tip)}" '
        f'style="background:hsl(212,62%,{light}%)">{number_text(value["mean"])}<small>'
        f"[{number_text(value['lo'])}, {number_text(value['hi'])}]</small></td>"
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
                f'<tr><th scope="row">{model(m)}</th>{score_cell(solo.get(m), SHARE)}'
                f"{score_cell(gap.get(m), DIFFERENCE)}</tr>"
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
            f'</th><th scope="col">seat order: A first minus B first (first = {escape(first)})'
            "</th></tr></thead><tbody>"
            + "".join(
                f'<tr><th scope="row">{_pair(pair, model)}</th>{score_cell(v, DIFFERENCE)}</tr>'
                for pair, v in order.items()
            )
            + "</tbody></table></div>"
        )
    return effects


def _pair(pair: str, model) -> str:
    first, _, second = pair.partition("|")
    return f"{model(first)} | {model(second)}" if second else escape(pair)


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
        f" Played on {escape(label)}, which plays this task exactly as this version does (same "
        "environment spec, items and scoring): the same games."
    )


def crossplay_section(board: dict) -> str:
    """The index's cross-play section: one heatmap per task, with its solo scores and effects."""
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
            label = escape(names.get(spec, spec))
            tip = f' title="policy spec {escape(spec)}"' if names.get(spec, spec) != spec else ""
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
            f'<section class="crossplay" id="crossplay-{escape(task_file(name))}">'
            f"<h3>{escape(name)} "
            f"<small>{escape(metric)}</small></h3>"
            f'<p class="note">Row: the model in {escape(row_seats)}; column: the model in '
            f"{escape(column_seats)}. Mean [95% interval]; darker is higher."
            f"{_measured_on(data)}</p>"
            '<div class="scroll"><table class="heatmap"><thead>'
            f"<tr><td></td>{head}</tr></thead><tbody>{rows}</tbody></table></div>"
            f"{_effects(data, model)}</section>"
        )
    if not blocks:
        return ""
    return f'<h2 id="crossplay">Cross-play</h2><p>{CROSSPLAY_INTRO}</p>' + "".join(blocks)
