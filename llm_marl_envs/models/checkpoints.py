"""Checkpoints of trained models: one format, written by the reference trainers, read by ``ckpt:``.

``baselines/cory.py`` and ``baselines/magrpo.py`` write their runs' checkpoints with
:func:`save` (through ``baselines/training.py``, which adds the ``--resume`` checks), and the
``ckpt:RUN_DIR#LEARNER`` policy (:mod:`llm_marl_envs.policies.checkpoint`) reads them with
:func:`verify` and :func:`load`. One layout::

    <out-dir>/checkpoint/
        iteration-000004/        the newest checkpoint (the iteration the run continues with)
            state.json           JSON: next iteration, metrics so far, args (and trainer extras)
            learner_<name>.pt    torch: one file per learner (weights, optimizer state, ...)
            manifest.json        format, size and sha256 of every file above, written last
        iteration-000002/        the previous one, the fallback

**Atomic.** A checkpoint is written into ``iteration-NNNNNN.tmp/`` (every file fsynced, then the
folder), and only then renamed to ``iteration-NNNNNN/`` (and the parent folder fsynced): a
checkpoint folder is complete or absent, whatever moment a process is killed at. Leftover
``.tmp`` / ``.trash`` folders of a killed write are never read and are removed by the next save.

**Kept.** After each save, the newest two checkpoints up to the one just written; newer ones
can only be checkpoints that a resume found bad (it continues from the newest good one), and
they are removed as soon as the run has written a checkpoint of its own.

**Verified.** :func:`verify` checks the manifest (readable, of this :data:`FORMAT`, naming
``state.json``) and every file against it (present, size, sha256); :func:`load` reads the
files; both raise :class:`BadCheckpoint` with one line naming the file and why (missing, empty,
truncated, too long, checksum mismatch, unreadable).

No test hooks live here: the tests kill real trainer processes inside :func:`save` by wrapping
``os.fsync`` from outside. torch is imported only to write or read a payload.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "BadCheckpoint", "finished", "load", "save", "verify"]

FORMAT = 1  # manifest["format"]; a checkpoint of another format is "unreadable", not guessed at
KEEP = 2  # checkpoints kept: the newest and one to fall back to
MANIFEST, STATE = "manifest.json", "state.json"
_NAME = re.compile(r"iteration-(\d+)")
_CHUNK = 1 << 20


class BadCheckpoint(Exception):
    """One file of a checkpoint failed verification; ``str()`` names the file and why."""


# --------------------------------------------------------------------------- writing
def _fsync_dir(folder: Path) -> None:
    """Make a rename or creation inside ``folder`` durable (its entry lives in the folder)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: Path, payload: Any) -> None:
    """``payload`` into ``path``: bytes as they are, anything else with ``torch.save``; fsynced."""
    with open(path, "wb") as handle:
        if isinstance(payload, bytes):
            handle.write(payload)
        else:
            import torch

            torch.save(payload, handle)
        handle.flush()
        os.fsync(handle.fileno())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _discard(folder: Path) -> None:
    """Remove a folder in a way a kill cannot leave half-done: rename it out of the way first
    (a half-deleted ``iteration-*`` folder would look like a damaged checkpoint)."""
    trash = folder.with_name(folder.name + ".trash")
    shutil.rmtree(trash, ignore_errors=True)
    folder.rename(trash)
    shutil.rmtree(trash)


def finished(root: Path) -> list[tuple[int, Path]]:
    """``(iteration, folder)`` of the finished checkpoints under ``root``, newest first."""
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _NAME.fullmatch(p.name))]
    return sorted(found, reverse=True)


