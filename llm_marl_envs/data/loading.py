"""Where task data comes from: the Hugging Face Hub, local files, or the bundled sample.

Every dataset loader of the suite accepts the same ``data_source`` values:

``"auto"`` (default)
    The Hub (or its local cache) when it can be used, otherwise the bundled sample. One line
    on stderr says which was used and why.
``"hub"``
    The Hub or its local cache; raises :class:`DataSourceError` if neither works.
``"bundled"``
    The small sample written by this project and shipped inside the package (offline).
a path
    A local file (``.jsonl``, ``.json``, ``.csv``, ``.parquet``) in the Hub dataset's schema,
    or a folder holding ``<split>.<ext>`` files (Hub-style shards such as
    ``train-00000-of-00001.parquet`` are found too).

Loaded data is cached per process, so making many environments is cheap.
"""

from __future__ import annotations

import csv
import json
import os
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from llm_marl_envs.core.optional import require

__all__ = [
    "DataSourceError",
    "TaskData",
    "bundled_path",
    "hub_status",
    "load_task_data",
    "parse_split",
    "read_table",
]

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"
_EXTENSIONS = (".jsonl", ".json", ".csv", ".parquet")
_OFFLINE_FLAGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


class DataSourceError(RuntimeError):
    """A requested data source could not be loaded (the message says why and what to do)."""


@dataclass(frozen=True)
class TaskData:
    """Rows of one dataset split, normalised to the loader's schema.

    Attributes:
        name: Dataset name, e.g. ``"gsm8k"``.
        split: Split name, e.g. ``"train"``.
        source: Where the rows came from: ``"bundled"``, ``"hub:<repo>"`` or ``"local:<path>"``.
        rows: The rows (dicts; treat them as read-only).
        row_ids: For each row, its index in the source split before any filtering.
    """

    name: str
    split: str
    source: str
    rows: tuple[dict[str, Any], ...]
    row_ids: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.rows)


def source_key(data_source: str | os.PathLike[str]) -> str:
    """``data_source`` as a plain string (a hashable cache key), or ``TypeError``."""
    if not isinstance(data_source, (str, os.PathLike)):
        raise TypeError(
            f"data_source must be 'auto', 'hub', 'bundled' or a path, got {type(data_source).__name__}"
        )
    return os.fspath(data_source)


def bundled_path(filename: str) -> Path:
    """Path of a bundled sample file inside the installed package."""
    return SAMPLES_DIR / filename


def read_table(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSON Lines, JSON (list of objects), CSV or Parquet file into a list of dicts."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    if suffix == ".json":
        with path.open(encoding="utf-8") as f:
            text = f.read()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:  # JSON Lines saved as .json
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        if isinstance(data, dict):  # {"data": [...]} or a single split keyed by name
            lists = [v for v in data.values() if isinstance(v, list)]
            data = lists[0] if len(lists) == 1 else [data]
        return list(data)
    if suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    if suffix == ".parquet":
        pq = require("pyarrow.parquet", "data", f"Reading the Parquet file {path}")
        return pq.read_table(path).to_pylist()
    raise DataSourceError(
        f"Cannot read {path}: unsupported file type {suffix!r} (use one of {_EXTENSIONS})"
    )


def _find_split_files(folder: Path, split: str) -> list[Path]:
    found = sorted(
        p
        for p in folder.rglob("*")
        if p.suffix.lower() in _EXTENSIONS
        and (p.stem == split or p.stem.startswith(f"{split}-") or p.stem.startswith(f"{split}_"))
    )
    if not found:
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        raise DataSourceError(
            f"No file for split {split!r} in {folder}: expected '{split}.jsonl', "
            f"'{split}.csv', '{split}.parquet' or '{split}-*.parquet'; found {files[:20]}"
        )
    return found


def _read_local(path: Path, split: str) -> list[dict[str, Any]]:
    if path.is_dir():
        return [row for p in _find_split_files(path, split) for row in read_table(p)]
    return read_table(path)


def hub_status(timeout: float = 2.0) -> tuple[bool, str]:
    """Whether the Hub (or its cache) may be tried, and a short reason.

    With ``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` set, only the local cache is tried
    (``datasets`` fails at once on a cache miss). Otherwise a TCP connection to the Hub
    endpoint (``HF_ENDPOINT`` or huggingface.co) decides, within ``timeout`` seconds.
    """
    try:
        require("datasets", "data", "Loading from the Hugging Face Hub")
    except ImportError:
        return False, "the 'datasets' package is not installed"
    if any(
        os.environ.get(flag, "").lower() in ("1", "true", "yes", "on") for flag in _OFFLINE_FLAGS
    ):
        return True, "offline mode: local Hub cache only"
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname, port), timeout=timeout):
            return True, "the Hub is reachable"
    except OSError:
        return False, "the Hub is unreachable"


