"""A :class:`~llm_marl_envs.policies.Policy` backed by a local transformers causal LM.

>>> from llm_marl_envs.policies import GenerationConfig
>>> from llm_marl_envs.policies.hf import HFPolicy
>>> policy = HFPolicy.from_spec("default", max_new_tokens=48)         # doctest: +SKIP
>>> sampled = GenerationConfig(do_sample=True, seed=1)
>>> policy = HFPolicy.from_spec("tiny", generation=sampled)          # doctest: +SKIP
>>> [c.text for c in policy.generate(prompts)]                        # doctest: +SKIP

**Settings.** A :class:`~llm_marl_envs.policies.GenerationConfig` maps onto this class alone:
:meth:`HFPolicy.from_config` loads the model where it says (device, dtype, compile) and
generates as it says; :meth:`HFPolicy.with_generation` gives a policy sharing the loaded model
with other settings (one model, several tasks); :meth:`HFPolicy.describe` is what a results
manifest records (model id, device, dtype, sha256 of the weights, ...).

**Prompt.** With a chat template (by default when the tokenizer has one) the model sees
``prompt.messages`` rendered with ``add_generation_prompt=True``; a prompt without messages
is sent as one user message holding ``prompt.observation``. ``system_prompt`` is put first
when the messages have no system message. Without a chat template the model sees
``prompt.observation`` (after ``system_prompt`` and a blank line). Prompts longer than the
model's context minus ``max_new_tokens`` lose their beginning (one warning per policy).

**Batching.** One call pads the prompts on the left and runs ``model.generate`` once per
micro-batch of ``batch_size``; completions come back in prompt order. Without a
``batch_size`` a call on the CPU is one micro-batch, and one on a GPU is split into
micro-batches that fit the free device memory (:func:`fitting_batch_size`: the KV cache of the
call's longest prompt plus the new tokens, and the scores kept for log-probabilities).
Generation stops at eos / ``<|im_end|>`` or after ``max_new_tokens``; with
``min_new_tokens`` the eos tokens are masked out for the first that many tokens (fixed-length
completions when it equals ``max_new_tokens``).

**Completions.** ``text`` is the decoded new tokens (special tokens skipped, stripped);
``prompt_ids`` the unpadded prompt tokens the model saw; ``completion_ids`` the new tokens up
to and including eos when one was generated; ``logprobs`` (when ``return_logprobs``) the
log-probability of each completion token under the distribution it was drawn from, i.e. the
log-softmax of the logits after temperature and top-p. With greedy decoding, or sampling at
``temperature=1, top_p=1``, that is the model's own log-probability.

**Randomness.** Call ``n`` of a policy draws its samples under a seed derived from
``(seed, n)`` inside a forked RNG: the same seed gives the same samples, and the caller's
global torch RNG is left as it was. Samples depend on how prompts are grouped into
micro-batches; greedy outputs do not.

**Compile.** ``compile=True`` (``GenerationConfig.compile``, ``--compile``; CUDA only)
generates with a static KV cache (``cache_implementation="static"``), whose fixed shapes let
transformers run the decoding step through ``torch.compile`` (its automatic compile of the
forward on a GPU, ``mode="reduce-overhead"``: CUDA graphs); prompts are padded to a multiple
of 64 tokens so that few shapes are compiled. Off by default: the first calls pay the
compile, and whether it pays off is measured by ``benchmarks/gpu.py``.

**LoRA.** ``lora_adapter=path`` loads a saved peft adapter on top of the model;
:meth:`HFPolicy.add_lora` wraps the model in a fresh trainable adapter and returns the peft
model for a trainer (which then trains ``policy.model`` in place).
"""

from __future__ import annotations

import copy
import hashlib
import os
import warnings
from collections.abc import Sequence
from typing import Any

from llm_marl_envs.core.moved import keywords_moved
from llm_marl_envs.core.optional import require
from llm_marl_envs.models.runtime import prepare_tokenizer, seeded
from llm_marl_envs.models.loading import load_model
from llm_marl_envs.policies.base import Completion, Policy, Prompt
from llm_marl_envs.policies.generation import AUTO_BATCH_GPU, GenerationConfig, resolve_device

