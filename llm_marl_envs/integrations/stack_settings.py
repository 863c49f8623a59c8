"""What the stack adapters read from a trainer's config or a dataset row (SkyRL, verl,
verifiers): mappings in whatever form a stack holds them, and a seat's prompt as chat."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["SettingsError", "chat_messages", "json_mapping", "plain"]


class SettingsError(TypeError, ValueError):
    """A setting of the wrong shape (a ``TypeError`` and a ``ValueError``, as either is
    what a caller may catch for a bad value)."""


def plain(value: Any, name: str = "settings") -> dict[str, Any]:
    """A mapping (an OmegaConf ``DictConfig`` included) as a plain dict; None as {}."""
    if value is None:
        return {}
    if type(value).__name__ == "DictConfig":
        from omegaconf import OmegaConf

        return dict(OmegaConf.to_container(value, resolve=True))
    if not isinstance(value, Mapping):
        raise SettingsError(
            f"{name} must be a mapping: expected a mapping of settings, got "
            f"{type(value).__name__}: {value!r}"
        )
    return {str(k): v for k, v in value.items()}


def json_mapping(value: Any, name: str) -> dict[str, Any]:
    """A mapping, its JSON text (parquet columns hold either), or nothing ({})."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"{name} is not JSON: {error}") from None
    return plain(value, name)


def chat_messages(observation: Any, info: Mapping[str, Any]) -> list[dict[str, str]]:
    """A seat's prompt as chat messages (the environment's own, else one user message)."""
    messages = info.get("messages")
    if messages:
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
    return [{"role": "user", "content": str(observation)}]
