"""Batched rollouts versus one episode at a time, same env, episodes and model, one run.

For each model (the tiny test model, the embedded SmolLM2) and each environment
(GSM8K-v0, TLDRSummarization-v0) it plays the same 32 episodes (same seeds, greedy decoding)
twice: ``batch_size=32`` (the engine's lockstep batches) and ``batch_size=1`` (each episode
stepped alone, the policy called with one prompt at a time). Each configuration runs in its
own child process, so its peak memory (max RSS) is its own; model loading is not timed.

Reported: wall seconds, speed-up, the environment's share of the rollout time, peak RSS, and
how many of the 32 episodes came out identical in both modes.

Targets (issue 5): >= 10x with the tiny model, >= 4x with SmolLM2; environment time <= 2% of
the rollout on both envs. Results go to ``docs/benchmarks/rollout_speed.md``.

Usage: ``python benchmarks/rollout_speed.py [--episodes 32] [--models tiny default] [--out ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ENVS = {
    "llm_marl_envs/GSM8K-v0": {"data_source": "bundled"},
    "llm_marl_envs/TLDRSummarization-v0": {"data_source": "bundled"},
}
TARGETS = {"tiny": 10.0, "default": 4.0}

_CHILD = r"""
import hashlib, json, resource, sys, time
import torch
from llm_marl_envs.policies.hf import HFPolicy
from llm_marl_envs.rollout import rollout

model, env_id, env_kwargs, episodes, batch_size, max_new_tokens = json.loads(sys.argv[1])
policy = HFPolicy.from_spec(model, max_new_tokens=max_new_tokens, seed=0)
# Warm up (first-call allocations, lazy inits) on another seed, so both modes start warm.
rollout(env_id, policy, episodes=2, batch_size=2, seed=10_000, env_kwargs=env_kwargs, progress=False)
policy.reseed(0)
result = rollout(env_id, policy, episodes=episodes, batch_size=batch_size, seed=0,
                 env_kwargs=env_kwargs, progress=False)
digests = [hashlib.sha256(json.dumps(e.to_dict(), sort_keys=True).encode()).hexdigest()
           for e in result.episodes]
print(json.dumps({
    "wall": result.wall_seconds, "env": result.env_seconds,
    "policy": sum(result.policy_seconds.values()), "turns": result.turns,
    "calls": sum(result.policy_calls.values()),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "digests": digests, "threads": torch.get_num_threads(),
}))
"""


def run_child(model: str, env_id: str, episodes: int, batch_size: int, max_new_tokens: int) -> dict:
    payload = json.dumps([model, env_id, ENVS[env_id], episodes, batch_size, max_new_tokens])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", _CHILD, payload], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{model} {env_id} batch {batch_size} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--models", nargs="+", default=["tiny", "default"])
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--out", default="docs/benchmarks/rollout_speed.md")
    args = parser.parse_args()
    rows = []
    for model in args.models:
        for env_id in ENVS:
            runs = {}
            for batch_size in (args.episodes, 1):
                runs[batch_size] = run_child(model, env_id, args.episodes, batch_size, args.max_new_tokens)
                r = runs[batch_size]
                print(f"{model:<8} {env_id:<38} batch {batch_size:>3}: {r['wall']:8.2f} s, "
                      f"env {r['env'] / r['wall']:.2%}, peak {r['peak_rss_mb']:.0f} MB", flush=True)
            batched, single = runs[args.episodes], runs[1]
            same = sum(a == b for a, b in zip(batched["digests"], single["digests"], strict=True))
            rows.append((model, env_id, batched, single, single["wall"] / batched["wall"], same))
    threads = rows[0][2]["threads"] if rows else "?"
    lines = [
        "# Batched rollouts versus one episode at a time",
        "",
        "Measured by `python benchmarks/rollout_speed.py` (also `make bench`): the same "
        f"{args.episodes} episodes (seeds 0..{args.episodes - 1}, greedy decoding, at most "
        f"{args.max_new_tokens} new tokens per turn) played with `batch_size={args.episodes}` and with "
        "`batch_size=1`, each configuration in its own process (peak RSS is that process's "
        "maximum resident memory, model included); model loading and one warm-up rollout of "
        "two other episodes are not timed.",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"torch threads {threads}, CPU only.",
        "",
        "| model | environment | batched s | one-at-a-time s | speed-up | target | env share (batched) | "
        "env share (single) | peak RSS batched / single | identical episodes |",
        "|---|---|---:|---:|---:|---|---:|---:|---|---:|",
    ]
    for model, env_id, batched, single, speedup, same in rows:
        target = TARGETS.get(model)
        met = "-" if target is None else f">= {target:g}x: {'yes' if speedup >= target else 'NO'}"
        lines.append(
            f"| {model} | `{env_id}` | {batched['wall']:.2f} | {single['wall']:.2f} | {speedup:.1f}x | {met} | "
            f"{batched['env'] / batched['wall']:.2%} | {single['env'] / single['wall']:.2%} | "
            f"{batched['peak_rss_mb']:.0f} / {single['peak_rss_mb']:.0f} MB | {same}/{len(batched['digests'])} |"
        )
    lines += [
        "",
        "*Identical episodes* compares the full episode records (prompts, actions, rewards) of the "
        "two modes. Greedy decoding of a left-padded batch is not bit-identical to unpadded "
        "decoding in floating point, so a real model may pick a different token where two are "
        "nearly tied; the tiny test model is built with well-separated logits so that its "
        "batched and sequential rollouts agree exactly (a test checks it).",
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