torch = require("torch", "train", "the transformers policy (HFPolicy)")

__all__ = ["HFPolicy", "fitting_batch_size", "sequence_bytes", "weights_sha256"]

#: Share of the free device memory a micro-batch's KV cache and scores may take; the rest is
#: left to activations, the allocator's fragmentation and other processes.
MEMORY_SAFETY = 0.5
#: With ``compile``, prompts are left-padded to a multiple of this many tokens.
COMPILE_PAD_MULTIPLE = 64


class HFPolicy(Policy):
    """Generates actions with a transformers causal LM (see the module docstring).

    Args:
        model: A causal LM (``AutoModelForCausalLM``-like, or a peft model).
        tokenizer: Its tokenizer; a pad token is set if missing (``<|im_end|>`` or eos).
        generation: How it generates (:class:`~llm_marl_envs.policies.GenerationConfig`):
            ``temperature`` (``do_sample`` only; <= 0 means greedy), ``top_p``, ``do_sample``,
            ``seed`` (of the sampling stream, see :meth:`reseed`) and ``compile`` (a static KV
            cache and compiled decoding steps: CUDA only, see the module docstring; a one-line
            ``ValueError`` on another device); its ``max_new_tokens`` when ``max_new_tokens``
            is not given. Its ``device`` and ``dtype`` are for loaders (:meth:`from_config`):
            a model handed in stays where it is unless ``device`` moves it. Default: greedy,
            seed 0, no compile. The old keywords (``temperature=``, ``top_p=``,
            ``do_sample=``, ``seed=``, ``compile=``) still work for one release, with a
            ``DeprecationWarning``.
        max_new_tokens: Most tokens generated per completion (default: ``generation``'s,
            else 64).
        min_new_tokens: Fewest tokens generated per completion (eos masked before that).
        use_chat_template: Render ``prompt.messages`` with the chat template; None: when the
            tokenizer has one.
        system_prompt: A system message used when the prompt's messages have none.
        batch_size: Prompts per ``model.generate`` call (memory bound); None: all at once.
        device: Move the model there (``"auto"``: CUDA when available); None: leave it where
            it is.
        return_logprobs: Fill ``Completion.logprobs``.
        lora_adapter: Folder of a saved peft LoRA adapter to load on top of ``model``.
        lora_trainable: Load that adapter trainable (to continue training it).
        name: Name for records; default ``"hf:<model name>"``.
        model_id: What a manifest calls the model; default its ``_name_or_path``.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        generation: GenerationConfig | None = None,
        max_new_tokens: int | None = None,
        min_new_tokens: int = 0,
        use_chat_template: bool | None = None,
        system_prompt: str | None = None,
        batch_size: int | None = None,
        device: Any = None,
        return_logprobs: bool = True,
        lora_adapter: str | os.PathLike[str] | None = None,
        lora_trainable: bool = False,
        name: str | None = None,
        model_id: str | None = None,
        **legacy: Any,
    ) -> None:
        generation = _with_legacy(generation, legacy)
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 or None, got {batch_size}")
        self.min_new_tokens = int(min_new_tokens)
        options = _options(generation)
        if max_new_tokens is not None:
            options["max_new_tokens"] = max_new_tokens
        self._set_generation(**options)
        # Pads are placed by hand (on the left); the tokenizer's padding side is left alone.
        self.tokenizer = prepare_tokenizer(tokenizer, left_padding=False)
        if device is not None:
            model.to(resolve_device(device))
        if lora_adapter is not None:
            peft = require("peft", "train", "loading a LoRA adapter")
            model = peft.PeftModel.from_pretrained(
                model, os.fspath(lora_adapter), is_trainable=lora_trainable
            )
        self.model = model
        self.compile = generation.compile
        if self.compile and not self._on_gpu():
            raise ValueError(
                f"compile (a static KV cache with torch.compile) needs a CUDA device; the model "
                f"is on {self._device()}: leave out --compile, or use --device cuda"
            )
        self.system_prompt = system_prompt
        self.batch_size = batch_size
        self.return_logprobs = return_logprobs
        if use_chat_template is None:
            use_chat_template = bool(getattr(tokenizer, "chat_template", None))
        self.use_chat_template = use_chat_template
        self.eos_token_ids = self._eos_token_ids()
        config = getattr(model, "config", None)
        model_name = getattr(config, "_name_or_path", "") or type(model).__name__
        self.name = name or f"hf:{model_name}"
        self.model_id = model_id or model_name
        #: The Hub revision (branch, tag or commit sha) the model was loaded at, or None.
        self.revision: str | None = None
        #: Where the weights came from: "package" (default, tiny), "local folder" or "hub" (set
        #: by :meth:`from_spec`), "checkpoint" (a ``ckpt:`` policy); None for a model handed in.
        self.source: str | None = None
        #: The trainer's checkpoint this policy was loaded from (``ckpt:`` specs), or None.
        self.checkpoint: dict[str, Any] | None = None
        self._warned_truncation = False

    @classmethod
    def from_spec(
        cls,
        spec: str | os.PathLike[str] = "default",
        *,
        dtype: Any = None,
        device: Any = None,
        revision: str | None = None,
        **kwargs: Any,
    ) -> HFPolicy:
        """A policy over :func:`llm_marl_envs.models.load_model` (``"default"``, ``"tiny"``, a
        Hub id or a folder) with its ``device`` and ``dtype`` (``"auto"`` included; None: the CPU
        and float32) and a Hub id's ``revision`` (branch, tag or commit sha; None: the default
        branch; :meth:`describe` records it); ``kwargs`` go to the constructor."""
        legacy = {k: kwargs.pop(k) for k in _GENERATION_KEYWORDS if k in kwargs}
        kwargs["generation"] = _with_legacy(kwargs.get("generation"), legacy)  # warns the caller
        pinned = {} if revision is None else {"revision": revision}
        model, tokenizer = load_model(spec, dtype=dtype, device=device, **pinned)
        pin = "" if revision is None else f"@{revision}"
        kwargs.setdefault("name", f"hf:{os.fspath(spec)}{pin}")
        kwargs.setdefault("model_id", _model_id(os.fspath(spec)))
        policy = cls(model, tokenizer, **kwargs)
        policy.revision = revision
        policy.source = _source(os.fspath(spec))
        return policy

    @classmethod
    def from_config(
        cls, spec: str | os.PathLike[str], config: GenerationConfig, **kwargs: Any
    ) -> HFPolicy:
        """:meth:`from_spec` with the model loaded where ``config`` says (device, dtype,
        compile) and generating as it says; ``kwargs`` (``revision`` included) go to
        :meth:`from_spec`."""
        return cls.from_spec(
            spec, dtype=config.dtype, device=config.device, generation=config, **kwargs
        )

    def with_generation(self, config: GenerationConfig) -> HFPolicy:
        """A policy sharing this one's model that generates as ``config`` says (budget, or this
        policy's when it names none; sampling; a fresh sampling stream from ``config.seed``);
        the model stays where it was loaded, whatever ``config.device``, ``config.dtype`` and
        ``config.compile`` say."""
        policy = copy.copy(self)
        policy._set_generation(**_options(config, self.max_new_tokens))
        return policy

    def describe(self) -> dict[str, Any]:
        """What a results manifest records about this policy: model id, Hub revision (a model
        loaded at one), checkpoint folder (``ckpt:`` policies), architecture, parameter count,
        device (and the GPU's name on one), dtype, sha256 of the weights."""
        params = list(self.model.parameters())
        return {
            "kind": "transformers",
            "name": self.name,
            "model_id": self.model_id,
            **({"revision": self.revision} if self.revision is not None else {}),
            **({"source": self.source} if self.source is not None else {}),
            **({"checkpoint": self.checkpoint["folder"]} if self.checkpoint else {}),
            "architecture": type(self.model).__name__,
            "parameters": sum(p.numel() for p in params),
            "device": str(self._device()),
            **({"gpu": torch.cuda.get_device_name(self._device())} if self._on_gpu() else {}),
            "dtype": str(params[0].dtype).replace("torch.", "") if params else None,
            "weights_sha256": weights_sha256(self.model),
        }

    def _set_generation(
        self, max_new_tokens: int, temperature: float, top_p: float, do_sample: bool, seed: int
    ) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if not 0 <= self.min_new_tokens <= max_new_tokens:
            raise ValueError(
                f"min_new_tokens must be in [0, max_new_tokens={max_new_tokens}], "
                f"got {self.min_new_tokens}"
            )
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        self.max_new_tokens = int(max_new_tokens)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.do_sample = bool(do_sample) and self.temperature > 0
        self.reseed(seed)

    # --- set-up -------------------------------------------------------------------------

    def add_lora(
        self,
        r: int = 8,
        alpha: int = 16,
        target_modules: Sequence[str] | str | None = None,
        dropout: float = 0.0,
    ) -> Any:
        """Wrap the model in a new trainable LoRA adapter; returns the peft model.

        ``target_modules`` None uses peft's default for the architecture (``q_proj``,
        ``v_proj`` for Llama; ``c_attn`` for GPT-2). Only the adapter's weights are trainable.
        Save it with ``policy.model.save_pretrained(folder)``; load it back with
        ``HFPolicy(model, tokenizer, lora_adapter=folder)``.
        """
        peft = require("peft", "train", "LoRA adapters")
        if hasattr(self.model, "peft_config"):
            raise ValueError("this policy's model already has a LoRA adapter")
        model_type = getattr(getattr(self.model, "config", None), "model_type", "")
        config = peft.LoraConfig(
            r=r,
            lora_alpha=alpha,
            target_modules=list(target_modules)
            if isinstance(target_modules, (list, tuple))
            else target_modules,
            lora_dropout=dropout,
            fan_in_fan_out=model_type == "gpt2",  # GPT-2's Conv1D layers store W transposed
            task_type="CAUSAL_LM",
        )
        self.model = peft.get_peft_model(self.model, config)
        return self.model

    def reseed(self, seed: int) -> None:
        """Restart the sampling stream: the next calls replay those of a new policy with ``seed``."""
        self.seed = int(seed)
        self._calls = 0

    # --- prompts ------------------------------------------------------------------------

    def render(self, prompt: Prompt) -> str:
        """The text the model is given for ``prompt`` (before tokenisation)."""
        if self.use_chat_template:
            messages = [dict(m) for m in prompt.messages] or [
                {"role": "user", "content": prompt.observation}
            ]
            if self.system_prompt and messages[0].get("role") != "system":
                messages.insert(0, {"role": "system", "content": self.system_prompt})
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        if self.system_prompt:
            return f"{self.system_prompt}\n\n{prompt.observation}"
        return prompt.observation

    def encode(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        """The prompt token ids the model sees (rendered, tokenised, left-truncated)."""
        if not prompts:
            return []
        texts = [self.render(p) for p in prompts]
        # A rendered chat already holds its special tokens.
        encoded = self.tokenizer(
            texts, add_special_tokens=not self.use_chat_template, padding=False, truncation=False
        )["input_ids"]
        limit = self._prompt_limit()
        if limit is not None and any(len(ids) > limit for ids in encoded):
            if not self._warned_truncation:
                warnings.warn(
                    f"{self.name}: prompts longer than {limit} tokens (the model's context minus "
                    f"max_new_tokens={self.max_new_tokens}) are cut from the left",
                    stacklevel=2,
                )
                self._warned_truncation = True
            encoded = [ids[-limit:] for ids in encoded]
        return [list(ids) for ids in encoded]

    # --- generation ---------------------------------------------------------------------

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        """One completion per prompt, in order (see the module docstring)."""
        prompt_ids = self.encode(prompts)
        call = self._calls
        self._calls += 1
        if not prompt_ids:
            return []
        size = self.batch_size or self._fitting_batch_size(prompt_ids)
        completions: list[Completion] = []
        was_training = self.model.training
        self.model.eval()
        try:
            for index, start in enumerate(range(0, len(prompt_ids), size)):
                batch = prompt_ids[start : start + size]
                completions.extend(
                    self._generate_batch(batch, _derive_seed(self.seed, call, index))
                )
        finally:
            if was_training:
                self.model.train()
        return completions

    def _generate_batch(self, prompt_ids: list[list[int]], seed: int) -> list[Completion]:
        device = self._device()
        width = max(len(ids) for ids in prompt_ids)
        if self.compile:  # few distinct shapes, few compiles
            width = -(-width // COMPILE_PAD_MULTIPLE) * COMPILE_PAD_MULTIPLE
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(prompt_ids), width), pad, dtype=torch.long)
        attention_mask = torch.zeros((len(prompt_ids), width), dtype=torch.long)
        for row, ids in enumerate(prompt_ids):
            if ids:
                input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
                attention_mask[row, width - len(ids) :] = 1
        options: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "min_new_tokens": self.min_new_tokens,
            "do_sample": self.do_sample,
            "num_beams": 1,
            "repetition_penalty": 1.0,
            "eos_token_id": self.eos_token_ids,
            "pad_token_id": pad,
            "return_dict_in_generate": True,
            "output_scores": self.return_logprobs,
        }
        if self.compile:
            options["cache_implementation"] = "static"
        if self.do_sample:
            # Exactly temperature + top-p: no top-k from the global defaults.
            options.update(temperature=self.temperature, top_p=self.top_p, top_k=0, min_p=None)
        with torch.inference_mode(), seeded(seed, device):
            output = self.model.generate(
                input_ids=input_ids.to(device), attention_mask=attention_mask.to(device), **options
            )
            new_tokens = output.sequences[:, width:]
            logprobs = None
            if self.return_logprobs:
                steps = [  # in float32 at least (bf16 scores lose too much)
                    torch.log_softmax(
                        scores.to(torch.promote_types(scores.dtype, torch.float32)), -1
                    ).gather(1, new_tokens[:, t : t + 1])
                    for t, scores in enumerate(output.scores)
                ]
                logprobs = torch.cat(steps, dim=1).cpu().tolist()
        new_tokens = new_tokens.cpu().tolist()

        completions = []
        for row, ids in enumerate(prompt_ids):
            tokens = new_tokens[row]
            end = next(
                (i + 1 for i, t in enumerate(tokens) if t in self.eos_token_ids), len(tokens)
            )
            tokens = tokens[:end]
            text = self.tokenizer.decode(tokens, skip_special_tokens=True).strip()
            completions.append(
                Completion(
                    text=text,
                    prompt_ids=list(ids),
                    completion_ids=tokens,
                    logprobs=logprobs[row][:end] if logprobs is not None else None,
                )
            )
        return completions

    # --- helpers ------------------------------------------------------------------------

    def _device(self) -> Any:
        try:
            return next(self.model.parameters()).device
        except StopIteration:
            return torch.device("cpu")

    def _fitting_batch_size(self, prompt_ids: list[list[int]]) -> int:
        """Prompts per ``generate`` call when no ``batch_size`` is set: all of them on the CPU;
        on a GPU, as many as fit its free memory (:func:`fitting_batch_size`)."""
        if not self._on_gpu():
            return len(prompt_ids)
        device = self._device()
        free, _ = torch.cuda.mem_get_info(device)
        free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        per_sequence = sequence_bytes(
            self.model.config,
            tokens=max(len(ids) for ids in prompt_ids) + self.max_new_tokens,
            new_tokens=self.max_new_tokens if self.return_logprobs else 0,
            dtype_bytes=next(self.model.parameters()).element_size(),
        )
        return fitting_batch_size(free, per_sequence)

    def _on_gpu(self) -> bool:
        return self._device().type == "cuda"

    def _eos_token_ids(self) -> list[int]:
        ids: list[int] = []
        candidates: list[Any] = [self.tokenizer.eos_token_id]
        if "<|im_end|>" in self.tokenizer.get_vocab():
            candidates.append(self.tokenizer.convert_tokens_to_ids("<|im_end|>"))
        generation_config = getattr(self.model, "generation_config", None)
        configured = getattr(generation_config, "eos_token_id", None)
        candidates.extend(configured if isinstance(configured, (list, tuple)) else [configured])
        for token in candidates:
            if token is not None and int(token) not in ids:
                ids.append(int(token))
        if not ids:
            raise ValueError("the tokenizer and model define no eos token; set tokenizer.eos_token")
        return ids

    def _prompt_limit(self) -> int | None:
        config = getattr(self.model, "config", None)
        context = getattr(config, "max_position_embeddings", None) or getattr(
            config, "n_positions", None
        )
        if not context:
            return None
        limit = int(context) - self.max_new_tokens
        if limit < 1:
            raise ValueError(
                f"max_new_tokens={self.max_new_tokens} leaves no room for a prompt in the "
                f"model's context of {context} tokens"
            )
        return limit


