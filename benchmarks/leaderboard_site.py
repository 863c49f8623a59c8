"""How fast the leaderboard site builds, and how soon its page is usable in a browser.

A synthetic board of ``--entries`` entries (default 100) on the 7 tasks of the ``lite`` suite
(every metric of each task; ``--episodes`` two-turn episodes per entry and task for the
transcript pages; tie ranks from the intervals, as the real board has them; a cross-play block
of 5 models on two tasks) is built with ``llm_marl_envs.leaderboard.site.pages.build_site`` (timed, over
``--repeats`` builds into the same folder, so each one also replaces the previous site). Then
``index.html`` is opened from ``file://`` in headless chromium (Debian's, driven by
Playwright), a fresh page per repeat, and the page reports:

* ``sortable``: when ``sort.js`` has run (``window.__leaderboardReady``, milliseconds since
  navigation start): from then on a click sorts;
* ``first contentful paint`` and ``DOMContentLoaded`` / ``load`` (Navigation Timing);
* ``interactive``: the later of ``sortable`` and the first contentful paint, the figure the
  target is about;
* ``click to sorted``: one click on the overall table's score column until its 100 rows are
  reordered (the handler), and until the next frame is painted; the order is checked.

Targets (the leaderboard issue): the site builds in under 5 s and the page is interactive in
under 1 s with 100 entries x 7 tasks. Results go to ``docs/benchmarks/leaderboard_site.md``
and ``.json`` (medians over the repeats, and the worst).

With ``--baseline REV``, ``build_site`` is also timed side by side with the code of git
revision ``REV`` on the same board, each build in a fresh process, the two alternating.

Usage: ``python benchmarks/leaderboard_site.py [--entries 100] [--episodes 20] [--repeats 5]
[--baseline REV]``
(needs ``chromium`` on PATH, see ``scripts/ensure-browser``, and ``pip install playwright``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llm_marl_envs.evaluation.stats import Interval, tie_ranks
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard.site.pages import build_site

ROOT = Path(__file__).resolve().parents[1]
CROSSPLAY_MODELS = 5

# Measured in the page: navigation timings, paint timing and the sort script's mark.
PAGE_TIMES = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {sortable: window.__leaderboardReady, dcl: nav.domContentLoadedEventEnd,
          load: nav.loadEventEnd, fcp: fcp ? fcp.startTime : null};
}"""
# One click on a header of the overall table: the handler's time, then until the next frame.
CLICK = """async (index) => {
  const table = document.querySelector('#overall');
  const header = table.tHead.rows[0].cells[index];
  const start = performance.now();
  header.click();
  const handler = performance.now() - start;
  await new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)));
  const painted = performance.now() - start;
  const keys = Array.from(table.tBodies[0].rows, r => r.cells[index].getAttribute('data-sort'));
  return {handler, painted, keys, order: header.getAttribute('aria-sort')};
}"""


def interval(rng: random.Random, scale: float = 1.0) -> dict:
    """A plausible mean with its 95% interval on [0, scale]."""
    mean = rng.random() * scale
    half = rng.uniform(0.02, 0.2) * scale
    return {"mean": mean, "lo": max(0.0, mean - half), "hi": min(scale, mean + half), "n": 16}


