"""One generation config: checked once, mapped by each backend, shared weights per model."""

from __future__ import annotations

import inspect

import pytest

from llm_marl_envs.policies import GenerationConfig, ModelCache, PolicyFactory
from llm_marl_envs.policies.generation import (
    resolve_batch_size,
    resolve_device,
    resolve_dtype_for,
)
from llm_marl_envs.policies.openai import OpenAIPolicy
from llm_marl_envs.policies.server import PolicyServer, serve_policy


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"max_new_tokens": 0}, "max_new_tokens must be None or an int >= 1, got 0"),
        ({"temperature": -1.0}, "temperature must be a finite number >= 0"),
        ({"top_p": 0.0}, "top_p must be a finite number > 0"),
        ({"do_sample": 1}, "do_sample must be a bool, got 1"),
        ({"seed": 1.5}, "seed must be an int"),
        ({"device": ""}, "device must be a non-empty string or None"),
    ],
)
def test_bad_fields_are_one_line_errors(fields, words):
    with pytest.raises(ValueError) as error:
        GenerationConfig(**fields)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_replace_checks_names_and_values():
    config = GenerationConfig(max_new_tokens=8)
    assert config.replace(seed=3) == GenerationConfig(max_new_tokens=8, seed=3)
    with pytest.raises(ValueError, match=r"no field\(s\) \['max_tokens'\]; its fields: "):
        config.replace(max_tokens=4)
    with pytest.raises(ValueError, match="top_p"):
        config.replace(top_p=2.0)


def test_device_is_resolved_in_one_place():
    assert resolve_device(None) == "cpu"  # where the loaders put a model
    assert resolve_device("cpu") == "cpu"
    pytest.importorskip("torch")
    import torch

    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")


def test_auto_is_the_cpu_and_float32_without_cuda(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert GenerationConfig().placement == ("cpu", "float32", False)
    assert resolve_dtype_for("auto", "auto") == "float32"
    assert resolve_dtype_for("cpu", None) == "float32"
    assert resolve_dtype_for("cpu", "bf16") == "bfloat16"  # a name as torch spells it


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_an_absent_cuda_device_is_a_one_line_error_naming_what_is_there(monkeypatch, device):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError) as error:
        resolve_device(device)
    message = str(error.value)
    assert "\n" not in message
    assert f"device {device!r} is not on this machine" in message and "only the cpu" in message


def test_a_cuda_index_out_of_range_names_the_devices_there(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(
        ValueError,
        match=r"'cuda:7' is not on this machine, which has cpu, "
        r"cuda:0, cuda:1; use --device auto",
    ):
        resolve_device("cuda:7")
    with pytest.raises(ValueError, match="'cuda:7' is not on this machine"):
        ModelCache().policy("tiny", GenerationConfig(device="cuda:7"))


def test_auto_dtype_is_bf16_on_a_gpu_that_has_it(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert GenerationConfig().placement == ("cuda", "bfloat16", False)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    assert resolve_dtype_for("cuda", "auto") == "float32"  # a V100 / T4 computes no bf16
    assert resolve_dtype_for("cuda", "float16") == "float16"


def test_unknown_devices_are_one_line_errors():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="unknown device 'gpu'; use auto, cpu, cuda or cuda:N"):
        resolve_device("gpu")


def test_batch_size_auto_is_8_on_the_cpu_and_256_on_a_gpu(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_batch_size("auto", "auto") == 8
    assert resolve_batch_size("auto", "cpu") == 8
    assert resolve_batch_size("32", "auto") == 32 and resolve_batch_size(3, "cpu") == 3
    for bad in ("0", 0, "many", 2.5):
        with pytest.raises(ValueError, match="--batch-size must be auto or an int >= 1"):
            resolve_batch_size(bad, "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_batch_size("auto", "auto") == 256
    assert resolve_batch_size("auto", "cpu") == 8


def test_the_factory_gives_each_environment_its_budget_unless_told():
    maze = PolicyFactory("llm_marl_envs/MazeCollab-v1", seed=5)
    assert maze.generation == GenerationConfig(max_new_tokens=64, seed=5)
    told = GenerationConfig(max_new_tokens=9, seed=1)
    assert PolicyFactory("llm_marl_envs/MazeCollab-v1", generation=told).generation == told


def test_openai_settings_map_onto_its_request_fields():
    base = OpenAIPolicy("http://127.0.0.1:9/v1", model="m", max_tokens=100, temperature=0.5)
    greedy = base.with_generation(GenerationConfig(max_new_tokens=7, temperature=0.9, seed=4))
    assert (greedy.max_tokens, greedy.temperature, greedy.seed) == (7, 0.0, 4)  # greedy = 0
    sampled = base.with_generation(GenerationConfig(do_sample=True, temperature=0.9, top_p=0.8))
    assert (sampled.max_tokens, sampled.temperature, sampled.top_p) == (100, 0.9, 0.8)
    assert (base.max_tokens, base.temperature, base.seed) == (100, 0.5, None)  # not mutated
    assert base.describe() == {
        "kind": "openai-compatible",
        "base_url": "http://127.0.0.1:9/v1",
        "model_id": "m",
    }
    base.close()


def test_the_server_signature_has_no_testing_aids():
    testing = {"delay", "fail_first", "fail_status", "record_requests"}
    assert not testing & set(inspect.signature(serve_policy).parameters)
    assert not testing & set(inspect.signature(PolicyServer).parameters)


# ---------------------------------------------------------------------- the transformers backend
def test_one_load_per_model_and_placement_with_settings_per_policy(monkeypatch):
    pytest.importorskip("torch")
    from llm_marl_envs.policies import hf

    loads = []
    load_model = hf.load_model
    monkeypatch.setattr(hf, "load_model", lambda *a, **k: loads.append(a) or load_model(*a, **k))
    models = ModelCache()
    short = models.policy("tiny", GenerationConfig(max_new_tokens=4, seed=1))
    long = models.policy("tiny", GenerationConfig(max_new_tokens=9, do_sample=True, seed=2))
    assert len(loads) == 1 and short.model is long.model  # one load, the weights shared
    assert (short.max_new_tokens, short.do_sample, short.seed) == (4, False, 1)
    assert (long.max_new_tokens, long.do_sample, long.seed) == (9, True, 2)
    models.policy("tiny", GenerationConfig(dtype="float64"))
    assert len(loads) == 2  # another dtype is another load
    described = models.describe()["tiny"]
    assert described["model_id"] == "tiny random-init GPT-2 (llm_marl_envs.models.tiny)"
    assert described["name"] == "hf:tiny" and described["weights_sha256"].startswith("sha256:")
    models.close()


def test_factory_shares_one_policy_per_spec_across_agents():
    pytest.importorskip("torch")
    factory = PolicyFactory("llm_marl_envs/MazeCollab-v1", generation=GenerationConfig(seed=3))
    first, second = factory("tiny", "gnome_0"), factory("tiny", "gnome_1")
    assert first is second and first.max_new_tokens == 64 and first.seed == 3
    factory.close()
