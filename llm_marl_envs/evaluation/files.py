"""Files of evaluations and boards that several processes may write at once, and that a
killed process must not leave half-written.

* :func:`folder_lock`: an exclusive lock on a folder, an ``flock`` on a lock file in it. The
  kernel drops the lock when its holder exits in any way (``kill -9`` included), so a lock is
  never left behind; the file keeps a note of its holder (process id, host, start time,
  command) for the message of whoever is refused. ``wait=0`` refuses at once (a second
  ``llm-marl eval`` on one folder), ``wait=N`` waits up to N seconds (``leaderboard add`` and
  ``verify`` on one board, a ``leaderboard build`` into one site folder). Where ``fcntl`` does
  not exist (Windows) nothing is locked.
* :func:`write_atomic`: a file written under a unique hidden temporary name, ``fsync``-ed and
  renamed over its target, so a reader (or a process killed while writing) sees the old
  file or the new one, never part of one.
* :func:`folder_flock`: the same on the folder itself, waited for (no lock file: a site
  folder stays clean).
* :func:`fsync_folder`: a folder's entries (a rename into it) made durable.
* :func:`staging_folder`: a hidden folder of a name unique to its process, ``flock``-ed while
  it is being filled, so :func:`remove_stale` can tell a folder a killed process left (its
  lock is gone) from one another process is filling.

``note=False`` makes a lock file that holds nothing about its holder (a board's lock sits in a
folder that may be published: no host name, no process, no command line).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock
    fcntl = None

__all__ = [
    "FolderBusy",
    "folder_flock",
    "folder_lock",
    "fsync_folder",
    "remove_stale",
    "staging_folder",
    "write_atomic",
]


class FolderBusy(ValueError):
    """Another process holds the folder's lock (the message names it)."""


def _holder_note() -> str:
    since = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    command = " ".join(Path(sys.argv[0]).name if i == 0 else a for i, a in enumerate(sys.argv))
    note = {"pid": os.getpid(), "host": socket.gethostname(), "since": since, "command": command}
    return json.dumps(note)


def _describe(text: str) -> str:
    try:
        note = json.loads(text)
        return (
            f"process {int(note['pid'])} on {str(note['host'])[:64]} "
            f"(since {str(note['since'])[:32]}: {str(note['command'])[:120]})"
        )
    except (ValueError, TypeError, KeyError):
        return "another process"


@contextmanager
def folder_lock(
    folder: str | Path, name: str, what: str, fix: str, wait: float = 0.0, note: bool = True
) -> Iterator[None]:
    """Hold the lock file ``folder/name`` for the block; :class:`FolderBusy` (one line:
    ``{folder} is in use by {what}: <holder>; {fix}``) when another process holds it after
    ``wait`` seconds. ``note=False``: the file stays empty (the message says "another
    process")."""
    path = Path(folder) / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = _describe(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
                        waited = f" (waited {wait:.0f} s)" if wait else ""
                        raise FolderBusy(
                            f"{folder} is in use by {what}: {holder}{waited}; {fix}"
                        ) from None
                    time.sleep(0.05)
        os.ftruncate(fd, 0)
        if note:
            os.pwrite(fd, _holder_note().encode("utf-8"), 0)
        yield
    finally:
        os.close(fd)  # drops the lock (the kernel drops it too if this process dies)


@contextmanager
def folder_flock(folder: str | Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` itself (no lock file), waited for: processes that
    write into one folder take turns; the kernel drops it when its holder ends, however it
    ends. A no-op where a folder cannot be opened or locked (Windows, some network file
    systems)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # a file system that cannot lock folders: go on unlocked
                pass
        yield
    finally:
        os.close(fd)


def fsync_folder(folder: str | Path) -> None:
    """Make the entries of ``folder`` (a file renamed into it) durable; a no-op where a folder
    cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | Path, data: bytes | str) -> None:
    """``data`` at ``path``, whole or not at all: written to a unique hidden temporary file in
    the same folder, ``fsync``-ed, then renamed over ``path``."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # mkstemp's 0600 would hide a page from a web server
            os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_folder(path.parent)


@contextmanager
def staging_folder(parent: str | Path, prefix: str) -> Iterator[Path]:
    """A new hidden folder ``parent/<prefix><random>`` (mode 0755), held under an exclusive
    ``flock`` for the block and removed at its end unless the block moved it away (renamed it
    to its final name)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, 0o755)  # mkdtemp's 0700 would hide the folder's content from other readers
    fd = os.open(path, os.O_RDONLY)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield path
    finally:
        os.close(fd)
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)


def remove_stale(parent: str | Path, pattern: str) -> None:
    """Remove the folders of ``parent`` matching ``pattern`` that no process holds (their
    :func:`staging_folder` ended without moving them: a killed process); a folder another
    process is filling is left alone."""
    for path in Path(parent).glob(pattern):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue  # held: another process is filling it
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
