"""The package on one GPU, side by side in one run, with nothing downloaded (issue 29).

The model is SmolLM2-135M-Instruct's exact shape with random weights: its configuration and
tokenizer ship in ``benchmarks/smollm2_config/`` (the weights cannot travel to a machine that
takes 64 MiB per call), ``AutoModelForCausalLM.from_config`` builds it (bf16 on a GPU, float32
on the CPU) and it is saved as a local folder, so ``hf:DIR`` policies and the trainers load it
as they would a real one. Every answer is exactly ``--new-tokens`` long
(``min_new_tokens = max_new_tokens``), so the compute is the real model's.

Sections, each measured in this order; one that cannot run (a missing option, Ray absent, a
failure) or that does not fit what is left of ``--budget-s`` is reported as "not measured: why":

1. **generate ceiling**: raw ``model.generate`` at batch 8 / 64 / 256 on prompts of 256
   random tokens (completions/s): what the hardware gives with no engine around it.
   **gap**: at batch 256, what each part of ``HFPolicy``'s call adds to the raw call (left
   padding with a mask, the scores and log-probabilities, the policy's own work), and the
   first call at a prompt width not seen yet against a warm one.
2. **engine (API)**: ``rollout(env, HFPolicy.from_config(DIR, GenerationConfig(device=...)))``
   at batch 256 (two batches of episodes, after a warm-up) on GSM8K, TL;DR, the maze (capped
   at 2 cycles) and IMDB: turns/s, its ratio to the ceiling at the same batch, and the share of
   wall time outside the policy's ``generate`` (environment plus engine) and inside the
   environments alone (``RolloutResult``'s timing fields); each ``generate`` call's prompts,
   width and seconds.
3. **engine (CLI)**: ``llm-marl rollout ENV --policy hf:DIR --device D --batch-size 256`` as a
   subprocess, the same episodes: turns/s from its timing line (model loading excluded, as for
   the API) and the whole command's seconds.
4. **trainers**: ``baselines/cory.py`` and ``magrpo.py`` for a few iterations on the model
   (``--device`` when not on the CPU, no evaluations): seconds per iteration (mean after the
   first) and peak memory (every ``peak_*`` field of ``metrics.jsonl``), and the speed-up over
   the documented CPU figures (``CPU_REFERENCE``).
5. **executors**: CoopCoding-v0 with scripted players (a sandboxed program per step) on the
   local executor with 1 / 8 / all cores' threads and Ray with 1 / 8 / cores-1 workers
   (``benchmarks/ray_scaling.side_by_side``): warm episodes/s (median of two runs), Ray's cold
   start, and cold commands (a fresh ``llm-marl rollout`` process each, actor start included).
6. **compile**: ``GenerationConfig(compile=True)`` (static KV cache and ``torch.compile``)
   against plain generate, GSM8K through the engine: first run (compilation included) and a
   second run of the same episodes.

Targets (issue 29): CLI rollout >= 0.8x the raw ceiling at batch 256; environment plus engine
<= 5% of a GPU rollout's wall time on every env; ``cory.py`` >= 10x faster per iteration than on
2 CPU cores; executor scaling kept on the machine's cores.

``--quick`` is the check that the script runs (the test suite runs ``--device cpu --quick``):
a 2-layer model of the same vocabulary and tokenizer, 8-token answers, batch 8, the CLI on
GSM8K only, 2 trainer iterations on small batches, threads 1 / 2, no Ray, no compile.

Results: ``<out>/gpu.md`` and ``<out>/gpu.json`` (``--out``, default ``docs/benchmarks``).
On the lent GPU machine, ``scripts/gpu_run.sh`` installs the carried wheels and runs this.

Usage: ``python benchmarks/gpu.py [--device auto|cpu|cuda|cuda:N] [--quick] [--budget-s 270]
[--sections ceiling,gap,api,cli,trainers,executors,compile] [--out DIR]``
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CONFIG_DIR = HERE / "smollm2_config"

GSM8K = "llm_marl_envs/GSM8K-v0"
TLDR = "llm_marl_envs/TLDRSummarization-v0"
MAZE = "llm_marl_envs/MazeCollab-v0"
IMDB = "llm_marl_envs/IMDBSentiment-v0"
CODING = "llm_marl_envs/CoopCoding-v0"
BUNDLED = {"data_source": "bundled"}
#: The environments the engine plays, with bundled data (nothing downloaded); the maze capped at
#: two cycles (4 turns), so that its copies take about as long as the others'.
ENV_KWARGS = {GSM8K: BUNDLED, TLDR: BUNDLED, MAZE: {"max_cycles": 2}, IMDB: BUNDLED}

#: Seconds per iteration of the trainers' default runs on 2 CPU cores: the >= 10x target's
#: reference, with where each figure comes from.
CPU_REFERENCE = {
    "cory": (
        93.9,
        "docs/benchmarks/baselines_cost.md, cory-full: defaults, 2-core machine, 1 torch thread",
    ),
    "magrpo": (90.0, "magrpo.py's own estimate for its defaults on 2 CPU cores"),
}
#: Prompt length of the ceiling's batches: about a GSM8K prompt's (222 tokens on average).
CEILING_PROMPT_TOKENS = 256
TARGET_CLI_VS_CEILING = 0.8
TARGET_OUTSIDE_POLICY = 0.05
TARGET_TRAINER_SPEEDUP = 10.0
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@dataclass(frozen=True)
class Plan:
    """How much each section does: the full run, or the quick check that the script runs."""

    new_tokens: int
    ceiling_batches: tuple[int, ...]
    batch: int
    cli_envs: tuple[str, ...]
    iterations: int
    trainer_args: dict[str, tuple[str, ...]]
    coding_episodes: int
    coding_batch: int
    ray: bool
    compile: bool
    #: Overrides of SmolLM2's config.json (the quick model keeps its vocabulary and tokenizer).
    shape: dict[str, int]
    #: torch threads here and in the commands (None: torch's default, one per core).
    torch_threads: int | None
    #: Rough seconds each section needs; one is skipped when less of the budget is left.
    estimates: dict[str, float]


FULL = Plan(
    new_tokens=64,
    ceiling_batches=(8, 64, 256),
    batch=256,
    cli_envs=(GSM8K, TLDR, MAZE, IMDB),
    iterations=3,
    trainer_args={"cory": ("--env-kwargs", json.dumps(BUNDLED)), "magrpo": ()},
    coding_episodes=384,
    coding_batch=64,
    ray=True,
    compile=True,
    shape={},
    torch_threads=None,
    estimates={
        **{"model": 20, "ceiling": 45, "api": 40, "cli": 20, "trainer": 45, "executors": 40},
        **{"gap": 30, "compile": 90},
    },
)
QUICK = Plan(
    new_tokens=8,
    ceiling_batches=(2, 8),
    batch=8,
    cli_envs=(GSM8K,),
    iterations=2,
    trainer_args={
        "cory": (
            *("--env-kwargs", json.dumps(BUNDLED), "--batch-size", "4", "--mini-batch-size", "4"),
            *("--max-new-tokens", "8"),
        ),
        "magrpo": ("--batch-size", "1", "--group-size", "2", "--max-new-tokens", "8"),
    },
    coding_episodes=8,
    coding_batch=4,
    ray=False,
    compile=False,
    shape={
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
    },
    torch_threads=1,  # a tiny model: threads only wait on each other (and on a shared machine)
    estimates={
        **{"model": 5, "ceiling": 2, "api": 5, "cli": 8, "trainer": 10, "executors": 5},
        **{"gap": 2, "compile": 0},
    },
)


class Unavailable(Exception):
    """A section cannot run here (an option not there yet, Ray absent): reported, not raised."""


class Budget:
    """The run's time budget: what is left of ``seconds`` since it was made."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.perf_counter() + seconds

    def left(self) -> float:
        return self.deadline - time.perf_counter()


