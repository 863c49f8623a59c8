"""Scoring of the Donor game (Vallinder & Hughes, 2024, arXiv:2412.10270): pure functions.

A donation of ``x`` costs the donor ``x`` and gives the recipient ``multiplier * x``; in the
costly-punishment variant, spending ``x`` removes ``punishment_multiplier * x`` from the
recipient (never below 0). Amounts are clamped to ``[0, the donor's resources]`` first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Donation", "donation", "game_summary"]


@dataclass(frozen=True)
class Donation:
    """What one donor turn does.

    Attributes:
        amount: Units given (or spent on punishment), after clamping.
        clamped: 1.0 when the asked amount was outside ``[0, resources]``, else 0.0.
        donor_reward: The donor's change of resources (``-amount``).
        recipient_reward: The recipient's change (``multiplier * amount``, or the punishment).
        fraction: ``amount`` / the donor's resources before (0 when it had nothing).
    """

    amount: float
    clamped: float
    donor_reward: float
    recipient_reward: float
    fraction: float


def donation(
    asked: float,
    kind: str,
    donor_resources: float,
    recipient_resources: float,
    multiplier: float,
    punishment_multiplier: float,
) -> Donation:
    """Score one donor turn (``kind`` is ``"donate"`` or ``"punish"``).

    >>> donation(4, "donate", 10, 10, 2.0, 2.0)
    Donation(amount=4.0, clamped=0.0, donor_reward=-4.0, recipient_reward=8.0, fraction=0.4)
    >>> donation(50, "punish", 10, 3, 2.0, 2.0).recipient_reward  # never below 0
    -3.0
    """
    amount, clamped = float(asked), 0.0
    if amount < 0:
        amount, clamped = 0.0, 1.0
    elif amount > donor_resources:
        amount, clamped = float(donor_resources), 1.0
    elif amount == 0:
        amount = 0.0  # no -0.0
    if kind == "punish":
        gain = -float(min(recipient_resources, punishment_multiplier * amount)) or 0.0
    else:
        gain = float(multiplier * amount)
    loss = -amount if amount else 0.0  # never -0.0
    fraction = amount / donor_resources if donor_resources > 0 else 0.0
    return Donation(amount, clamped, loss, gain, fraction)


def game_summary(
    history: list[dict[str, Any]],
    given: dict[str, list[dict[str, Any]]],
    resources: dict[str, float],
) -> tuple[dict[str, Any], dict[str, dict]]:
    """The end-of-game figures: the game's summary and each player's own.

    ``history`` lists every donor turn (``round, donor, recipient, amount, fraction, kind``),
    ``given`` the same records per donor. Returns ``(summary, per_agent)``: ``summary`` has
    ``final_resources``, ``mean_final_resources``, ``mean_donation_fraction`` (punishing
    counts as giving 0), ``punishment_frequency`` and ``total_donated``; ``per_agent[a]`` has
    ``final_resources``, ``donation_fraction`` and ``punishments``.
    """
    turns = len(history)
    fractions = {
        a: [r["fraction"] if r["kind"] == "donate" else 0.0 for r in records]
        for a, records in given.items()
    }
    punish_counts = {a: sum(r["kind"] == "punish" for r in records) for a, records in given.items()}
    final = dict(resources)
    all_fractions = [f for fs in fractions.values() for f in fs]
    summary = {
        "final_resources": final,
        "mean_final_resources": sum(final.values()) / len(final),
        "mean_donation_fraction": sum(all_fractions) / len(all_fractions) if all_fractions else 0.0,
        "punishment_frequency": sum(punish_counts.values()) / turns if turns else 0.0,
        "total_donated": sum(r["amount"] for r in history if r["kind"] == "donate"),
    }
    per_agent = {
        a: {
            "final_resources": final[a],
            "donation_fraction": sum(fractions[a]) / len(fractions[a]) if fractions[a] else 0.0,
            "punishments": punish_counts[a],
        }
        for a in given
    }
    return summary, per_agent
