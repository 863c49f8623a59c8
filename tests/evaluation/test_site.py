"""The static leaderboard site, read as files: pages, data, escaping, checks, determinism,
safe file names, safe overwrites (the real-browser test is test_site_browser.py)."""

from __future__ import annotations

import copy
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from llm_marl_envs.evaluation.site import (
    ACTION_LIMIT,
    PAGE_LIMIT,
    build_site,
    file_id,
    rank_order,
    validate_board,
)

LONG = "long " * 2000  # 10,000 characters
HOSTILE = "<script>alert(1)</script> \"quoted\" 'single' & \ufffd ünïcödé " + LONG
EVIL = "hf:evil/model"


def interval(mean, lo, hi, n=10):
    return {"mean": mean, "lo": lo, "hi": hi, "n": n}


def episode(key, score, action, observation="You see walls."):
    turn = {"agent": "gnome_0", "observation": observation, "action": action, "reward": -0.1}
    return {"key": key, "score": score, "turns": [{**turn, "format_error": None}]}


def make_board() -> dict:
    """Three entries on two tasks; the evil one carries hostile text everywhere it can."""
    tasks = [
        {
            "name": "maze",
            "env": "llm_marl_envs/MazeCollab-v1",
            "primary": "success",
            "metrics": ["success", "format_failure/gnome_0"],
            "higher_is_better": {"success": True, "format_failure/gnome_0": False},
            "description": "two gnomes, one token",
        },
        {
            "name": "gsm8k",
            "env": "llm_marl_envs/GSM8K-v0",
            "primary": "pass@1",
            "metrics": ["pass@1"],
            "higher_is_better": {"pass@1": True},
        },
    ]

    def entry(entry_id, name, overall, maze, gsm8k=None, action="MOVE: up"):
        blocks = {
            "maze": {
                "rank": maze[3],
                "team": {"gnome_0": entry_id, "gnome_1": entry_id},
                "metrics": {
                    "success": interval(*maze[:3]),
                    "format_failure/gnome_0": interval(0.0, 0.0, 0.0),
                },
                "episodes": [
                    episode("seed-0", maze[0], action, HOSTILE),
                    episode("seed-1", 0, "x"),
                ],
            }
        }
        if gsm8k:
            blocks["gsm8k"] = {"rank": 1, "metrics": {"pass@1": interval(*gsm8k)}, "episodes": []}
        return {
            "id": entry_id,
            "name": name,
            "team": {"seats": [entry_id], "agents": {}},
            "kind": "model",
            "verified": {"scripted": True, EVIL: False}.get(entry_id),
            "overall": {**interval(*overall[:3]), "rank": overall[3]} if overall else None,
            "tasks": blocks,
            "manifest": {"package": {"version": "0.1.0"}, "note": HOSTILE, "seeds": [0, 1]},
        }

    return {
        "title": "test board <b>",
        "suite": {"name": "lite", "version": 1, "hash": "sha256:abc"},
        "generated": "2026-11-24T00:00:00Z",
        "rank_rule": "rank = 1 + entries wholly above",
        "tasks": tasks,
        "entries": [
            # deliberately not in rank order: the site orders them
            entry(EVIL, f"evil {HOSTILE}", (0.5, 0.4, 0.6, 2), (0.2, 0.0, 0.4, 2), action=HOSTILE),
            entry(
                "scripted",
                "scripted players",
                (0.9, 0.8, 1.0, 1),
                (1.0, 1.0, 1.0, 1),
                (0.5, 0.3, 0.7),
            ),
            entry("hf:evil:model", "another", (0.45, 0.3, 0.55, 2), (0.1, 0.0, 0.3, 2)),
        ],
        "crossplay": {
            "maze": {
                "models": ["scripted", "<b>b</b>"],
                "seats": ["gnome_0", "gnome_1"],
                "matrix": [
                    [interval(0.8, 0.6, 1.0), interval(0.4, 0.2, 0.6)],
                    [None, interval(0.1, 0, 0.2)],
                ],
                "solo": {"scripted": interval(0.9, 0.8, 1.0)},
                "gap": {"scripted": interval(-0.1, -0.3, 0.1)},
                "seat_order": {"scripted|<b>b</b>": interval(0.2, 0.0, 0.4)},
            }
        },
    }


