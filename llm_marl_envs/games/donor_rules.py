"""The Donor game's rules (Vallinder & Hughes, 2024, arXiv:2412.10270), without the env.

* :func:`parse_donation`: a donor's decision read from its reply;
* :func:`pairing_schedule`: every round's (donor, recipient) pairs, drawn from the episode RNG,
  with alternating roles and no repeated partner;
* :func:`reputation_trace`: the recipient's recent donations, hop by hop, as the donor sees them;
* :func:`format_units`: resource amounts as the prompts show them.

Scoring (what a donation does to resources) is in :mod:`llm_marl_envs.rewards.donor`.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

import numpy as np

__all__ = [
    "FORMAT_ERRORS",
    "format_units",
    "pairing_schedule",
    "parse_donation",
    "reputation_trace",
]

FORMAT_ERRORS = ("empty", "too_long", "no_amount", "non_finite", "punish_not_allowed")

# Every whitespace run follows a mandatory character, so no two runs can trade characters:
# matching stays linear in the reply's length (no catastrophic backtracking).
_NUMBER = (
    r"(?P<s1>[-+\u2212]\s*)?(?:\$\s*)?(?P<s2>[-+\u2212]\s*)?"
    r"(?P<num>\d[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?"
    r"|inf(?:inity)?\b|nan\b)"
)
_KIND = r"(?P<kind>donate|punish)\b"
_ANSWER_RE = re.compile(
    r"answer[\s*_]*[:=][\s*_]*(?:" + _KIND + r"[\s*]*(?:[,:][\s*]*)?)?" + _NUMBER, re.IGNORECASE
)
_KIND_RE = re.compile(r"\b" + _KIND + r"[\s*]*[,:][\s*]*" + _NUMBER, re.IGNORECASE)
_BARE_RE = re.compile(_NUMBER + r"\s*\.?", re.IGNORECASE)


def parse_donation(text: str, punishment: bool = False) -> tuple[str, float | None, str | None]:
    """Read a donor's decision from its reply.

    Returns ``(kind, amount, error)``: ``kind`` is ``"donate"`` or ``"punish"``; ``amount`` is
    the number as written (not yet clamped to the donor's resources; negative allowed) or
    ``None`` when ``error`` says why the reply is a format failure (``"no_amount"``,
    ``"non_finite"``, ``"punish_not_allowed"``; the error cases have kind ``"donate"``).

    >>> parse_donation("I will be generous. Answer: $1,000.50")
    ('donate', 1000.5, None)
    >>> parse_donation("Punish, 2", punishment=True)
    ('punish', 2.0, None)
    >>> parse_donation("Punish, 2")
    ('donate', None, 'punish_not_allowed')
    """
    match = _last_match(_ANSWER_RE, text) or _last_match(_KIND_RE, text)
    if match is None:
        match = _BARE_RE.fullmatch(text.strip())
        if match is None:
            return "donate", None, "no_amount"
    kind = (match.groupdict().get("kind") or "donate").lower()
    if kind == "punish" and not punishment:
        return "donate", None, "punish_not_allowed"
    token = match.group("num").replace(",", "")
    value = float(token)
    if not math.isfinite(value):
        if token[0].isalpha():  # inf, infinity, nan
            return "donate", None, "non_finite"
        value = sys.float_info.max  # a digit string too long for a float: huge, clamped later
    signs = (match.group("s1") or "") + (match.group("s2") or "")
    if "-" in signs or "\u2212" in signs:
        value = -value
    return kind, value, None


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    last = None
    for match in pattern.finditer(text):
        last = match
    return last


def format_units(x: float) -> str:
    """Compact display of a resource amount: integers without decimals, else 2 decimals."""
    if x.is_integer() and -1e15 < x < 1e15:
        return str(int(x))
    if not math.isfinite(x):
        return str(x)
    r = round(x, 2)
    if r == int(r):
        return str(int(r))
    return f"{r:.2f}".rstrip("0")


def pairing_schedule(
    rng: np.random.Generator, agents: list[str], num_rounds: int, reverse: bool = False
) -> list[list[tuple[str, str]]]:
    """Every round's ``(donor, recipient)`` pairs, in seat order of the donors.

    A permutation from ``rng`` splits the players into halves X and Y of size m = N/2, and two
    further permutations give offsets ``o`` and ``o'`` of ``range(m)``. In rounds 1, 3, 5, ...
    X[i] gives to Y[(i + o[k]) % m]; in rounds 2, 4, 6, ... Y[j] gives to X[(j + o'[k]) % m]
    (k counts the rounds of each kind): roles alternate and no donor meets the same recipient
    twice. ``reverse`` swaps donor and recipient in every pair.
    """
    m = len(agents) // 2
    perm = rng.permutation(len(agents))
    half_x = [agents[i] for i in perm[:m]]
    half_y = [agents[i] for i in perm[m:]]
    offsets_x = rng.permutation(m)
    offsets_y = rng.permutation(m)
    index = {a: i for i, a in enumerate(agents)}
    schedule = []
    for r in range(num_rounds):
        k = r // 2
        if r % 2 == 0:
            pairs = [(half_x[i], half_y[(i + offsets_x[k]) % m]) for i in range(m)]
        else:
            pairs = [(half_y[j], half_x[(j + offsets_y[k]) % m]) for j in range(m)]
        if reverse:
            pairs = [(b, a) for a, b in pairs]
        pairs.sort(key=lambda pair: index[pair[0]])
        schedule.append(pairs)
    return schedule


def reputation_trace(
    given: dict[str, list[dict[str, Any]]], recipient: str, round_number: int, depth: int
) -> list[dict[str, Any]]:
    """The recipient's most recent donation before ``round_number``, then what that partner
    did before that, and so on, at most ``depth`` hops (records of ``given``, newest first)."""
    trace: list[dict[str, Any]] = []
    who, before = recipient, round_number
    while len(trace) < depth:
        record = None
        for rec in reversed(given[who]):
            if rec["round"] < before:
                record = rec
                break
        if record is None:
            break
        trace.append(record)
        who, before = record["recipient"], record["round"]
    return trace
