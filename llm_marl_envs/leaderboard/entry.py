"""An entry folder, read without trusting it: the one reader of the leaderboard.

Every part of the leaderboard that reads an entry folder (``leaderboard add`` reading a
submission, ``verify``, the replay, ``build`` and the site it writes, the shipped entries)
reads it through :func:`open_entry`, so each of them sees the same files, checked the same
way, and ``verify`` regenerates a sample of exactly the episodes that are scored.

**The files.** An entry folder holds ``results.json`` and ``episodes/`` with, for each task
it played, one episodes file, ``<task>.jsonl`` *or* ``<task>.jsonl.gz`` (a folder holding
both is refused: which one would be scored?), and optionally ``<task>.meta.json``. An
``llm-marl eval`` output may also hold eval's own working files (``run.json``,
``.eval.lock``, ``progress/``: files only), which are never read (nor copied by ``add``); an
entry of the package may hold its ``verification.json`` (read by :mod:`~llm_marl_envs.leaderboard.records`
only). Anything else is refused, naming it: a symlink, a device or a pipe, a hard link (a
second name of a file from elsewhere), a ``crossplay.json`` (cross-play cannot join a board),
a file the format does not name, an episodes file of a task the suite does not have.

**No check-then-use.** The folder is opened once; every file and sub-folder is opened relative
to it without following links (``O_NOFOLLOW``) and checked on the open descriptor (``fstat``:
a plain file, one link), and then read from that descriptor, so a file swapped for a symlink
between a check and a read cannot pull an outside file in. The sha256 of every file is taken
over the bytes that were parsed (:attr:`EntryFolder.hashes`), which is what a verification
binds (the descriptors' pieces: :mod:`~llm_marl_envs.leaderboard.descriptors`).

**Bounded reading.** Limits on bytes and on parsed structure, each refusal one line naming the
file, the line and the limit (:class:`LeaderboardError`):

* ``results.json``: :data:`MAX_RESULTS_BYTES`, :data:`MAX_RESULTS_VALUES` JSON values,
  :data:`MAX_DEPTH` levels, and every field the board reads of its type
  (:mod:`~llm_marl_envs.leaderboard.schema`);
* one episode (a JSONL line): :data:`MAX_RECORD_BYTES`, :data:`MAX_RECORD_VALUES` values,
  :data:`MAX_DEPTH` levels; one action :data:`MAX_ACTION_BYTES`; one task's file
  :data:`MAX_EPISODE_FILE_BYTES` unpacked (gzip is counted as it unpacks) and at most
  :data:`MAX_BLANK_LINES` blank lines; the whole entry :data:`MAX_ENTRY_BYTES` unpacked;
* every value: no integer beyond 64 bits, no ``NaN`` / ``Infinity``, no lone surrogate
  (:mod:`~llm_marl_envs.core.bounded_json`).

**Streamed, in plan order.** A task's episodes are read one line at a time
(:meth:`EntryFolder.episodes`) and each line is checked as it is read: it must be the next
(item, sample) of the task's frozen plan, in the order ``llm-marl eval`` writes them, with the
item's seed and reset options. A repeated, foreign, out-of-order or missing episode is refused
at the line where it shows, before the next line is parsed, and a line past the plan's end too:
at most one record is held at a time, so what reading costs does not grow with what a
submission holds. **A task is complete or absent** (choosing the items is choosing the score);
a result without some tasks has no overall score.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from llm_marl_envs.evaluation import run_folder
from llm_marl_envs.evaluation.suite import Item, Suite, Task, available_suites, packaged_version
from llm_marl_envs.core.bounded_json import BoundsError, loads
from llm_marl_envs.leaderboard import schema as _results_shape
from llm_marl_envs.leaderboard.descriptors import (
    HashingReader,
    file_hash,
    kinds,
    open_checked,
    read_bounded,
    record_lines,
)
from llm_marl_envs.leaderboard.errors import LeaderboardError
from llm_marl_envs.leaderboard.names import display_name as _display_name, name_key, same_name
from llm_marl_envs.rollout.records import EpisodeRecord

__all__ = [
    "MAX_ACTION_BYTES",
    "MAX_BLANK_LINES",
    "MAX_DEPTH",
    "MAX_ENTRY_BYTES",
    "MAX_EPISODE_FILE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_RECORD_BYTES",
    "MAX_RECORD_VALUES",
    "MAX_RESULTS_BYTES",
    "MAX_RESULTS_VALUES",
    "Episode",
    "EntryFolder",
    "LeaderboardError",
    "claimed_suite",
    "display_name",
    "name_key",
    "open_entry",
    "read_episodes",
    "read_results",
    "same_name",
]

#: One action (a turn's answer), in UTF-8 bytes; the longest of the shipped entries is 12 KB.
MAX_ACTION_BYTES = 64 * 2**10
#: One episode record (one JSONL line); the longest of the shipped entries is 124 KB.
MAX_RECORD_BYTES = 2 * 2**20
#: JSON values in one episode line; the shipped entries' most is 1,121.
MAX_RECORD_VALUES = 100_000
#: Nesting of any JSON text (an episode line, results.json); the shipped entries' is 7.
MAX_DEPTH = 32
#: Blank lines in one episodes file (llm-marl eval writes none).
MAX_BLANK_LINES = 16
#: One task's episodes file, unpacked; the largest of the shipped entries is 1.8 MB.
MAX_EPISODE_FILE_BYTES = 256 * 2**20
#: A whole entry, its episodes unpacked; the largest shipped one is 4.7 MB.
MAX_ENTRY_BYTES = 2**30
#: ``results.json``; the shipped ones are 48 KB.
MAX_RESULTS_BYTES = 8 * 2**20
#: JSON values in ``results.json``; the shipped ones hold about 3,200.
MAX_RESULTS_VALUES = 500_000
#: A ``<task>.meta.json`` file (its wall time and data hash).
MAX_META_BYTES = 64 * 2**10
#: An entry's display name, in characters (after cleaning).
MAX_NAME_CHARS = 80
#: Files in ``progress/`` (an unfinished task's shards, never read), each MAX_EPISODE_FILE_BYTES.
MAX_PROGRESS_FILES = 256

#: The keys of one line of an episodes file, and the harness's own working files of an
#: ``llm-marl eval`` folder, which are never read: the run folder's format
#: (:mod:`~llm_marl_envs.evaluation.run_folder`).
LINE_KEYS = run_folder.LINE_KEYS
EVAL_WORKING_FILES = run_folder.WORKING_FILES
#: The files of a task in an entry's ``episodes/``: its episodes file in either form, its meta.
TASK_FILE_FORMS = (*run_folder.EPISODE_FORMS, run_folder.META_FORM)
RESULTS = run_folder.RESULTS_FILE


class Episode(NamedTuple):
    """One episode of an entry: its item, its sample number and its record."""

    item: Item
    sample: int
    record: EpisodeRecord


def display_name(text: str) -> str:
    """``text`` as the board shows it (:func:`llm_marl_envs.leaderboard.names.display_name`:
    control, format and default-ignorable characters removed, whitespace collapsed), refused
    when nothing visible is left or it is over :data:`MAX_NAME_CHARS` characters."""
    try:
        return _display_name(text, MAX_NAME_CHARS)
    except ValueError as error:
        raise LeaderboardError(str(error)) from None


# --------------------------------------------------------------------------- the folder
class EntryFolder:
    """An open entry folder (:func:`open_entry`): its checked ``results.json``, the suite it
    claims, and each task's episodes, read on demand (:meth:`episodes`). Close it (or use it
    in a ``with`` block) to release its descriptors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fds: dict[str, int] = {}
        self.hashes: dict[str, str] = {}
        self.fingerprints: dict[str, list[str]] = {}
        #: task -> the sha256 of its episode lines (blank lines left out): what it scores
        self.contents: dict[str, str] = {}
        self.meta: dict[str, dict] = {}
        self.files: dict[str, str] = {}  # task -> the name of its episodes file
        self.has_verification = False
        self._budget = MAX_ENTRY_BYTES
        try:
            if not os.path.lexists(path):
                raise LeaderboardError(
                    f"no results.json in {path} (no such folder): run llm-marl eval first"
                )
            self._fds["."] = open_checked(str(path), None, path, folder=True)
            self._read_folder()
        except BaseException:
            self.close()
            raise

    # ..................................................................... opening
    def _read_folder(self) -> None:
        path, top = self.path, self._fds["."]
        found = kinds(top, path)
        if "crossplay.json" in found:
            raise LeaderboardError(
                f"{path} is a cross-play result: cross-play cannot be added to a board (the "
                "board shows the cross-play that ships with the package); add each entry's own "
                "llm-marl eval folder"
            )
        if found.get(RESULTS) != "file":
            raise LeaderboardError(f"no results.json in {path}: run llm-marl eval first")
        for name, kind in found.items():
            if name == RESULTS or (name, kind) == (run_folder.EPISODES_DIR, "folder"):
                continue
            if (name, kind) == ("verification.json", "file"):
                self.has_verification = True
            elif EVAL_WORKING_FILES.get(name) == kind:
                if kind == "folder":  # progress/: checked for links, never read
                    self._working_folder(name)
            else:
                raise LeaderboardError(
                    f"{path / name} is not a file of an llm-marl eval result (results.json, "
                    "episodes/<task>.jsonl[.gz], episodes/<task>.meta.json): remove it"
                )
        data = self._file(RESULTS, MAX_RESULTS_BYTES, "MAX_RESULTS_BYTES")
        self.results = self._json(data, path / RESULTS, MAX_RESULTS_VALUES)
        problem = _results_shape.check(self.results)
        if problem:
            raise LeaderboardError(f"{path / RESULTS}: {problem}")
        self.suite, self.suite_problem = claimed_suite(self.results, path)
        if found.get("episodes") == "folder":
            self._episode_files()

    def _working_folder(self, name: str) -> None:
        """``progress/``: never read, but at most :data:`MAX_PROGRESS_FILES` files, named as
        the harness names them (:data:`~llm_marl_envs.evaluation.run_folder.PROGRESS_FILE`)."""
        fd = open_checked(name, self._fds["."], self.path / name, folder=True)
        try:
            found = kinds(fd, self.path / name)
            if len(found) > MAX_PROGRESS_FILES:
                raise LeaderboardError(f"{self.path / name}: over {MAX_PROGRESS_FILES} files")
            for inner, kind in found.items():
                size = os.stat(inner, dir_fd=fd, follow_symlinks=False).st_size
                named = run_folder.PROGRESS_FILE.fullmatch(inner)
                if kind != "file" or not named or size > MAX_EPISODE_FILE_BYTES:
                    raise LeaderboardError(f"{self.path / name / inner}: remove it")
        finally:
            os.close(fd)

    def _file(self, name: str, limit: int, what: str, folder: str = ".") -> bytes:
        where = self.path / name if folder == "." else self.path / folder / name
        fd = open_checked(name, self._fds[folder], where)
        try:
            data = read_bounded(fd, limit, where, what)
        finally:
            os.close(fd)
        relative = name if folder == "." else f"{folder}/{name}"
        self.hashes[relative] = file_hash(data)
        return data

    @staticmethod
    def _json(data: bytes, where: Path, values: int) -> Any:
        try:
            return loads(data, str(where), max_values=values, max_depth=MAX_DEPTH)
        except BoundsError as error:
            raise LeaderboardError(str(error)) from None

    def _episode_files(self) -> None:
        where = self.path / "episodes"
        self._fds["episodes"] = fd = open_checked("episodes", self._fds["."], where, folder=True)
        tasks = {task.name for task in self.suite.tasks}
        for name, kind in kinds(fd, where).items():
            task, _, form = name.partition(".")
            if kind != "file" or task not in tasks or form not in TASK_FILE_FORMS:
                known = f"{self.suite.label} has tasks {', '.join(sorted(tasks))}"
                raise LeaderboardError(
                    f"{where / name} is not a file of an llm-marl eval result ({known}; each "
                    "task's episodes/<task>.jsonl or .jsonl.gz and <task>.meta.json): remove it"
                )
            if form == run_folder.META_FORM:
                data = self._file(name, MAX_META_BYTES, "MAX_META_BYTES", "episodes")
                self.meta[task] = self._meta(data, where / name)
            elif task in self.files:
                raise LeaderboardError(
                    f"{where} holds both {self.files[task]} and {name}: a task has one episodes "
                    "file; remove one"
                )
            else:
                self.files[task] = name
        for name in self.files.values():
            self._fds[f"episodes/{name}"] = open_checked(name, fd, where / name)

    def _meta(self, data: bytes, where: Path) -> dict:
        meta = self._json(data, where, 1_000)
        shape = _results_shape.fields(
            {},
            {
                "wall_seconds": _results_shape.optional(_results_shape.number),
                "data_hash": _results_shape.optional(_results_shape.text(100)),
            },
        )
        problem = shape(meta, "")
        if problem:
            raise LeaderboardError(f"{where}: {problem}")
        return meta

    # ..................................................................... episodes
    def tasks(self) -> list[Task]:
        """The suite's tasks this entry has an episodes file for, in suite order."""
        return [task for task in self.suite.tasks if task.name in self.files]

    def episodes(self, task: Task | str) -> Iterator[Episode]:
        """``task``'s episodes in its plan's order, each checked as it is read (the module
        docstring); the file's hash and the task's fingerprints (one per episode, a hash of its
        item, sample and actions) are recorded once the last line is read. Raises
        :class:`LeaderboardError` at the first line that is not the plan's next episode, past
        a limit, or when the file ends before the plan does."""
        task = self.suite.task(task) if isinstance(task, str) else task
        name = self.files[task.name]
        where = self.path / "episodes" / name
        plan = task.episode_plan()
        raw = HashingReader(self._fds[f"episodes/{name}"])
        prints: list[str] = []
        content = hashlib.sha256()
        try:
            handle = gzip.GzipFile(fileobj=raw, mode="rb") if name.endswith(".gz") else raw
            position = 0
            for number, line in self._lines(handle, where):
                if position >= len(plan):
                    raise LeaderboardError(
                        f"{where} line {number}: more episodes than the plan's {len(plan)} "
                        f"(task {task.name} plays {len(task.items)} items x {task.samples} "
                        "sample(s), each once)"
                    )
                episode = self._episode(line, f"{where} line {number}", task, plan, position)
                content.update(line.strip() + b"\n")
                prints.append(hashlib.sha256(_played(episode)).hexdigest()[:16])
                position += 1
                yield episode
            if position < len(plan):
                item, sample = plan[position]
                raise LeaderboardError(
                    f"task {task.name}: {len(plan) - position} of its {len(plan)} episodes are "
                    f"missing from {where.name} (first: {item.key} sample {sample}); a task is "
                    "played in full or left out"
                )
            while raw.read(2**16):  # bytes after the gzip stream's end count in its hash
                pass
        except (OSError, EOFError, zlib.error) as error:
            raise LeaderboardError(f"{where} cannot be read ({error})") from None
        finally:
            raw.close()
        self.hashes[f"episodes/{name}"] = "sha256:" + raw.digest.hexdigest()
        self.fingerprints[task.name] = prints
        self.contents[task.name] = "sha256:" + content.hexdigest()

    def _lines(self, handle, where: Path) -> Iterator[tuple[int, bytes]]:
        """(line number, line) for each non-blank line of an episodes file, within the limits:
        one record, the task's file and the whole entry unpacked, and the blank lines."""
        blank = unpacked = 0
        for number, line in record_lines(handle, where, MAX_RECORD_BYTES):
            unpacked += len(line)
            self._budget -= len(line)
            if unpacked > MAX_EPISODE_FILE_BYTES:
                raise LeaderboardError(
                    f"{where}: over the limit of {MAX_EPISODE_FILE_BYTES:,} bytes unpacked "
                    "for one task's episodes (MAX_EPISODE_FILE_BYTES)"
                )
            if self._budget < 0:
                raise LeaderboardError(
                    f"{self.path}: over the limit of {MAX_ENTRY_BYTES:,} bytes unpacked for "
                    "a whole entry (MAX_ENTRY_BYTES)"
                )
            if not line.strip():
                blank += 1
                if blank > MAX_BLANK_LINES:
                    raise LeaderboardError(
                        f"{where} line {number}: more than {MAX_BLANK_LINES} blank lines"
                    )
                continue
            yield number, line

    def _episode(self, line: bytes, where: str, task: Task, plan: list, position: int) -> Episode:
        data = self._json(line, where, MAX_RECORD_VALUES)
        if not isinstance(data, dict) or set(data) != LINE_KEYS:
            keys = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise LeaderboardError(
                f"{where}: not an episode line of llm-marl eval (its keys are "
                f"{', '.join(sorted(LINE_KEYS))}; found {str(keys)[:80]})"
            )
        key, sample = data["key"], data["sample"]
        said = f"{where} ({str(key)[:40]!r} sample {sample!r})"
        item, expected = plan[position]
        if (key, sample) != (item.key, expected) or type(sample) is not int:
            raise LeaderboardError(_misplaced(said, task, plan, position, key, sample))
        if [data["task"], data["item"], data["seed"], data["options"]] != [
            task.name,
            item.index,
            item.seed,
            item.options,
        ]:
            raise LeaderboardError(f"{said}: not an item of task {task.name} of this suite")
        try:
            record = EpisodeRecord.from_dict(data["record"])
            actions = [turn.action for turn in record.turns]
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise LeaderboardError(
                f"{where}: not an episode of llm-marl eval ({type(error).__name__}: "
                f"{str(error)[:80]})"
            ) from None
        for turn, action in enumerate(actions):
            if not isinstance(action, str):
                raise LeaderboardError(f"{where}: turn {turn}'s action is not text")
            if len(action.encode("utf-8")) > MAX_ACTION_BYTES:
                raise LeaderboardError(
                    f"{where}: turn {turn}'s action is over the limit of "
                    f"{MAX_ACTION_BYTES:,} bytes (MAX_ACTION_BYTES)"
                )
        return Episode(item, sample, record)

    def read_all(self) -> dict[str, list[Episode]]:
        """Every task's episodes, read whole (small entries and tests; the board's own paths
        stream them with :meth:`episodes`)."""
        return {task.name: list(self.episodes(task)) for task in self.tasks()}

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> EntryFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _misplaced(said: str, task: Task, plan: list, position: int, key: Any, sample: Any) -> str:
    """Why a line is not the plan's next episode."""
    keys = {item.key for item in task.items}
    if key not in keys:
        return f"{said}: not an item of task {task.name} of this suite"
    if type(sample) is not int or not 0 <= sample < task.samples:
        return f"{said}: the suite plays {task.samples} sample(s) per item (0..)"
    if any((i.key, s) == (key, sample) for i, s in plan[:position]):
        return f"{said}: this episode appears twice"
    item, expected = plan[position]
    return (
        f"{said}: the plan's episode {position + 1}, {item.key} sample {expected}, is missing "
        "before it (or the lines are out of the plan's order, in which llm-marl eval writes "
        "them); a task is played in full or left out"
    )