def not_measured(why: str) -> dict[str, str]:
    return {"not_measured": why}


def measure(name: str, budget: Budget, estimate_s: float, run: Callable[[], Any]) -> Any:
    """``run()``, or "not measured: why" when it does not fit the budget, cannot run or fails
    (a benchmark reports a broken section and goes on with the next)."""
    if budget.left() < estimate_s:
        result = not_measured(
            f"~{estimate_s:.0f} s needed, {budget.left():.0f} s of --budget-s left"
        )
    else:
        tick = time.perf_counter()
        try:
            result = run()
        except Unavailable as error:
            result = not_measured(str(error))
        except Exception as error:  # noqa: BLE001 - one broken section must not end the run
            result = not_measured(f"failed: {type(error).__name__}: {_first_line(error)}")
        name = f"{name} ({time.perf_counter() - tick:.1f} s)"
    note = result.get("not_measured") if isinstance(result, dict) else None
    print(f"{name}: {'not measured: ' + note if note else 'done'}", flush=True)
    return result


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[-1] if lines else ""


# --- the device -------------------------------------------------------------------------------


def pick_device(requested: str) -> str:
    """The torch device for ``--device``; a one-line error when it is not on this machine (the
    package's resolver says which devices are)."""
    from llm_marl_envs.policies.generation import resolve_device

    try:
        return resolve_device(requested)
    except ValueError as error:
        raise SystemExit(f"gpu.py: --device {requested}: {error}; or --device cpu") from None


