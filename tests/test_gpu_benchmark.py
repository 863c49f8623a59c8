"""benchmarks/gpu.py: the quick CPU run measures every section it promises (so the GPU run
does not rot), the model it builds has SmolLM2's tokenizer and chat template, a missing device is
a one-line error, and a section that cannot run is reported, not raised."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "gpu.py"
spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
bench = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bench  # its dataclasses look their module up
spec.loader.exec_module(bench)


@pytest.mark.slow
def test_the_quick_cpu_run_measures_every_section(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), **bench.OFFLINE}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((tmp_path / "gpu.json").read_text())
    assert results["model"]["layers"] == 2 and results["machine"]["device"] == "cpu"
    assert set(results["ceiling"]) == {"2", "8"}
    assert all(row["completions_per_s"] > 0 for row in results["ceiling"].values())
    gap = results["gap"]
    assert gap["batch"] == 8 and all(gap[step] > 0 for step in bench.GAP_STEPS), gap
    assert gap["new_width_first_s"] > 0 and gap["new_width_warm_s"] > 0
    for env_id in bench.ENV_KWARGS:  # fixed-length answers: the compute is the real model's
        row = results["api"][env_id]
        assert row["new_tokens"] == 8 and row["turns"] >= 16, (env_id, row)
        assert 0 <= row["outside_policy_share"] < 1 and row["vs_ceiling"] > 0
        calls = row["calls"]  # every generate call, timed: together, the policy's turns
        assert sum(c["prompts"] for c in calls) == row["turns"] and min(c["s"] for c in calls) > 0
    assert results["cli"][bench.GSM8K]["new_tokens"] == 8
    for name in ("cory", "magrpo"):
        trainer = results["trainers"][name]
        assert trainer["iterations"] == 2 and trainer["seconds_per_iteration"] > 0, trainer
        assert trainer["peak_rss_mb"] > 0 and "speedup_vs_cpu" not in trainer  # a shrunk model
    warm = results["executors"]["warm"]
    assert {"local-1-threads", "local-2-threads"} <= set(warm)
    assert all(row["same_records_as_local"] for row in warm.values())
    assert results["executors"]["cold_command"]["local"]["command_s"] > 0
    assert results["compile"] == {"not_measured": "--quick (compiling takes minutes on a CPU)"}
    report = (tmp_path / "gpu.md").read_text()
    assert "Not measured yet on a GPU" in report and "not measured: --quick" in report
    assert "## Where a policy call's time goes" in report and "8x" in report
    assert "failed" not in report


@pytest.mark.slow
def test_the_model_folder_has_smollm2s_tokenizer_and_chat_template(tmp_path):
    from transformers import AutoTokenizer

    bench.save_tokenizer(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
    )
    assert chat.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert chat.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert tokenizer.pad_token == tokenizer.eos_token == "<|im_end|>"
    assert (
        len(tokenizer) == json.loads((bench.CONFIG_DIR / "config.json").read_text())["vocab_size"]
    )
    text = "Natalia sold clips to 48 of her friends in April."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text and len(ids) < len(text) / 2  # real BPE merges


def test_the_config_is_smollm2_135ms_shape():
    config = json.loads((bench.CONFIG_DIR / "config.json").read_text())
    shape = {k: config[k] for k in ("num_hidden_layers", "hidden_size", "vocab_size")}
    assert shape == {"num_hidden_layers": 30, "hidden_size": 576, "vocab_size": 49152}
    assert "Apache License 2.0" in (bench.CONFIG_DIR / "README.md").read_text()


def test_an_absent_gpu_is_a_one_line_error_naming_the_fix():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit) as stop:
        bench.pick_device("cuda:0")
    message = str(stop.value)
    assert "\n" not in message and "CUDA device" in message and "--device cpu" in message
    assert bench.pick_device("cpu") == "cpu" and bench.pick_device("auto") == "cpu"


def test_a_section_that_cannot_run_is_reported_not_raised(capsys):
    budget = bench.Budget(100)

    def broken():
        raise ValueError("first\nlast line")

    def absent():
        raise bench.Unavailable("no --device option yet")

    assert bench.measure("b", budget, 1, broken) == {
        "not_measured": "failed: ValueError: last line"
    }
    assert bench.measure("a", budget, 1, absent) == {"not_measured": "no --device option yet"}
    assert "over" not in str(bench.measure("ok", budget, 1, lambda: {"x": 1}))
    skipped = bench.measure("big", budget, 1_000, lambda: pytest.fail("ran past the budget"))
    assert skipped["not_measured"].startswith("~1000 s needed")
    assert "b (0.0 s): not measured: failed: ValueError: last line" in capsys.readouterr().out


def test_the_report_gives_the_targets_verdicts_on_a_gpu():
    row = {
        "episodes": 512,
        "turns": 1024,
        "wall_s": 8.0,
        "turns_per_s": 128.0,
        "vs_ceiling": 0.65,
        "outside_policy_share": 0.02,
        "new_tokens": 64.0,
    }
    results = {
        "machine": {
            "device": "cuda",
            "name": "NVIDIA H200",
            "memory_mib": 143771,
            "cores": 16,
            "python": "3.12.3",
            "torch": "2.11.0+cu130",
            "transformers": "5",
        },
        "quick": False,
        "model": {"not_measured": "x"},
        "api": {bench.GSM8K: row},
        "cli": {bench.GSM8K: row, bench.TLDR: {"not_measured": "~20 s needed, 3 s left"}},
        "trainers": {"cory": {"not_measured": "baselines/cory.py has no --device option yet"}},
    }
    report = bench.report(results)
    assert "Device: **NVIDIA H200**, 143,771 MiB" in report
    assert "Not measured yet" not in report
    assert "CLI GSM8K-v0 vs ceiling: 0.65x (target >= 0.8x: NOT met)" in report
    assert "outside generate, GSM8K-v0: 2.0% (target <= 5%: met)" in report
    assert "CLI TLDRSummarization-v0: not measured: ~20 s needed, 3 s left" in report
    assert "`cory.py`: not measured: baselines/cory.py has no --device option yet" in report


def test_sections_takes_known_names_in_the_runs_order():
    import argparse

    assert bench.sections("api, ceiling") == ("ceiling", "api")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown section.*bogus.*choose from"):
        bench.sections("gap,bogus")
    with pytest.raises(argparse.ArgumentTypeError, match="none given"):
        bench.sections(",")
