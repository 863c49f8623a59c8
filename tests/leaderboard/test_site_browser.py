"""The leaderboard site in a real headless browser: Debian's ``chromium`` driven by Playwright.

The site is the one ``llm-marl leaderboard build`` writes for the entries that ship with the
package. From ``file://`` the page loads with every entry, a click on a column header sorts
it, a score opens its transcripts, an entry's page shows its manifest, hostile model output
stays text, the tables read without JavaScript, and screenshots are taken at a 1,366 px
window and a 390 px phone, where the layout is checked: no sideways page scroll, the nav
and the tables' header rows stay in view, rows by score within a tie group, and a
5,000-character name does not widen the page.

Without chromium or Playwright these tests fail (``make test`` installs chromium with
``scripts/ensure-browser``; Playwright is in the ``dev`` extra); ``LLM_MARL_SKIP_BROWSER=1``
skips them instead.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from llm_marl_envs.cli import main as llm_marl
from llm_marl_envs.leaderboard.board import build_board
from llm_marl_envs.leaderboard.site.pages import ACTION_LIMIT, build_site, file_id

pytestmark = pytest.mark.slow  # a headless chromium

if os.environ.get("LLM_MARL_SKIP_BROWSER") == "1":
    pytest.skip("LLM_MARL_SKIP_BROWSER=1: the browser tests are skipped", allow_module_level=True)

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> \"q\" 'q' & \ufffd " + "z" * 10_000


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for the module, or the one-line reason there is none."""
    chromium = shutil.which("chromium")
    if chromium is None:
        yield "no chromium on PATH: run scripts/ensure-browser (make test does), then retry"
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        yield "Playwright is not installed: pip install playwright (it is in the dev extra)"
        return
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield browser
        browser.close()


def usable(browser_or_page):
    """Fail the calling test (not its set-up, so it reads FAILED) when there is no browser."""
    if isinstance(browser_or_page, str):
        pytest.fail(browser_or_page, pytrace=False)
    return browser_or_page


@pytest.fixture
def page(browser):
    """A fresh page that records script errors and dialogs (there must be none); the reason
    when there is no browser (each test starts with ``usable(page)``)."""
    if isinstance(browser, str):
        yield browser
        return
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    problems = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on(
        "dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss())
    )
    yield page
    page.close()
    assert not problems


