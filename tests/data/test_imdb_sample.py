"""Checks of the bundled IMDB-style sample of movie-review openings.

The file mirrors the schema of the Hugging Face dataset ``stanfordnlp/imdb``
(``{"text": str, "label": int}``, 0 = negative, 1 = positive) and is the
offline default dataset of the sentiment-continuation environment.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

SAMPLE_PATH = Path(__file__).resolve().parents[2] / "llm_marl_envs/data/samples/imdb_openings.jsonl"


def _load_rows() -> list[dict]:
    rows = []
    with SAMPLE_PATH.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:  # pragma: no cover - failure path
                pytest.fail(f"line {line_no} is not valid JSON: {exc}")
    return rows


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    assert SAMPLE_PATH.is_file(), f"missing sample file: {SAMPLE_PATH}"
    return _load_rows()


def test_row_count(rows: list[dict]) -> None:
    assert len(rows) >= 200


def test_schema(rows: list[dict]) -> None:
    for i, row in enumerate(rows):
        assert isinstance(row, dict), f"row {i} is not an object"
        assert set(row) == {"text", "label"}, f"row {i} has keys {sorted(row)}"
        assert isinstance(row["text"], str), f"row {i}: text is not a str"
        # bool is a subclass of int: reject it explicitly.
        assert type(row["label"]) is int, f"row {i}: label is not an int"
        assert row["label"] in {0, 1}, f"row {i}: label {row['label']!r}"


def test_labels_balanced(rows: list[dict]) -> None:
    counts = Counter(row["label"] for row in rows)
    share_positive = counts[1] / len(rows)
    assert 0.45 <= share_positive <= 0.55, counts


def test_labels_interleaved(rows: list[dict]) -> None:
    labels = [row["label"] for row in rows]
    half = len(labels) // 2
    # Neither half of the file may be (almost) all one label.
    for part in (labels[:half], labels[half:]):
        share = sum(part) / len(part)
        assert 0.3 <= share <= 0.7, share


def test_text_shape(rows: list[dict]) -> None:
    for i, row in enumerate(rows):
        text = row["text"]
        n_words = len(text.split())
        assert len(text) >= 100, f"row {i} too short: {text!r}"
        assert 20 <= n_words <= 60, f"row {i} has {n_words} words: {text!r}"
        assert "\n" not in text and "\r" not in text, f"row {i} has a newline"
        assert "<br" not in text.lower(), f"row {i} contains <br"
        assert text == text.strip(), f"row {i} has surrounding whitespace"


def test_no_duplicate_texts(rows: list[dict]) -> None:
    texts = [row["text"] for row in rows]
    dupes = [t for t, c in Counter(texts).items() if c > 1]
    assert not dupes, dupes


def test_distinct_first_three_words(rows: list[dict]) -> None:
    seen: dict[tuple[str, ...], str] = {}
    for row in rows:
        key = tuple(word.lower() for word in row["text"].split()[:3])
        assert key not in seen, (
            f"two texts start with {' '.join(key)!r}: {seen[key][:60]!r} / {row['text'][:60]!r}"
        )
        seen[key] = row["text"]


def test_contains_non_ascii(rows: list[dict]) -> None:
    n_non_ascii = sum(1 for row in rows if not row["text"].isascii())
    assert n_non_ascii >= 5, n_non_ascii


def test_vader_agrees_with_labels(rows: list[dict]) -> None:
    pytest.importorskip("vaderSentiment")
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    agree = 0
    for row in rows:
        compound = analyzer.polarity_scores(row["text"])["compound"]
        if (row["label"] == 1 and compound > 0) or (row["label"] == 0 and compound < 0):
            agree += 1
    share = agree / len(rows)
    assert share >= 0.85, f"VADER agrees with only {share:.1%} of labels"
