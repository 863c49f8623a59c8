"""The two reward hacks of the authors' coding reward, measured on CoopCoding-v1 and -v4 (issue 31).

* **constant**: for each training problem, a helper ``def aux(*args): return C`` and a main
  that hands its result on without being a thin wrapper (``r = aux(*args); s = r; return
  s``), with the best constant ``C`` of :data:`CONSTANTS` per problem (what a policy could
  learn): how many problems pay a cooperation bonus, and the mean joint reward, against 1.5
  for an honest failure (no test passed);
* **lookup** (two rounds): round 1 as above; round 2 a main that is a lookup table of every
  ``assert f(args) == expected`` the round-2 prompt shows, falling back to the constant.

    PYTHONPATH=. python benchmarks/coding_reward_hacks.py [--limit 100] [--out docs/benchmarks]

Runs every program in the sandbox (about two minutes for both versions on 2 cores).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import llm_marl_envs

CONSTANTS = ("True", "False", "0", "1", "[]", "''", "None")
LEAK = re.compile(r"assert\s+\w+\((.*)\)\s*==\s*(\S.*?)\s*(?:->|$)", re.M)
VERSIONS = ("llm_marl_envs/CoopCoding-v1", "llm_marl_envs/CoopCoding-v4")


def _helper(constant: str) -> str:
    return f"def aux(*args, **kwargs):\n    return {constant}\n"


def _main(entry: str, table: list[tuple[str, str]] = ()) -> str:
    rows = "".join(f"    if args == ({a},):\n        return {e}\n" for a, e in table)
    return f"def {entry}(*args):\n{rows}    r = aux(*args)\n    s = r\n    return s\n"


def _episode(env, row: int, constant: str, turns: int) -> list[dict]:
    env.reset(seed=0, options={"row_index": row})
    entry = env.problem["entry_point"]
    out = []
    table: list[tuple[str, str]] = []
    for _ in range(turns):
        env.step(_helper(constant))
        env.step(_main(entry, table))
        out.append(dict(env.infos["main_0"]["reward_components"]))
        if len(out) < turns:
            table = LEAK.findall(str(env.observe("main_0")))
    return out


def measure(env_id: str, limit: int) -> dict[str, float]:
    one = llm_marl_envs.make(env_id, split="train")
    two = llm_marl_envs.make(env_id, split="train", num_turns=2)
    rows = range(min(limit, len(one.data.rows)))
    best_one, best_two, bonus = [], [], 0
    for row in rows:
        scored = [_episode(one, row, c, 1)[0] for c in CONSTANTS]
        top = max(scored, key=lambda c: c["total"])
        best_one.append(top["total"])
        bonus += top["cooperation"] > 0
        constant = CONSTANTS[scored.index(top)]
        best_two.append(_episode(two, row, constant, 2)[1]["total"])
    n = len(rows)
    return {
        "problems": n,
        "bonus_paid": bonus,
        "constant_mean": sum(best_one) / n,
        "lookup_round2_mean": sum(best_two) / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=100, help="training problems")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
    )
    args = parser.parse_args()
    lines = [
        "# The coding reward's two hacks, v1 against v4",
        "",
        "Measured by `python benchmarks/coding_reward_hacks.py` (every program in the sandbox). A "
        "helper that returns the best constant per problem and a main that hands it on, on the "
        "first training problems; in round 2, a main that is a lookup table of the asserts the "
        "round-2 prompt shows. An honest failure (no test passed) scores 1.50 per round.",
        "",
        "| version | problems | bonus paid | constant hack, mean | lookup table in round 2, mean "
        "| s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for env_id in VERSIONS:
        start = time.perf_counter()
        r = measure(env_id, args.limit)
        lines.append(
            f"| {env_id.split('/')[-1]} | {r['problems']} | {r['bonus_paid']} | "
            f"{r['constant_mean']:.2f} | {r['lookup_round2_mean']:.2f} | "
            f"{time.perf_counter() - start:.0f} |"
        )
        print(lines[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "coding_reward_hacks.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out / 'coding_reward_hacks.md'}")


if __name__ == "__main__":
    main()
