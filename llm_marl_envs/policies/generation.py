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
sampling stream and where the model runs (``device``, ``dtype``). Each model backend maps it
onto its own API (:meth:`HFPolicy.with_generation
<llm_marl_envs.policies.hf.HFPolicy.with_generation>`, :meth:`OpenAIPolicy.with_generation
<llm_marl_envs.policies.openai_compat.OpenAIPolicy.with_generation>`); nothing else reads a
policy's settings.

``device`` is resolved here alone (:func:`resolve_device`): ``None`` leaves the model where its
loader puts it (the CPU), ``"auto"`` picks CUDA when it is available and the CPU otherwise,
anything else (``"cpu"``, ``"cuda"``, ``"cuda:1"``) is used as given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from llm_marl_envs.core.validation import check_bool, check_int, check_number

__all__ = ["GenerationConfig", "resolve_device"]


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
        device: Where the model runs: None (where it loads: the CPU), ``"auto"``, ``"cpu"``,
            ``"cuda"`` or ``"cuda:N"`` (:func:`resolve_device`).
        dtype: Weight dtype, e.g. ``"bfloat16"``; None: the model's default (float32).
    """

    max_new_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    do_sample: bool = False
    seed: int = 0
    device: str | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        checked = {
            "max_new_tokens": check_int("max_new_tokens", self.max_new_tokens, 1, none_ok=True),
            "temperature": check_number("temperature", self.temperature, 0),
            "top_p": check_number("top_p", self.top_p, high=1, positive=True),
            "do_sample": check_bool("do_sample", self.do_sample),
            "seed": check_int("seed", self.seed),
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
    def placement(self) -> tuple[str | None, str | None]:
        """Where the weights live, ``(device, dtype)``: what a loaded model is shared by."""
        return self.device, self.dtype


def resolve_device(device: str | None) -> str | None:
    """The torch device for a :attr:`GenerationConfig.device`: ``"auto"`` is CUDA when
    available, else the CPU; None stays None (the loader's default, the CPU)."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