def machine(device: str) -> dict[str, Any]:
    import torch
    import transformers

    info = {
        "device": device,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(device)
        info["name"] = props.name
        info["memory_mib"] = props.total_memory // 2**20
    else:
        info["name"] = f"CPU ({platform.machine()})"
    return info


def weight_dtype(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return "bfloat16"
    return "float32"


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def peak_memory(device: str, into: dict[str, Any]):
    """Put the block's peak GPU memory (MiB) in ``into["peak_gpu_mib"]`` (on a GPU)."""
    import torch

    if not device.startswith("cuda"):
        yield
        return
    torch.cuda.reset_peak_memory_stats(device)
    yield
    into["peak_gpu_mib"] = torch.cuda.max_memory_allocated(device) / 2**20


def free_memory(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.empty_cache()


# --- 0. the model -----------------------------------------------------------------------------


def build_model(folder: Path, plan: Plan, device: str, dtype: str) -> dict[str, Any]:
    """SmolLM2's shape (``plan.shape`` changed) with random weights, saved with its tokenizer
    in ``folder``; the random init draws from a seeded, forked RNG."""
    import torch
    import transformers

    from llm_marl_envs.models.runtime import resolve_dtype, seeded

    folder.mkdir(parents=True, exist_ok=True)
    settings = json.loads((CONFIG_DIR / "config.json").read_text())
    config = transformers.AutoConfig.for_model(**{**settings, **plan.shape})
    with seeded(0):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=resolve_dtype(dtype))
    model.generation_config = transformers.GenerationConfig.from_pretrained(CONFIG_DIR)
    model.save_pretrained(folder)
    save_tokenizer(folder)
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "dtype": dtype,
        "new_tokens": plan.new_tokens,
        "torch_threads": torch.get_num_threads(),
    }


def save_tokenizer(folder: Path) -> None:
    """SmolLM2's tokenizer (unpacked) with its special tokens and chat template, saved the way
    this transformers version writes tokenizers."""
    import transformers

    settings = json.loads((CONFIG_DIR / "tokenizer_config.json").read_text())
    with tempfile.TemporaryDirectory() as temp:
        unpacked = Path(temp) / "tokenizer.json"
        unpacked.write_bytes(gzip.decompress((CONFIG_DIR / "tokenizer.json.gz").read_bytes()))
        tokenizer = transformers.PreTrainedTokenizerFast(
            tokenizer_file=str(unpacked),
            chat_template=(CONFIG_DIR / "chat_template.jinja").read_text(),
            model_max_length=settings["model_max_length"],
            **{k: settings[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token")},
        )
    tokenizer.save_pretrained(folder)


# --- 1. generate's ceiling --------------------------------------------------------------------


def generate_ceiling(folder: Path, plan: Plan, device: str, dtype: str) -> dict[str, Any]:
    """Completions per second of raw ``model.generate`` at each batch size: the best of three
    timed calls after a warm-up call at that batch size (the first call at a new shape pays for
    kernel selection, which is not generation)."""
    import torch

    from llm_marl_envs.models import load_model

    model, tokenizer = load_model(folder, dtype=dtype, device=device)
    generator = torch.Generator().manual_seed(0)
    ceiling = {}
    for batch in plan.ceiling_batches:
        generate_once(model, tokenizer, batch, plan, device, generator)  # warm-up at this shape
        runs = [generate_once(model, tokenizer, batch, plan, device, generator) for _ in range(3)]
        ceiling[str(batch)] = min(runs, key=lambda row: row["seconds"])  # the best of three
    return ceiling


def generate_once(
    model: Any, tokenizer: Any, batch: int, plan: Plan, device: str, generator: Any
) -> dict[str, Any]:
    """One timed ``generate`` of ``batch`` prompts of random tokens, fixed-length answers."""
    import torch

    shape = (batch, CEILING_PROMPT_TOKENS)
    ids = torch.randint(100, model.config.vocab_size, shape, generator=generator).to(device)
    row: dict[str, Any] = {"batch": batch, "prompt_tokens": CEILING_PROMPT_TOKENS}
    with peak_memory(device, row), torch.inference_mode():
        synchronize(device)
        tick = time.perf_counter()
        model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=plan.new_tokens,
            min_new_tokens=plan.new_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
        )
        synchronize(device)
        row["seconds"] = time.perf_counter() - tick
    row["completions_per_s"] = batch / row["seconds"]
    return row


def ceiling_at(ceiling: dict[str, Any], batch: int) -> float | None:
    row = ceiling.get(str(batch))
    return row["completions_per_s"] if row else None


# --- 1b. where a policy call's time goes beyond the ceiling ------------------------------------

#: One feature of ``HFPolicy``'s call added at a time, at the engine's batch.
GAP_STEPS = {
    "raw": "raw `generate`, greedy, every prompt the same length (the ceiling's call)",
    "padded": "+ prompts of 75-100% of the width, left-padded, with an attention mask",
    "scores": "+ `output_scores` and the log-probabilities `HFPolicy` computes from them",
    "policy": "`HFPolicy` on the same token ids (+ tensors built, eos cut, decoding)",
}


def generation_gap(folder: Path, plan: Plan, device: str, dtype: str) -> dict[str, Any]:
    """Seconds per call at ``plan.batch`` prompts for each step of :data:`GAP_STEPS` (warm: the
    best of two calls after a warm-up call), then the first and a warm call at a width not seen
    yet: where the engine's calls lose time against the ceiling."""
    import torch

    from llm_marl_envs.policies import GenerationConfig
    from llm_marl_envs.policies.hf import HFPolicy

    config = GenerationConfig(max_new_tokens=plan.new_tokens, device=device, dtype=dtype)
    policy = HFPolicy.from_config(folder, config, min_new_tokens=plan.new_tokens)
    model, pad = policy.model, policy.tokenizer.pad_token_id
    generator = torch.Generator().manual_seed(1)
    width, batch = CEILING_PROMPT_TOKENS, plan.batch
    tokens = torch.randint(100, model.config.vocab_size, (batch, width), generator=generator)
    lengths = torch.randint(width * 3 // 4, width + 1, (batch,), generator=generator).tolist()
    lengths[0] = width
    ragged = [tokens[row, : lengths[row]].tolist() for row in range(batch)]
    ids = tokens.to(device)
    left_padded = torch.full((batch, width), pad, dtype=torch.long)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for row, n in enumerate(lengths):
        left_padded[row, width - n :] = tokens[row, :n]
        mask[row, width - n :] = 1
    left_padded, mask = left_padded.to(device), mask.to(device)
    fixed = {
        "max_new_tokens": plan.new_tokens,
        "min_new_tokens": plan.new_tokens,
        "do_sample": False,
        "pad_token_id": pad,
    }

    def raw(prompt: Any = ids) -> None:
        model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), **fixed)

    def padded() -> None:
        model.generate(input_ids=left_padded, attention_mask=mask, **fixed)

    def scores() -> None:
        out = model.generate(
            input_ids=left_padded,
            attention_mask=mask,
            return_dict_in_generate=True,
            output_scores=True,
            **fixed,
        )
        new = out.sequences[:, width:]
        steps = [
            torch.log_softmax(s.float(), -1).gather(1, new[:, t : t + 1])
            for t, s in enumerate(out.scores)
        ]
        torch.cat(steps, dim=1).cpu().tolist()

    def policy_call() -> None:
        policy._generate_batch(ragged, 0)

    rows: dict[str, Any] = {"batch": batch, "prompt_tokens": width}
    with torch.inference_mode():
        for step, call in zip(GAP_STEPS, (raw, padded, scores, policy_call), strict=True):
            timed(call, device)  # warm-up at this shape
            rows[step] = min(timed(call, device) for _ in range(2))
        narrower = ids[:, : width - 8]  # a width no call has had
        rows["new_width_first_s"] = timed(lambda: raw(narrower), device)
        rows["new_width_warm_s"] = timed(lambda: raw(narrower), device)
    return rows


def timed(call: Callable[[], Any], device: str) -> float:
    """Seconds ``call()`` takes, the device's queue drained before and after."""
    synchronize(device)
    tick = time.perf_counter()
    call()
    synchronize(device)
    return time.perf_counter() - tick


# --- 2. the engine through the API ------------------------------------------------------------


def engine_api(
    folder: Path, plan: Plan, device: str, dtype: str, ceiling: dict, budget: Budget
) -> dict[str, Any]:
    """Each env through ``rollout`` with a policy placed by its ``GenerationConfig``."""
    from llm_marl_envs.policies import GenerationConfig
    from llm_marl_envs.policies.hf import HFPolicy

    config = GenerationConfig(max_new_tokens=plan.new_tokens, device=device, dtype=dtype)
    policy = HFPolicy.from_config(folder, config, min_new_tokens=plan.new_tokens)
    return {
        env_id: measure(
            f"  api {env_id}",
            budget,
            plan.estimates["api"] / len(ENV_KWARGS),
            lambda env_id=env_id: api_row(env_id, policy, plan, device, ceiling),
        )
        for env_id in ENV_KWARGS
    }


def api_row(env_id: str, policy: Any, plan: Plan, device: str, ceiling: dict) -> dict[str, Any]:
    from llm_marl_envs.rollout import rollout

    kwargs = ENV_KWARGS[env_id]
    rollout(env_id, policy, episodes=2, batch_size=2, seed=10**6, env_kwargs=kwargs, progress=False)
    row: dict[str, Any] = {}
    with peak_memory(device, row), timed_calls(policy) as calls:
        result = rollout(
            env_id,
            policy,
            episodes=2 * plan.batch,
            batch_size=plan.batch,
            env_kwargs=kwargs,
            progress=False,
        )
    row["calls"] = calls
    turns = [turn for episode in result.episodes for turn in episode.turns]
    policy_seconds = sum(result.policy_seconds.values())
    row.update(
        episodes=len(result.episodes),
        turns=result.turns,
        wall_s=result.wall_seconds,
        prompt_tokens=statistics.mean(len(t.prompt_ids or []) for t in turns),
        new_tokens=statistics.mean(t.completion_tokens or 0 for t in turns),
        env_share=result.env_seconds / result.wall_seconds,
        outside_policy_share=1 - policy_seconds / result.wall_seconds,
    )
    return with_rates(row, ceiling, plan.batch)


@contextlib.contextmanager
def timed_calls(policy: Any):
    """The prompts, padded width and seconds of each ``generate`` micro-batch ``policy`` runs
    in the block (the engine's calls, one by one: a slow first call shows here)."""
    calls: list[dict[str, Any]] = []
    inner = policy._generate_batch

    def timed_batch(prompt_ids: list[list[int]], seed: int) -> Any:
        tick = time.perf_counter()
        out = inner(prompt_ids, seed)  # ends in .cpu(): the device is drained
        seconds = time.perf_counter() - tick
        calls.append({"prompts": len(prompt_ids), "width": max(map(len, prompt_ids)), "s": seconds})
        return out

    policy._generate_batch = timed_batch
    try:
        yield calls
    finally:
        del policy._generate_batch  # the class's method again


def with_rates(row: dict[str, Any], ceiling: dict, batch: int) -> dict[str, Any]:
    """``row`` with turns/s and its ratio to the raw ceiling at ``batch`` (when measured)."""
    row["turns_per_s"] = row["turns"] / row["wall_s"]
    best = ceiling_at(ceiling, batch)
    row["vs_ceiling"] = row["turns_per_s"] / best if best else None
    return row


# --- 3. the engine through the CLI ------------------------------------------------------------

TIMING = re.compile(
    r"(?P<episodes>\d+) episodes, (?P<turns>\d+) turns in (?P<wall>[\d.]+) s .*?"
    r"policy (?P<policy>[\d.]+)% of the time"
)


def cli_row(
    env_id: str, folder: Path, plan: Plan, device: str, dtype: str, ceiling: dict, work: Path
) -> dict:
    """``llm-marl rollout`` with the model on ``device`` as a fresh process."""
    out = work / f"cli-{env_id.split('/')[-1]}.jsonl"
    command = [
        *("-m", "llm_marl_envs.cli", "rollout", env_id, "--policy", f"hf:{folder}"),
        *("--episodes", str(2 * plan.batch), "--batch-size", str(plan.batch)),
        *("--max-new-tokens", str(plan.new_tokens), "--dtype", dtype),
        *("--env-arg", json.dumps(ENV_KWARGS[env_id]), "--no-progress", "--out", str(out)),
        *device_flag(device),
    ]
    tick = time.perf_counter()
    proc = run_python(command, "llm-marl rollout", plan)
    timing = TIMING.search(proc.stdout)
    if timing is None:
        raise RuntimeError(f"no timing line in llm-marl rollout's output: {proc.stdout[-300:]!r}")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    new_tokens = [t.get("completion_tokens", 0) for r in records for t in r["turns"]]
    row = {
        "episodes": int(timing["episodes"]),
        "turns": int(timing["turns"]),
        "wall_s": float(timing["wall"]),
        "command_s": time.perf_counter() - tick,
        "new_tokens": statistics.mean(new_tokens),
        "outside_policy_share": 1 - float(timing["policy"]) / 100,
    }
    return with_rates(row, ceiling, plan.batch)


def device_flag(device: str) -> list[str]:
    """``--device`` for a command (left out on the CPU: commands without the option run there)."""
    return [] if device == "cpu" else ["--device", device]


def run_python(arguments: list[str], what: str, plan: Plan) -> subprocess.CompletedProcess:
    """``python ARGUMENTS`` offline; a missing ``--device`` option is :class:`Unavailable`."""
    threads = {"OMP_NUM_THREADS": str(plan.torch_threads)} if plan.torch_threads else {}
    proc = subprocess.run(
        [sys.executable, *arguments],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **OFFLINE, **threads},
    )
    if proc.returncode != 0:
        if re.search(r"(unrecognized arguments|Unrecognized options?):? .*--device", proc.stderr):
            raise Unavailable(f"{what} has no --device option yet (issue 29, deliverables 1-2)")
        raise RuntimeError(f"{what} exited with {proc.returncode}: {_first_line(proc.stderr)}")
    return proc


