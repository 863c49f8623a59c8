"""Speed of the multi-round games with scripted policies (no model), on one core.

Rows, all measured in the same run:

* MazeCollab-v0: a fresh maze generated from the seed at every reset plus a full episode
  (``last()`` with the observation, ``step()``) played by the random pair, which plays to the
  turn budget unless it stumbles on the treasure; the oracle pair (shortest paths); a 15x15
  maze; and maze generation alone, so the split between generation and play is visible.
* DonorGame-v0: full 12-agent games of 12 rounds with the scripted reference policies.

Targets (issue 4): >= 500 maze episodes/s at 9x9 (random pair, generation included) and
>= 200 Donor games/s at N = 12. Results go to ``docs/benchmarks/game_envs.md``.

Usage: ``python benchmarks/game_envs.py [--seconds 3] [--out docs/benchmarks/game_envs.md]``
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import llm_marl_envs
from llm_marl_envs.games.maze_layout import generate_layout
from llm_marl_envs.policies.scripted.donor import (
    always_defect,
    fraction_giver,
    reputation_reciprocator,
)
from llm_marl_envs.policies.scripted.maze import oracle_pair, random_pair


def _pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return "pinned to one core"
    return "not pinned (no sched_setaffinity)"


def bench_episodes(env, policies: dict[str, Callable], seconds: float) -> tuple[float, float]:
    """Episodes/s and turns/s of full AEC episodes (reset with a new seed each time)."""
    episodes = turns = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(20):
            env.reset(seed=episodes)
            for agent in env.agent_iter():
                observation, _, terminated, truncated, info = env.last()
                if terminated or truncated:
                    env.step(None)
                else:
                    env.step(policies[agent](observation, info))
                    turns += 1
            episodes += 1
    elapsed = time.perf_counter() - start
    return episodes / elapsed, turns / elapsed


def bench_generation(size: int, seconds: float) -> float:
    rng = np.random.default_rng(0)
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(50):
            generate_layout(rng, size)
        count += 50
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per row")
    parser.add_argument("--out", default="docs/benchmarks/game_envs.md")
    args = parser.parse_args()
    pinned = _pin_to_one_core()
    maze = "llm_marl_envs/MazeCollab-v0"
    donor = "llm_marl_envs/DonorGame-v0"
    rows = []

    def add(env_id, setup, policies_name, env, policies, target=None, target_value=None):
        eps, tps = bench_episodes(env, policies, args.seconds)
        met = "-" if target is None else ("yes" if eps >= target_value else "NO")
        rows.append((env_id, setup, policies_name, eps, tps, target or "-", met))
        print(
            f"{env_id:<30} {setup:<24} {policies_name:<28} {eps:>9,.0f} episodes/s {tps:>10,.0f} turns/s"
        )

    add(
        maze,
        "9x9 partial",
        "random pair",
        llm_marl_envs.make(maze),
        random_pair(0),
        ">= 500 episodes/s",
        500,
    )
    add(maze, "9x9 partial", "oracle pair", llm_marl_envs.make(maze), oracle_pair())
    add(maze, "15x15 partial", "random pair", llm_marl_envs.make(maze, size=15), random_pair(0))
    add(maze, "9x9 full", "random pair", llm_marl_envs.make(maze, variant="full"), random_pair(0))
    for name, make_policy in [
        ("reputation reciprocator", reputation_reciprocator),
        ("give half", lambda: fraction_giver(0.5)),
        ("always defect", always_defect),
    ]:
        env = llm_marl_envs.make(donor, num_agents=12)
        policies = {agent: make_policy() for agent in env.possible_agents}
        add(
            donor,
            "N=12, 12 rounds",
            name,
            env,
            policies,
            ">= 200 games/s" if name == "reputation reciprocator" else None,
            200,
        )
    generation = {size: bench_generation(size, args.seconds) for size in (9, 15)}
    for size, rate in generation.items():
        print(f"maze generation {size}x{size}: {rate:,.0f} layouts/s")

    lines = [
        "# Speed of the multi-round games",
        "",
        "Measured by `python benchmarks/game_envs.py` (also `make bench`): full AEC episodes "
        "driven by the scripted reference policies, no model. Each maze episode starts with "
        "a new maze generated from its seed (generation is included in the rate); a turn is one "
        "live agent's action, and the policy's own time (reading the observation, writing the "
        "reply) is included.",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, {pinned}, "
        f"{args.seconds:g} s per row.",
        "",
        "| environment | setting | policies | episodes/s | turns/s | turns per episode | target | met |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for env_id, setup, name, eps, tps, target, met in rows:
        lines.append(
            f"| `{env_id}` | {setup} | {name} | {eps:,.0f} | {tps:,.0f} | {tps / eps:.1f} | {target} | {met} |"
        )
    lines += [
        "",
        "Maze generation alone (draw, checks, alternating-turn search, retries): "
        + ", ".join(f"{rate:,.0f} layouts/s at {size}x{size}" for size, rate in generation.items())
        + ".",
        "",
        "The turn budget is 6 x size turns (54 at 9x9, 90 at 15x15); a random pair rarely finds "
        "the treasure, so its episodes mostly run the whole budget, while the oracle pair stops "
        "after the optimal number of turns. A Donor game has 72 donor turns (6 donors x 12 "
        "rounds). At these rates a language model, not the environment, sets the pace of every "
        "rollout.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
