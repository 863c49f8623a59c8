"""Checkpoints that a kill -9, a full disk or a flipped bit cannot turn into a wrong run.

Shared by ``cory.py`` and ``magrpo.py`` (through ``common.py``, which also checks a resumed
run's arguments); one layout for both::

    <out-dir>/checkpoint/
        iteration-000004/        the newest checkpoint (the iteration the run continues with)
            state.json           JSON: next iteration, metrics so far, args (and trainer extras)
            learner_<name>.pt    torch: one file per learner (weights, optimizer state, ...)
            manifest.json        size and sha256 of every file above, written last
        iteration-000002/        the previous one, the fallback

**Atomic.** A checkpoint is written into ``iteration-NNNNNN.tmp/`` (every file fsynced, then the
folder), and only then renamed to ``iteration-NNNNNN/`` (and the parent folder fsynced): a
checkpoint folder is complete or absent, whatever moment a process is killed at. Leftover
``.tmp`` / ``.trash`` folders of a killed write are never read and are removed by the next save.

**Kept.** After each save, the newest two checkpoints up to the one just written; newer ones
can only be checkpoints that a resume found bad (it continues from the newest good one), and
they are removed as soon as the run has written a checkpoint of its own.

**Verified.** :func:`load_latest` checks every file against the manifest (present, size,
sha256) and loads it; a bad checkpoint gets one line on stderr naming the file and why
(missing, empty, truncated, checksum mismatch, unreadable) and the previous one is tried; with no
good checkpoint the caller starts from scratch (one line says so). Since every random stream of
the trainers is derived from (seed, iteration), a resumed run, from whichever checkpoint or from
scratch, logs the same metrics as an uninterrupted one.

No test hooks live here: the tests kill real trainer processes inside :func:`save` by wrapping
``os.fsync`` from outside.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import torch

FORMAT = 1  # manifest["format"]; a checkpoint of another format is "unreadable", not guessed at
KEEP = 2  # checkpoints kept: the newest and one to fall back to
MANIFEST, STATE = "manifest.json", "state.json"
_NAME = re.compile(r"iteration-(\d+)")
_CHUNK = 1 << 20


class BadCheckpoint(Exception):
    """One file of a checkpoint failed verification; ``str()`` names the file and why."""


def note(message: str) -> None:
    """One line on stderr (not ``warnings.warn``: its source line would make it two)."""
    print(message, file=sys.stderr, flush=True)


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
def verify(folder: Path) -> tuple[dict, dict[str, Any]]:
    """The state and payloads of one checkpoint, every file checked against the manifest.

    Raises :class:`BadCheckpoint` naming the first bad file and why."""
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
    for name, entry in files.items():
        path = folder / name
        if not path.is_file():
            raise BadCheckpoint(f"{path} is missing")
        size = path.stat().st_size
        if size != entry["bytes"]:
            why = (
                "empty"
                if size == 0
                else f"truncated ({size} of {entry['bytes']} bytes)"
                if size < entry["bytes"]
                else f"too long ({size}, not {entry['bytes']} bytes)"
            )
            raise BadCheckpoint(f"{path} is {why}")
        if _sha256(path) != entry["sha256"]:
            raise BadCheckpoint(
                f"{path} fails its checksum (sha256 mismatch: the bytes changed "
                "after it was written)"
            )
    payloads = {}
    for name in files:
        path = folder / name
        try:
            if name == STATE:
                state = json.loads(path.read_bytes())
            else:
                payloads[name.removesuffix(".pt")] = torch.load(path, weights_only=True)
        except Exception as error:  # noqa: BLE001 - any failure to load means "unreadable"
            first = re.split(r"(?<=\.)\s|\n", str(error).strip())[0][:100]  # its first sentence
            raise BadCheckpoint(f"{path} is unreadable ({type(error).__name__}: {first})") from None
    return state, payloads


def load_latest(root: Path) -> tuple[dict, dict[str, Any]] | None:
    """The state and payloads of the newest checkpoint under ``root`` that verifies, or None.

    Every bad checkpoint costs one line on stderr (the file and why, and what happens next);
    None comes with one line saying the run starts from scratch."""
    found = finished(root)
    old = [p for p in (root / STATE, root / "state.pt") if p.is_file()]
    if not found and old:  # the unverifiable layout of earlier versions: refuse to overwrite it
        raise SystemExit(
            f"--resume: {old[0]} was written by an earlier version of this trainer "
            "(no checksums); resume it with that version, or move it away to start "
            "afresh"
        )
    if not found:
        note(f"--resume: no checkpoint in {root} yet; starting from scratch")
        return None
    for k, (_, folder) in enumerate(found):
        try:
            return verify(folder)
        except BadCheckpoint as error:
            after = (
                f"falling back to the previous checkpoint {found[k + 1][1].name}"
                if k + 1 < len(found)
                else "no good checkpoint left, starting from scratch"
            )
            note(f"--resume: {error}; {after}")
    return None
