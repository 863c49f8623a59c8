"""The files of an entry folder, read through descriptors: each one opened relative to its
folder without following a link (``O_NOFOLLOW``), checked on the open descriptor (``fstat``: a
plain file with one link, or a folder), read from that descriptor within a limit, and hashed
over the very bytes that were read. A file swapped for a symlink between a check and a read
cannot pull an outside file in.

The pieces :class:`~llm_marl_envs.leaderboard.entry.EntryFolder` reads an entry with; each
refusal is one :class:`~llm_marl_envs.leaderboard.errors.LeaderboardError` line naming the file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from llm_marl_envs.leaderboard.errors import LeaderboardError

__all__ = ["HashingReader", "file_hash", "kinds", "open_checked", "read_bounded", "record_lines"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_checked(name: str, dir_fd: int | None, where: Path, folder: bool = False) -> int:
    """``name`` opened relative to ``dir_fd`` without following a link, checked on the
    descriptor: a plain file with one link, or a folder."""
    flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | (_DIRECTORY if folder else 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as error:
        if os.path.islink(where):
            raise LeaderboardError(
                f"{where} is a symlink: a submission holds its own files only; copy the file "
                "in its place"
            ) from None
        raise LeaderboardError(f"{where} cannot be read ({error.strerror or error})") from None
    info = os.fstat(fd)
    problem = None
    if folder and not stat.S_ISDIR(info.st_mode):
        problem = f"{where} is not a folder"
    elif not folder and not stat.S_ISREG(info.st_mode):
        problem = f"{where} is not a plain file or folder: remove it"
    elif not folder and info.st_nlink != 1:
        problem = (
            f"{where} is a hard link (one of {info.st_nlink} names of a file): a submission "
            "holds its own files only; copy the file in its place"
        )
    if problem:
        os.close(fd)
        raise LeaderboardError(problem)
    return fd


def kinds(dir_fd: int, where: Path) -> dict[str, str]:
    """Each entry of the folder open at ``dir_fd``: ``"file"``, ``"folder"``, or refused."""
    found = {}
    for name in sorted(os.listdir(dir_fd)):
        try:
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:  # gone since the listing: not part of the folder
            continue
        if stat.S_ISLNK(mode):
            raise LeaderboardError(
                f"{where / name} is a symlink: a submission holds its own files only; copy the "
                "file in its place"
            )
        if stat.S_ISREG(mode):
            found[name] = "file"
        elif stat.S_ISDIR(mode):
            found[name] = "folder"
        else:
            raise LeaderboardError(f"{where / name} is not a plain file or folder: remove it")
    return found


def read_bounded(fd: int, limit: int, where: Path, what: str) -> bytes:
    """The whole file open at ``fd``, refused past ``limit`` bytes (``what``: the limit's
    name) before or while it is read."""
    size = os.fstat(fd).st_size
    if size > limit:
        raise LeaderboardError(
            f"{where} is {size:,} bytes, over the limit of {limit:,} bytes ({what})"
        )
    with os.fdopen(os.dup(fd), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise LeaderboardError(f"{where} is over the limit of {limit:,} bytes ({what})")
    return data


def file_hash(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``: how an entry names the hash of a file it read."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class HashingReader:
    """A binary reader over a descriptor that hashes every byte it hands out."""

    def __init__(self, fd: int) -> None:
        self._handle = os.fdopen(os.dup(fd), "rb")
        self._handle.seek(0)  # a second reading of the file starts at its start too
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self.digest.update(data)
        return data

    def readinto(self, buffer) -> int:  # gzip reads through readinto
        count = self._handle.readinto(buffer)
        self.digest.update(memoryview(buffer)[:count])
        return count

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._handle.close()


def record_lines(handle, where: Path, limit: int) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each line of ``handle``, refusing one over ``limit`` bytes (the
    entry's ``MAX_RECORD_BYTES``) before it is read whole."""
    number = 0
    buffered = handle if hasattr(handle, "readline") else None
    reader = buffered or _LineReader(handle)
    while line := reader.readline(limit + 1):
        number += 1
        if len(line) > limit:
            raise LeaderboardError(
                f"{where} line {number}: an episode record over the limit of "
                f"{limit:,} bytes (MAX_RECORD_BYTES)"
            )
        yield number, line


class _LineReader:
    """``readline(limit)`` over a reader that only has ``read`` (the hashing reader of a plain
    ``.jsonl`` file)."""

    def __init__(self, raw: HashingReader) -> None:
        self._raw = raw
        self._buffer = b""

    def readline(self, limit: int) -> bytes:
        while b"\n" not in self._buffer and len(self._buffer) < limit:
            chunk = self._raw.read(2**16)
            if not chunk:
                break
            self._buffer += chunk
        end = self._buffer.find(b"\n")
        cut = min(limit, len(self._buffer)) if end < 0 else min(end + 1, limit)
        line, self._buffer = self._buffer[:cut], self._buffer[cut:]
        return line