@pytest.fixture(scope="module")
def board() -> dict:
    """The shipped entries' board data, to compare the pages with."""
    return build_board("lite", board=None)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``llm-marl leaderboard build`` of the shipped entries (no added board)."""
    root = tmp_path_factory.mktemp("leaderboard")
    out = root / "site"
    assert llm_marl(["leaderboard", "build", "--out", str(out), "--board", str(root / "none")]) == 0
    return out / "index.html"


def cells(page, table: str, index: int, attribute: str | None = None) -> list[str]:
    """Column ``index`` of ``table``'s body, as shown (or one attribute), top to bottom; of the
    entry column, the name (its link's text)."""
    read = (
        f"c.getAttribute('{attribute}')"
        if attribute
        else "(c.querySelector('td.name > a') || c).innerText.trim()"
    )
    return page.eval_on_selector_all(
        f"{table} tbody tr",
        f"rows => rows.map(r => {{ const c = r.cells[{index}]; return {read}; }})",
    )


def test_the_page_loads_with_every_entry(page, site, board):
    usable(page)
    page.goto(site.as_uri())
    assert page.evaluate("typeof window.__leaderboardReady") == "number"  # sort.js ran
    assert page.title() == board["title"]
    assert page.locator("#overall tbody tr").count() == len(board["entries"])
    assert cells(page, "#overall", 1) == [e["name"] for e in board["entries"]]  # rank order
    for task in board["tasks"]:
        ran = sum(task["name"] in e["tasks"] for e in board["entries"])
        assert page.locator(f"#task-{task['name']} tbody tr").count() == ran
    assert page.locator("table.heatmap").count() == len(board["crossplay"])
    assert page.get_by_text(board["suite"]["hash"]).count() == 1


def test_a_click_on_a_header_sorts_its_column(page, site, board):
    usable(page)
    page.goto(site.as_uri())
    names = cells(page, "#overall", 1)
    header = page.locator("#overall thead th").nth(1)
    header.click()
    ascending = cells(page, "#overall", 1)
    assert ascending == sorted(names, key=str.lower) and ascending != names
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert cells(page, "#overall", 1) == sorted(names, key=str.lower, reverse=True)
    assert header.get_attribute("aria-sort") == "descending"
    # scores sort as numbers: the overall column (2), by its data-sort and as shown
    score = page.locator("#overall thead th").nth(2)
    score.click()
    values = [float(v) for v in cells(page, "#overall", 2, "data-sort")]
    assert values == sorted(values) and score.get_attribute("aria-sort") == "ascending"
    assert header.get_attribute("aria-sort") == "none"
    shown = [float(text.split()[0]) for text in cells(page, "#overall", 2)]
    assert shown == sorted(shown)
    # a task table sorts on its own
    maze = "#task-maze table"
    page.locator(f"{maze} thead th").nth(2).click()
    values = [float(v) for v in cells(page, maze, 2, "data-sort")]
    assert values == sorted(values)


def test_a_score_opens_its_transcript(page, site, board):
    usable(page)
    page.goto(site.as_uri())
    entry = board["entries"][0]
    column = 3 + [t["name"] for t in board["tasks"]].index("maze")
    page.locator("#overall tbody tr").first.locator("td").nth(column).locator("a").click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/transcripts/{file_id(entry['id'])}/maze.html")
    assert page.title() == f"{entry['name']}: maze"
    episodes = entry["tasks"]["maze"]["episodes"]
    assert page.locator("details.episode").count() == len(episodes) > 0
    first = page.locator("details.episode").first
    assert first.get_attribute("open") is not None
    action = first.locator("pre.action").first
    assert action.is_visible()
    assert action.inner_text().strip() == episodes[0]["turns"][0]["action"].strip()
    # the next episode opens on a click
    second = page.locator("details.episode").nth(1)
    second.locator("> summary").click()
    assert second.locator("pre.action").first.is_visible()


def test_an_entry_page_shows_its_manifest(page, site, board):
    usable(page)
    page.goto(site.as_uri())
    entry = board["entries"][1]
    page.locator("#overall tbody tr").nth(1).locator("td").nth(1).locator("a").first.click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/entries/{file_id(entry['id'])}.html")
    assert json.loads(page.locator("pre.manifest").inner_text()) == entry["manifest"]
    # what the result only claims is shown apart, under its own heading
    assert json.loads(page.locator("pre.claims").inner_text()) == entry["claimed"]
    assert page.get_by_role("heading", name="Claimed").is_visible()
    # and links back to the transcripts
    page.locator("table.plain a").first.click()
    page.wait_for_load_state()
    assert page.locator("details.episode").count() > 0


def test_hostile_model_output_stays_text(page, tmp_path):
    usable(page)
    interval = {"mean": 0.5, "lo": 0.25, "hi": 0.75, "n": 4}
    turn = {"agent": "a", "observation": HOSTILE, "action": HOSTILE, "reward": 0.0}
    board = {
        "title": HOSTILE[:40],
        "suite": {"name": "s", "version": 1, "hash": "h"},
        "rank_rule": "r",
        "tasks": [{"name": "t", "env": "e", "primary": "m", "metrics": ["m"]}],
        "entries": [
            {
                "id": "hf:x/y",
                "name": HOSTILE,
                "overall": interval,
                "tasks": {
                    "t": {
                        "metrics": {"m": interval},
                        "episodes": [{"key": HOSTILE, "turns": [turn]}],
                    }
                },
                "manifest": {"note": HOSTILE},
            }
        ],
    }
    index = build_site(board, tmp_path / "site")
    page.goto(index.as_uri())
    assert page.locator("#overall tbody td.name > a").inner_text() == HOSTILE.strip()
    pages = next(index.parent.glob("site-*"))  # the version folder: the pages but the index
    page.goto((pages / "transcripts" / file_id("hf:x/y") / "t.html").as_uri())
    action = page.locator("pre.action").inner_text()  # cut at ACTION_LIMIT, as text
    assert action.startswith(HOSTILE[:ACTION_LIMIT]) and "more characters not shown" in action
    assert page.evaluate("document.querySelectorAll('script, img').length") == 0
    page.goto((pages / "entries" / f"{file_id('hf:x/y')}.html").as_uri())
    assert json.loads(page.locator("pre.manifest").inner_text()) == {"note": HOSTILE}


def test_the_tables_read_without_javascript(browser, site, board):
    context = usable(browser).new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site.as_uri())
    assert page.locator("#overall tbody tr").count() == len(board["entries"])
    assert page.locator("#overall tbody tr").first.inner_text().startswith("1")
    context.close()


