"""Environment overhead per agent turn (reset + step + reward, no model), on one core.

For each configuration it measures, in the same run:

* ``env``: full AEC episodes (reset, ``last()``, ``step()`` for both agents, scoring, the
  dead steps), driven by fixed answers: turns per second, where a turn is one live agent's
  action;
* ``reward only``: the task's reward function alone on the same answers, which is the floor
  the environment adds its bookkeeping to.

Targets: >= 20,000 turns/s for GSM8K-v0 and >= 3,000 turns/s for IMDBSentiment-v0 with VADER
(issue 2, on the env); >= 5,000 joint actions/s for the TL;DR reward (issue 3, on the reward
function). Results go to ``docs/benchmarks/env_overhead.md``.

Usage: ``python benchmarks/env_overhead.py [--seconds 3] [--out docs/benchmarks/env_overhead.md]``
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import llm_marl_envs
from llm_marl_envs.rewards.math import gsm8k_reward
from llm_marl_envs.rewards.sentiment import sentiment_reward
from llm_marl_envs.rewards.writing import ARXIV, TLDR, writing_reward

GSM8K_ANSWERS = [
    "First 12 + 30 = 42 apples, then half of them is 21. The answer is 21.",
    "She buys 3 * 4 = 12 pens, and 12 - 5 = 7 remain. The answer is 7.",
    "I am not sure, maybe it is 1,250 dollars.",
    "We need 15 / 3 = 5 boxes, so 5 * 8 = 40 cookies. The answer is 40.",
]
SUMMARY = (
    "My landlord kept my whole deposit over floor scratches that were there before I moved in."
)
ELABORATION = (
    "I moved out of my flat last month after two years. However, my landlord kept the whole "
    "deposit because he says the scratches on the kitchen floor are new. In fact, my move-in "
    "photos show the same marks, so I plan to send him a formal letter first. As a result, if "
    "he still refuses, I will take the case to small claims court, although I would rather "
    "settle it without a hearing."
)
WRITING_ANSWERS = [SUMMARY, ELABORATION]
INTRO_A = " ".join(["Background sentence about the problem and why it matters to the field."] * 14)
INTRO_B = " ".join(["However the method builds a new model and therefore changes results."] * 15)
INTRO_ANSWERS = [INTRO_A, INTRO_B]

IMDB_ANSWERS = [
    "is a wonderful film with a brilliant cast",
    "was boring and far too long",
    "made me smile from beginning to end",
    "is a mess, but the music is lovely",
]


def _pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return "pinned to one core"
    return "not pinned (no sched_setaffinity)"


def bench_env(env_id: str, answers: list[str], seconds: float, **kwargs) -> tuple[float, int]:
    """Turns per second of full episodes with fixed answers."""
    env = llm_marl_envs.make(env_id, **kwargs)
    env.reset(seed=0)
    turns = episodes = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(100):
            env.reset()
            for _agent in env.agent_iter():
                _, _, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    env.step(None)
                else:
                    env.step(answers[turns % len(answers)])
                    turns += 1
            episodes += 1
    return turns / (time.perf_counter() - start), episodes


def bench_reward(fn, answers: list[str], seconds: float) -> float:
    """Calls per second of the reward function alone, one completion per call like the env."""
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for i in range(200):
            fn(answers[i % len(answers)])
        calls += 200
    return calls / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring time per row")
    parser.add_argument("--out", default="docs/benchmarks/env_overhead.md")
    args = parser.parse_args()
    pinning = _pin_to_one_core()

    rows = []
    # (env id, label, answers, env kwargs, reward-only function, target, what the target is on)
    configs = [
        (
            "llm_marl_envs/GSM8K-v0",
            "bundled",
            GSM8K_ANSWERS,
            {"data_source": "bundled"},
            lambda a: gsm8k_reward([a], answer=["#### 21"]),
            20_000,
            "env",
        ),
        (
            "llm_marl_envs/GSM8K-v0",
            "procedural, difficulty 2",
            GSM8K_ANSWERS,
            {"data_source": "procedural", "difficulty": 2},
            None,
            20_000,
            "env",
        ),
        (
            "llm_marl_envs/IMDBSentiment-v0",
            "bundled, VADER",
            IMDB_ANSWERS,
            {"data_source": "bundled", "scorer": "vader"},
            lambda a: sentiment_reward([a], prompts=["The film was"], scorer="vader"),
            3_000,
            "env",
        ),
        (
            "llm_marl_envs/TLDRSummarization-v0",
            "bundled",
            WRITING_ANSWERS,
            {"data_source": "bundled"},
            lambda _: writing_reward(SUMMARY, ELABORATION, TLDR),
            5_000,
            "reward",
        ),
        (
            "llm_marl_envs/ArxivExpansion-v0",
            "bundled",
            INTRO_ANSWERS,
            {"data_source": "bundled"},
            lambda _: writing_reward(INTRO_A, INTRO_B, ARXIV),
            None,
            "reward",
        ),
    ]
    for env_id, label, answers, kwargs, reward_fn, target, on in configs:
        env_rate, episodes = bench_env(env_id, answers, args.seconds, **kwargs)
        reward_rate = bench_reward(reward_fn, answers, args.seconds) if reward_fn else None
        measured = env_rate if on == "env" else reward_rate
        rows.append((env_id, label, env_rate, reward_rate, target, on, measured))
        reward_text = f"{reward_rate:,.0f}" if reward_rate else "-"
        print(
            f"{env_id:<36} {label:<26} env {env_rate:>9,.0f} turns/s   reward only {reward_text:>9} /s"
            f"   ({episodes} episodes)"
        )

    lines = [
        "# Environment overhead per agent turn",
        "",
        "Measured by `python benchmarks/env_overhead.py` (also `make bench`): full AEC episodes "
        "(reset, `last()`, `step()` with scoring, dead steps) with fixed answers, no model; "
        "a turn is one live agent's action. *Reward only* calls the task's reward function "
        "alone on the same answers, in the same run.",
        "",
        f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{pinning}, {args.seconds:g} s per row.",
        "",
        "| environment | data / scorer | env turns/s | reward only, calls/s | target | met |",
        "|---|---|---:|---:|---|---|",
    ]
    for env_id, label, env_rate, reward_rate, target, on, measured in rows:
        reward_text = f"{reward_rate:,.0f}" if reward_rate else "-"
        if target is None:
            target_text, met = "-", "-"
        else:
            unit = "turns/s (env)" if on == "env" else "joint actions/s (reward)"
            target_text, met = f">= {target:,} {unit}", "yes" if measured >= target else "NO"
        lines.append(
            f"| `{env_id}` | {label} | {env_rate:,.0f} | {reward_text} | {target_text} | {met} |"
        )
    lines += [
        "",
        "Procedural GSM8K generates a new problem at every reset, so its row includes the "
        "generator. For the writing tasks one *reward only* call scores one joint action (both "
        "texts). An LLM turn takes hundreds of milliseconds on this CPU, so at these rates "
        "the environment's share of a rollout is negligible.",
        "",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
