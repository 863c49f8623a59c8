"""The static leaderboard site, read as files: pages, data, escaping, checks, determinism,
safe file names, safe overwrites (the real-browser test is test_site_browser.py)."""

from __future__ import annotations

import copy
import html
import os
import re
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from llm_marl_envs.leaderboard.site.pages import (
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


def pages(index: Path) -> Path:
    """The version folder that ``index`` links into (the pages but the index)."""
    names = set(re.findall(r'href="(site-[0-9a-f]{16})/style.css"', index.read_text()))
    assert len(names) == 1
    return index.parent / names.pop()


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
    assert site.name == "index.html"
    root = pages(site)  # the pages but the index: one version folder, named by its content
    assert {p.name for p in site.parent.iterdir()} == {"index.html", root.name}
    assert {p.name for p in root.iterdir()} == {"style.css", "sort.js", "entries", "transcripts"}
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
    assert f'href="{root.name}/entries/{file_id("scripted")}.html">scripted</a>' in cross
    for entry_id in ("scripted", EVIL, "hf:evil:model"):
        fid = file_id(entry_id)
        assert (root / "entries" / f"{fid}.html").is_file()
        assert (root / "transcripts" / fid / "maze.html").is_file()
        assert f'href="{root.name}/transcripts/{fid}/maze.html"' in index
        assert f'href="{root.name}/entries/{fid}.html"' in index
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
    assert not (pages(site) / "transcripts" / file_id("hf:evil:model") / "gsm8k.html").exists()


def test_hostile_text_is_escaped_everywhere(site):
    root = pages(site)
    found = sorted(site.parent.rglob("*.html"))
    assert len(found) == 1 + 3 + 4
    for page in found:
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
    root = pages(build_site(board, tmp_path / "site"))
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
    first = pages(build_site(make_board(), out))
    (out / "notes.txt").write_text("mine")
    board = make_board()
    board["entries"].pop(0)  # the evil entry leaves the board
    board["title"] = "second build"
    index = build_site(board, out)
    second = pages(index)
    assert "second build" in index.read_text()
    assert (out / "notes.txt").read_text() == "mine"
    assert second != first and not first.exists()  # the old version is gone
    assert not (second / "entries" / f"{file_id(EVIL)}.html").exists()
    assert not (second / "transcripts" / file_id(EVIL)).exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(["index.html", second.name, "notes.txt"])
    # no scratch folder left behind


def links_resolve(index: Path) -> None:
    """Every local link of every page under ``index``'s folder points at a file there."""
    root = index.parent
    for page in root.rglob("*.html"):
        for link in re.findall(r'(?:href|src)="([^"#]+)"', page.read_text()):
            target = (page.parent / html.unescape(link)).resolve()
            assert target.is_file() and root.resolve() in target.parents, (page, link)


@pytest.mark.parametrize("stop", ["version", "index"])
def test_a_build_killed_at_any_step_leaves_a_whole_site(tmp_path, monkeypatch, stop):
    """A build stopped before its version folder is in place, or before the index swap,
    leaves the old site whole (every link resolves); the next build removes its scratch."""
    out = tmp_path / "site"
    old = build_site(make_board(), out).read_bytes()
    board = make_board()
    board["entries"].pop(0)
    board["title"] = "second build"
    import llm_marl_envs.leaderboard.site.pages as site_module

    real_rename, real_write = os.rename, site_module.write_atomic

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # stands for kill -9 at this point: nothing after it runs

    monkeypatch.setattr(site_module.shutil, "rmtree", lambda *a, **k: None)  # no cleanup
    if stop == "version":
        monkeypatch.setattr(site_module.os, "rename", killed)
    else:
        monkeypatch.setattr(site_module, "write_atomic", killed)
    with pytest.raises(KeyboardInterrupt):
        build_site(board, out)
    monkeypatch.undo()
    assert os.rename is real_rename and site_module.write_atomic is real_write
    assert (out / "index.html").read_bytes() == old  # the old site, whole
    links_resolve(out / "index.html")
    left = {p.name for p in out.iterdir()} - {"index.html", pages(out / "index.html").name}
    assert left  # what the killed build left: its scratch folder, or an unlinked version
    index = build_site(board, out)
    assert "second build" in index.read_text()
    links_resolve(index)
    assert not list(out.glob(".site-build-*"))  # removed by the next build
    assert sorted(p.name for p in out.iterdir()) == sorted(["index.html", pages(index).name])


def test_stale_scratch_folders_are_removed_by_the_next_build(tmp_path):
    out = tmp_path / "site"
    build_site(make_board(), out)
    for name in (".site-build-abc123", ".site-build-old-xyz"):  # left by killed builds
        (out / name / "new" / "entries").mkdir(parents=True)
        (out / name / "new" / "entries" / "x.html").write_text("x" * 1000)
    (out / "site-0123456789abcdef").mkdir()  # a version no index links to
    build_site(make_board(), out)
    assert sorted(p.name for p in out.iterdir()) == ["index.html", pages(out / "index.html").name]


def test_concurrent_builds_into_one_folder_leave_one_whole_site(tmp_path):
    out = tmp_path / "site"
    boards = [make_board() for _ in range(4)]
    for number, board in enumerate(boards):
        board["title"] = f"build {number}"
    barrier = threading.Barrier(len(boards))
    errors = []

    def build(board):
        barrier.wait()
        try:
            build_site(board, out)
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=build, args=(b,)) for b in boards]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    links_resolve(out / "index.html")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index.html", pages(out / "index.html").name]
    )


