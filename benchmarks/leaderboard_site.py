"""How fast the leaderboard site builds, and how soon the page is usable in a browser.

A synthetic board of ``--entries`` entries (default 100) on the 7 tasks of the ``lite`` suite
(each entry with 20 two-turn episodes per task for its transcript pages, and a cross-play block
of 5 models) is built with ``llm_marl_envs.bench.site.build_site`` (timed, best of
``--repeats``), then opened from ``file://`` in headless chromium (Playwright): the time from
navigation start until the sorting script has run (``window.__leaderboardReady``, the page is
interactive), and the time one click takes to sort the overall table by its score column.

Targets (issue 19): the site builds in under 5 s and the page is interactive in under 1 s with
100 entries x 7 tasks. Results go to ``docs/benchmarks/leaderboard_site.md`` (and ``.json``).

Usage: ``python benchmarks/leaderboard_site.py [--entries 100] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import tempfile
import time
from pathlib import Path

from llm_marl_envs.bench.site import build_site
from llm_marl_envs.bench.suite import load_suite

ROOT = Path(__file__).resolve().parents[1]


def interval(rng: random.Random) -> dict:
    mean = rng.random()
    half = rng.uniform(0.02, 0.2)
    return {"mean": mean, "lo": max(0.0, mean - half), "hi": min(1.0, mean + half), "n": 16}


def synthetic_board(entries: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    suite = load_suite("lite")
    tasks = [
        {
            "name": t.name,
            "env": t.env,
            "primary": t.primary,
            "metrics": list(t.metrics),
            "higher_is_better": {m: not m.startswith("format_failure") for m in t.metrics},
            "description": t.description,
        }
        for t in suite.tasks
    ]
    board_entries = []
    for i in range(entries):
        blocks = {}
        for task in tasks:
            episodes = [
                {
                    "key": f"row-{k}",
                    "score": rng.random(),
                    "turns": [
                        {
                            "agent": agent,
                            "observation": "A prompt of a few hundred characters. " * 8,
                            "action": "An answer of moderate length, as models write. " * 4,
                            "reward": rng.random(),
                            "format_error": None,
                        }
                        for agent in ("agent_0", "agent_1")
                    ],
                }
                for k in range(20)
            ]
            blocks[task["name"]] = {
                "rank": rng.randint(1, entries),
                "metrics": {m: interval(rng) for m in task["metrics"]},
                "episodes": episodes,
            }
        board_entries.append(
            {
                "id": f"hf:org-{i}/model-{i}",
                "name": f"model {i}",
                "team": {"seats": [f"hf:org-{i}/model-{i}"], "agents": {}},
                "kind": "model",
                "verified": rng.choice([True, None]),
                "overall": {**interval(rng), "rank": rng.randint(1, entries)},
                "tasks": blocks,
                "manifest": {"package": {"version": "0.1.0"}, "seed": i},
            }
        )
    models = [f"model {i}" for i in range(5)]
    crossplay = {
        "maze": {
            "models": models,
            "seats": ["gnome_0", "gnome_1"],
            "primary": "success",
            "matrix": [[interval(rng) for _ in models] for _ in models],
            "solo": {m: interval(rng) for m in models},
            "gap": {m: interval(rng) for m in models},
            "seat_order": {f"{a}|{b}": interval(rng) for a in models for b in models if a < b},
        }
    }
    return {
        "title": f"synthetic board ({entries} entries)",
        "suite": {"name": suite.name, "version": suite.version, "hash": suite.hash()},
        "generated": "2026-11-24T00:00:00+00:00",
        "rank_rule": "rank = 1 + the number of entries whose interval lies wholly above",
        "tasks": tasks,
        "entries": board_entries,
        "crossplay": crossplay,
    }


def in_browser(index: Path, repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    ready, sort = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=["--no-sandbox"]
        )
        for _ in range(repeats):
            page = browser.new_page()
            page.goto(index.as_uri())
            page.wait_for_function("typeof window.__leaderboardReady === 'number'")
            ready.append(page.evaluate("window.__leaderboardReady") / 1000)
            sort.append(
                page.evaluate(
                    """() => { const th = document.querySelectorAll('#overall thead th')[4];
                    const t = performance.now(); th.click(); return performance.now() - t; }"""
                )
                / 1000
            )
            page.close()
        browser.close()
    return {"interactive_s": min(ready), "sort_click_s": min(sort)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "benchmarks" / "leaderboard_site"
    )
    args = parser.parse_args()
    board = synthetic_board(args.entries)
    with tempfile.TemporaryDirectory() as scratch:
        builds = []
        for _ in range(args.repeats):
            tick = time.perf_counter()
            index = build_site(board, Path(scratch) / "site")
            builds.append(time.perf_counter() - tick)
        files = [p for p in index.parent.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        index_size = index.stat().st_size
        browser = in_browser(index, args.repeats)
    row = {
        "entries": args.entries,
        "tasks": len(board["tasks"]),
        "build_s": min(builds),
        "files": len(files),
        "site_mb": size / 2**20,
        "index_kb": index_size / 1024,
        **browser,
    }
    args.out.with_suffix(".json").write_text(json.dumps(row, indent=1) + "\n")
    lines = [
        "# Leaderboard site: build and load times",
        "",
        f"`python benchmarks/leaderboard_site.py --entries {args.entries} --repeats "
        f"{args.repeats}` on {platform.machine()}, Python {platform.python_version()}, headless "
        "Debian chromium via Playwright (best of the repeats). A synthetic board: "
        f"{args.entries} entries x {row['tasks']} tasks (every metric of the lite suite), 20 "
        "two-turn episodes per entry and task in the transcript pages, a 5-model cross-play "
        "block. Targets (issue 19): build < 5 s, page interactive < 1 s.",
        "",
        "| measure | value | target |",
        "|---|---:|---|",
        f"| build_site | {row['build_s']:.2f} s | < 5 s |",
        f"| files written | {row['files']:,} ({row['site_mb']:.1f} MB; index.html "
        f"{row['index_kb']:.0f} KB) | |",
        f"| navigation start -> sorting script done (interactive) | "
        f"{row['interactive_s'] * 1000:.0f} ms | < 1 s |",
        f"| one click sorting the overall table ({args.entries} rows) | "
        f"{row['sort_click_s'] * 1000:.1f} ms | |",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
