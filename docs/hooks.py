"""MkDocs hooks (``hooks:`` in mkdocs.yml): pages from outside ``docs/``, and repository links.

* ``README.md`` is the site's home page, ``baselines/README.md`` and ``CHANGELOG.md`` pages of their own: all are
  read at build time, so their text has one source.
* The "Environments" section of the nav lists the pages that ``docs/envs/README.md`` lists (both
  are written by ``llm-marl docs`` from the registry), so a new environment needs no nav edit.
* Relative links are written for the repository (the README links ``docs/sandbox.md``,
  ``docs/baselines.md`` links ``../baselines/README.md``); each one that names a file shown in
  the site is rewritten relative to the page that holds it, and a link to a folder of ``docs/``
  goes to its ``README.md``. Any other link is left alone, so ``mkdocs build --strict`` still
  fails on one that is broken.
* The package's docstrings are Google style with two habits Markdown does not know: bare doctest
  blocks (``>>> ...``, which Markdown would read as nested quotes) and Sphinx roles
  (``:func:`name```). A Markdown preprocessor shows the first as Python console code and the
  second as inline code, so the docstrings stay as they are for ``help()`` and doctest.
* The site works opened from disk (``file://``) in any folder: pages link each other relatively
  (``use_directory_urls: false``), and so does the 404 page, which MkDocs would otherwise give
  root-absolute links (``/index.html``) when no ``site_url`` is set. Search's Web Worker shim,
  which Material's offline plugin would load from a CDN, is a copy in ``docs/assets/vendor/``
  (``extra.polyfills`` in mkdocs.yml); nothing else is fetched from outside.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parent.parent

# page in the site -> its source file, relative to the repository root
EXTERNAL_PAGES = {
    "index.md": "README.md",
    "trainers.md": "baselines/README.md",
    "changelog.md": "CHANGELOG.md",
}
_SOURCE_TO_PAGE = {source: page for page, source in EXTERNAL_PAGES.items()}

_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_FENCE = re.compile(r"^\s*(```|~~~)")
_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")
_DOCTEST_FLAG = re.compile(r"\s*#\s*doctest:.*$")
_ENV_INDEX = "envs/README.md"
_ENV_PAGE = re.compile(r"^- \[([^\]]+)\]\(([^)/]+\.md)\)\s*$", re.M)


@event_priority(100)  # before mkdocstrings reads the extensions, so docstrings get it too
def on_config(config):
    config.markdown_extensions.append(DocstringMarkup())
    env_index = (REPO / "docs" / _ENV_INDEX).read_text(encoding="utf-8")
    env_pages = [{title: f"envs/{page}"} for title, page in _ENV_PAGE.findall(env_index)]
    for section in config.nav or []:
        if isinstance(section, dict) and "Environments" in section:
            section["Environments"] = [_ENV_INDEX, *env_pages]
    return config


def on_template_context(context, template_name, config):
    """The 404 page (at the site's root) links relatively, like every other page."""
    if template_name == "404.html":
        context["base_url"] = "."
    return context


def on_files(files, config):
    for page, source in EXTERNAL_PAGES.items():
        files.append(File.generated(config, page, abs_src_path=str(REPO / source)))
    return files


def on_page_markdown(markdown, page, config, files):
    page_uri = page.file.src_uri
    source = EXTERNAL_PAGES.get(page_uri, f"docs/{page_uri}")
    return rewrite_links(markdown, source, page_uri)


def rewrite_links(markdown: str, source: str, page_uri: str) -> str:
    """Rewrite the relative links of ``source`` (a repository path) for the page ``page_uri``."""
    source_dir = posixpath.dirname(source)
    page_dir = posixpath.dirname(page_uri)

    def replace(match: re.Match) -> str:
        target = match.group(2)
        if "://" in target or target.startswith(("#", "/", "mailto:")):
            return match.group(0)
        path, hash_, anchor = target.partition("#")
        site_path = _site_path(posixpath.normpath(posixpath.join(source_dir, path)))
        if site_path is None:
            return match.group(0)
        new = posixpath.relpath(site_path, page_dir or ".") + hash_ + anchor
        return match.group(1) + new + match.group(3)

    lines, in_fence = [], False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
        lines.append(line if in_fence else _LINK.sub(replace, line))
    return "".join(lines)


def _site_path(repo_path: str) -> str | None:
    """The path in ``docs/`` (or of a generated page) that shows ``repo_path``, if there is one."""
    if repo_path in _SOURCE_TO_PAGE:
        return _SOURCE_TO_PAGE[repo_path]
    if not repo_path.startswith("docs/"):
        return None
    in_docs = repo_path.removeprefix("docs/")
    if (REPO / repo_path).is_dir():
        for index in ("index.md", "README.md"):
            if (REPO / repo_path / index).is_file():
                return posixpath.join(in_docs, index)
        return None
    return in_docs if (REPO / repo_path).is_file() else None


class DocstringMarkup(Extension):
    """Doctest blocks as ``pycon`` code, Sphinx roles as inline code (outside code fences)."""

    def extendMarkdown(self, md):
        # after whitespace normalisation (30), before the fenced-code preprocessor (25)
        md.preprocessors.register(_DocstringMarkupPreprocessor(md), "docstring_markup", 29)


def _role_as_code(match: re.Match) -> str:
    tilde, target = match.groups()  # as in Sphinx, ``~a.b.c`` shows only ``c``
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


class _DocstringMarkupPreprocessor(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        in_fence = in_doctest = False
        indent = ""
        for line in lines:
            if in_doctest:
                if line.strip():
                    out.append(_DOCTEST_FLAG.sub("", line))
                    continue
                out.append(indent + "```")
                in_doctest = False
            if _FENCE.match(line):
                in_fence = not in_fence
            elif not in_fence and line.lstrip().startswith(">>>"):
                indent = line[: len(line) - len(line.lstrip())]
                out.append(indent + "```pycon")
                out.append(_DOCTEST_FLAG.sub("", line))
                in_doctest = True
                continue
            out.append(line if in_fence else _ROLE.sub(_role_as_code, line))
        if in_doctest:
            out.append(indent + "```")
        return out