def test_a_file_in_the_way_is_an_error(tmp_path):
    (tmp_path / "site").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        build_site(make_board(), tmp_path / "site")


def test_ids_with_slashes_and_colons_get_distinct_safe_files():
    ids = ["hf:evil/model", "hf:evil:model", "hf:evil-model", "../../etc/passwd", "", "a" * 300]
    names = [file_id(i) for i in ids]
    assert len(set(names)) == len(ids)
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name) and len(name) <= 77, name
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
    root = pages(build_site(board, tmp_path / "site"))
    found = list((root / "transcripts" / file_id("x")).iterdir())
    assert len(found) == 1 and "/" not in found[0].name and " " not in found[0].name
    assert "No episodes were kept" in found[0].read_text()


# --------------------------------------------------------------------------- reading right
def test_rows_go_by_score_within_a_tie_group(tmp_path):
    """Two entries share rank 2; the one scoring higher is listed first, whatever their ids
    (the old order: by id, 0.320 above 0.376)."""
    board = make_board()
    low, high = board["entries"][0], board["entries"][2]
    low["overall"].update(mean=0.32, lo=0.28, hi=0.36)
    high["overall"].update(mean=0.376, lo=0.32, hi=0.42)
    index = build_site(board, tmp_path / "site").read_text()
    order = ["scripted", "hf:evil:model", EVIL]
    assert all(file_id(i) in r for r, i in zip(rows(index), order, strict=True))
    ordered = rank_order(board["entries"], lambda e: e["overall"])
    assert [e["id"] for e in ordered] == ["scripted", "hf:evil:model", EVIL]
    # lower is better: the lower score first
    tasks = [{"id": i, "overall": {"rank": 1, "mean": m}} for i, m in (("a", 0.2), ("b", 0.1))]
    assert [e["id"] for e in rank_order(tasks, lambda e: e["overall"], False)] == ["b", "a"]


def test_the_overall_table_shows_the_task_scores_it_averages(tmp_path):
    board = make_board()
    scripted = board["entries"][1]
    scripted["tasks"]["gsm8k"]["score"] = interval(0.625, 0.5, 0.75, 16)
    index = build_site(board, tmp_path / "site").read_text()
    row = next(r for r in rows(index) if ">scripted players</a>" in r)
    assert "0.625 <small>[0.500, 0.750] (16)</small>" in row  # the score, not pass@1's 0.5
    assert "the mean of the task scores" in index and "on a 0..1 scale where 1 is best" in index


def test_bars_are_drawn_on_the_metrics_own_range_with_a_zero_line(tmp_path):
    """A [0, 0.188] interval no longer fills a bar scaled to the column's largest bound; a
    -1..1 metric at 0 sits mid-bar on its zero line."""
    board = make_board()
    board["tasks"][0]["bounds"] = {"success": [0.0, 1.0]}
    for entry in board["entries"]:
        entry["tasks"]["maze"]["metrics"]["success"] = interval(0.062, 0.0, 0.188, 16)
    board["tasks"][1].update(primary="sentiment", metrics=["sentiment"])
    board["tasks"][1]["bounds"] = {"sentiment": [-1.0, 1.0]}
    board["entries"][1]["tasks"]["gsm8k"]["metrics"] = {"sentiment": interval(0.0, -0.1, 0.1)}
    index = build_site(board, tmp_path / "site").read_text()
    maze = index.split('id="task-maze"')[1].split("</section>")[0]
    assert 'class="ci" style="left:0.0%;width:18.8%"' in maze
    assert '<span class="zero" style="left:0.0%"></span>' in maze
    gsm8k = index.split('id="task-gsm8k"')[1].split("</section>")[0]
    assert '<span class="zero" style="left:50.0%"></span>' in gsm8k
    assert 'class="ci" style="left:45.0%;width:10.0%"' in gsm8k