# --- 4. the trainers --------------------------------------------------------------------------


def trainer_row(name: str, folder: Path, plan: Plan, device: str, work: Path) -> dict[str, Any]:
    """Seconds per iteration (mean after the first) and peak memory of a short training run."""
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    run_python(
        [
            str(REPO / "baselines" / f"{name}.py"),
            *("--model", str(folder), "--iterations", str(plan.iterations)),
            *("--eval-episodes", "0", "--out-dir", str(out)),
            *plan.trainer_args[name],
            *device_flag(device),
        ],
        f"baselines/{name}.py",
        plan,
    )
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    seconds = statistics.mean(r["seconds"] for r in rows[1:] or rows)
    row = {
        "iterations": len(rows),
        "first_iteration_s": rows[0]["seconds"],
        "seconds_per_iteration": seconds,
        **{
            key: max((r[key] for r in rows if r.get(key) is not None), default=None)
            for key in rows[0]
            if key.startswith("peak_")
        },
    }
    if not plan.shape:  # the CPU figures are the real model's: no comparison for a shrunk one
        reference, source = CPU_REFERENCE[name]
        row.update(cpu_seconds_per_iteration=reference, cpu_source=source)
        row["speedup_vs_cpu"] = reference / seconds
    return row


# --- 5. the executors -------------------------------------------------------------------------


