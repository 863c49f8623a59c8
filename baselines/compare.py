"""Overlay the curves of several training runs (their ``metrics.jsonl``) in one PNG.

    python baselines/compare.py runs/cory-IMDBSentiment-v0-0 runs/ppo-IMDBSentiment-v0-0 \
        --keys task_reward_pioneer kl_pioneer combined_reward_pioneer --out cory_vs_ppo.png

Each run is a folder written by ``cory.py`` or ``magrpo.py`` (or its ``metrics.jsonl``),
optionally labelled ``LABEL=PATH``. Runs with the same label (several seeds) are drawn as
their mean with a band from the lowest to the highest seed. ``--smooth N`` adds a running
mean over N iterations. A key missing from a run is skipped for that run. ``--table`` prints
the first and last values (means over the first ``--first`` and the last ``--last`` rows, over
seeds too) as a Markdown table.
``--file eval.jsonl`` reads another per-run file instead, e.g. ``cory.py``'s evaluations
(x is each row's ``iteration``: the updates done before it).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np


def load(path: str, name: str = "metrics.jsonl") -> list[dict]:
    file = Path(path)
    if file.is_dir():
        file = file / name
    if not file.exists():
        raise SystemExit(f"no {name} at {path}")
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def running_mean(y: np.ndarray, n: int) -> np.ndarray:
    if n <= 1:
        return y
    return np.array([y[max(0, i - n + 1) : i + 1].mean() for i in range(len(y))])


def grouped(specs: list[str], name: str = "metrics.jsonl") -> dict[str, list[list[dict]]]:
    """``{label: [metrics of each run]}``; the label defaults to the folder name."""
    runs: dict[str, list[list[dict]]] = defaultdict(list)
    for spec in specs:
        label, _, path = spec.rpartition("=")
        runs[label or Path(path).name].append(load(path, name))
    return runs


def series(runs: list[list[dict]], key: str) -> np.ndarray | None:
    """``(seeds, iterations)`` values of ``key``, cut to the shortest run; None if absent."""
    found = steps(runs, key)
    return None if found is None else found[1]


def steps(runs: list[list[dict]], key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(x, values)``: the rows' ``iteration`` (else their index) and ``series``' values."""
    rows = [
        [(m.get("iteration", i), m[key]) for i, m in enumerate(metrics) if key in m]
        for metrics in runs
    ]
    rows = [r for r in rows if r]
    if not rows:
        return None
    length = min(len(r) for r in rows)
    return (
        np.array([x for x, _ in rows[0][:length]], dtype=float),
        np.array([[y for _, y in r[:length]] for r in rows], dtype=float),
    )


def plot(
    runs: dict[str, list[list[dict]]], keys: list[str], out: Path, smooth: int, title: str
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(keys), figsize=(5 * len(keys), 3.8), constrained_layout=True, squeeze=False
    )
    for ax, key in zip(axes[0], keys, strict=True):
        for label, metrics in runs.items():
            found = steps(metrics, key)
            if found is None:
                continue
            x, values = found
            marker = "o" if values.shape[1] <= 12 else None  # a few evaluations: show the points
            mean = running_mean(values.mean(0), smooth)
            seeds = values.shape[0]
            (line,) = ax.plot(
                x, mean, marker=marker, label=f"{label} (n={seeds})" if seeds > 1 else label
            )
            if seeds > 1:
                ax.fill_between(
                    x,
                    running_mean(values.min(0), smooth),
                    running_mean(values.max(0), smooth),
                    color=line.get_color(),
                    alpha=0.2,
                )
        ax.set(title=key, xlabel="iteration")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def table(runs: dict[str, list[list[dict]]], keys: list[str], last: int, first: int = 1) -> str:
    head = "first" if first == 1 else f"first {first}"
    lines = [
        "| run | " + " | ".join(f"{k} ({head} -> last {last})" for k in keys) + " |",
        "|---|" + "---:|" * len(keys),
    ]
    for label, metrics in runs.items():
        cells = []
        for key in keys:
            values = series(metrics, key)
            cells.append(
                "-"
                if values is None
                else f"{values[:, :first].mean():.3f} -> {values[:, -last:].mean():.3f}"
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "runs", nargs="+", help="run folders or metrics.jsonl files, optionally LABEL=PATH"
    )
    parser.add_argument(
        "--keys", nargs="+", default=["task_reward_mean", "kl_pioneer", "combined_reward_mean"]
    )
    parser.add_argument("--out", default="compare.png")
    parser.add_argument("--smooth", type=int, default=1, help="running mean over N iterations")
    parser.add_argument("--title", default="")
    parser.add_argument(
        "--file",
        default="metrics.jsonl",
        help="file read in each run folder, e.g. eval.jsonl (cory.py's evaluations)",
    )
    parser.add_argument("--table", action="store_true", help="print first/last values as Markdown")
    parser.add_argument("--last", type=int, default=5, help="rows averaged for 'last' in --table")
    parser.add_argument("--first", type=int, default=1, help="rows averaged for 'first' in --table")
    args = parser.parse_args(argv)
    runs = grouped(args.runs, args.file)
    plot(runs, args.keys, Path(args.out), args.smooth, args.title)
    print(f"wrote {args.out}")
    if args.table:
        print(table(runs, args.keys, args.last, args.first))


if __name__ == "__main__":
    main()
