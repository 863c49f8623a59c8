"""arXiv abstracts, the source texts of MAGRPO's introduction-expansion task.

Schema (the Hub dataset ``OpenMLRL/arXiv_abstract``): ``abstract_text`` (str); a ``title``
is kept when present. The bundled sample (``data/samples/arxiv_abstracts.jsonl``) holds
invented abstracts written for this project; every fifth row is its ``test`` split.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.data.loading import DataSourceError, TaskData, load_task_data, source_key

__all__ = ["HUB_REPO", "load_arxiv_abstracts"]

HUB_REPO = "OpenMLRL/arXiv_abstract"


def _from_hub(split: str) -> list[dict[str, Any]]:
    datasets = require("datasets", "data", "Loading arXiv abstracts from the Hugging Face Hub")
    return datasets.load_dataset(HUB_REPO, split=split).to_list()


def _normalise(raw: list[dict[str, Any]], where: str) -> tuple[list[dict[str, Any]], list[int]]:
    if not raw or "abstract_text" not in raw[0]:
        found = sorted(raw[0]) if raw else "no rows"
        raise DataSourceError(f"{where}: expected the column 'abstract_text', found {found}")
    rows = [
        {"abstract_text": str(r["abstract_text"]).strip(), "title": str(r.get("title") or "")}
        for r in raw
    ]
    return rows, list(range(len(rows)))


@lru_cache(maxsize=16)
def _load(split: str, data_source: str) -> TaskData:
    return load_task_data(
        "arxiv_abstract",
        split,
        data_source,
        from_hub=_from_hub,
        hub_repo=HUB_REPO,
        bundled_file="arxiv_abstracts.jsonl",
        normalise=_normalise,
    )


def load_arxiv_abstracts(
    split: str = "train", data_source: str | os.PathLike[str] = "auto"
) -> TaskData:
    """Load arXiv abstracts (cached per process); ``split`` may be sliced."""
    return _load(split, source_key(data_source))