def _played(episode: Episode) -> bytes:
    """What an episode's fingerprint hashes: the item, the sample and every action."""
    actions = [turn.action for turn in episode.record.turns]
    return json.dumps([episode.item.key, episode.sample, actions]).encode() + b"\n"


def claimed_suite(results: dict, folder: Path) -> tuple[Suite, str | None]:
    """The packaged suite (version) ``results`` claims, and why its hash is not this
    package's (None: it is)."""
    meta = results["suite"]
    names = [n for n in available_suites() if "-v" not in n]
    if meta["name"] not in names:
        raise LeaderboardError(
            f"{folder}: suite {meta['name']!r} is not one of this package's ({', '.join(names)})"
        )
    from llm_marl_envs.evaluation.suite import load_suite

    suite = packaged_version(meta["name"], meta["version"]) or load_suite(meta["name"])
    if suite.version != meta["version"] or suite.hash() != meta["hash"]:
        return suite, (
            f"suite {meta['name']}-v{meta['version']} hash {meta['hash'][:19]} is not this "
            f"package's {suite.label} ({suite.hash()[:19]}); evaluate again with this version"
        )
    return suite, None


def open_entry(folder: str | Path) -> EntryFolder:
    """The entry folder (or ``llm-marl eval`` output) at ``folder``, opened and checked (module
    docstring)."""
    return EntryFolder(Path(folder))


def read_results(folder: str | Path) -> dict[str, Any]:
    """The checked ``results.json`` of the entry (or submission) in ``folder``."""
    with open_entry(folder) as entry:
        return entry.results


def read_episodes(folder: str | Path, suite: Suite | None = None) -> dict[str, list[Episode]]:
    """Each present task's episodes (item, sample, record) in plan order, read whole."""
    with open_entry(folder) as entry:
        return entry.read_all()
