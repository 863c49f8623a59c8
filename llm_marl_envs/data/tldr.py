"""Reddit TL;DR posts (Stiennon et al. 2020), the prompts of MAGRPO's summarisation task.

Schema (the Hub dataset ``trl-lib/tldr``): ``prompt`` =
``"SUBREDDIT: r/{subreddit}\\n\\nTITLE: {title}\\n\\nPOST: {post}\\n\\nTL;DR:"`` and
``completion`` = ``" " + reference summary``. Splits: ``train`` (116,722), ``validation``
(6,447), ``test`` (6,553); MAGRPO uses ``train[:1000]`` and ``test[:1000]``.

The bundled sample (``data/samples/tldr_sample.jsonl``) holds Reddit-style posts with
reference summaries written for this project; every fifth row is its ``test`` split.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.data.loading import DataSourceError, TaskData, load_task_data, source_key

__all__ = ["HUB_REPO", "load_tldr", "post_text"]

HUB_REPO = "trl-lib/tldr"


def _from_hub(split: str) -> list[dict[str, Any]]:
    datasets = require("datasets", "data", "Loading TL;DR from the Hugging Face Hub")
    return datasets.load_dataset(HUB_REPO, split=split).to_list()


def _normalise(raw: list[dict[str, Any]], where: str) -> tuple[list[dict[str, Any]], list[int]]:
    if not raw or not {"prompt", "completion"} <= raw[0].keys():
        found = sorted(raw[0]) if raw else "no rows"
        raise DataSourceError(
            f"{where}: expected TL;DR columns 'prompt' and 'completion', found {found}"
        )
    rows = [{"prompt": str(r["prompt"]), "completion": str(r["completion"])} for r in raw]
    return rows, list(range(len(rows)))


def post_text(prompt: str) -> str:
    """The post as shown to the agents: the dataset prompt without its trailing ``TL;DR:``."""
    text = prompt.rstrip()
    return text[: -len("TL;DR:")].rstrip() if text.endswith("TL;DR:") else text


@lru_cache(maxsize=16)
def _load(split: str, data_source: str) -> TaskData:
    return load_task_data(
        "tldr",
        split,
        data_source,
        from_hub=_from_hub,
        hub_repo=HUB_REPO,
        bundled_file="tldr_sample.jsonl",
        normalise=_normalise,
    )


def load_tldr(split: str = "train", data_source: str | os.PathLike[str] = "auto") -> TaskData:
    """Load TL;DR posts (cached per process); ``split`` may be sliced, e.g. ``"test[:1000]"``."""
    return _load(split, source_key(data_source))
