"""The policy server's own throughput: requests per second through ``serve_policy``, side by
side with the code of another git revision (``--baseline REV``), one run.

A stand-in model answers a batch in 2 ms plus 0.1 ms per prompt (a model that is efficient on
batches, so micro-batching pays), echoing each prompt; ``--clients`` threads each send
``--requests`` completion requests (one prompt of about 1 KB, each on a new connection, as the
server closes each one). For each code tree, in turn and ``--repeats`` times, a fresh process
runs the server and its clients on loopback and reports the wall time, requests per second,
latency (median, 95th percentile) and the mean batch the policy saw. Results go to
``docs/benchmarks/policy_server.md`` and ``.json``.

    PYTHONPATH=. python benchmarks/policy_server.py [--baseline REV] [--clients 16]
        [--requests 50] [--repeats 3]

This is the figure the issue on servers (50) keeps: moving the server to another HTTP stack
must not lower it.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, statistics, sys, threading, time, urllib.request
sys.meta_path[:] = [f for f in sys.meta_path
    if not str(getattr(f, '__module__', '')).startswith('__editable__')]
import llm_marl_envs
from llm_marl_envs.policies.base import Completion, Policy
from llm_marl_envs.policies.server import serve_policy

clients, per_client = int(sys.argv[1]), int(sys.argv[2])
batches = []

class Batchy(Policy):
    name = "batchy"
    def generate(self, prompts):
        batches.append(len(prompts))
        time.sleep(0.002 + 0.0001 * len(prompts))
        return [Completion(text=p.observation[:16]) for p in prompts]

body = json.dumps({"model": "m", "prompt": "word " * 200}).encode()
latencies, errors = [], []
with serve_policy(Batchy()) as server:
    url = server.url + "/completions"

    def client():
        for _ in range(per_client):
            start = time.perf_counter()
            request = urllib.request.Request(
                url, data=body, headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    json.load(answer)
            except Exception as error:  # counted: a refused or reset connection
                errors.append(type(error).__name__)
                continue
            latencies.append(time.perf_counter() - start)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
latencies.sort()
print(json.dumps({
    "code": llm_marl_envs.__file__,
    "wall_s": wall,
    "requests": len(latencies),
    "per_s": len(latencies) / wall,
    "p50_ms": 1000 * latencies[len(latencies) // 2],
    "p95_ms": 1000 * latencies[int(len(latencies) * 0.95)],
    "mean_batch": statistics.mean(batches),
    "errors": len(errors),
    "error_kinds": sorted(set(errors)),
}))
"""


def run(code: Path, clients: int, requests: int) -> dict:
    env = {"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(clients), str(requests)],
        capture_output=True,
        text=True,
        env=env,
        cwd=code,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"the benchmark failed under {code}: {done.stderr[-800:]}")
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if not outcome.pop("code").startswith(str(code)):
        raise SystemExit(f"the child imported llm_marl_envs from outside {code}")
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=None, help="a git revision to compare with")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=50, help="per client")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="policy-server-"))
    trees = {"now": REPO}
    try:
        if args.baseline:
            trees["baseline"] = scratch / "baseline"
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(REPO),
                    "worktree",
                    "add",
                    "--detach",
                    str(trees["baseline"]),
                    args.baseline,
                ],
                check=True,
                capture_output=True,
            )
        runs: dict[str, list[dict]] = {label: [] for label in trees}
        for n in range(args.repeats):
            for label, code in trees.items():
                runs[label].append(run(code, args.clients, args.requests))
                print(n, label, runs[label][-1], flush=True)
    finally:
        if args.baseline:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(trees["baseline"])],
                capture_output=True,
            )
        shutil.rmtree(scratch, ignore_errors=True)
    report = {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "baseline": args.baseline,
        "clients": args.clients,
        "requests_per_client": args.requests,
        "repeats": args.repeats,
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "policy_server.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "policy_server.md").write_text(markdown(report))
    print(markdown(report))


def markdown(report: dict) -> str:
    def median(label: str, key: str) -> float:
        return statistics.median(r[key] for r in report["runs"][label])

    lines = [
        "# The policy server's throughput",
        "",
        "Written by `benchmarks/policy_server.py"
        + (f" --baseline {report['baseline']}" if report["baseline"] else "")
        + f"`: {report['clients']} client threads each send {report['requests_per_client']} "
        "completion requests (one prompt of about 1 KB, a new connection each) to "
        "`serve_policy` on loopback, whose stand-in model answers a batch in 2 ms plus 0.1 ms "
        "per prompt; the server and its clients in one fresh process per run "
        f"({report['repeats']} runs per tree, alternating; medians; {report['machine']}, 2 "
        "cores shared with other work). *now* is this tree"
        + (f", *baseline* the code of `{report['baseline']}`." if report["baseline"] else "."),
        "",
        "| tree | requests/s | p50 latency ms | p95 latency ms | mean batch | each run, requests/s "
        "| failed requests, all runs |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for label in report["runs"]:
        each = ", ".join(f"{r['per_s']:.0f}" for r in report["runs"][label])
        failed = sum(r["errors"] for r in report["runs"][label])
        kinds = sorted({k for r in report["runs"][label] for k in r["error_kinds"]})
        lines.append(
            f"| {label} | {median(label, 'per_s'):.0f} | {median(label, 'p50_ms'):.1f} | "
            f"{median(label, 'p95_ms'):.1f} | {median(label, 'mean_batch'):.1f} | {each} | "
            f"{failed}{' (' + ', '.join(kinds) + ')' if kinds else ''} |"
        )
    if "baseline" in report["runs"]:
        ratio = median("now", "per_s") / median("baseline", "per_s")
        lines += ["", f"now / baseline: **{ratio:.2f}x** requests per second."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
