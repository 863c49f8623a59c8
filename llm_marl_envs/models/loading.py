"""Loading models by name: ``"default"``, ``"tiny"``, a Hub id (at a revision) or a local folder."""

from __future__ import annotations

import os
import re
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.models.runtime import (
    prepare_tokenizer,
    resolve_device,
    resolve_dtype,
    resolve_dtype_for,
)

__all__ = ["check_revision", "load_model"]

# What a Hub branch, tag or commit sha is made of (a git ref name, ASCII only).
_REVISION = re.compile(r"[A-Za-z0-9._/-]+")


def check_revision(revision: str, name: str = "org/model") -> str:
    """``revision`` if it can name a Hub branch, tag or commit sha of ``name``: non-empty,
    made of ``A-Z a-z 0-9 . _ / -``, no empty, ``.``-led or ``..`` path part (a git ref's
    rules, which keep it inside the Hub cache's folders); else a one-line ``ValueError``."""
    if (
        not isinstance(revision, str)
        or not _REVISION.fullmatch(revision)
        or any(not part or part.startswith(".") for part in revision.split("/"))
    ):
        raise ValueError(
            f"bad model revision {revision!r}: give a branch, tag or commit sha made of "
            f"letters, digits and . _ / - (e.g. hf:{name}@main or hf:{name}@<commit sha>)"
        )
    return revision


def load_model(
    spec: str | os.PathLike[str],
    dtype: Any = None,
    device: Any = None,
    revision: str | None = None,
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
        revision: The Hub branch, tag or commit sha to load (a commit sha pins the model;
            :func:`check_revision` says what is accepted), given to both the tokenizer's and
            the model's ``from_pretrained``; None: the Hub's default branch. A revision of
            ``"default"``, ``"tiny"`` or a local folder is a one-line ``ValueError``.

    Returns:
        The model in eval mode and its tokenizer, with a pad token and left padding.
    """
    spec_text = os.fspath(spec)
    if revision is not None:
        check_revision(revision, spec_text)
        if spec_text in ("default", "tiny") or os.path.exists(spec_text):
            what = "a local folder" if os.path.exists(spec_text) else f"the {spec_text} model"
            raise ValueError(
                f"{spec_text!r} is {what}, which has no revisions: drop @{revision} or give "
                "a Hub id"
            )
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
        pinned = {} if revision is None else {"revision": revision}
        tokenizer = transformers.AutoTokenizer.from_pretrained(spec_text, **pinned)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            spec_text, dtype=resolve_dtype(dtype), **pinned
        )
    prepare_tokenizer(tokenizer)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.to(device)
    model.eval()
    return model, tokenizer
