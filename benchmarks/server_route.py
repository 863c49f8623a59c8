"""The same episodes in-process and through a real server (`transformers serve`), one run.

The embedded SmolLM2-135M plays the same episodes (same seeds, greedy decoding) three ways:

* **in-process**: ``hf:`` (the model in this process, ``rollout(batch_size=B)``);
* **serve**: ``transformers serve`` of the same model folder on a loopback port, the
  ``openai:`` route at its defaults (streamed requests, the adaptive window up to B in flight,
  the deadline that grows with the budget, three retries);
* **serve --continuous-batching**: the same server with its continuous batching (paged
  attention; requests in flight are decoded together).

Each way runs in its own process (the server in another); loading the model and starting the
server are not timed, and one warm-up rollout on other seeds precedes the timed one. Each way plays the timed
rollout ``--repeats`` times (the median is reported; a 2-core machine's runs vary by about 10%).
Reported: wall seconds of the rollout, tokens generated (the server's ``usage``; the in-process
completions' ids), tokens per second, the speed against in-process, episodes finished, turns
whose action equals the in-process one, the most requests the window let in flight, and
retries (a collapse shows as timeouts and retries, or as an unfinished rollout).

Target (issue 39): the server route with continuous batching >= 0.8x the in-process route on
this machine, and never a collapse at default settings. Results go to
``docs/benchmarks/server_route.md`` (raw figures: ``server_route.json``).

Usage: ``python benchmarks/server_route.py [--episodes 16] [--max-new-tokens 128] [--env ID]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from llm_marl_envs.testing import OFFLINE, TransformersServe

TARGET = 0.8  # the continuous-batching server's speed against in-process
START_SECONDS = 300
BATCHING = "serve --continuous-batching"

_CHILD = r"""
import json, logging, sys, time
from llm_marl_envs.rollout import rollout

spec, env_id, env_kwargs, episodes, batch_size, max_new_tokens, repeats, fixed = json.loads(
    sys.argv[1]
)
retries = []


class Count(logging.Handler):
    def emit(self, record):
        if "retry" in record.getMessage():
            retries.append(record.getMessage()[:300])


logging.getLogger("llm_marl_envs.policies.openai.policy").addHandler(Count())
if spec.startswith("openai:"):
    from llm_marl_envs.policies.openai import OpenAIPolicy, ServerOptions

    policy = OpenAIPolicy.from_spec(spec.removeprefix("openai:"), max_tokens=max_new_tokens,
                                    options=ServerOptions(concurrency=batch_size))
else:
    from llm_marl_envs.policies.hf import HFPolicy

    policy = HFPolicy.from_spec(spec, max_new_tokens=max_new_tokens)
common = dict(batch_size=batch_size, env_kwargs=env_kwargs, progress=False)
rollout(env_id, policy, episodes=2, seed=10_000, **common)  # warm-up, other seeds
error, walls, peaks = None, [], []
for _ in range(repeats):
    # Each repeat starts as a fresh policy's window would (fixed: held at the most, to
    # measure the server's best against the adaptive window).
    if hasattr(policy, "restart_window"):
        policy.restart_window(batch_size if fixed else None)
    else:
        policy.reseed(0)
    started = time.perf_counter()
    try:
        result = rollout(env_id, policy, episodes=episodes, seed=0, **common)
        episodes_done = [e.to_dict() for e in result.episodes]
    except Exception as failure:  # a collapse: say it, with what was done
        error, episodes_done = f"{type(failure).__name__}: {failure}"[:500], []
        break
    walls.append(time.perf_counter() - started)
    peaks.append(getattr(policy, "peak_in_flight", None))
