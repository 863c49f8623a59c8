"""The documentation site (mkdocs.yml) builds offline with warnings as errors.

A broken link, a page left out of the nav, or a docstring that mkdocstrings / griffe warns about
(a parameter documented but not in the signature, an unresolved cross-reference) fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # every test reads the site that mkdocs builds

for _module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
    pytest.importorskip(
        _module, reason=f"the docs site needs {_module}: pip install -e '.[docs]' (or '.[all]')"
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site_dir = tmp_path_factory.mktemp("site")
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        # Offline: anything that tried to download at build time would fail, not succeed.
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        ALL_PROXY="http://127.0.0.1:9",
        NO_PROXY="",
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--clean",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(site_dir),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return site_dir


def test_site_builds_strictly(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Two commands on a fresh machine" in home  # the README is the home page
    for page in (
        "trainers.html",
        "envs/index.html",
        "envs/GSM8K-v0.html",
        "sandbox.html",
        "baselines.html",
        "runs/index.html",
        "benchmarks/rollout_speed.html",
    ):
        assert (site / page).is_file(), page


def test_readme_links_point_into_the_site(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    hrefs = set(re.findall(r'href="([^"#:]+)(?:#[^"]*)?"', home))
    assert {"sandbox.html", "baselines.html", "trainers.html", "envs/index.html"} <= hrefs
    assert not [href for href in hrefs if href.endswith(".md")]
    assert all((site / href).exists() for href in hrefs), sorted(hrefs)


def test_api_reference_is_rendered_from_docstrings(site):
    api = (site / "api" / "llm_marl_envs.html").read_text(encoding="utf-8")
    for name in ("make", "make_parallel", "list_envs", "spec"):
        assert f'id="llm_marl_envs.{name}"' in api
    sandbox = (site / "api" / "sandbox.html").read_text(encoding="utf-8")
    assert 'id="llm_marl_envs.sandbox.pool.run_tests"' in sandbox
    assert "<blockquote>" not in sandbox  # doctest blocks are code, not nested quotes


_REMOTE = re.compile(r"^(?:https?:)?//", re.I)
_ATTR = re.compile(r'\b(href|src)="([^"]*)"')


def _site_files(site: Path, *suffixes: str) -> list[Path]:
    return [path for path in site.rglob("*") if path.suffix in suffixes and path.is_file()]


def test_site_loads_nothing_from_outside(site):
    """Opened offline, no page waits on a remote script, style sheet or font."""
    remote = []
    for path in _site_files(site, ".html", ".css"):
        text = path.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", text, re.I):
            remote += [(path.name, url) for _, url in _ATTR.findall(tag) if _REMOTE.match(url)]
        for url in re.findall(r"""(?:url\(|@import\s+)["']?([^"')\s;]+)""", text):
            remote += [(path.name, url)] if _REMOTE.match(url) else []
        # Material's bundle fetches mermaid from a CDN for a diagram: the site has none
        assert 'class="mermaid"' not in text, path
    assert not remote, remote[:10]
    shim = site / "assets" / "vendor" / "iframe-worker-shim.js"  # search's worker, on file://
    assert shim.is_file() and "iframe-worker" in (site / "index.html").read_text(encoding="utf-8")


def test_every_link_is_relative(site):
    """No href or src starts with "/": the site works from any folder, by file:// too."""
    rooted = [
        (str(path.relative_to(site)), url)
        for path in _site_files(site, ".html")
        for _, url in _ATTR.findall(path.read_text(encoding="utf-8"))
        if url.startswith("/")
    ]
    assert not rooted, rooted[:10]


def test_the_404_page_links_resolve_to_files_of_the_site(site):
    page = (site / "404.html").read_text(encoding="utf-8")
    local = {
        url.split("#")[0].split("?")[0]
        for _, url in _ATTR.findall(page)
        if not _REMOTE.match(url) and not url.startswith(("#", "mailto:", "data:"))
    }
    local.discard("")
    assert {"./index.html", "./sandbox.html"} <= local
    missing = [url for url in sorted(local) if not (site / url).is_file()]
    assert not missing, missing
