"""baselines/compare.py: overlaying runs, seed bands and the first/last table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

SCRIPT = Path(__file__).resolve().parents[2] / "baselines" / "compare.py"
spec = importlib.util.spec_from_file_location("compare_baseline", SCRIPT)
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)


def write_run(folder: Path, rewards: list[float], kl: list[float] | None = None) -> Path:
    folder.mkdir(parents=True)
    rows = [
        {"iteration": i, "task_reward_mean": r, **({"kl_pioneer": kl[i]} if kl else {})}
        for i, r in enumerate(rewards)
    ]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_seeds_with_one_label_are_averaged_and_cut_to_the_shortest(tmp_path):
    a = write_run(tmp_path / "a", [0.0, 1.0, 2.0, 3.0], kl=[0, 1, 2, 3])
    b = write_run(tmp_path / "b", [2.0, 3.0, 4.0])
    c = write_run(tmp_path / "c", [5.0, 5.0, 5.0])
    runs = compare.grouped([f"cory={a}", f"cory={b}", str(c)])
    assert list(runs) == ["cory", "c"]
    values = compare.series(runs["cory"], "task_reward_mean")
    assert values.shape == (2, 3) and values.mean(0).tolist() == [1.0, 2.0, 3.0]
    assert compare.series(runs["c"], "kl_pioneer") is None  # a key the run lacks is skipped
    text = compare.table(runs, ["task_reward_mean"], last=2)
    assert "| cory | 1.000 -> 2.500 |" in text and "| c | 5.000 -> 5.000 |" in text
    text = compare.table(runs, ["task_reward_mean"], last=1, first=2)
    assert "(first 2 -> last 1)" in text and "| cory | 1.500 -> 3.000 |" in text


def test_main_writes_a_png(tmp_path, capsys):
    a = write_run(tmp_path / "a", [0.1, 0.2, 0.4], kl=[0.0, 0.5, 1.0])
    out = tmp_path / "plots" / "cmp.png"
    compare.main(
        [
            str(a / "metrics.jsonl"),
            "--keys",
            "task_reward_mean",
            "kl_pioneer",
            "--out",
            str(out),
            "--smooth",
            "2",
            "--table",
        ]
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "0.100 -> 0.233" in capsys.readouterr().out  # mean of the last 5 (all 3)


def test_running_mean_and_missing_run(tmp_path):
    import numpy as np

    assert compare.running_mean(np.array([1.0, 3.0, 5.0]), 2).tolist() == [1.0, 2.0, 4.0]
    with pytest.raises(SystemExit, match="no metrics.jsonl"):
        compare.load(str(tmp_path / "nowhere"))


def test_eval_file_uses_each_rows_iteration(tmp_path, capsys):
    runs = []
    for seed, rewards in enumerate(([0.2, 0.5, 0.6], [0.3, 0.4, 0.8])):
        folder = write_run(tmp_path / f"cory-{seed}", [0.0])
        rows = [
            {"iteration": it, "task_reward_pioneer": r}
            for it, r in zip((0, 10, 20), rewards, strict=True)
        ]
        (folder / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        runs.append(f"cory={folder}")
    x, values = compare.steps(compare.grouped(runs, "eval.jsonl")["cory"], "task_reward_pioneer")
    assert x.tolist() == [0.0, 10.0, 20.0]
    assert values.mean(0).tolist() == pytest.approx([0.25, 0.45, 0.7])
    out = tmp_path / "eval.png"
    compare.main(
        [
            *runs,
            "--file",
            "eval.jsonl",
            "--keys",
            "task_reward_pioneer",
            "--out",
            str(out),
            "--table",
            "--last",
            "1",
        ]
    )
    assert out.stat().st_size > 0
    assert "| cory | 0.250 -> 0.700 |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no eval.jsonl"):
        compare.load(str(tmp_path / "nowhere"), "eval.jsonl")
