"""The static leaderboard site, read as files (the browser test is test_site_browser.py)."""

from __future__ import annotations

import copy
import html

import pytest

from llm_marl_envs.bench.site import build_site, file_id

HOSTILE = '<script>alert("x")</script> "quoted" \ufffd ' + "long " * 2000


def interval(mean, lo, hi, n=10):
    return {"mean": mean, "lo": lo, "hi": hi, "n": n}


def make_board() -> dict:
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

    def entry(entry_id, name, overall, maze, gsm8k=None):
        tasks_ = {
            "maze": {
                "rank": maze[3],
                "team": {"gnome_0": entry_id, "gnome_1": entry_id},
                "metrics": {
                    "success": interval(*maze[:3]),
                    "format_failure/gnome_0": interval(0, 0, 0),
                },
                "episodes": [
                    {
                        "key": "seed-0",
                        "score": maze[0],
                        "turns": [
                            {
                                "agent": "gnome_0",
                                "observation": "You see walls.",
                                "action": HOSTILE if entry_id == "hf:evil/model" else "up",
                                "reward": -0.1,
                                "format_error": None,
                            }
                        ],
                    }
                ],
            }
        }
        if gsm8k:
            tasks_["gsm8k"] = {"rank": 1, "metrics": {"pass@1": interval(*gsm8k)}, "episodes": []}
        return {
            "id": entry_id,
            "name": name,
            "team": {"seats": [entry_id], "agents": {}},
            "kind": "model",
            "verified": entry_id == "scripted",
            "overall": {**interval(*overall[:3]), "rank": overall[3]} if overall else None,
            "tasks": tasks_,
            "manifest": {"package": {"version": "0.1.0"}, "note": HOSTILE},
        }

    return {
        "title": "test board",
        "suite": {"name": "lite", "version": 1, "hash": "sha256:abc"},
        "generated": "2026-11-24T00:00:00+00:00",
        "rank_rule": "rank = 1 + entries wholly above",
        "tasks": tasks,
        "entries": [
            entry(
                "scripted",
                "scripted players",
                (0.9, 0.8, 1.0, 1),
                (1.0, 1.0, 1.0, 1),
                (0.5, 0.3, 0.7),
            ),
            entry("hf:evil/model", "evil <b>model</b>", (0.5, 0.4, 0.6, 2), (0.2, 0.0, 0.4, 2)),
            entry("hf:evil:model", "another", None, (0.1, 0.0, 0.3, 2)),
        ],
        "crossplay": {
            "maze": {
                "models": ["a", "b"],
                "seats": ["gnome_0", "gnome_1"],
                "matrix": [
                    [interval(0.8, 0.6, 1.0), interval(0.4, 0.2, 0.6)],
                    [None, interval(0.1, 0, 0.2)],
                ],
                "solo": {"a": interval(0.9, 0.8, 1.0)},
                "gap": {"a": interval(-0.1, -0.3, 0.1)},
                "seat_order": {"a|b": interval(0.2, 0.0, 0.4)},
            }
        },
    }


@pytest.fixture
def site(tmp_path):
    return build_site(make_board(), tmp_path / "site")


def test_pages_exist_and_hold_the_data(site):
    root = site.parent
    assert (
        site.name == "index.html"
        and (root / "style.css").is_file()
        and (root / "sort.js").is_file()
    )
    index = site.read_text()
    assert index.count('<table class="sortable"') == 3  # overall + two tasks
    assert "0.900 <small>[0.800, 1.000] (10)</small>" in index
    assert 'class="v-verified"' in index and "sha256:abc" in index
    assert "collaboration gap -0.100 [-0.300, 0.100]" in index and "hsl(" in index
    for entry_id in ("scripted", "hf:evil/model", "hf:evil:model"):
        fid = file_id(entry_id)
        assert (root / "entries" / f"{fid}.html").is_file()
        assert (root / "transcripts" / fid / "maze.html").is_file()
        assert f'href="transcripts/{fid}/maze.html"' in index
    transcript = (root / "transcripts" / file_id("scripted") / "maze.html").read_text()
    assert "seed-0: score 1.000" in transcript and '<pre class="action">up</pre>' in transcript


def test_ids_with_slashes_and_colons_get_distinct_safe_files():
    names = {file_id(i) for i in ("hf:evil/model", "hf:evil:model", "hf:evil-model")}
    assert len(names) == 3 and not any(set(n) & set("/:\\") for n in names)


def test_hostile_text_is_escaped(site):
    root = site.parent
    transcript = (root / "transcripts" / file_id("hf:evil/model") / "maze.html").read_text()
    assert "<script>alert" not in transcript
    assert html.escape(HOSTILE, quote=True) in transcript  # shown whole, as text
    entry = (root / "entries" / f"{file_id('hf:evil/model')}.html").read_text()
    assert "<script>alert" not in entry and "&lt;script&gt;" in entry
    assert "evil &lt;b&gt;model&lt;/b&gt;" in site.read_text()


def test_missing_task_and_missing_overall_show_a_dash(site):
    index = site.read_text()
    row = (
        index.split("another</a>")[0].rsplit("<tr", 1)[1]
        + index.split("another</a>")[1].split("</tr>")[0]
    )
    assert '<td class="num" data-sort="">-</td>' in row


def test_builds_are_byte_identical(tmp_path):
    first = build_site(make_board(), tmp_path / "a").parent
    second = build_site(make_board(), tmp_path / "b").parent
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    # building again into the same folder replaces it
    build_site(make_board(), tmp_path / "a")
    assert not (tmp_path / "a.tmp").exists() and not (tmp_path / "a.old").exists()


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda b: b.pop("tasks"), "'tasks'"),
        (lambda b: b["suite"].pop("hash"), "'suite.hash'"),
        (lambda b: b["tasks"][1].pop("primary"), "'tasks[1].primary'"),
        (lambda b: b["entries"][2].pop("manifest"), "'entries[2].manifest'"),
    ],
)
def test_missing_keys_name_their_path(tmp_path, edit, path):
    board = copy.deepcopy(make_board())
    edit(board)
    with pytest.raises(ValueError, match=path.replace("[", r"\[").replace("]", r"\]")):
        build_site(board, tmp_path / "site")
