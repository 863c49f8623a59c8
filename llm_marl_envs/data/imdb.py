"""IMDB movie reviews (Maas et al. 2011), the prompts of CORY's sentiment task.

Normalised schema: ``text`` (str, HTML line breaks removed) and ``label`` (1 positive,
0 negative). Accepted inputs: the Hub dataset ``stanfordnlp/imdb`` (``text``, ``label``) and
local files in that schema, or the widely shared CSV schema ``review,sentiment``
(``positive`` / ``negative``).

Like CORY, only reviews longer than ``min_chars`` characters are kept (200 in the paper, 100
in its code). The bundled sample (``data/samples/imdb_openings.jsonl``, 220 review openings
written for this project, 140-260 characters) is exempt from that filter: it was written to
be used whole. Every fifth row is its ``test`` split.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache, partial
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.data.loading import DataSourceError, TaskData, load_task_data, source_key

__all__ = ["HUB_REPO", "load_imdb"]

HUB_REPO = "stanfordnlp/imdb"
_BREAK = re.compile(r"\s*<br\s*/?>\s*", re.IGNORECASE)
_LABELS = {"1": 1, "0": 0, "positive": 1, "negative": 0, "pos": 1, "neg": 0}


def _from_hub(split: str) -> list[dict[str, Any]]:
    datasets = require("datasets", "data", "Loading IMDB from the Hugging Face Hub")
    return datasets.load_dataset(HUB_REPO, split=split).to_list()


def _normalise(
    raw: list[dict[str, Any]], where: str, *, min_chars: int
) -> tuple[list[dict[str, Any]], list[int]]:
    if not raw:
        raise DataSourceError(f"{where}: no IMDB rows found")
    columns = raw[0].keys()
    if {"text", "label"} <= columns:
        text_key, label_key = "text", "label"
    elif {"review", "sentiment"} <= columns:
        text_key, label_key = "review", "sentiment"
    else:
        raise DataSourceError(
            f"{where}: expected IMDB columns 'text,label' (Hub schema) or 'review,sentiment' "
            f"(CSV schema), found {sorted(columns)}"
        )
    if where.startswith("bundled"):
        min_chars = 0  # openings written for this project, used whole (see module docstring)
    rows, ids = [], []
    for i, r in enumerate(raw):
        text = _BREAK.sub(" ", str(r[text_key])).strip()
        if len(text) <= min_chars:
            continue
        label = _LABELS.get(str(r[label_key]).strip().lower(), -1)  # -1: unlabelled split
        rows.append({"text": text, "label": label})
        ids.append(i)
    if not rows:
        raise DataSourceError(f"{where}: no review is longer than {min_chars} characters")
    return rows, ids


@lru_cache(maxsize=16)
def _load(split: str, data_source: str, min_chars: int) -> TaskData:
    return load_task_data(
        "imdb",
        split,
        data_source,
        from_hub=_from_hub,
        hub_repo=HUB_REPO,
        bundled_file="imdb_openings.jsonl",
        normalise=partial(_normalise, min_chars=min_chars),
    )


def load_imdb(
    split: str = "train",
    data_source: str | os.PathLike[str] = "auto",
    min_chars: int = 200,
) -> TaskData:
    """Load IMDB reviews (cached per process).

    Args:
        split: ``"train"`` or ``"test"`` (the Hub also has ``"unsupervised"``).
        data_source: ``"auto"``, ``"hub"``, ``"bundled"`` or a local path; see
            :mod:`llm_marl_envs.data.loading`.
        min_chars: Keep reviews longer than this many characters (not applied to the
            bundled openings).

    >>> data = load_imdb("train", "bundled")
    >>> sorted(data.rows[0]), data.rows[0]["label"] in (0, 1)
    (['label', 'text'], True)
    """
    return _load(split, source_key(data_source), min_chars)
