"""Small helpers the model modules share: the user cache folder, where a model runs (device and
dtype, ``"auto"`` included), tokenizer set-up for batched generation, and a seeded RNG context
that leaves the caller's global torch RNG as it was. They import nothing else of the package
but ``core``.

:func:`resolve_device` and :func:`resolve_dtype_for` are the one place a device or dtype
request is resolved (``llm_marl_envs.policies.generation`` exports them with
:class:`~llm_marl_envs.policies.GenerationConfig`; the loaders here need them too, below the
policies' layer)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from llm_marl_envs.core.optional import require

__all__ = [
    "cache_dir",
    "cpu_bf16_is_fast",
    "prepare_tokenizer",
    "resolve_device",
    "resolve_dtype",
    "resolve_dtype_for",
    "seeded",
]

_DTYPE_NAMES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "float64": "float64",
    "fp64": "float64",
    "double": "float64",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}


def cache_dir() -> Path:
    """The folder for converted models (not created here).

    ``$LLM_MARL_CACHE`` if set, else ``$XDG_CACHE_HOME/llm_marl_envs``, else
    ``~/.cache/llm_marl_envs``.
    """
    if os.environ.get("LLM_MARL_CACHE"):
        return Path(os.environ["LLM_MARL_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "llm_marl_envs"
    return Path.home() / ".cache" / "llm_marl_envs"


def cpu_bf16_is_fast() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX).

    Without either, torch emulates bf16 matrix products: bf16 autocast in training was ~30x
    *slower* than float32 on a 2-core AMD EPYC without AVX-512 (SmolLM2, batch 8 x 144 tokens:
    backward 225 s versus 6.4 s), while on CPUs with AVX512-BF16 it is ~1.5x faster.
    """
    torch = require("torch", "train", "checking bf16 support")
    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def resolve_dtype(dtype: Any) -> Any:
    """A ``torch.dtype`` from a dtype, its name (``"bf16"``, ``"float32"``...) or None (float32)."""
    torch = require("torch", "train", "loading a model")
    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    name = _DTYPE_NAMES.get(str(dtype).lower().removeprefix("torch."))
    if name is None:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(set(_DTYPE_NAMES))}")
    return getattr(torch, name)


def resolve_device(device: str | None) -> str:
    """The torch device a request names: ``"auto"`` is ``"cuda"`` when CUDA is available, else
    ``"cpu"``; None is ``"cpu"`` (where the loaders put a model); ``"cpu"``, ``"cuda"``,
    ``"cuda:N"`` (and other torch devices) as given.

    Raises a one-line ``ValueError`` naming the devices that are there when a requested CUDA
    device is absent (no CUDA, or an index out of range), or when ``device`` names no device.
    """
    if device is None:
        return "cpu"
    if device == "auto":
        return "cuda" if _cuda_count() else "cpu"
    torch = require("torch", "train", f"running a model on {device!r}")
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(
            f"unknown device {device!r}; use auto, cpu, cuda or cuda:N (here: {_devices_here()})"
        ) from None
    if parsed.type == "cuda":
        count = _cuda_count()
        index = 0 if parsed.index is None else parsed.index
        if index >= count:
            raise ValueError(
                f"device {device!r} is not on this machine, which has {_devices_here()}; "
                "use --device auto or one of those"
            )
    return device


def resolve_dtype_for(device: str | None, dtype: Any) -> str:
    """The torch dtype name (``"float32"``, ``"bfloat16"``, ...) for a model on ``device``
    (:func:`resolve_device`'s request): ``"auto"`` is bfloat16 on a CUDA device that computes it
    (compute capability 8.0 or newer) and float32 elsewhere (the CPU: bf16 is emulated, and slow,
    on most CPUs, :func:`cpu_bf16_is_fast`); None is float32; a name or ``torch.dtype`` as given
    (checked, and spelled as torch spells it)."""
    if dtype != "auto":
        return str(resolve_dtype(dtype)).removeprefix("torch.")
    where = resolve_device(device)
    if where.startswith("cuda"):
        torch = require("torch", "train", "choosing a dtype")
        if torch.cuda.get_device_capability(where) >= (8, 0):
            return "bfloat16"
    return "float32"


def _cuda_count() -> int:
    """CUDA devices visible to torch (0 without torch, or without a CUDA build)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _devices_here() -> str:
    count = _cuda_count()
    if not count:
        return "only the cpu (no CUDA device is visible to torch)"
    return "cpu, " + ", ".join(f"cuda:{index}" for index in range(count))


def prepare_tokenizer(tokenizer: Any, left_padding: bool = True) -> Any:
    """Set what batched generation needs: a pad token (``<|im_end|>`` or eos) if missing, and
    (unless ``left_padding=False``) left padding."""
    if tokenizer.pad_token is None:
        vocab = tokenizer.get_vocab()
        if "<|im_end|>" in vocab:
            tokenizer.pad_token = "<|im_end|>"
        elif tokenizer.eos_token is not None:
            tokenizer.pad_token = tokenizer.eos_token
        else:
            tokenizer.add_special_tokens({"pad_token": "<|pad|>"})
    if left_padding:
        tokenizer.padding_side = "left"
    return tokenizer


@contextlib.contextmanager
def seeded(seed: int, device: Any = None) -> Iterator[None]:
    """Seed torch's RNG for the block, then restore the caller's RNG state.

    The CPU generator is always forked; so is the generator of ``device`` when it is an
    accelerator (for CUDA, only that device's).
    """
    torch = require("torch", "train", "seeded generation")
    device = torch.device(device) if device is not None else torch.device("cpu")
    if device.type == "cpu":
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)
            yield
    elif device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        with torch.random.fork_rng(devices=[index], device_type="cuda"):
            torch.default_generator.manual_seed(seed)
            with torch.cuda.device(index):
                torch.cuda.manual_seed(seed)
            yield
    else:
        with torch.random.fork_rng(device_type=device.type):
            torch.manual_seed(seed)
            yield