def synthetic_board(entries: int, episodes: int, seed: int = 0) -> dict:
    """A board of the shape ``build_board`` makes: ``entries`` entries on the lite tasks."""
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
        entry_id = f"hf:org-{i}/model-{i}"
        blocks = {}
        for task in tasks:
            if (i + len(task["name"])) % 23 == 0:
                continue  # a few entries did not run a task
            blocks[task["name"]] = {
                "team": {"agent_0": entry_id, "agent_1": entry_id},
                "metrics": {m: interval(rng) for m in task["metrics"]},
                "episodes": [
                    {
                        "key": f"row-{k}",
                        "score": rng.random(),
                        "turns": [
                            {
                                "agent": agent,
                                "observation": "A prompt of a few hundred characters. " * 8,
                                "action": "An answer of moderate length, as models write. " * 4,
                                "reward": rng.random(),
                                "format_error": None if rng.random() < 0.9 else "no answer",
                            }
                            for agent in ("agent_0", "agent_1")
                        ],
                    }
                    for k in range(episodes)
                ],
            }
        board_entries.append(
            {
                "id": entry_id,
                "name": f"org-{i}/model-{i} (greedy)",
                "team": {"seats": [entry_id], "agents": {}},
                "kind": rng.choice(["model", "model", "baseline", "trained"]),
                "verified": rng.choice([True, None, False]),
                "overall": interval(rng),
                "tasks": blocks,
                "manifest": {
                    "package": {"name": "llm-marl-envs", "version": "0.1.0"},
                    "seeds": list(range(16)),
                    "libraries": {"python": "3.11.7", "torch": "2.13.0", "numpy": "2.4.6"},
                    "hardware": {"cpus": 2, "gpu": None},
                    "wall_time_s": rng.uniform(60, 3600),
                    "tokens": rng.randint(10_000, 100_000),
                },
            }
        )
    ranks = tie_ranks([Interval.from_dict(e["overall"]) for e in board_entries])
    for entry, rank in zip(board_entries, ranks, strict=True):
        entry["overall"]["rank"] = rank
    for task in tasks:
        have = [e for e in board_entries if task["name"] in e["tasks"]]
        ranks = tie_ranks(
            [Interval.from_dict(e["tasks"][task["name"]]["metrics"][task["primary"]]) for e in have]
        )
        for entry, rank in zip(have, ranks, strict=True):
            entry["tasks"][task["name"]]["rank"] = rank
    board_entries.sort(key=lambda e: e["overall"]["rank"])
    models = [board_entries[i]["id"] for i in range(min(CROSSPLAY_MODELS, entries))]
    crossplay = {
        name: {
            "models": models,
            "seats": seats,
            "primary": primary,
            "matrix": [[interval(rng) for _ in models] for _ in models],
            "solo": {m: interval(rng) for m in models},
            "gap": {m: interval(rng) for m in models},
            "seat_order": {f"{a}|{b}": interval(rng) for a in models for b in models if a < b},
        }
        for name, primary, seats in (
            ("maze", "success", ["gnome_0", "gnome_1"]),
            ("donor", "donation_fraction", ["player_0", "player_1"]),
        )
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


def chromium_version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def in_browser(index: Path, repeats: int, chromium: str) -> dict:
    """Page timings (ms) per repeat, each on a fresh page."""
    from playwright.sync_api import sync_playwright

    runs = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        column = 2  # the overall score
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(index.as_uri(), wait_until="load")
            page.wait_for_function("typeof window.__leaderboardReady === 'number'")
            page.wait_for_function("performance.getEntriesByName('first-contentful-paint').length")
            times = page.evaluate(PAGE_TIMES)
            click = page.evaluate(CLICK, column)
            values = [float(k) if k else float("inf") for k in click["keys"]]
            if values != sorted(values) or click["order"] != "ascending":
                raise RuntimeError("the click did not sort the overall table")
            rows = page.locator("#overall tbody tr").count()
            runs.append(
                {
                    **times,
                    "interactive": max(times["sortable"], times["fcp"]),
                    "click_handler": click["handler"],
                    "click_painted": click["painted"],
                    "rows": rows,
                }
            )
            page.close()
        browser.close()
    return runs


#: Times ``build_site`` on a board saved as JSON, in a fresh process importing the package from
#: PYTHONPATH (the editable install's finder removed), wherever that version keeps it.
BUILD_CHILD = (
    "import json, sys, time\n"
    "sys.meta_path[:] = [f for f in sys.meta_path\n"
    "    if not str(getattr(f, '__module__', '')).startswith('__editable__')]\n"
    "import llm_marl_envs\n"
    "try:\n"
    "    from llm_marl_envs.leaderboard.site.pages import build_site\n"
    "except ImportError:  # before issue 49\n"
    "    from llm_marl_envs.evaluation.site import build_site\n"
    "board = json.loads(open(sys.argv[1], encoding='utf-8').read())\n"
    "start = time.perf_counter()\n"
    "build_site(board, sys.argv[2])\n"
    "print(json.dumps({'seconds': time.perf_counter() - start, 'code': llm_marl_envs.__file__}))\n"
)


def side_by_side(board: dict, revision: str, repeats: int, scratch: Path) -> dict[str, list]:
    """``build_site`` of ``board`` by this tree and by ``revision``'s, each in a fresh process,
    alternating, ``repeats`` times each."""
    tree = scratch / "baseline"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), revision],
        check=True,
        capture_output=True,
    )
    saved = scratch / "board.json"
    saved.write_text(json.dumps(board), encoding="utf-8")
    times: dict[str, list] = {"now": [], "baseline": []}
    try:
        for _ in range(repeats):
            for label, code in (("now", ROOT), ("baseline", tree)):
                env = {"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
                done = subprocess.run(
                    [sys.executable, "-c", BUILD_CHILD, str(saved), str(scratch / f"{label}-site")],
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=code,
                    check=True,
                )
                outcome = json.loads(done.stdout.strip().splitlines()[-1])
                if not outcome["code"].startswith(str(code)):
                    raise SystemExit(f"the child imported llm_marl_envs from outside {code}")
                times[label].append(outcome["seconds"])
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
            capture_output=True,
        )
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--episodes", type=int, default=20, help="per entry and task")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--baseline",
        default=None,
        help="also time build_site with the code of this git revision, side by side",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "benchmarks" / "leaderboard_site"
    )
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("no chromium on PATH: run scripts/ensure-browser")
    board = synthetic_board(args.entries, args.episodes)
    with tempfile.TemporaryDirectory() as scratch:
        builds = []
        for _ in range(args.repeats):
            tick = time.perf_counter()
            index = build_site(board, Path(scratch) / "site")
            builds.append(time.perf_counter() - tick)
        files = [p for p in index.parent.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        index_kb = index.stat().st_size / 1024
        runs = in_browser(index, args.repeats, chromium)
        compared = (
            side_by_side(board, args.baseline, args.repeats, Path(scratch))
            if args.baseline
            else None
        )
    assert all(run["rows"] == args.entries for run in runs)

    def median(key: str) -> float:
        return statistics.median(run[key] for run in runs)

    def worst(key: str) -> float:
        return max(run[key] for run in runs)

    keys = ("sortable", "fcp", "dcl", "load", "interactive", "click_handler", "click_painted")
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    browser_name = chromium_version(chromium)
    result = {
        "entries": args.entries,
        "tasks": len(board["tasks"]),
        "episodes_per_task": args.episodes,
        "repeats": args.repeats,
        "machine": machine,
        "python": platform.python_version(),
        "browser": browser_name,
        "build_s": {"median": round(statistics.median(builds), 3), "worst": round(max(builds), 3)},
        "side_by_side": (
            None
            if compared is None
            else {
                "baseline": args.baseline,
                **{k: [round(t, 3) for t in v] for k, v in compared.items()},
            }
        ),
        "files": len(files),
        "site_mb": round(size / 2**20, 2),
        "index_kb": round(index_kb, 1),
        "page_ms": {
            key: {"median": round(median(key), 1), "worst": round(worst(key), 1)} for key in keys
        },
    }
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    build_ok = max(builds) < 5
    ready_ok = worst("interactive") < 1000

    def row(label: str, key: str, target: str = "", met: str = "") -> str:
        return f"| {label} | {median(key):.0f} | {worst(key):.0f} | {target} | {met} |"

    lines = [
        "# Leaderboard site: build and load times",
        "",
        f"Measured by `python benchmarks/leaderboard_site.py --entries {args.entries} --episodes "
        f"{args.episodes} --repeats {args.repeats}"
        f"{f' --baseline {args.baseline}' if args.baseline else ''}`: a synthetic board of "
        f"{args.entries} entries x "
        f"{result['tasks']} tasks (every metric of each `lite` task, tie ranks from the "
        f"intervals, {args.episodes} two-turn episodes per entry and task in the transcript "
        f"pages, a {CROSSPLAY_MODELS}-model cross-play on two tasks), built by `build_site`, "
        "then `index.html` opened from `file://` in headless chromium driven by Playwright, a "
        "fresh page per repeat. Medians and the worst of the repeats. Raw figures: "
        "`leaderboard_site.json`.",
        "",
        f"Machine: {machine}, CPU only, Python {platform.python_version()}, {browser_name}.",
        "",
        "| build | median | worst | target | met |",
        "|---|---:|---:|---|---|",
        f"| `build_site`, seconds | {statistics.median(builds):.2f} | {max(builds):.2f} | < 5 s | "
        f"{'yes' if build_ok else 'NO'} |",
        *(
            []
            if compared is None
            else [
                f"| side by side, each in a fresh process: this tree | "
                f"{statistics.median(compared['now']):.2f} | {max(compared['now']):.2f} | | |",
                f"| side by side: the code of `{args.baseline}` | "
                f"{statistics.median(compared['baseline']):.2f} | "
                f"{max(compared['baseline']):.2f} | | |",
            ]
        ),
        "",
        f"It writes {len(files):,} files, {size / 2**20:.1f} MB (index.html {index_kb:,.0f} KB; "
        "the rest is one page per entry and one per entry and task of transcripts).",
        "",
        "| in the browser, milliseconds after navigation start | median | worst | target | met |",
        "|---|---:|---:|---|---|",
        row("`sort.js` has run: a click sorts (`window.__leaderboardReady`)", "sortable"),
        row("first contentful paint", "fcp"),
        row("DOMContentLoaded done", "dcl"),
        row("load done", "load"),
        row(
            "**interactive**: painted and sortable (the later of the two)",
            "interactive",
            "< 1,000 ms",
            "yes" if ready_ok else "NO",
        ),
        row(f"one click sorting the overall table ({args.entries} rows): handler", "click_handler"),
        row("one click sorting the overall table: until the next frame", "click_painted"),
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
