"""How a model policy generates: one frozen value, handed down from the command line to the model.

>>> from llm_marl_envs.policies import GenerationConfig
>>> config = GenerationConfig(max_new_tokens=48)
>>> config.replace(do_sample=True, temperature=0.7).temperature
0.7
>>> GenerationConfig(top_p=0)
Traceback (most recent call last):
...
ValueError: top_p must be a finite number > 0 <= 1, got 0

A :class:`GenerationConfig` holds the token budget, the sampling settings, the seed of the
sampling stream and where the model runs (``device``, ``dtype``, ``compile``). Each model
backend maps it onto its own API (:meth:`HFPolicy.with_generation
<llm_marl_envs.policies.hf.HFPolicy.with_generation>`, :meth:`OpenAIPolicy.with_generation
<llm_marl_envs.policies.openai.policy.OpenAIPolicy.with_generation>`); nothing else reads a
policy's settings. An ``openai:`` server places its model itself: it ignores ``device``,
``dtype`` and ``compile``.

Where a model runs is resolved by :func:`resolve_device` and :func:`resolve_dtype_for` alone
(implemented beside the model loaders, :mod:`llm_marl_envs.models.runtime`, which take the same
values): ``device="auto"`` (the default) is CUDA when it is available and the CPU otherwise;
``"cpu"``, ``"cuda"``, ``"cuda:N"`` are used as given, and a CUDA device that is not there is a
one-line error naming the devices that are; None is the CPU. ``dtype="auto"`` (the default) is
bfloat16 on a CUDA device that computes it and float32 on the CPU; None is float32.
:func:`resolve_batch_size` turns ``batch_size="auto"`` (the episodes a rollout plays in
lockstep) into a number for the device.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from llm_marl_envs.core.validation import check_bool, check_int, check_number
from llm_marl_envs.models.runtime import resolve_device, resolve_dtype_for

__all__ = [
    "AUTO_BATCH_CPU",
    "AUTO_BATCH_GPU",
    "GenerationConfig",
    "resolve_batch_size",
    "resolve_device",
    "resolve_dtype_for",
]

#: ``batch_size="auto"`` on the CPU: the episodes played in lockstep since the first release.
AUTO_BATCH_CPU = 8
#: ``batch_size="auto"`` on a GPU. HF ``generate`` costs about the same per step at batch 64
#: and 256 on an H200 (the step is Python overhead), so a GPU wants many episodes in lockstep;
#: a model policy splits each call into micro-batches that fit the free device memory
#: (:func:`llm_marl_envs.policies.hf.fitting_batch_size`).
AUTO_BATCH_GPU = 256


@dataclass(frozen=True)
class GenerationConfig:
    """Generation settings of a model policy.

    Attributes:
        max_new_tokens: Most tokens generated per turn; None: the environment's token budget
            where a :class:`~llm_marl_envs.policies.PolicyFactory` builds the policy (the
            registry's ``max_new_tokens``), the backend's own default elsewhere.
        temperature: Sampling temperature (used only with ``do_sample``).
        top_p: Nucleus sampling mass, in (0, 1] (used only with ``do_sample``).
        do_sample: Sample (True) or decode greedily (False).
        seed: Seed of the sampling stream (and of scripted and random partners).
        device: Where the model runs: ``"auto"`` (CUDA when available, else the CPU),
            ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; None: the CPU (:func:`resolve_device`).
        dtype: Weight dtype: ``"auto"`` (bfloat16 on a CUDA device that has it, float32 on the
            CPU), a name such as ``"bfloat16"``; None: float32 (:func:`resolve_dtype_for`).
        compile: Generate with a static KV cache and a ``torch.compile``-d forward (CUDA
            only; :class:`~llm_marl_envs.policies.hf.HFPolicy`).
    """

    max_new_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    do_sample: bool = False
    seed: int = 0
    device: str | None = "auto"
    dtype: str | None = "auto"
    compile: bool = False

    def __post_init__(self) -> None:
        checked = {
            "max_new_tokens": check_int("max_new_tokens", self.max_new_tokens, 1, none_ok=True),
            "temperature": check_number("temperature", self.temperature, 0),
            "top_p": check_number("top_p", self.top_p, high=1, positive=True),
            "do_sample": check_bool("do_sample", self.do_sample),
            "seed": check_int("seed", self.seed),
            "compile": check_bool("compile", self.compile),
        }
        for name in ("device", "dtype"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")
        for name, value in checked.items():  # plain Python types (a numpy int becomes an int)
            object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> GenerationConfig:
        """A copy with ``changes`` (checked like the constructor's arguments)."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise ValueError(
                f"GenerationConfig has no field(s) {unknown}; its fields: "
                f"{', '.join(f.name for f in dataclasses.fields(self))}"
            )
        return dataclasses.replace(self, **changes)

    @property
    def placement(self) -> tuple[str, str, bool]:
        """Where the weights live, resolved: ``(device, dtype, compile)``, e.g. ``("cpu",
        "float32", False)``; what a loaded model is shared by."""
        device = resolve_device(self.device)
        return device, resolve_dtype_for(device, self.dtype), self.compile


def resolve_batch_size(batch_size: int | str, device: str | None) -> int:
    """Episodes played in lockstep: ``batch_size`` itself, or for ``"auto"``
    :data:`AUTO_BATCH_CPU` (8) when ``device`` resolves to the CPU and :data:`AUTO_BATCH_GPU`
    (256) otherwise. A one-line ``ValueError`` for anything else than ``"auto"`` or an int >= 1."""
    if batch_size == "auto":
        return AUTO_BATCH_CPU if resolve_device(device) == "cpu" else AUTO_BATCH_GPU
    if isinstance(batch_size, str) and batch_size.isdigit():
        batch_size = int(batch_size)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"--batch-size must be auto or an int >= 1, got {batch_size!r}")
    return batch_size