def test_incomplete_entries_are_unranked_marked_and_listed_last(tmp_path):
    board = make_board()
    cherry = board["entries"][1]  # the best scores, on 7 of 114 episodes
    cherry.update(complete=False, items={"played": 7, "expected": 114})
    cherry["overall"].pop("rank")
    index = build_site(board, tmp_path / "site").read_text()
    last = rows(index)[-1]
    assert ">scripted players</a>" in last and ">—</td>" in last
    assert "incomplete: 7 of 114 episodes" in last and "not ranked" in last


def test_the_badge_says_what_was_verified(tmp_path):
    board = make_board()
    board["entries"][1]["verification"] = {"summary": "114/114 replayed, 24 regenerated"}
    index = build_site(board, tmp_path / "site")
    badge = '<span class="badge verified">114/114 replayed, 24 regenerated</span>'
    assert badge in index.read_text()
    assert badge in (pages(index) / "entries" / f"{file_id('scripted')}.html").read_text()
    assert '<span class="badge not-checked">not checked</span>' in index.read_text()


def test_entry_pages_keep_the_tie_marks(site):
    page = (pages(site) / "entries" / f"{file_id(EVIL)}.html").read_text()
    assert "rank 2=." in page  # overall: shared with hf:evil:model
    assert '<td class="num rank">2=</td>' in page  # maze: shared with hf:evil:model
    scripted = (pages(site) / "entries" / f"{file_id('scripted')}.html").read_text()
    assert "rank 1." in scripted and '<td class="num rank">1</td>' in scripted


def test_cross_play_reads_by_model_name_with_solo_explained_and_the_right_seats(tmp_path):
    board = make_board()
    block = board["crossplay"]["maze"]
    block["names"] = {"scripted": "scripted players", "<b>b</b>": "SmolLM2-135M-Instruct"}
    block["seat_groups"] = [["player_0", "player_2"], ["player_1", "player_3"]]
    cross = build_site(board, tmp_path / "site").read_text().split('id="crossplay"')[1]
    assert ">SmolLM2-135M-Instruct<" in cross and ">&lt;b&gt;b&lt;/b&gt;<" not in cross
    assert "model in player_0 and player_2; column: the model in player_1 and player_3" in cross
    assert "<strong>Solo</strong>: the model alone, in every seat" in cross
    # gaps and seat order on -1..1, with the zero line in the middle
    assert cross.count('<span class="zero" style="left:50.0%"></span>') == 2
    board["crossplay"]["maze"]["solo"] = {}
    board["crossplay"]["maze"]["gap"] = {}
    cross = build_site(board, tmp_path / "again").read_text().split('id="crossplay"')[1]
    assert "No solo condition" in cross


def test_caveats_name_the_secondary_metrics_that_are_not_quality(tmp_path):
    board = make_board()
    board["tasks"][0]["caveats"] = {
        "format_failure/gnome_0": "a format check, not quality",
        "success": "never shown: the primary metric",
    }
    maze = build_site(board, tmp_path / "site").read_text().split('id="task-maze"')[1]
    maze = maze.split("</section>")[0]
    assert "<code>format_failure</code>: a format check, not quality" in maze
    assert "never shown" not in maze.split("</table>")[1]
    assert 'title="lower is better; a format check, not quality"' in maze


def test_long_transcripts_are_cut_and_huge_pages_leave_episodes_out(tmp_path, monkeypatch):
    board = make_board()
    maze = board["entries"][1]["tasks"]["maze"]
    maze["episodes"][0]["turns"][0]["action"] = "A" * 50_000
    monkeypatch.setattr("llm_marl_envs.leaderboard.site.pages.PAGE_LIMIT", 10_000)
    maze["episodes"] += [episode(f"seed-{k}", 0, "y" * 3_000) for k in range(2, 12)]
    root = pages(build_site(board, tmp_path / "site"))
    page = (root / "transcripts" / file_id("scripted") / "maze.html").read_text()
    assert "A" * ACTION_LIMIT + '<span class="cut">[… 46,000 more characters' in page
    assert "A" * (ACTION_LIMIT + 1) not in page
    kept = page.count('<details class="episode"')
    assert 1 <= kept < 12 and f"The last {12 - kept} are left out" in page
    assert len(page.encode()) < 10_000 + 10_000  # one episode past the limit at most
    assert PAGE_LIMIT >= 1_000_000  # the real limit: a few MB


