"""What an entry is by its content, and the rule against copies.

An entry folder's :class:`Identity` is its suite label, its digest (the sha256 of its episodes
and what its score depends on: :func:`~llm_marl_envs.leaderboard.ledger.digest`), one
fingerprint per episode (a hash of its item, sample and actions) and its files' hashes. Two
entries clash (:func:`clash`) when they hold the same content, when one shares at least
:data:`COPY_SHARE` of its episodes with the other (:func:`copy_of`), or when it copies an entry
the ledger recorded that is no longer on the board. Which of two clashing entries gives way is
the rules' business (:func:`~llm_marl_envs.leaderboard.rules.standing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from llm_marl_envs.leaderboard import ledger as board_ledger
from llm_marl_envs.leaderboard.entry import LeaderboardError, open_entry

__all__ = ["COPY_SHARE", "Identity", "clash", "copy_of", "fingerprints", "identity", "prints"]

#: The share of its episodes an entry may have in common with another entry (the same item,
#: sample and actions) before it is that entry's copy.
COPY_SHARE = 0.9


@dataclass(frozen=True)
class Identity:
    """What an entry folder is, by its content: its suite label, its digest
    (:func:`~llm_marl_envs.leaderboard.ledger.digest`), each task's episode fingerprints (one
    per episode, in plan order: a hash of its item, sample and actions) and its files' hashes."""

    suite: str
    digest: str
    fingerprints: dict[str, list[str]]
    hashes: dict[str, str]


def identity(folder: Path, strict: bool = False) -> Identity | None:
    """The :class:`Identity` of the entry in ``folder`` (every episode read); None when it
    cannot be read (``strict``: the reader's error, naming why)."""
    try:
        with open_entry(folder) as entry:
            for task in entry.tasks():
                for _ in entry.episodes(task):
                    pass
            return Identity(
                entry.suite.label,
                board_ledger.digest(entry),
                dict(entry.fingerprints),
                dict(entry.hashes),
            )
    except (LeaderboardError, OSError):
        if strict:
            raise
        return None


def fingerprints(folder: Path) -> tuple[str, dict[str, list[str]]] | None:
    """The suite label and each task's episode fingerprints of the entry in ``folder``
    (:class:`Identity`); None when it cannot be read."""
    found = identity(folder)
    return (found.suite, found.fingerprints) if found else None


def copy_of(
    label: str,
    mine: Mapping[str, Sequence[str]],
    others: Iterable[tuple[str, tuple[str, Mapping[str, Sequence[str]]] | None]],
) -> str | None:
    """The first of ``others`` (id, (suite label, fingerprints)) on the same suite version with
    which ``mine`` shares at least :data:`COPY_SHARE` of its episodes (the same actions for the
    same item and sample): ``mine`` is a copy of it, whole, in part, or with a few actions
    touched up."""
    total = sum(len(prints) for prints in mine.values())
    if not total:
        return None
    for other, theirs in others:
        if not theirs or theirs[0] != label:
            continue
        same = sum(
            a == b
            for task, prints in mine.items()
            for a, b in zip(prints, theirs[1].get(task, ()), strict=False)
        )
        if same >= COPY_SHARE * total:
            return other
    return None


def prints(found: dict[str, Identity | None]):
    """``found``'s (id, (suite label, fingerprints)) pairs, None where an entry cannot be read:
    the ``others`` that :func:`copy_of` compares with."""
    return ((i, (f.suite, f.fingerprints) if f else None) for i, f in found.items())


def clash(
    ledger: board_ledger.Ledger,
    mine: Identity,
    live: dict[str, Identity | None],
    on_board: set[str] | None = None,
    entry_id: str | None = None,
) -> str | None:
    """Why content ``mine`` (the entry ``entry_id``) cannot stand beside ``live`` entries
    (None: it can): it is one of them (the same digest), a copy of one (:func:`copy_of`), or a
    copy of an entry the ledger recorded whose content is no longer on the board (``on_board``:
    the digests of every folder there; default ``live``'s). The very content of a removed
    entry may come back (its record follows it); a near-copy of it, or an edited entry, may
    not, until a maintainer's override accepts that content."""
    for other, theirs in live.items():
        if theirs is not None and theirs.digest == mine.digest:
            return (
                f"its content is entry {other!r}'s (the same digest); one evaluation is one entry"
            )
    copied = copy_of(mine.suite, mine.fingerprints, prints(live))
    if copied:
        return (
            f"its episodes are entry {copied!r}'s (the same actions for at least "
            f"{COPY_SHARE:.0%} of its items); one evaluation is one entry"
        )
    if any(e.get("event") == "override" for e in ledger.events(mine.digest)):
        return None  # a maintainer accepted this content as it is, saying why
    if on_board is None:
        on_board = {f.digest for f in live.values() if f is not None}
    gone = {
        digest: block
        for digest, block in ledger.recorded().items()
        if digest not in on_board and digest != mine.digest and block["fingerprints"]
    }
    copied = copy_of(
        mine.suite,
        mine.fingerprints,
        ((d, (b.get("suite"), b["fingerprints"])) for d, b in gone.items()),
    )
    if copied is None:
        return None
    block = gone[copied]
    where = f"ledger line {block['position']}"
    if entry_id is not None and block["entry"] == entry_id:
        return (
            f"its content changed since the board recorded it ({where}): the ledger's record "
            "of an entry follows the content it holds; put that content back, or a maintainer "
            f"who knows why accepts this one: llm-marl leaderboard override {entry_id} --reason "
            "TEXT"
        )
    return (
        f"its episodes are those of entry {block['entry']!r} ({where}, no longer on the "
        f"board): the same actions for at least {COPY_SHARE:.0%} of its items; a removed "
        "entry's record follows its content"
    )
