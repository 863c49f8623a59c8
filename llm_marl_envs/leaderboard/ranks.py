"""Who is ranked on the board, and how: tie ranks by the 95% interval, LMArena's rule.

An entry's rank is 1 + the number of ranked entries whose interval lies wholly above its own
(:func:`~llm_marl_envs.evaluation.stats.tie_ranks`), overall and on each task's primary
metric (:func:`rank_entries`). Only entries whose every episode could be checked stand among
each other: one that did not play every item, one with a seat no replay can regenerate, or
one whose verification failed is shown unranked, with its reason (:func:`unranked`).
"""

from __future__ import annotations

from llm_marl_envs.evaluation.stats import Interval, tie_ranks
from llm_marl_envs.policies.specs import not_replayable

__all__ = ["INCOMPLETE", "RANK_RULE", "rank_entries", "unranked"]

#: The rank rule, as the site states it.
RANK_RULE = (
    "rank = 1 + the number of entries whose 95% interval lies wholly above "
    "this entry's (lower bound above its upper bound), LMArena's rule: an entry never "
    "ranks below one it cannot be told apart from; entries that did not play every "
    "item of the suite are not ranked, nor are entries with a seat no replay can "
    "regenerate (a person, a remote server) or whose verification failed: they are shown "
    "below the ranked ones, each with its reason"
)

#: Why an entry that did not play every item has no rank.
INCOMPLETE = "not ranked: it did not play every item"


def unranked(entry: dict, task: str | None = None) -> str | None:
    """Why ``entry`` (a board row) has no rank overall, or in ``task``; None: it is ranked.

    Only entries whose every episode could be checked stand among each other: an entry with a
    seat whose answers cannot be regenerated (a person, a remote server) is shown, unranked
    and below the ranked ones, and so is one whose verification failed (until a maintainer's
    override), whatever its scores."""
    if task is None:
        complete = bool(entry["complete"] and entry["overall"])
    else:
        complete = bool((entry["tasks"].get(task) or {}).get("complete"))
    if not complete:
        return INCOMPLETE
    for name, seats in (entry.get("team") or {}).items():
        if task and name != task:
            continue
        for spec in seats.values():
            why = not_replayable(str(spec))
            if why:
                return (
                    f"not ranked: task {name} has {why}, which no replay can regenerate; only "
                    "entries whose episodes can be checked are ranked"
                )
    if entry.get("verified") is False:
        return "not ranked: its verification failed (the rank returns with a passing one)"
    return None


def rank_entries(built: list[dict], tasks: list[dict]) -> None:
    """Tie ranks overall and per task (primary metric), in place, among the entries that
    :func:`unranked` ranks; each of the others gets its reason (``unranked``)."""
    scored = []
    for entry in built:
        why = unranked(entry)
        if why:
            entry["unranked"] = why
        else:
            scored.append(entry)
    ranks = tie_ranks([Interval.from_dict(e["overall"]) for e in scored])
    for entry, rank in zip(scored, ranks, strict=True):
        entry["overall"]["rank"] = rank
    for task in tasks:
        name, primary = task["name"], task["primary"]
        have = []
        for entry in built:
            block = entry["tasks"].get(name)
            if block is None or not block["metrics"].get(primary):
                continue
            why = unranked(entry, name)
            if why:
                block["unranked"] = why
            else:
                have.append(entry)
        ranks = tie_ranks(
            [Interval.from_dict(e["tasks"][name]["metrics"][primary]) for e in have],
            higher_is_better=task["higher_is_better"][primary],
        )
        for entry, rank in zip(have, ranks, strict=True):
            entry["tasks"][name]["rank"] = rank