_SPLIT = re.compile(r"^(?P<base>[\w-]+)(?:\[(?P<start>-?\d*):(?P<stop>-?\d*)\])?$")


def parse_split(split: str) -> tuple[str, slice]:
    """``"train[:1000]"`` -> ``("train", slice(None, 1000))``; plain names take every row."""
    match = _SPLIT.match(split) if isinstance(split, str) else None
    if match is None:
        raise ValueError(
            f"split must be a name such as 'train' or a sliced name such as 'test[:1000]', got {split!r}"
        )
    start, stop = match["start"], match["stop"]
    return match["base"], slice(int(start) if start else None, int(stop) if stop else None)


def load_task_data(
    name: str,
    split: str,
    data_source: str | os.PathLike[str],
    *,
    from_hub: Callable[[str], list[dict[str, Any]]],
    hub_repo: str,
    bundled_file: str,
    normalise: Callable[[list[dict[str, Any]], str], tuple[list[dict[str, Any]], list[int]]],
) -> TaskData:
    """Resolve ``data_source`` and return normalised rows (see the module docstring).

    ``split`` may carry a slice, ``"train[:1000]"``: rows are cut after loading and
    ``row_ids`` keep their index in the whole split.

    Args:
        name: Dataset name used in messages.
        split: Split to load.
        data_source: ``"auto"``, ``"hub"``, ``"bundled"`` or a local path.
        from_hub: Loads a split from the Hub (rows in the Hub schema).
        hub_repo: Hub dataset id, for messages and ``TaskData.source``.
        bundled_file: File name of the bundled sample under ``data/samples``.
        normalise: Maps raw rows to the loader's schema; returns ``(rows, row_ids)`` and
            raises ``DataSourceError`` naming the expected columns when they are missing.
    """
    base, cut = parse_split(split)
    if cut != slice(None):
        data = load_task_data(
            name,
            base,
            data_source,
            from_hub=from_hub,
            hub_repo=hub_repo,
            bundled_file=bundled_file,
            normalise=normalise,
        )
        rows, ids = data.rows[cut], data.row_ids[cut]
        if not rows:
            raise DataSourceError(f"{name}: split {split!r} selects no row of {len(data)}")
        return TaskData(name, split, data.source, rows, ids)
    data_source = source_key(data_source)
    if data_source not in ("auto", "hub", "bundled"):
        path = Path(data_source).expanduser()
        if not path.exists():
            raise DataSourceError(
                f"data_source must be 'auto', 'hub', 'bundled' or a path to an existing file or "
                f"folder; {data_source!r} is none of these"
            )
        rows, ids = normalise(_read_local(path, split), str(path))
        return TaskData(name, split, f"local:{path.resolve()}", tuple(rows), tuple(ids))

    if data_source == "bundled":
        return _bundled(name, split, bundled_file, normalise)

    if data_source == "hub":
        try:
            raw = from_hub(split)
        except ImportError:
            raise
        except Exception as error:  # datasets raises many types: connection, offline, missing
            raise DataSourceError(
                f"Could not load {hub_repo!r} split {split!r} from the Hugging Face Hub or its "
                f"cache ({type(error).__name__}: {error}). Use data_source='bundled' or a local "
                "path when offline."
            ) from error
        rows, ids = normalise(raw, hub_repo)
        return TaskData(name, split, f"hub:{hub_repo}", tuple(rows), tuple(ids))

    usable, reason = hub_status()
    if usable:
        try:
            data = load_task_data(
                name,
                split,
                "hub",
                from_hub=from_hub,
                hub_repo=hub_repo,
                bundled_file=bundled_file,
                normalise=normalise,
            )
            _announce(data, reason)
            return data
        except DataSourceError as error:
            if reason.startswith("offline"):
                reason = "offline mode (HF_*_OFFLINE) and no local Hub cache"
            else:
                reason = f"the Hub failed: {type(error.__cause__ or error).__name__}"
    data = _bundled(name, split, bundled_file, normalise)
    _announce(data, reason)
    return data


def _bundled(name: str, split: str, filename: str, normalise: Callable) -> TaskData:
    """The bundled sample; every fifth row (index % 5 == 4) is its ``test`` split."""
    if split not in ("train", "test"):
        raise DataSourceError(
            f"The bundled {name} sample has splits 'train' and 'test', not {split!r}"
        )
    raw = read_table(bundled_path(filename))
    keep = [i for i in range(len(raw)) if (i % 5 == 4) == (split == "test")]
    rows, ids = normalise([raw[i] for i in keep], f"bundled {filename}")
    return TaskData(name, split, "bundled", tuple(rows), tuple(keep[i] for i in ids))


def _announce(data: TaskData, reason: str) -> None:
    print(
        f"[llm_marl_envs] {data.name}/{data.split}: using {data.source} "
        f"({len(data)} rows; {reason})",
        file=sys.stderr,
    )