def save(root: Path, iteration: int, state: dict, payloads: dict[str, Any]) -> Path:
    """Write checkpoint ``iteration`` under ``root`` atomically and keep the newest two.

    ``state`` goes to ``state.json`` (it must hold JSON values only); each ``payloads[name]`` to
    ``<name>.pt`` with ``torch.save``. Returns the checkpoint's folder."""
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"iteration-{iteration:06d}"
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)  # a write killed earlier
    tmp.mkdir()
    files = {f"{name}.pt": payload for name, payload in payloads.items()}
    files[STATE] = json.dumps(state, indent=1).encode()
    manifest: dict[str, Any] = {"format": FORMAT, "iteration": iteration, "files": {}}
    for name, payload in files.items():
        _write(tmp / name, payload)
        size = (tmp / name).stat().st_size
        manifest["files"][name] = {"bytes": size, "sha256": _sha256(tmp / name)}
    _write(tmp / MANIFEST, json.dumps(manifest, indent=1).encode())  # last: it vouches for the rest
    _fsync_dir(tmp)
    if final.exists():  # a checkpoint a resume found bad, now written again
        _discard(final)
    tmp.rename(final)
    _fsync_dir(root)
    # Keep the newest two up to this one; newer ones are bad ones a resume skipped.
    kept = [p for i, p in finished(root) if i <= iteration][:KEEP]
    for _, folder in finished(root):
        if folder not in kept:
            _discard(folder)
    for leftover in root.iterdir():  # the .tmp / .trash folders of processes killed earlier
        if leftover.suffix in (".tmp", ".trash"):
            shutil.rmtree(leftover, ignore_errors=True)
    _fsync_dir(root)
    return final


# --------------------------------------------------------------------------- reading
def _manifest_files(folder: Path) -> dict[str, dict]:
    """The manifest's ``files`` (name: bytes and sha256), its format and entries checked."""
    path = folder / MANIFEST
    if not path.is_file():
        raise BadCheckpoint(f"{path} is missing")
    try:
        manifest = json.loads(path.read_bytes())
        files, fmt = manifest["files"], manifest["format"]
        for entry in files.values():
            if not (isinstance(entry["bytes"], int) and isinstance(entry["sha256"], str)):
                raise TypeError("malformed entry")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        why = "empty" if path.stat().st_size == 0 else f"unreadable ({type(error).__name__})"
        raise BadCheckpoint(f"{path} is {why}") from None
    if fmt != FORMAT:
        raise BadCheckpoint(f"{path} is unreadable (format {fmt!r}; this version reads {FORMAT})")
    if STATE not in files:
        raise BadCheckpoint(f"{folder / STATE} is missing (not in the manifest)")
    return files


def _check_file(path: Path, entry: dict) -> None:
    if not path.is_file():
        raise BadCheckpoint(f"{path} is missing")
    size, expected = path.stat().st_size, entry["bytes"]
    if size != expected:
        if size == 0:
            why = "empty"
        elif size < expected:
            why = f"truncated ({size} of {expected} bytes)"
        else:
            why = f"too long ({size}, not {expected} bytes)"
        raise BadCheckpoint(f"{path} is {why}")
    if _sha256(path) != entry["sha256"]:
        raise BadCheckpoint(
            f"{path} fails its checksum (sha256 mismatch: the bytes changed after it was written)"
        )


def verify(folder: Path) -> list[str]:
    """Check one checkpoint: its manifest and every file it names (present, size, sha256).

    Returns the names of its payloads (``learner_A``, ...); raises :class:`BadCheckpoint`
    naming the first bad file and why."""
    files = _manifest_files(folder)
    for name, entry in files.items():
        _check_file(folder / name, entry)
    return _payload_names(files)


def _payload_names(files: dict[str, dict]) -> list[str]:
    return [name.removesuffix(".pt") for name in files if name != STATE]


def load(folder: Path, names: Iterable[str] | None = None) -> tuple[dict, dict[str, Any]]:
    """The state and the payloads ``names`` (default: all) of a checkpoint :func:`verify`
    accepted, their tensors on the CPU. Raises :class:`BadCheckpoint` for a file that does not
    load."""
    if names is None:
        names = _payload_names(_manifest_files(folder))
    state = _read(folder / STATE, lambda path: json.loads(path.read_bytes()))
    payloads = {name: _read(folder / f"{name}.pt", _torch_load) for name in names}
    return state, payloads


def _torch_load(path: Path) -> Any:
    """A payload with its tensors on the CPU, whichever device wrote them (a run trained on a
    GPU resumes on the CPU, and the caller moves them on to its own device)."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


def _read(path: Path, reader: Any) -> Any:
    try:
        return reader(path)
    except Exception as error:  # noqa: BLE001 - any failure to load means "unreadable"
        first = re.split(r"(?<=\.)\s|\n", str(error).strip())[0][:100]  # its first sentence
        raise BadCheckpoint(f"{path} is unreadable ({type(error).__name__}: {first})") from None
