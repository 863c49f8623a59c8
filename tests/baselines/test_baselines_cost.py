"""benchmarks/baselines_cost.py: one real (tiny-model) measurement and the report's verdicts."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "baselines_cost.py"
spec = importlib.util.spec_from_file_location("baselines_cost", SCRIPT)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def row(config: str, seconds: float, rss: float) -> dict:
    return {
        "config": config,
        "args": bench.CONFIGS[config],
        "iterations": 3,
        "seconds_per_iteration": seconds,
        "rollout_seconds": seconds / 4,
        "train_seconds": seconds * 3 / 4,
        "peak_rss_mb": rss,
        "task_reward_first_last": [0.1, 0.2],
    }


@pytest.mark.parametrize(
    ("seconds", "rss", "verdict"),
    [
        (
            80.0,
            2_000.0,
            ("memory 0.40x (target <= 1.3x: met), time per iteration 2.00x (target <= 2.2x: met)"),
        ),
        (
            100.0,
            6_000.0,
            (
                "memory 1.20x (target <= 1.3x: met), time per iteration 2.50x "
                "(target <= 2.2x: NOT met)"
            ),
        ),
    ],
)
def test_report_states_each_target(tmp_path, seconds, rss, verdict):
    out = tmp_path / "cost.md"
    args = argparse.Namespace(model="default", iterations=3, note="")
    rows = [row("ppo-full", 40.0, 5_000.0), row("cory-lora-shared", seconds, rss)]
    bench.write_report(rows, args, out)
    text = out.read_text()
    assert verdict in text
    assert "| cory-lora-shared | `--algo cory --lora --shared-base` |" in text


@pytest.mark.slow
def test_one_configuration_runs_the_real_trainer():
    result = bench.run_config(
        "cory-lora-shared",
        2,
        "tiny",
        [
            "--max-new-tokens",
            "4",
            "--batch-size",
            "2",
            "--mini-batch-size",
            "2",
            "--threads",
            "1",
            "--env-kwargs",
            '{"data_source": "bundled"}',
        ],
    )
    assert result["iterations"] == 2 and result["seconds_per_iteration"] > 0
    assert result["peak_rss_mb"] > 50  # a process that loaded torch and a model