#: The constructor's keywords before :class:`GenerationConfig` carried them (one release more).
_GENERATION_KEYWORDS = ("temperature", "top_p", "do_sample", "seed", "compile")


def _with_legacy(generation: GenerationConfig | None, legacy: dict[str, Any]) -> GenerationConfig:
    """``generation`` (default: greedy, seed 0) with the old keywords a caller gave folded in,
    with a ``DeprecationWarning`` naming the replacement; an unknown keyword is a TypeError."""
    generation = generation or GenerationConfig()
    unknown = sorted(set(legacy) - set(_GENERATION_KEYWORDS))
    if unknown:
        raise TypeError(f"HFPolicy() got unexpected keyword argument(s) {unknown}")
    if legacy:
        into = "generation=GenerationConfig({}) (llm_marl_envs.policies.GenerationConfig)"
        keywords_moved("HFPolicy", legacy, into, stacklevel=3)
        generation = generation.replace(**legacy)
    return generation


def _options(config: GenerationConfig, max_new_tokens: int = 64) -> dict[str, Any]:
    """The constructor's generation arguments from a :class:`GenerationConfig` (its
    ``max_new_tokens`` when it names one, else ``max_new_tokens``)."""
    return {
        "max_new_tokens": config.max_new_tokens or max_new_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "do_sample": config.do_sample,
        "seed": config.seed,
    }


