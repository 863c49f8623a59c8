"""Scripted players of CoopCoding-v0: a trivial helper and a wrapper around it."""

from __future__ import annotations

import re
from typing import Any

from llm_marl_envs.policies.base import PolicyFn

__all__ = ["coop_coding"]


def _coding_helper(observation: str, info: dict[str, Any]) -> str:
    """An identity helper: right only where the answer is the input."""
    return "```python\ndef aux(value):\n    return value\n```"


def _coding_main(observation: str, info: dict[str, Any]) -> str:
    """Passes the first argument through aux: a trivial wrapper, as the reward calls it."""
    match = re.search(r"Implement the function `(\w+)`", observation)
    name = match.group(1) if match else "solution"
    return f"def {name}(*args):\n    return aux(args[0]) if args else None\n"


def coop_coding(agent: str, seed: int = 0) -> PolicyFn:
    """The helper writes an identity ``aux``; the main agent wraps it."""
    return _coding_helper if agent.startswith("helper") else _coding_main