def worker_counts(cores: int, spare: int = 0) -> tuple[int, ...]:
    """1, 8 and all cores (less ``spare``), without repeats, in order."""
    return tuple(sorted({1, min(8, cores - spare), cores - spare} - {0}))


def executor_scaling(plan: Plan, work: Path) -> dict[str, Any]:
    """CoopCoding-v0, scripted: warm episodes/s per executor and size, then cold commands."""
    from ray_scaling import side_by_side  # benchmarks/ray_scaling.py, beside this script

    cores = os.cpu_count() or 1
    ray = plan.ray and importlib.util.find_spec("ray") is not None
    warm = side_by_side(
        CODING,
        plan.coding_episodes,
        plan.coding_batch,
        repeats=2,
        workers=worker_counts(cores, spare=1) if ray else (),
        threads=worker_counts(cores),
    )
    colds = {"local": []}
    if ray:
        colds[f"ray-{max(worker_counts(cores, spare=1))}"] = [
            *("--executor", "ray", "--num-workers", str(max(worker_counts(cores, spare=1))))
        ]
    cold = {name: cold_command(plan, flags) for name, flags in colds.items()}
    why_no_ray = None
    if not ray:
        why_no_ray = "--quick" if not plan.ray else "ray is not importable here"
    return {"cores": cores, "warm": warm, "cold_command": cold, "ray_not_measured": why_no_ray}


def cold_command(plan: Plan, flags: list[str]) -> dict[str, Any]:
    """A fresh ``llm-marl rollout`` of CoopCoding-v0 with scripted players: whole seconds."""
    tick = time.perf_counter()
    run_python(
        [
            *("-m", "llm_marl_envs.cli", "rollout", CODING, "--policy", "scripted"),
            *("--episodes", str(plan.coding_episodes), "--batch-size", str(plan.coding_batch)),
            *("--no-progress", *flags),
        ],
        "llm-marl rollout",
        plan,
    )
    seconds = time.perf_counter() - tick
    return {"command_s": seconds, "episodes_per_s": plan.coding_episodes / seconds}


# --- 6. static KV cache + torch.compile -------------------------------------------------------


def compile_speedup(folder: Path, plan: Plan, device: str, dtype: str) -> dict[str, Any]:
    """GSM8K through the engine with ``GenerationConfig(compile=True)`` and without."""
    from llm_marl_envs.policies import GenerationConfig
    from llm_marl_envs.policies.hf import HFPolicy
    from llm_marl_envs.rollout import rollout

    if not plan.compile:
        raise Unavailable("--quick (compiling takes minutes on a CPU)")
    if "compile" not in {f.name for f in dataclasses.fields(GenerationConfig)}:
        raise Unavailable("GenerationConfig has no compile option yet (issue 29, deliverable 4)")
    rows = {}
    for label, compiled in (("plain", False), ("compiled", True)):
        config = GenerationConfig(
            max_new_tokens=plan.new_tokens, device=device, dtype=dtype, compile=compiled
        )
        policy = HFPolicy.from_config(folder, config, min_new_tokens=plan.new_tokens)
        runs = []
        for _ in range(2):  # the first run compiles; the second replays the same shapes
            result = rollout(
                GSM8K,
                policy,
                episodes=plan.batch,
                batch_size=plan.batch,
                env_kwargs=BUNDLED,
                progress=False,
            )
            runs.append(result)
        rows[label] = {
            "first_run_s": runs[0].wall_seconds,
            "turns_per_s": runs[1].turns / runs[1].wall_seconds,
        }
    rows["speedup"] = rows["compiled"]["turns_per_s"] / rows["plain"]["turns_per_s"]
    return rows


