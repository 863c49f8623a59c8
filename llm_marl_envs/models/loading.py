"""Loading models by name: ``"default"``, ``"tiny"``, a Hub id or a local folder."""

from __future__ import annotations

import os
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.models.runtime import (
    prepare_tokenizer,
    resolve_device,
    resolve_dtype,
    resolve_dtype_for,
)

__all__ = ["load_model"]


def load_model(
    spec: str | os.PathLike[str], dtype: Any = None, device: Any = None
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` by name.

    Args:
        spec: ``"default"`` (the embedded SmolLM2-135M-Instruct, see
            :func:`llm_marl_envs.models.load_default_model`), ``"tiny"`` (the random test
            model, :func:`llm_marl_envs.models.tiny_model`), or a Hugging Face Hub id / local
            folder for ``AutoModelForCausalLM.from_pretrained``.
        dtype: Weight dtype: ``"auto"`` (bfloat16 on a CUDA device that has it, float32 on
            the CPU), a ``torch.dtype`` or its name; None: float32
            (:func:`~llm_marl_envs.models.runtime.resolve_dtype_for`).
        device: Where to put the model: ``"auto"`` (CUDA when available), ``"cpu"``,
            ``"cuda"``, ``"cuda:N"``; None: the CPU. An absent CUDA device is a one-line
            ``ValueError`` (:func:`~llm_marl_envs.models.runtime.resolve_device`).

    Returns:
        The model in eval mode and its tokenizer, with a pad token and left padding.
    """
    spec_text = os.fspath(spec)
    device = resolve_device(device)  # an absent device fails here, before any loading
    dtype = resolve_dtype_for(device, dtype)
    if spec_text == "default":
        from llm_marl_envs.models.embedded import load_default_model

        model, tokenizer = load_default_model(dtype=dtype)
    elif spec_text == "tiny":
        from llm_marl_envs.models.tiny import tiny_model

        model, tokenizer = tiny_model(dtype=dtype)
    else:
        transformers = require("transformers", "train", f"loading the model {spec_text!r}")
        tokenizer = transformers.AutoTokenizer.from_pretrained(spec_text)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            spec_text, dtype=resolve_dtype(dtype)
        )
    prepare_tokenizer(tokenizer)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.to(device)
    model.eval()
    return model, tokenizer
