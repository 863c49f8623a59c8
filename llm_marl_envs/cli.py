"""The ``llm-marl`` command.

``llm-marl list [--markdown]``
    The registered environments (id, agents, turn structure, reward, paper).
``llm-marl demo [--episodes N] [--seed S] [--env ID ...]``
    Plays every registered environment (or the ones named) with the built-in scripted
    policies, offline, printing readable transcripts and a reward summary.
"""

from __future__ import annotations

import argparse
import sys
import time

from llm_marl_envs.registry import list_envs, make, spec

__all__ = ["env_table", "main"]


def env_table(markdown: bool = False) -> str:
    """The environment table (Markdown for the README, or plain text)."""
    header = ("id", "agents", "turns", "reward", "paper")
    rows = []
    for env_id in list_envs():
        s = spec(env_id)
        rows.append((f"`{s.id}`" if markdown else s.id, ", ".join(s.agents), s.turns, s.reward, s.paper))
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    blocks = []
    for r in rows:
        blocks.append("\n".join([r[0]] + [f"    {h:<7} {v}" for h, v in zip(header[1:], r[1:])]))
    return "\n\n".join(blocks)


def _demo(env_ids: list[str], episodes: int, seed: int) -> int:
    from llm_marl_envs.rollout.scripted import play_episode, scripted_policy

    summary = []
    for env_id in env_ids:
        env = make(env_id, render_mode="ansi")
        policies = {a: scripted_policy(env_id, a, seed) for a in env.possible_agents}
        start = time.perf_counter()
        totals = {a: 0.0 for a in env.possible_agents}
        for episode in range(episodes):
            rewards = play_episode(env, policies, seed=seed + episode)
            print(env.render(), end="\n\n")
            for agent, value in rewards.items():
                totals[agent] += value
        seconds = time.perf_counter() - start
        summary.append((env_id, {a: v / episodes for a, v in totals.items()}, seconds))
        env.close()
    print(f"Summary: scripted policies, {episodes} episode(s) per environment, seeds {seed}..{seed + episodes - 1}")
    for env_id, means, seconds in summary:
        rewards = ", ".join(f"{a}={v:.3f}" for a, v in means.items())
        print(f"  {env_id:<36} mean return: {rewards}   ({seconds * 1000:.0f} ms)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llm-marl", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="list the registered environments")
    p_list.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p_demo = sub.add_parser("demo", help="play every environment with scripted policies")
    p_demo.add_argument("--episodes", type=int, default=2, help="episodes per environment")
    p_demo.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    p_demo.add_argument("--env", nargs="*", default=None, help="environment ids (default: all)")
    args = parser.parse_args(argv)
    if args.command == "list":
        print(env_table(markdown=args.markdown))
        return 0
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    env_ids = args.env or list_envs()
    for env_id in env_ids:
        spec(env_id)  # unknown ids fail here, with suggestions
    return _demo(env_ids, args.episodes, args.seed)


if __name__ == "__main__":
    sys.exit(main())