# --- the report -------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> str:
    """``gpu.md``: the machine, then one part per section, then the targets' verdicts."""
    parts = [
        header(results),
        ceiling_part(results.get("ceiling")),
        gap_part(results.get("gap")),
        engine_part(results),
        trainers_part(results.get("trainers")),
        executors_part(results.get("executors")),
        compile_part(results.get("compile")),
        targets_part(results),
    ]
    return "\n\n".join(parts) + "\n"


def fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def missing(section: Any) -> str | None:
    """The "not measured: why" line of a section that was not measured, else None."""
    if section is None:
        return "not measured: an earlier step (building the model) failed"
    if isinstance(section, dict) and "not_measured" in section:
        return f"not measured: {section['not_measured']}"
    return None


def header(results: dict[str, Any]) -> str:
    info, model = results["machine"], results.get("model", {})
    on_gpu = info["device"].startswith("cuda")
    if on_gpu:
        status = (
            "Measured by `python benchmarks/gpu.py` (on the lent GPU machine: "
            "`scripts/gpu_run.sh`). Raw figures: `gpu.json`."
        )
    else:
        status = (
            "**Not measured yet on a GPU.** The figures below come from `python benchmarks/gpu.py "
            f"--device cpu{' --quick' if results['quick'] else ''}` on a CPU machine: a check that "
            "the script runs (the test suite runs it), not the GPU's figures. "
            "`scripts/gpu_run.sh` runs the full benchmark on a GPU. Raw figures: `gpu.json`."
        )
    memory = f", {info['memory_mib']:,} MiB" if "memory_mib" in info else ""
    lines = [
        "# The package on one GPU",
        "",
        status,
        "",
        f"Device: **{info['name']}**{memory} (`{info['device']}`); {info['cores']} CPU cores; "
        f"Python {info['python']}, torch {info['torch']}, transformers {info['transformers']}; "
        f"the whole run {fmt(results.get('total_s'), '.0f')} s.",
    ]
    if missing(model) is None:
        shape = "SmolLM2-135M-Instruct's configuration" + (
            f" shrunk to {model['layers']} layers of {model['hidden_size']} (--quick)"
            if results["quick"]
            else ""
        )
        lines += [
            "",
            f"Model: {shape}, random weights ({model['parameters'] / 1e6:.1f}M parameters, "
            f"{model['dtype']}), built from `benchmarks/smollm2_config/`; every answer exactly "
            f"{model['new_tokens']} new tokens"
            + ("." if results["quick"] else ", so the compute is the real model's."),
        ]
    else:
        lines += ["", f"Model: {missing(model)}."]
    return "\n".join(lines)