class Tags(HTMLParser):
    """The start tags of a page and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> Tags:
    parser = Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def rows(index: str, table_id: str = "overall") -> list[str]:
    table = index.split(f'id="{table_id}"')[1].split("</table>")[0]
    return re.findall(r"<tr class=.*?</tr>", table)


@pytest.fixture
def site(tmp_path) -> Path:
    return build_site(make_board(), tmp_path / "site")


def test_pages_exist_and_hold_the_data(site):
    root = site.parent
    assert site == root / "index.html"
    assert {p.name for p in root.iterdir()} == {
        "index.html",
        "style.css",
        "sort.js",
        "entries",
        "transcripts",
    }
    index = site.read_text(encoding="utf-8")
    assert "lite" in index and "sha256:abc" in index and "rank = 1 + entries wholly above" in index
    assert "2026-11-24T00:00:00Z" in index
    assert index.count('<table class="sortable') == 3  # overall + two tasks
    assert index.count('aria-sort="none"') == 5 + 4 + 3  # every column header of those
    assert "0.900 <small>[0.800, 1.000] (10)</small>" in index
    assert '<span class="badge verified">verified</span>' in index
    assert '<span class="badge not-reproduced">' in index
    # the interval bar of the best overall score, on the 0..1 column scale
    assert 'class="ci" style="left:80.0%;width:20.0%"' in index
    assert 'class="mu" style="left:90.0%"' in index
    # cross-play: heatmap cells with the interval in the tooltip, solo, gap, seat order
    cross = index.split('id="crossplay"')[1]
    assert 'title="scripted with &lt;b&gt;b&lt;/b&gt;: 0.400 [0.200, 0.600] n=10"' in cross
    assert "background:hsl(" in cross and "collaboration gap" in cross
    assert "-0.100 <small>[-0.300, 0.100] (10)</small>" in cross
    assert "0.200 <small>[0.000, 0.400] (10)</small>" in cross  # seat order
    assert f'href="entries/{file_id("scripted")}.html">scripted</a>' in cross
    for entry_id in ("scripted", EVIL, "hf:evil:model"):
        fid = file_id(entry_id)
        assert (root / "entries" / f"{fid}.html").is_file()
        assert (root / "transcripts" / fid / "maze.html").is_file()
        assert f'href="transcripts/{fid}/maze.html"' in index
        assert f'href="entries/{fid}.html"' in index
    transcript = (root / "transcripts" / file_id("scripted") / "maze.html").read_text()
    assert (
        "seed-0: score 1.000" in transcript and '<pre class="action">MOVE: up</pre>' in transcript
    )
    assert transcript.count('<details class="episode"') == 2
    assert transcript.count(" open>") == 1  # only the first episode starts open
    entry = (root / "entries" / f"{file_id('scripted')}.html").read_text()
    assert '"version": "0.1.0"' in html.unescape(entry) and "transcripts/" in entry


def test_tables_are_in_rank_order_with_tie_groups(site):
    index = site.read_text(encoding="utf-8")
    overall = rows(index)
    order = ["scripted", EVIL, "hf:evil:model"]
    assert all(file_id(i) in r for r, i in zip(overall, order, strict=True))
    assert 'data-sort="1.0"' in overall[0]
    # the two entries sharing rank 2 share a band and are marked as tied
    bands = [re.match(r'<tr class="(band\d)', r).group(1) for r in overall]
    assert bands[1] == bands[2] != bands[0]
    assert ">2=</td>" in overall[1] and ">2=</td>" in overall[2] and ">1</td>" in overall[0]
    assert 'title="2 entries share rank 2"' in overall[1]


def test_a_task_an_entry_did_not_run_shows_a_dash(site):
    index = site.read_text(encoding="utf-8")
    another = next(r for r in rows(index) if ">another</a>" in r)
    cells = re.findall(r"<td.*?</td>", another)
    assert cells[-1] == '<td class="num none" data-sort="">—</td>'  # gsm8k, not run
    gsm8k = index.split('id="task-gsm8k"')[1].split("</section>")[0]
    assert gsm8k.count("<tr class=") == 1 and "2 entries did not run it" in gsm8k
    assert not (site.parent / "transcripts" / file_id("hf:evil:model") / "gsm8k.html").exists()


def test_hostile_text_is_escaped_everywhere(site):
    root = site.parent
    pages = sorted(root.rglob("*.html"))
    assert len(pages) == 1 + 3 + 4
    for page in pages:
        parsed = parse(page)
        scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
        assert all(set(a) == {"src"} and a["src"].endswith("sort.js") for a in scripts), page
        assert not [t for t, _ in parsed.tags if t in ("b", "iframe", "img")], page
        assert not [a for _, attrs in parsed.tags for a in attrs if a.startswith("on")], page
    # shown as text: the transcript (the action cut at ACTION_LIMIT characters, the
    # observation whole), the manifest, the name
    evil = file_id(EVIL)
    raw = (root / "transcripts" / evil / "maze.html").read_text(encoding="utf-8")
    assert f'<pre class="action">{html.escape(HOSTILE[:ACTION_LIMIT])}<span class="cut">' in raw
    assert f"<pre>{html.escape(HOSTILE)}</pre>" in raw  # the observation
    assert HOSTILE in "".join(parse(root / "transcripts" / evil / "maze.html").text)
    entry = "".join(parse(root / "entries" / f"{evil}.html").text)
    assert HOSTILE in entry and "\ufffd" in entry and "ünïcödé" in entry
    assert f"evil {HOSTILE}" in "".join(parse(site).text)
    assert "test board <b>" in "".join(parse(site).text)


def test_unwritable_characters_become_replacement_characters(tmp_path):
    board = make_board()
    board["entries"][1]["tasks"]["maze"]["episodes"][0]["turns"][0]["action"] = "a\x00b\ud800c"
    root = build_site(board, tmp_path / "site").parent
    transcript = (root / "transcripts" / file_id("scripted") / "maze.html").read_text()
    assert '<pre class="action">a\ufffdb\ufffdc</pre>' in transcript


def test_builds_are_byte_identical(tmp_path):
    first = build_site(make_board(), tmp_path / "a").parent
    second = build_site(make_board(), tmp_path / "b").parent
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_rebuilding_replaces_the_generated_files_only(tmp_path):
    out = tmp_path / "site"
    build_site(make_board(), out)
    (out / "notes.txt").write_text("mine")
    board = make_board()
    board["entries"].pop(0)  # the evil entry leaves the board
    board["title"] = "second build"
    index = build_site(board, out)
    assert "second build" in index.read_text()
    assert (out / "notes.txt").read_text() == "mine"
    assert not (out / "entries" / f"{file_id(EVIL)}.html").exists()
    assert not (out / "transcripts" / file_id(EVIL)).exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index.html", "style.css", "sort.js", "entries", "transcripts", "notes.txt"]
    )  # no scratch folder left behind


def test_a_file_in_the_way_is_an_error(tmp_path):
    (tmp_path / "site").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        build_site(make_board(), tmp_path / "site")


def test_ids_with_slashes_and_colons_get_distinct_safe_files():
    ids = ["hf:evil/model", "hf:evil:model", "hf:evil-model", "../../etc/passwd", "", "a" * 300]
    names = [file_id(i) for i in ids]
    assert len(set(names)) == len(ids)
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name) and len(name) <= 69, name
        assert ".." not in name
    assert file_id("hf:Qwen/Qwen2.5-0.5B").startswith("hf-Qwen-Qwen2.5-0.5B-")


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda b: b.pop("tasks"), "'tasks' is missing"),
        (lambda b: b["suite"].pop("hash"), "'suite.hash' is missing"),
        (lambda b: b["tasks"][1].pop("primary"), "'tasks[1].primary' is missing"),
        (lambda b: b["tasks"][0].update(metrics="success"), "'tasks[0].metrics' must be a list"),
        (lambda b: b["entries"][2].pop("manifest"), "'entries[2].manifest' is missing"),
        (lambda b: b["entries"][1]["overall"].pop("lo"), "'entries[1].overall.lo' is missing"),
        (
            lambda b: b["entries"][0]["tasks"]["maze"]["metrics"]["success"].pop("n"),
            "'entries[0].tasks.maze.metrics.success.n' is missing",
        ),
        (
            lambda b: b["entries"][0]["tasks"]["maze"]["episodes"][1]["turns"][0].pop("action"),
            "'entries[0].tasks.maze.episodes[1].turns[0].action' is missing",
        ),
        (lambda b: b["entries"][2].update(id="scripted"), "'entries[1].id' repeats"),
        (lambda b: b["crossplay"]["maze"].pop("matrix"), "'crossplay.maze.matrix' is missing"),
        (
            lambda b: b["crossplay"]["maze"]["matrix"][1].pop(),
            r"'crossplay.maze.matrix\[1\]' must be a list of 2 cells",
        ),
        (
            lambda b: b["crossplay"]["maze"]["gap"]["scripted"].pop("mean"),
            "'crossplay.maze.gap.scripted.mean' is missing",
        ),
    ],
)
def test_missing_keys_name_their_path(tmp_path, edit, path):
    board = copy.deepcopy(make_board())
    edit(board)
    pattern = path if "\\" in path else re.escape(path)
    with pytest.raises(ValueError, match=pattern):
        build_site(board, tmp_path / "site")
    assert not (tmp_path / "site").exists()  # checked before anything is written


def test_a_minimal_board_builds(tmp_path):
    board = {
        "title": "t",
        "suite": {"name": "s", "version": 1, "hash": "h"},
        "rank_rule": "r",
        "tasks": [{"name": "odd task/name", "env": "e", "primary": "m", "metrics": ["m"]}],
        "entries": [
            {
                "id": "x",
                "name": "x",
                "tasks": {"odd task/name": {"metrics": {"m": None}}},
                "manifest": {},
            }
        ],
    }
    validate_board(board)
    root = build_site(board, tmp_path / "site").parent
    pages = list((root / "transcripts" / file_id("x")).iterdir())
    assert len(pages) == 1 and "/" not in pages[0].name and " " not in pages[0].name
    assert "No episodes were kept" in pages[0].read_text()