LAYOUT = """() => {
  const overflow = document.documentElement.scrollWidth - window.innerWidth;
  const heads = [...document.querySelectorAll("thead th")].map(th => getComputedStyle(th).position);
  const nav = getComputedStyle(document.querySelector("nav")).position;
  return {overflow, heads: [...new Set(heads)], nav};
}"""


def tie_groups_in_score_order(page, table: str, score_column: int) -> bool:
    """Whether, inside each tie group (rows of one rank), the scores fall from top to bottom."""
    ranks = cells(page, table, 0)
    scores = [float(v) for v in cells(page, table, score_column, "data-sort")]
    for rank in set(ranks):
        group = [s for r, s in zip(ranks, scores, strict=True) if r == rank]
        if group != sorted(group, reverse=True):
            return False
    return True


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_the_board_fits_the_window_with_its_header_in_view(browser, site, board, width, height):
    """At a laptop's 1,366 px and a phone's 390 px: no sideways page scroll (tables scroll in
    their own box), the nav and the header rows are sticky, rows by score within a tie group;
    full-page screenshots are kept beside the site (``site/../screenshot-<width>.png``)."""
    page = usable(browser).new_page(viewport={"width": width, "height": height})
    page.goto(site.as_uri())
    layout = page.evaluate(LAYOUT)
    assert layout["overflow"] <= 0, f"the page scrolls sideways by {layout['overflow']} px"
    assert layout["heads"] == ["sticky"] and layout["nav"] == "sticky"
    assert tie_groups_in_score_order(page, "#overall", 2)
    for task in board["tasks"]:
        assert tie_groups_in_score_order(page, f"#task-{task['name']} table", 2)
    # scrolled down to the maze table, its nav is still at the top of the window
    page.locator("#task-maze").scroll_into_view_if_needed()
    page.mouse.wheel(0, 300)
    assert page.evaluate("document.querySelector('nav').getBoundingClientRect().top") == 0
    if width == 1366:  # the overall table fits the window: no scrolling inside its box
        box = page.evaluate(
            "(() => { const b = document.querySelector('#overall').parentElement; "
            "return b.scrollWidth - b.clientWidth; })()"
        )
        assert box <= 0, f"the overall table is {box} px too wide for a 1,366 px window"
    shot = site.parent.parent / f"screenshot-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000
    assert int.from_bytes(data[16:20], "big") == width  # the whole page, not wider
    page.close()


def test_a_5000_character_name_does_not_widen_the_page(browser, tmp_path):
    interval = {"mean": 0.5, "lo": 0.25, "hi": 0.75, "n": 4}
    name = "W" * 5_000
    board = {
        "title": "t",
        "suite": {"name": "s", "version": 1, "hash": "h"},
        "rank_rule": "r",
        "tasks": [{"name": "t", "env": "e", "primary": "m", "metrics": ["m"]}],
        "entries": [
            {
                "id": name,
                "name": name,
                "overall": interval,
                "tasks": {"t": {"metrics": {"m": interval}, "episodes": []}},
                "manifest": {"name": name},
            }
        ],
    }
    index = build_site(board, tmp_path / "site")
    page = usable(browser).new_page(viewport={"width": 390, "height": 844})
    pages = next(index.parent.glob("site-*"))  # the version folder: the pages but the index
    for path in (index, pages / "entries" / f"{file_id(name)}.html"):
        page.goto(path.as_uri())
        assert page.evaluate(LAYOUT)["overflow"] <= 0, path.name
    page.close()