def ceiling_part(ceiling: Any) -> str:
    lines = ["## The raw `generate` ceiling", ""]
    if missing(ceiling):
        return "\n".join([*lines, missing(ceiling)])
    lines += [
        "`model.generate` alone, greedy, on prompts of random tokens: the best of three calls "
        "after a warm-up call at each batch size.",
        "",
        "| batch | prompt tokens | s per batch | completions/s | peak GPU MiB |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in ceiling.values():
        lines.append(
            f"| {row['batch']} | {row['prompt_tokens']} | {row['seconds']:.3f} | "
            f"{row['completions_per_s']:.1f} | {fmt(row.get('peak_gpu_mib'), '.0f')} |"
        )
    return "\n".join(lines)


def gap_part(gap: Any) -> str:
    lines = ["## Where a policy call's time goes", ""]
    if missing(gap):
        return "\n".join([*lines, missing(gap)])
    batch = gap["batch"]
    lines += [
        f"One call of {batch} prompts ({gap['prompt_tokens']} tokens wide), one part of "
        "`HFPolicy`'s call added at a time; each the best of two calls after a warm-up call "
        "at that shape.",
        "",
        "| call | s per call | completions/s | added s |",
        "|---|---:|---:|---:|",
    ]
    before = None
    for step, label in GAP_STEPS.items():
        seconds = gap[step]
        added = "-" if before is None else f"{seconds - before:+.3f}"
        lines.append(f"| {label} | {seconds:.3f} | {batch / seconds:.1f} | {added} |")
        before = seconds
    lines += [
        "",
        f"A raw call at a width no call has had yet ({gap['prompt_tokens'] - 8} tokens): "
        f"first {gap['new_width_first_s']:.3f} s, then {gap['new_width_warm_s']:.3f} s.",
    ]
    return "\n".join(lines)


def engine_part(results: dict[str, Any]) -> str:
    lines = [
        "## The engine through the API and the CLI",
        "",
        "Turns per second of `rollout(...)` (policy `HFPolicy.from_config(DIR, "
        "GenerationConfig(device=...))`) and of `llm-marl rollout ENV --policy hf:DIR` in a fresh "
        "process, two batches of episodes each (model loading not counted; the CLI's whole "
        "command in *command s*). *vs ceiling*: turns/s over the raw ceiling's completions/s at "
        "the same batch. *outside generate*: the share of wall time not spent in the policy's "
        "`generate` (environments plus engine); *env*: in the environments alone. The maze is "
        "capped at 2 cycles (4 turns); TL;DR's two writers take their turns in the AEC order, "
        "one `generate` call each.",
        "",
        "| env | path | episodes | turns | s | turns/s | vs ceiling | outside generate | env | "
        "prompt tokens | new tokens | command s | peak GPU MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for path in ("api", "cli"):
        section = results.get(path)
        if missing(section):
            notes.append(f"- {path.upper()}: {missing(section)}")
            continue
        for env_id, row in section.items():
            name = env_id.split("/")[-1]
            if missing(row):
                notes.append(f"- {path.upper()} {name}: {missing(row)}")
                continue
            lines.append(
                f"| {name} | {path.upper()} | {row['episodes']} | {row['turns']} | "
                f"{row['wall_s']:.2f} | {row['turns_per_s']:.1f} | {fmt(row['vs_ceiling'])}x | "
                f"{row['outside_policy_share']:.1%} | {fmt(row.get('env_share'), '.1%')} | "
                f"{fmt(row.get('prompt_tokens'), '.0f')} | {row['new_tokens']:.1f} | "
                f"{fmt(row.get('command_s'), '.1f')} | {fmt(row.get('peak_gpu_mib'), '.0f')} |"
            )
    calls = [
        f"- {env_id.split('/')[-1]}: {calls_line(row['calls'])}"
        for env_id, row in _measured_rows(results.get("api"))
        if row.get("calls")
    ]
    if calls:
        notes += [
            "",
            "The API runs' `generate` calls (prompts x width: seconds), in order:",
            *calls,
        ]
    return "\n".join([*lines, *([""] + notes if notes else [])])


def calls_line(calls: list[dict[str, Any]]) -> str:
    return ", ".join(f"{c['prompts']}x{c['width']}: {c['s']:.2f} s" for c in calls)


def trainers_part(trainers: Any) -> str:
    lines = [
        "## The trainers",
        "",
        "`baselines/cory.py` and `baselines/magrpo.py` on the model (their defaults, no "
        "evaluations; `--quick`: small batches): seconds per iteration, the mean after the first; "
        "peak memory, the largest `peak_*` field of `metrics.jsonl` (MiB, the fields' own units).",
        "",
    ]
    if missing(trainers):
        return "\n".join([*lines, missing(trainers)])
    for name, row in trainers.items():
        if missing(row):
            lines.append(f"- `{name}.py`: {missing(row)}")
            continue
        peaks = ", ".join(
            f"{k} {v:,.0f}" for k, v in row.items() if k.startswith("peak_") and v is not None
        )
        line = (
            f"- `{name}.py`: {row['iterations']} iterations, first {row['first_iteration_s']:.1f} "
            f"s, then **{row['seconds_per_iteration']:.2f} s per iteration**; {peaks}"
        )
        if "speedup_vs_cpu" in row:
            line += (
                f"; against {row['cpu_seconds_per_iteration']:g} s on the CPU "
                f"({row['cpu_source']}): **{row['speedup_vs_cpu']:.1f}x**"
            )
        lines.append(line + ".")
    return "\n".join(lines)


def executors_part(executors: Any) -> str:
    lines = ["## Executor scaling (CoopCoding-v0, scripted players)", ""]
    if missing(executors):
        return "\n".join([*lines, missing(executors)])
    warm = executors["warm"]
    one = {
        kind: warm.get(f"{kind}-1" if kind == "ray" else "local-1-threads")
        for kind in ("local", "ray")
    }
    lines += [
        "A sandboxed program per step. *Warm*: the median of two runs in this process (Ray: "
        "workers kept between runs; its *cold start* is the first run on new actors). "
        "*Scaling*: episodes/s over the same executor's with one thread or worker.",
        "",
        "| executor | warm episodes/s | scaling | same records as local | Ray cold start s |",
        "|---|---:|---:|---|---:|",
    ]
    for name, row in warm.items():
        base = one["ray" if name.startswith("ray") else "local"]
        scaling = row["episodes_per_s"] / base["episodes_per_s"] if base else None
        lines.append(
            f"| {name} | {row['episodes_per_s']:.1f} | {fmt(scaling, '.1f')}x | "
            f"{row['same_records_as_local']} | {fmt(row.get('cold_start'))} |"
        )
    lines += [
        "",
        "Cold commands: a fresh `llm-marl rollout CoopCoding-v0 --policy scripted` process.",
        "",
    ]
    for name, row in executors["cold_command"].items():
        lines.append(
            f"- {name}: {row['command_s']:.1f} s for the whole command "
            f"({row['episodes_per_s']:.1f} episodes/s, start included)"
        )
    if executors["ray_not_measured"]:
        lines.append(f"- Ray: not measured: {executors['ray_not_measured']}")
    return "\n".join(lines)


def compile_part(compiled: Any) -> str:
    lines = ["## Static KV cache + `torch.compile`", ""]
    if missing(compiled):
        return "\n".join([*lines, missing(compiled)])
    for label in ("plain", "compiled"):
        row = compiled[label]
        lines.append(
            f"- {label}: first run {row['first_run_s']:.1f} s (compilation included), then "
            f"{row['turns_per_s']:.1f} turns/s"
        )
    lines.append(f"- compiled / plain: **{compiled['speedup']:.2f}x** (GSM8K through the engine)")
    return "\n".join(lines)


def targets_part(results: dict[str, Any]) -> str:
    """The issue's targets, met or not, on what was measured."""
    on_gpu = results["machine"]["device"].startswith("cuda")
    lines = ["## Targets (issue 29)", ""]
    if not on_gpu:
        return "\n".join(
            [*lines, "Not measured yet: the targets are for a GPU, this run was on a CPU."]
        )
    verdicts = []
    for env_id, row in _measured_rows(results.get("cli")):
        verdicts.append(
            _verdict(
                f"CLI {env_id.split('/')[-1]} vs ceiling",
                row["vs_ceiling"],
                TARGET_CLI_VS_CEILING,
                ">=",
            )
        )
    for env_id, row in _measured_rows(results.get("api")):
        verdicts.append(
            _verdict(
                f"outside generate, {env_id.split('/')[-1]}",
                row["outside_policy_share"],
                TARGET_OUTSIDE_POLICY,
                "<=",
            )
        )
    cory = (results.get("trainers") or {}).get("cory")
    if cory and not missing(cory) and "speedup_vs_cpu" in cory:
        verdicts.append(
            _verdict("cory.py vs 2 CPU cores", cory["speedup_vs_cpu"], TARGET_TRAINER_SPEEDUP, ">=")
        )
    return "\n".join(lines + [f"- {v}" for v in verdicts])


def _measured_rows(section: Any) -> list[tuple[str, dict]]:
    if missing(section):
        return []
    return [(key, row) for key, row in section.items() if not missing(row)]


def _verdict(what: str, value: float | None, target: float, sense: str) -> str:
    """``what: value (target >= / <= target: met)``; shares (``<=``) in %, ratios in x."""
    if value is None:
        return f"{what}: not measured (no ceiling)"
    met = value >= target if sense == ">=" else value <= target
    shown, wanted = (
        (f"{value:.1%}", f"{target:.0%}") if sense == "<=" else (f"{value:.2f}x", f"{target:g}x")
    )
    return f"{what}: {shown} (target {sense} {wanted}: {'met' if met else 'NOT met'})"


# --- the run ----------------------------------------------------------------------------------


def run(args: argparse.Namespace, device: str, work: Path) -> dict[str, Any]:
    """Every section asked for, in order, within the budget; what cannot be measured says
    why."""
    plan = QUICK if args.quick else FULL
    budget = Budget(args.budget_s)
    dtype = weight_dtype(device)
    if plan.torch_threads:
        import torch

        torch.set_num_threads(plan.torch_threads)
    folder = work / "smollm2-135m-random"
    estimates = plan.estimates
    results: dict[str, Any] = {"machine": machine(device), "quick": args.quick}
    results["model"] = measure(
        "model", budget, estimates["model"], lambda: build_model(folder, plan, device, dtype)
    )
    if "not_measured" in results["model"]:
        return results

    def section(name: str, estimate: float, run: Callable[[], Any], label: str = "") -> Any:
        if name not in args.sections:
            return not_measured("not in --sections")
        free_memory(device)  # each section loads its own copy of the model
        return measure(label or name, budget, estimate, run)

    ceiling = section(
        "ceiling",
        estimates["ceiling"],
        lambda: generate_ceiling(folder, plan, device, dtype),
        "generate ceiling",
    )
    results["ceiling"] = ceiling
    results["gap"] = section(
        "gap", estimates["gap"], lambda: generation_gap(folder, plan, device, dtype)
    )
    results["api"] = section(
        "api",
        estimates["api"] / len(ENV_KWARGS),
        lambda: engine_api(folder, plan, device, dtype, ceiling, budget),
        "engine (API)",
    )
    results["cli"] = {
        env_id: section(
            "cli",
            estimates["cli"],
            lambda env_id=env_id: cli_row(env_id, folder, plan, device, dtype, ceiling, work),
            f"engine (CLI) {env_id}",
        )
        for env_id in plan.cli_envs
    }
    results["trainers"] = {
        name: section(
            "trainers",
            estimates["trainer"],
            lambda name=name: trainer_row(name, folder, plan, device, work),
            f"trainer {name}",
        )
        for name in ("cory", "magrpo")
    }
    results["executors"] = section(
        "executors", estimates["executors"], lambda: executor_scaling(plan, work)
    )
    results["compile"] = section(
        "compile", estimates["compile"], lambda: compile_speedup(folder, plan, device, dtype)
    )
    return results


SECTIONS = ("ceiling", "gap", "api", "cli", "trainers", "executors", "compile")


def sections(text: str) -> tuple[str, ...]:
    """``--sections``: known names only, in the run's order."""
    asked = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(asked - set(SECTIONS))
    if unknown or not asked:
        raise argparse.ArgumentTypeError(
            f"unknown section(s) {', '.join(unknown) or '(none given)'}; choose from "
            + ", ".join(SECTIONS)
        )
    return tuple(name for name in SECTIONS if name in asked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="auto", help="auto (CUDA when there), cpu, cuda, cuda:N"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a small model and few episodes (the test's check)"
    )
    parser.add_argument(
        "--budget-s", type=float, default=270.0, help="skip sections that do not fit (seconds)"
    )
    parser.add_argument(
        "--sections",
        type=sections,
        default=SECTIONS,
        help=f"a comma-separated subset of {','.join(SECTIONS)} (default: all)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    args = parser.parse_args()
    if args.budget_s <= 0:
        parser.error(f"--budget-s must be positive, got {args.budget_s:g}")
    device = pick_device(args.device)
    tick = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-bench-") as work:
        results = run(args, device, Path(work))
    results["total_s"] = time.perf_counter() - tick
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "gpu.md").write_text(report(results), encoding="utf-8")
    print(f"wrote {args.out / 'gpu.md'} and gpu.json in {results['total_s']:.0f} s")


if __name__ == "__main__":
    main()
