"""Scripted players for the Donor game (``llm_marl_envs/DonorGame-v0``).

Each factory returns a policy: a callable ``(observation, info) -> str`` that answers in the
game's format (``Answer: <amount>``, or ``Answer: Donate, <amount>`` / ``Answer: Punish,
<amount>`` in the punishment variant). Policies only use what the donor is shown: the
structured copies of the observation that the env puts into the donor's info
(``own_resources``, ``recipient_resources``, ``trace``); without them (an info that went
through a log, say) they read the same facts from the observation text.

* :func:`fraction_giver` gives a fixed share of its resources;
* :func:`reputation_reciprocator` gives the share the recipient gave in its most recent
  traced donation (indirect reciprocity);
* :func:`always_defect` gives nothing;
* :func:`punishing_reciprocator` (punishment variant) reciprocates, but punishes recipients
  whose last traced donation was below a threshold;
* :func:`policy_from_strategy` turns a short strategy text (``"give 0.5"``, ``"reciprocate"``,
  ``"defect"``, ``"punish below 0.2"``) into one of these, for scripted cultural evolution.
"""

from __future__ import annotations

import math
import re
from typing import Any

from llm_marl_envs.core.validation import check_number
from llm_marl_envs.policies.base import PolicyFn

__all__ = [
    "always_defect",
    "format_amount",
    "fraction_giver",
    "policy_from_strategy",
    "punishing_reciprocator",
    "reference",
    "reputation_reciprocator",
]

_OWN = re.compile(r"You have ([\d.]+) units")
_TRACE = re.compile(r"- In round \d+, \S+ (gave|spent) (\d+)% ")
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)\s*(%?)"


def format_amount(amount: float) -> str:
    """An amount as the parser reads it back exactly: ``"10"``, ``"2.5"``, ``"1e+20"``."""
    amount = float(amount)
    if amount.is_integer() and abs(amount) < 1e15:
        return str(int(amount))
    return repr(amount)


def _check_fraction(name: str, value: float) -> float:
    return check_number(name, value, 0, 1)


def _own_resources(observation: str, info: dict[str, Any]) -> float:
    own = info.get("own_resources")
    if own is not None:
        return float(own)
    match = _OWN.search(observation)
    return float(match.group(1)) if match else 0.0


def _last_trace(observation: str, info: dict[str, Any]) -> tuple[str, float] | None:
    """The recipient's most recent traced action: (kind, fraction), or None without history."""
    trace = info.get("trace")
    if trace is not None:
        if not trace:
            return None
        return trace[0]["kind"], float(trace[0]["fraction"])
    match = _TRACE.search(observation)
    if match is None:
        return None
    return ("punish" if match.group(1) == "spent" else "donate"), int(match.group(2)) / 100


def _give(amount: float, punishment_format: bool) -> str:
    prefix = "Answer: Donate, " if punishment_format else "Answer: "
    return prefix + format_amount(amount)


def fraction_giver(fraction: float = 0.5) -> PolicyFn:
    """Always gives ``fraction`` of its current resources."""
    fraction = _check_fraction("fraction", fraction)

    def policy(observation: str, info: dict[str, Any]) -> str:
        return f"Answer: {format_amount(fraction * _own_resources(observation, info))}"

    policy.__name__ = f"fraction_giver({fraction:g})"
    return policy


def reputation_reciprocator(default_fraction: float = 0.5) -> PolicyFn:
    """Gives the share of its resources that the recipient gave in its most recent traced
    donation (0 if it punished), and ``default_fraction`` when there is no history yet."""
    default_fraction = _check_fraction("default_fraction", default_fraction)

    def policy(observation: str, info: dict[str, Any]) -> str:
        own = _own_resources(observation, info)
        last = _last_trace(observation, info)
        if last is None:
            share = default_fraction
        else:
            share = last[1] if last[0] == "donate" else 0.0
        return f"Answer: {format_amount(share * own)}"

    policy.__name__ = f"reputation_reciprocator({default_fraction:g})"
    return policy


def always_defect() -> PolicyFn:
    """Never gives anything."""

    def policy(observation: str, info: dict[str, Any]) -> str:
        return "Answer: 0"

    policy.__name__ = "always_defect"
    return policy


def punishing_reciprocator(
    threshold: float = 0.25, punish_fraction: float = 0.1, default_fraction: float = 0.5
) -> PolicyFn:
    """For ``punishment=True``: punishes (spending ``punish_fraction`` of its resources) a
    recipient whose most recent traced donation was below ``threshold`` of its resources, or
    who punished; otherwise reciprocates like :func:`reputation_reciprocator`."""
    threshold = _check_fraction("threshold", threshold)
    punish_fraction = _check_fraction("punish_fraction", punish_fraction)
    default_fraction = _check_fraction("default_fraction", default_fraction)

    def policy(observation: str, info: dict[str, Any]) -> str:
        own = _own_resources(observation, info)
        last = _last_trace(observation, info)
        if last is None:
            return _give(default_fraction * own, True)
        kind, share = last
        if kind == "punish" or share < threshold:
            return f"Answer: Punish, {format_amount(punish_fraction * own)}"
        return _give(share * own, True)

    policy.__name__ = f"punishing_reciprocator({threshold:g})"
    return policy


def _fraction_in(text: str, keyword: str) -> float | None:
    match = re.search(keyword + r"\s*(?:below|under|<)?\s*" + _NUMBER, text)
    if match is None:
        return None
    value = float(match.group(1))
    if match.group(2) == "%" or value > 1:
        value /= 100
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else None


def policy_from_strategy(strategy: str) -> PolicyFn:
    """A scripted policy from a short strategy text (case-insensitive):

    * ``"give F"`` / ``"give P%"``: :func:`fraction_giver` (F in [0, 1], or a percentage);
    * ``"punish below T"`` (optionally ``"default F"``): :func:`punishing_reciprocator`;
    * ``"reciprocate"`` (optionally ``"default F"``): :func:`reputation_reciprocator`;
    * ``"defect"``: :func:`always_defect`.

    The first keyword found in that order decides; text around it is ignored, so an LLM's
    strategy essay that ends with such a line also works. Raises ``ValueError`` otherwise.

    >>> policy_from_strategy("Be kind: give 40%")("", {"own_resources": 10.0, "trace": []})
    'Answer: 4'
    """
    text = strategy.lower()
    default = _fraction_in(text, "default")
    give = _fraction_in(text, "give")
    if give is not None:
        return fraction_giver(give)
    threshold = _fraction_in(text, "punish")
    if threshold is not None:
        return punishing_reciprocator(
            threshold, default_fraction=0.5 if default is None else default
        )
    if "reciprocat" in text:
        return reputation_reciprocator(0.5 if default is None else default)
    if "defect" in text:
        return always_defect()
    raise ValueError(
        f"cannot read a scripted strategy from {strategy[:80]!r}: expected 'give F', "
        "'punish below T', 'reciprocate' or 'defect'"
    )


def reference(agent: str, seed: int = 0) -> PolicyFn:
    """The registry's scripted player: a reputation reciprocator, for every player."""
    return reputation_reciprocator()