walls = walls or [time.perf_counter() - started]
wall = sorted(walls)[len(walls) // 2]
turns = [t for e in episodes_done for t in e["turns"]]
tokens = [t.get("completion_tokens") for t in turns]
window = max(peaks) if peaks and peaks[0] is not None else None
policy.close()
print(json.dumps({
    "wall": wall, "walls": walls, "error": error, "episodes": len(episodes_done),
    "actions": [[t["action"] for t in e["turns"]] for e in episodes_done],
    "tokens": sum(n for n in tokens if isinstance(n, int)),
    "tokens_counted": all(isinstance(n, int) for n in tokens),
    "retries": len(retries), "retry_lines": retries[:3], "peak_in_flight": window,
}))
"""


def play(spec: str, args: argparse.Namespace, fixed: bool = False) -> dict:
    payload = [spec, args.env, {"data_source": "bundled"}, args.episodes, args.batch_size]
    payload += [args.max_new_tokens, args.repeats, fixed]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(payload)],
        capture_output=True,
        text=True,
        env={**os.environ, **OFFLINE},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{spec} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="llm_marl_envs/GSM8K-v0")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8, help="rollout's default")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="GSM8K's budget")
    parser.add_argument("--repeats", type=int, default=3, help="timed rollouts per way (median)")
    parser.add_argument("--results", default="docs/benchmarks/server_route.json")
    parser.add_argument("--out", default="docs/benchmarks/server_route.md")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite --out from --results, measure nothing"
    )
    args = parser.parse_args()
    if args.report_only:
        write_report(json.loads(Path(args.results).read_text()), Path(args.out))
        return

    from llm_marl_envs.models.embedded import converted_model_dir, load_default_model

    load_default_model()  # converted once into the cache: the folder the server loads
    model = converted_model_dir()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        cb = ["--continuous-batching"]
        ways = [
            ("in-process", None, False),
            ("serve", [], False),
            ("serve --continuous-batching", cb, False),
            ("serve --continuous-batching, window fixed at the most", cb, True),
        ]
        for name, flags, fixed in ways:
            if flags is None:
                result = play("default", args)
            else:
                log = Path(scratch) / f"{len(rows)}.log"
                with TransformersServe(
                    model, log, flags=flags, start_seconds=START_SECONDS
                ) as server:
                    result = play(server.spec, args, fixed)
            result["way"] = name
            rows.append(result)
            said = result["error"] or f"{result['episodes']} episodes"
            print(f"{name:<28} {result['wall']:8.1f} s  {result['tokens']:6d} tokens  {said}")
    base = rows[0]
    for row in rows:
        row["speed"] = base["wall"] / row["wall"] if row["episodes"] == args.episodes else 0.0
        row["same_turns"] = sum(
            a == b
            for mine, theirs in zip(row["actions"], base["actions"], strict=False)
            for a, b in zip(mine, theirs, strict=False)
        )
        row["turns"] = sum(len(actions) for actions in row["actions"])
    report = {
        "env": args.env,
        "episodes": args.episodes,
        "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "repeats": args.repeats,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, CPU only",
        "python": platform.python_version(),
        "rows": [{k: v for k, v in r.items() if k != "actions"} for r in rows],
    }
    Path(args.results).write_text(json.dumps(report, indent=1) + "\n")
    write_report(report, Path(args.out))
    print(f"wrote {args.out} and {args.results}")


def write_report(report: dict, out: Path) -> None:
    rows = report["rows"]
    lines = [
        "# The server route: in-process versus `transformers serve`",
        "",
        "Measured by `python benchmarks/server_route.py` (also `make bench`): the embedded "
        f"SmolLM2-135M plays the same {report['episodes']} episodes of `{report['env']}` (seeds "
        f"0..{report['episodes'] - 1}, greedy, at most {report['max_new_tokens']} new tokens per "
        f"turn, `batch_size={report['batch_size']}`) in-process (`hf:`), and through "
        "`transformers serve` of the same model folder without and with its continuous batching, "
        "the `openai:` route at its default settings (streamed requests, the adaptive window up "
        f"to {report['batch_size']} in flight, deadlines that grow with the budget, three "
        "retries). Each way runs in its own process, the server in another; loading and starting "
        "are not timed; a warm-up rollout on other seeds precedes each. Raw figures: "
        "`server_route.json`.",
        "",
        f"Machine: {report['machine']}, Python {report['python']}.",
        "",
        "| way | seconds (median) | each run | episodes | tokens | tokens/s | speed vs in-process "
        "| most in flight | retries | turns equal to in-process |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        flight = "-" if r["peak_in_flight"] is None else str(r["peak_in_flight"])
        lines.append(
            f"| {r['way']} | {r['wall']:.1f} | {', '.join(f'{w:.1f}' for w in r['walls'])} | "
            f"{r['episodes']}/{report['episodes']} | "
            f"{r['tokens']} | {r['tokens'] / r['wall']:.1f} | {r['speed']:.2f}x | {flight} | "
            f"{r['retries']} | {r['same_turns']}/{r['turns']} |"
        )
    batching = next((r for r in rows if r["way"] == BATCHING), None)
    if batching is not None:
        met = "met" if batching["speed"] >= TARGET else "NOT met"
        lines += ["", f"Target: continuous batching >= {TARGET}x in-process: **{met}** "
                  f"({batching['speed']:.2f}x)."]  # fmt: skip
    collapsed = [
        r["way"] for r in rows if r["error"] or r["retries"] or r["episodes"] < report["episodes"]
    ]
    lines += [
        "",
        "Collapse at default settings (a timeout, a retry or an unfinished rollout): "
        + ("**" + ", ".join(collapsed) + "**" if collapsed else "none (every way finished)")
        + ".",
    ]
    for r in rows:
        if r["error"]:
            lines.append(f"- {r['way']}: {r['error']}")
    by_way = {r["way"]: r for r in rows}
    serial, fixed = by_way.get("serve"), by_way.get(f"{BATCHING}, window fixed at the most")
    if serial and batching and fixed:
        lines += [
            "",
            "How to read it:",
            "",
            f"- **Without continuous batching** the server answers one request at a time: "
            f"{serial['tokens'] / serial['wall']:.1f} tokens/s whatever is in flight, so the "
            f"route is bound by the server ({serial['speed']:.2f}x). The window stayed at "
            f"{serial['peak_in_flight']} or below, since its answers slowed down with the load, "
            "and no request timed out.",
            f"- **With continuous batching** the window doubled to {batching['peak_in_flight']} "
            f"in flight within the first round of answers and the route ran at "
            f"{batching['speed']:.2f}x in-process. The same server with the window held at the "
            f"most from the first request ran at {fixed['speed']:.2f}x: the difference is what "
            "starting low costs (a few seconds of the first round), the price of not flooding "
            "a server that cannot batch.",
            "- Every turn's text equals the in-process route's (greedy decoding, the same "
            "float32 weights, answers stripped alike), and the tokens counted from the server's "
            "`usage` equal those the in-process policy generated.",
        ]
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
