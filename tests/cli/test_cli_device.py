"""Where models run, from the command line: ``--device``, ``--dtype``, ``--compile`` and
``--batch-size auto`` on ``rollout``, ``play``, ``demo``, ``eval`` and ``leaderboard verify``
reach the policies as their ``GenerationConfig`` (docs/gpu.md)."""

from __future__ import annotations

import dataclasses
import importlib
import json

import pytest

from llm_marl_envs.cli import commands, dispatch
from llm_marl_envs.cli import main
from llm_marl_envs.policies import GenerationConfig

evaluate = importlib.import_module("llm_marl_envs.evaluation.evaluate")
leaderboard = importlib.import_module("llm_marl_envs.leaderboard.board")

torch = pytest.importorskip("torch")

MAZE = "llm_marl_envs/MazeCollab-v0"


class Captured(Exception):
    """Stops a command once the call under test has been seen."""


def _capture(monkeypatch, module, name: str) -> dict:
    """Replace ``module.name`` by a stub that keeps its keyword arguments and stops."""
    seen: dict = {}

    def stub(*args, **kwargs):
        seen.update(kwargs)
        config = kwargs.get("config")  # an EvalConfig, built once by the CLI and passed whole
        if config is not None:
            seen.update({f.name: getattr(config, f.name) for f in dataclasses.fields(config)})
        raise Captured

    monkeypatch.setattr(module, name, stub)
    return seen


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize(
    ("argv", "module", "name"),
    [
        (["rollout", MAZE], dispatch, "run_rollout"),
        (["play", MAZE], dispatch, "run_play"),
        (["demo"], dispatch, "run_demo"),
        (["eval", "lite", "--policy", "tiny"], evaluate, "evaluate"),
        (["leaderboard", "verify", "some-entry"], leaderboard, "verify_entry"),
    ],
)
def test_every_model_command_takes_a_device_a_dtype_and_compile(monkeypatch, argv, module, name):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # two GPUs, as far as told
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    seen = _capture(monkeypatch, module, name)
    with pytest.raises(Captured):
        main([*argv, "--device", "cuda:1", "--dtype", "bf16", "--compile"])
    generation = seen["generation"]
    assert (generation.device, generation.dtype, generation.compile) == ("cuda:1", "bf16", True)
    seen.clear()
    with pytest.raises(Captured):
        main(argv)
    assert (seen["generation"].device, seen["generation"].dtype) == ("auto", "auto")
    assert not seen["generation"].compile


def test_batch_size_auto_is_the_default_and_8_on_the_cpu(monkeypatch, no_cuda):
    played = _capture(monkeypatch, commands, "rollout")
    with pytest.raises(Captured):
        main(["rollout", MAZE, "--policy", "scripted"])
    assert played["batch_size"] == 8
    evaluated = _capture(monkeypatch, evaluate, "evaluate")
    with pytest.raises(Captured):
        main(["eval", "lite", "--policy", "scripted", "--batch-size", "auto"])
    assert evaluated["batch_size"] == 8
    with pytest.raises(Captured):
        main(["eval", "lite", "--policy", "scripted", "--batch-size", "3"])
    assert evaluated["batch_size"] == 3


def test_batch_size_auto_is_256_episodes_on_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    played = _capture(monkeypatch, commands, "rollout")
    with pytest.raises(Captured):
        main(["rollout", MAZE, "--policy", "scripted"])
    assert played["batch_size"] == 256
    with pytest.raises(Captured):
        main(["rollout", MAZE, "--policy", "scripted", "--device", "cpu"])
    assert played["batch_size"] == 8


@pytest.mark.parametrize("value", ["0", "many", "-2"])
def test_a_bad_batch_size_is_a_usage_error(capsys, value):
    with pytest.raises(SystemExit) as stop:
        main(["rollout", MAZE, "--batch-size", value])
    assert stop.value.code == 2
    assert f"--batch-size: must be auto or an int >= 1, got {value}" in capsys.readouterr().err


@pytest.mark.parametrize("device", ["cuda", "cuda:7"])
def test_an_absent_device_is_one_line_naming_the_devices_there(capsys, no_cuda, device):
    code = main(["rollout", MAZE, "--policy", "tiny", "--device", device, "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"llm-marl: error: device {device!r} is not on this machine")
    assert "only the cpu" in err and "Traceback" not in err


@pytest.mark.slow
def test_compile_on_the_cpu_is_one_line(capsys):
    code = main(["rollout", MAZE, "--policy", "tiny", "--device", "cpu", "--compile"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "compile (a static KV cache with torch.compile) needs a CUDA device" in err


def test_an_openai_seat_ignores_device_and_dtype():
    from llm_marl_envs.policies import ModelCache

    models = ModelCache()
    # An absent GPU is not an error for a server's model: the server places it.
    config = GenerationConfig(device="cuda:7", dtype="bfloat16", max_new_tokens=4)
    policy = models.policy("openai:http://127.0.0.1:9/v1#m", config)
    assert policy.describe()["kind"] != "transformers"
    models.close()


@pytest.mark.slow
def test_the_flags_reach_the_tiny_model_on_the_cpu(tmp_path, monkeypatch):
    from llm_marl_envs.models.loading import load_model
    from llm_marl_envs.policies import hf

    described = []

    def load(*args, **kwargs):
        model, tokenizer = load_model(*args, **kwargs)
        described.append(hf.HFPolicy(model, tokenizer).describe())
        return model, tokenizer

    monkeypatch.setattr(hf, "load_model", load)
    out = tmp_path / "gsm8k.jsonl"
    argv = ["rollout", "llm_marl_envs/GSM8K-v0", "--policy", "tiny", "--episodes", "2"]
    argv += ["--max-new-tokens", "1", "--no-progress", "--out", str(out)]
    assert main([*argv, "--device", "cpu", "--dtype", "float64"]) == 0
    assert [(d["device"], d["dtype"]) for d in described] == [("cpu", "float64")]
    assert [json.loads(line)["episode"] for line in out.read_text().splitlines()] == [0, 1]


def test_dtype_auto_is_float32_on_the_cpu(no_cuda):
    from llm_marl_envs.policies import ModelCache

    models = ModelCache()
    policy = models.policy("tiny", GenerationConfig(max_new_tokens=2))
    assert (policy.describe()["device"], policy.describe()["dtype"]) == ("cpu", "float32")
    assert models.policy("tiny", GenerationConfig(device="cpu", dtype="float32")).model is (
        policy.model
    )  # auto resolved: one load for the same placement
