"""The leaderboard site in a real headless browser (Debian's chromium, driven by Playwright):
it loads from file://, sorts a column, opens a transcript and an entry's manifest, and takes
a screenshot. ``make test`` installs chromium when it is missing (scripts/ensure-browser)."""

from __future__ import annotations

import os
import shutil

import pytest

from llm_marl_envs.bench.evaluate import Team, evaluate
from llm_marl_envs.bench.leaderboard import add_entry, build
from llm_marl_envs.bench.suite import load_suite

if os.environ.get("LLM_MARL_SKIP_BROWSER") == "1":
    pytest.skip("LLM_MARL_SKIP_BROWSER=1", allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("no chromium on PATH: run scripts/ensure-browser (make test does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser test needs Playwright: pip install -e '.[dev]'")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A real board: the scripted players and random text on two lite tasks."""
    root = tmp_path_factory.mktemp("board")
    suite = load_suite("lite")
    for spec in ("scripted", "random"):
        evaluate(suite, Team.parse(spec), root / spec, tasks=["maze", "donor"], progress=False)
        add_entry(root / spec, root / "board", kind="baseline")
    return build(root / "site", board=root / "board", shipped=False)


def column(page, table: str, index: int) -> list[str]:
    return page.eval_on_selector_all(
        f"{table} tbody tr", f"rows => rows.map(r => r.cells[{index}].getAttribute('data-sort'))"
    )


def test_load_sort_open_and_screenshot(browser, site, tmp_path):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(site.as_uri())
    assert page.evaluate("typeof window.__leaderboardReady") == "number"  # the script ran
    maze = "#task-maze table"
    assert page.locator(f"{maze} tbody tr").count() == 2
    # sort the maze table by entry name, then reverse it
    header = page.locator(f"{maze} thead th").nth(1)
    header.click()
    names = column(page, maze, 1)
    assert (
        names == sorted(names, key=str.lower) and header.get_attribute("aria-sort") == "ascending"
    )
    header.click()
    assert column(page, maze, 1) == sorted(names, key=str.lower, reverse=True)
    # numbers sort as numbers: the success column, ascending
    success = page.locator(f"{maze} thead th").nth(2)
    success.click()
    values = [float(v) for v in column(page, maze, 2)]
    assert values == sorted(values)
    # a score links to its transcripts: the scripted gnomes' moves are there
    page.locator(f"{maze} tbody tr", has_text="scripted").locator("td a").nth(1).click()
    page.wait_for_load_state()
    assert "maze" in page.title()
    assert page.locator("details.episode").count() == 16
    assert page.locator("pre.action").first.inner_text().strip()
    # the entry page shows the manifest
    page.locator("a", has_text="scripted").first.click()
    page.wait_for_load_state()
    assert '"env_spec_hash"' in page.locator("pre").inner_text()
    page.goto(site.as_uri())
    shot = tmp_path / "leaderboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    page.close()