# --------------------------------------------------------------------------- the board's data
@pytest.mark.slow  # evaluates and scores two entries
def test_build_scores_from_the_records_and_leaves_out_cut_tasks(tmp_path):
    """Attacks: scores edited in results.json show nothing (the board scores the records);
    a folder whose tasks keep one item each (cherry-picking) is left out, named."""
    import gzip
    import json
    import shutil
    import warnings

    from llm_marl_envs.evaluation.evaluate import Team, evaluate
    from llm_marl_envs.evaluation.suite import load_suite
    from llm_marl_envs.leaderboard.board import build_board

    run = tmp_path / "run"
    team = Team.parse(None, {"0": "scripted", "pioneer_0": "random"})
    evaluate(load_suite("lite"), team, run, tasks=["gsm8k", "maze"], progress=False)
    edited = tmp_path / "board" / "entries" / "edited"
    shutil.copytree(run, edited)
    results = json.loads((edited / "results.json").read_text())
    for block in results["tasks"].values():
        block["metrics"][block["primary"]] = {"mean": 0.99, "lo": 0.98, "hi": 1.0, "n": 16}
    (edited / "results.json").write_text(json.dumps(results))
    cherry = tmp_path / "board" / "entries" / "cherry"
    shutil.copytree(run, cherry)
    for path in (cherry / "episodes").glob("*.jsonl"):
        lines = path.read_text().splitlines(keepends=True)
        path.with_suffix(".jsonl.gz").write_bytes(gzip.compress(lines[0].encode()))
        path.unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = build_board("lite", tmp_path / "board", shipped=False)
    by_id = {e["id"]: e for e in data["entries"]}
    assert list(by_id) == ["edited"]
    assert by_id["edited"]["tasks"]["maze"]["metrics"]["success"]["mean"] == 1.0
    assert by_id["edited"]["tasks"]["gsm8k"]["metrics"]["pass@1"]["mean"] < 0.5
    said = " ".join(str(w.message) for w in caught)
    assert "entry cherry" in said and "15 of its 16 episodes are missing" in said


@pytest.mark.slow  # scores the five shipped entries from their records
def test_the_shipped_board_ties_what_it_cannot_separate_and_names_its_models():
    from llm_marl_envs.leaderboard.board import build_board

    data = build_board("lite", None)
    by_id = {e["id"]: e for e in data["entries"]}
    donor = by_id["scripted"]["tasks"]["donor"]
    assert donor["metrics"]["donation_fraction"]["mean"] == 0.5
    assert (donor["rank"], by_id["default"]["tasks"]["donor"]["rank"]) == (2, 1)  # 0.500, 0.615
    assert by_id["tiny"]["overall"]["rank"] == by_id["random"]["overall"]["rank"]  # .137, .071
    # the trained pair's verification failed (its checkpoint does not ship): shown, unranked
    cory = by_id["cory-imdb"]
    assert "rank" not in cory["overall"] and "verification failed" in cory["unranked"]
    assert "rank" not in cory["tasks"]["donor"] and data["entries"][-1]["id"] == "cory-imdb"
    assert all(e["complete"] for e in data["entries"])
    ranked = [e for e in data["entries"] if "unranked" not in e]
    assert {e["id"] for e in ranked} == {"scripted", "default", "tiny", "random"}
    overall = [e["overall"]["mean"] for e in ranked]
    ranks = [e["overall"]["rank"] for e in ranked]
    assert ranks == sorted(ranks)
    for rank in set(ranks):  # by score within a tie group
        group = [m for m, r in zip(overall, ranks, strict=True) if r == rank]
        assert group == sorted(group, reverse=True)
    donor_play = data["crossplay"]["donor"]
    assert donor_play["names"]["default"] == "SmolLM2-135M-Instruct"
    assert donor_play["names"]["scripted"] == "scripted players"
    assert donor_play["seat_groups"] == [["player_0", "player_2"], ["player_1", "player_3"]]
    maze = next(t for t in data["tasks"] if t["name"] == "maze")
    assert maze["bounds"]["success"] == [0.0, 1.0] and maze["bounds"]["steps_ratio"] == [1.0, None]
    assert "format_failure/gnome_0" in maze["caveats"] and "success" not in maze["caveats"]


def test_every_seat_is_listed_in_full(tmp_path):
    """A team of long specs (each a Hub id pinned to a commit) is listed whole on the index and
    on the entry page: an earlier index cut the line at 200 characters and hid seats."""
    board = make_board()
    specs = [f"hf:org-{k}/" + "m" * 60 + "@" + f"{k:040x}" for k in range(5)]
    board["entries"][1]["played_by"] = [{"spec": spec} for spec in specs]
    index = build_site(board, tmp_path / "site")
    page = (pages(index) / "entries" / f"{file_id('scripted')}.html").read_text()
    for spec in specs:
        assert spec in index.read_text() and spec in page
    assert "…" not in index.read_text().split('id="overall"')[1].split("</table>")[0]


def test_an_unranked_entry_says_why_on_its_badge_and_rank_cell(tmp_path):
    board = make_board()
    best = board["entries"][1]
    best["overall"].pop("rank")
    best["unranked"] = "not ranked: task maze has a human seat (a person's answers)"
    index = build_site(board, tmp_path / "site").read_text()
    last = rows(index)[-1]
    assert ">scripted players</a>" in last and ">—</td>" in last
    assert last.count("not ranked: task maze has a human seat (a person&#x27;s answers)") == 2
