"""Checks of the bundled writing samples.

* ``tldr_sample.jsonl`` mirrors the schema of the Hugging Face dataset
  ``trl-lib/tldr``: ``{"prompt": str, "completion": str}`` where the prompt is
  ``"SUBREDDIT: r/{sub}\\n\\nTITLE: {title}\\n\\nPOST: {post}\\n\\nTL;DR:"`` and
  the completion is a leading space followed by a one-sentence summary.
* ``arxiv_abstracts.jsonl`` carries the ``abstract_text`` field of the Hub
  dataset ``OpenMLRL/arXiv_abstract`` plus a ``title``.

Both files are invented, original text. Only the standard library is used.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "llm_marl_envs/data/samples"
TLDR_PATH = SAMPLES_DIR / "tldr_sample.jsonl"
ARXIV_PATH = SAMPLES_DIR / "arxiv_abstracts.jsonl"

PROMPT_RE = re.compile(r"^SUBREDDIT: r/\w+\n\nTITLE: .+\n\nPOST: (.|\n)+\n\nTL;DR:$")
PARTS_RE = re.compile(
    r"^SUBREDDIT: r/(?P<sub>\w+)\n\nTITLE: (?P<title>.+)\n\nPOST: (?P<post>(?:.|\n)+)\n\nTL;DR:$"
)


def _load(path: Path) -> list[dict]:
    assert path.is_file(), f"missing sample file: {path}"
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:  # pragma: no cover - failure path
                pytest.fail(f"{path.name} line {line_no} is not valid JSON: {exc}")
    return rows


@pytest.fixture(scope="module")
def tldr_rows() -> list[dict]:
    return _load(TLDR_PATH)


@pytest.fixture(scope="module")
def arxiv_rows() -> list[dict]:
    return _load(ARXIV_PATH)


@pytest.fixture(scope="module")
def tldr_parts(tldr_rows: list[dict]) -> list[dict]:
    parts = []
    for i, row in enumerate(tldr_rows):
        match = PARTS_RE.match(row["prompt"])
        assert match is not None, f"row {i}: prompt does not parse"
        parts.append(match.groupdict())
    return parts


# --------------------------------------------------------------------- TL;DR


def test_tldr_row_count(tldr_rows: list[dict]) -> None:
    assert len(tldr_rows) >= 50


def test_tldr_exact_keys_and_types(tldr_rows: list[dict]) -> None:
    for i, row in enumerate(tldr_rows):
        assert set(row) == {"prompt", "completion"}, f"row {i}: keys {sorted(row)}"
        assert isinstance(row["prompt"], str) and isinstance(row["completion"], str)


def test_tldr_prompt_layout(tldr_rows: list[dict]) -> None:
    for i, row in enumerate(tldr_rows):
        assert PROMPT_RE.match(row["prompt"]), f"row {i}: bad prompt layout"


def test_tldr_post_paragraphs(tldr_parts: list[dict]) -> None:
    for i, part in enumerate(tldr_parts):
        post = part["post"]
        assert post == post.strip(), f"row {i}: post has surrounding whitespace"
        paragraphs = post.split("\n\n")
        assert len(paragraphs) <= 2, f"row {i}: more than two paragraphs"
        for para in paragraphs:
            assert para.strip() and "\n" not in para, f"row {i}: stray newline in post"
        assert "\n" not in part["title"], f"row {i}: newline in title"


def test_tldr_completion_format(tldr_rows: list[dict]) -> None:
    for i, row in enumerate(tldr_rows):
        completion = row["completion"]
        assert completion.startswith(" "), f"row {i}: no leading space"
        assert not completion.startswith("  "), f"row {i}: more than one leading space"
        assert "\n" not in completion, f"row {i}: newline in completion"
        assert completion == completion.rstrip(), f"row {i}: trailing whitespace"
        n_words = len(completion.split())
        assert 8 <= n_words <= 30, f"row {i}: summary has {n_words} words"


def test_tldr_post_word_counts(tldr_parts: list[dict]) -> None:
    for i, part in enumerate(tldr_parts):
        n_words = len(part["post"].split())
        assert 80 <= n_words <= 300, f"row {i}: post has {n_words} words"


def test_tldr_no_duplicates(tldr_rows: list[dict], tldr_parts: list[dict]) -> None:
    prompts = [row["prompt"] for row in tldr_rows]
    completions = [row["completion"] for row in tldr_rows]
    posts = [part["post"] for part in tldr_parts]
    titles = [part["title"].strip().lower() for part in tldr_parts]
    assert len(set(prompts)) == len(prompts), "duplicate prompts"
    assert len(set(completions)) == len(completions), "duplicate completions"
    assert len(set(posts)) == len(posts), "duplicate posts"
    assert len(set(titles)) == len(titles), "two posts share a title"


def test_tldr_subreddit_variety(tldr_parts: list[dict]) -> None:
    subreddits = {part["sub"] for part in tldr_parts}
    assert len(subreddits) >= 8, sorted(subreddits)


def test_tldr_has_non_ascii_rows(tldr_rows: list[dict]) -> None:
    non_ascii = [row for row in tldr_rows if not (row["prompt"] + row["completion"]).isascii()]
    assert len(non_ascii) >= 3


def test_tldr_raw_lines_escape_newlines() -> None:
    # One JSON object per physical line: real newlines must be escaped.
    with TLDR_PATH.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if line.strip():
                assert line.lstrip().startswith("{"), f"line {line_no}: not an object"
                assert line.rstrip("\n").endswith("}"), f"line {line_no}: not an object"


# --------------------------------------------------------------------- arXiv


def test_arxiv_row_count(arxiv_rows: list[dict]) -> None:
    assert len(arxiv_rows) >= 20


def test_arxiv_exact_keys_and_types(arxiv_rows: list[dict]) -> None:
    for i, row in enumerate(arxiv_rows):
        assert set(row) == {"abstract_text", "title"}, f"row {i}: keys {sorted(row)}"
        assert isinstance(row["abstract_text"], str) and isinstance(row["title"], str)
        assert row["title"].strip() and "\n" not in row["title"], f"row {i}: bad title"


def test_arxiv_word_counts(arxiv_rows: list[dict]) -> None:
    for i, row in enumerate(arxiv_rows):
        n_words = len(row["abstract_text"].split())
        assert 120 <= n_words <= 250, f"row {i}: abstract has {n_words} words"


def test_arxiv_no_duplicates(arxiv_rows: list[dict]) -> None:
    abstracts = [row["abstract_text"] for row in arxiv_rows]
    titles = [row["title"].strip().lower() for row in arxiv_rows]
    assert len(set(abstracts)) == len(abstracts), "duplicate abstracts"
    assert len(set(titles)) == len(titles), "duplicate titles"


def test_arxiv_first_word_variety(arxiv_rows: list[dict]) -> None:
    first_words = {row["abstract_text"].split()[0].lower() for row in arxiv_rows}
    assert len(first_words) >= 8, sorted(first_words)
