"""Scripted reference policies for MazeCollab-v0.

* :func:`random_pair`: each gnome picks one of the five moves uniformly and says so; the
  floor any learner must beat.
* :func:`oracle_pair`: an upper bound. The oracle is *privileged*: it plays
  ``info["oracle_move"]``, which the env computes from both wall layouts, so the pair reaches
  the treasure in exactly ``optimal_steps`` turns. Its messages share what the gnome knows
  (the guide tells the treasure position), as a well-coordinated pair would. It needs only
  ``(observation, info)``, so it runs in batched rollouts like any other policy.

Policies are callables ``(observation, info) -> str``, like every policy in
:mod:`llm_marl_envs.policies.scripted`.
"""

from __future__ import annotations

import re
from typing import Any


from llm_marl_envs.games.maze_layout import DIRECTIONS
from llm_marl_envs.policies.base import PolicyFn
from llm_marl_envs.policies.scripted import turn_draw

__all__ = ["oracle_gnome", "oracle_pair", "random_gnome", "random_pair", "reference"]

_TREASURE = re.compile(r"The treasure is at row (\d+), column (\d+)")

_CHATTER = (
    "Trying this way.",
    "Your turn, any ideas?",
    "I think the treasure is near.",
    "Let us keep going.",
)


def random_gnome(seed: int = 0):
    """One gnome that moves uniformly at random: a draw from ``seed`` and what it sees
    (:func:`~llm_marl_envs.policies.scripted.turn_draw`), so a replayed episode replays."""
    choices = len(DIRECTIONS) * len(_CHATTER)

    def policy(observation: str, info: dict[str, Any]) -> str:
        move, chat = divmod(turn_draw(seed, observation, choices), len(_CHATTER))
        return f"MOVE: {DIRECTIONS[move]}\nSAY: {_CHATTER[chat]}"

    return policy


def random_pair(seed: int = 0) -> dict[str, Any]:
    """Two independent random gnomes."""
    return {"gnome_0": random_gnome(seed), "gnome_1": random_gnome(seed + 1)}


def oracle_gnome(observation: str, info: dict[str, Any]) -> str:
    """Plays ``info["oracle_move"]`` and shares what it knows of the treasure."""
    move = info["oracle_move"]
    found = _TREASURE.search(observation)
    if found:
        return f"MOVE: {move}\nSAY: The treasure is at row {found[1]}, column {found[2]}; I move {move}."
    return f"MOVE: {move}\nSAY: Following your lead; I move {move}."


def oracle_pair() -> dict[str, Any]:
    """Two privileged gnomes that follow a shortest path: ``optimal_steps`` turns exactly."""
    return {"gnome_0": oracle_gnome, "gnome_1": oracle_gnome}


def reference(agent: str, seed: int = 0) -> PolicyFn:
    """The registry's scripted player: the (privileged) oracle, for either gnome."""
    return oracle_gnome
