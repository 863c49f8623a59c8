"""Can the embedded model follow each environment's answer format? Format failures per env.

The embedded SmolLM2-135M-Instruct plays the newest version of every registered environment
with the README's default generation settings (``llm-marl demo``: greedy, 64 new tokens, the
demo's short-episode arguments), on a fixed set of episodes (seeds ``0 .. n-1``), one model
shared by every agent. Per environment and agent:

* **format failures**: the share of turns whose ``format_failure`` component is 1 (the env
  could not read an answer: no number, no move, no amount, empty or oversized text);
* **cut off**: the share of turns that used the whole token budget (the answer was still
  going when generation stopped);
* the mean return.

Target (issue 18): at most 20% format failures on every environment. Results go to
``docs/benchmarks/prompt_formats.md``; ``--label`` names the column set (e.g. "before",
"after") so two runs can be kept side by side in the page.

Usage: ``python benchmarks/prompt_formats.py [--episodes 8] [--label before] [--env ID ...]``
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from llm_marl_envs.playing import DEMO_ENV_KWARGS
from llm_marl_envs.policies.hf import HFPolicy
from llm_marl_envs.registry import latest_envs
from llm_marl_envs.rollout import rollout

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.20
MAX_NEW_TOKENS = 64  # llm-marl demo's default


def measure(episodes: int, env_ids: list[str]) -> list[dict]:
    policy = HFPolicy.from_spec("default", max_new_tokens=MAX_NEW_TOKENS)  # greedy
    rows = []
    for env_id in env_ids:
        start = time.perf_counter()
        kwargs = DEMO_ENV_KWARGS.get(env_id, {})
        try:
            result = rollout(
                env_id, policy, episodes=episodes, batch_size=episodes, env_kwargs=kwargs
            )
        except ImportError as missing:  # an extra this install lacks
            print(f"skipped {env_id}: {missing}")
            continue
        per_agent: dict[str, list] = {}
        for record in result.episodes:
            for turn in record.turns:
                per_agent.setdefault(turn.agent, []).append(turn)
        for agent, turns in sorted(per_agent.items()):
            rows.append(
                {
                    "env": env_id.split("/")[-1],
                    "agent": agent,
                    "turns": len(turns),
                    "format_failure": sum(
                        t.reward_components.get("format_failure", 0.0) > 0 for t in turns
                    )
                    / len(turns),
                    "cut_off": sum(len(t.completion_ids or []) >= MAX_NEW_TOKENS for t in turns)
                    / len(turns),
                    "mean_return": sum(r.returns[agent] for r in result.episodes)
                    / len(result.episodes),
                    "seconds": time.perf_counter() - start,
                }
            )
        print(env_id, f"{time.perf_counter() - start:.0f} s")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--label", default="before")
    parser.add_argument(
        "--env", nargs="*", default=None, help="env ids (default: the newest of each)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "prompt_formats")
    args = parser.parse_args()
    rows = measure(args.episodes, args.env or latest_envs())
    data_file = args.out.with_suffix(".json")
    runs = json.loads(data_file.read_text()) if data_file.exists() else {}
    runs[args.label] = {"episodes": args.episodes, "rows": rows}
    data_file.write_text(json.dumps(runs, indent=1) + "\n")
    lines = [
        "# Answer formats: can the embedded model follow them?",
        "",
        f"`python benchmarks/prompt_formats.py --episodes {args.episodes} --label LABEL` on "
        f"{platform.machine()}, Python {platform.python_version()}: the embedded "
        f"SmolLM2-135M-Instruct plays the newest version of each environment, greedy, "
        f"{MAX_NEW_TOKENS} new tokens (the `llm-marl demo` defaults and its short-episode "
        "arguments), seeds 0..n-1. Format failure: the env could not read the answer "
        "(`format_failure` component); cut off: the answer used the whole token budget. "
        f"Target (issue 18): at most {TARGET:.0%} format failures on every environment.",
    ]
    for label, run in runs.items():
        lines += [
            "",
            f"## {label} ({run['episodes']} episodes per environment)",
            "",
            "| env | agent | turns | format failures | cut off | mean return |",
            "|---|---|---|---|---|---|",
        ]
        for r in run["rows"]:
            lines.append(
                f"| {r['env']} | {r['agent']} | {r['turns']} | {r['format_failure']:.0%} | "
                f"{r['cut_off']:.0%} | {r['mean_return']:.3f} |"
            )
        worst = max(run["rows"], key=lambda r: r["format_failure"])
        met = all(r["format_failure"] <= TARGET for r in run["rows"])
        lines += [
            "",
            f"Worst: {worst['env']} {worst['agent']} {worst['format_failure']:.0%} "
            f"({'target met' if met else 'target missed'}).",
        ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