def sequence_bytes(config: Any, tokens: int, new_tokens: int, dtype_bytes: int) -> int:
    """Device memory one sequence of a ``generate`` call holds at its end: its KV cache,
    ``2 (keys and values) x layers x kv_heads x head_dim x tokens x dtype_bytes``, and the
    float32 scores of its ``new_tokens`` steps, ``new_tokens x vocab x 4`` (0 new tokens when no
    log-probabilities are kept). ``config`` is a transformers model config."""
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    cache = 2 * config.num_hidden_layers * kv_heads * head_dim * tokens * dtype_bytes
    return cache + new_tokens * config.vocab_size * 4


def fitting_batch_size(
    free_bytes: int, per_sequence: int, safety: float = MEMORY_SAFETY, cap: int = AUTO_BATCH_GPU
) -> int:
    """Sequences per ``generate`` call that fit: ``safety x free_bytes // per_sequence``
    (:func:`sequence_bytes`), at least 1 and at most ``cap``."""
    return max(1, min(cap, int(free_bytes * safety) // per_sequence))


def _source(spec: str) -> str:
    """Where :func:`~llm_marl_envs.models.load_model` takes ``spec``'s weights from: the package
    (``default``, ``tiny``), a local folder (a path that exists, whatever its name looks like:
    ``./Qwen/Qwen2.5-72B@<sha>`` is a folder), or the Hugging Face Hub."""
    if spec in ("default", "tiny"):
        return "package"
    return "local folder" if os.path.exists(spec) else "hub"


def _model_id(spec: str) -> str:
    """What a reader calls the model of a spec: the embedded and tiny ones by name and source,
    a Hub id or folder as given."""
    if spec == "default":
        from llm_marl_envs.models import embedded

        return f"{embedded.MODEL_NAME} ({embedded.PACKAGE} {embedded.GGUF_FILE}, dequantised)"
    if spec == "tiny":
        return "tiny random-init GPT-2 (llm_marl_envs.models.tiny)"
    return spec


def weights_sha256(model: Any) -> str:
    """sha256 over a torch model's state dict (names and raw bytes, in name order)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        raw = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)  # any dtype
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(raw.numpy().tobytes())
    return "sha256:" + digest.hexdigest()


def _derive_seed(seed: int, call: int, batch: int) -> int:
    """A 63-bit seed for micro-batch ``batch`` of call ``call`` of a policy seeded ``seed``."""
    digest = hashlib.sha256(f"hf-policy:{seed}:{call}:{batch}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1
