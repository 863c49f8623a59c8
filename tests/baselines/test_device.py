"""Where the trainers compute (``--device``, ``--bf16-autocast``; ``training.Compute``) and
checkpoints that move between devices: tested on the CPU, with the CUDA run skipped where there
is no GPU."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("tyro")

import training  # noqa: E402 - baselines/training.py (conftest.py puts baselines/ on sys.path)

ROOT = Path(__file__).resolve().parents[2]


def _trainer(name: str):
    """``baselines/<name>.py`` as the module its own tests use (``<name>_baseline``)."""
    key = f"{name}_baseline"
    if key not in sys.modules:  # tyro reads Args' docstrings through sys.modules
        spec = importlib.util.spec_from_file_location(key, ROOT / "baselines" / f"{name}.py")
        sys.modules[key] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[key])
    return sys.modules[key]


cory, magrpo = _trainer("cory"), _trainer("magrpo")
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


# --------------------------------------------------------------------------- Compute
@NO_GPU
def test_auto_is_the_cpu_here_in_float32_as_before():
    assert training.Compute.of("auto", None) == training.Compute("cpu", False)
    assert training.Compute.of("cpu", None) == training.Compute("cpu", False)
    explicit = training.Compute.of("cpu", True)  # --bf16-autocast keeps its meaning on the CPU
    assert explicit.bf16_autocast and explicit.describe() == (
        "on cpu in bfloat16 autocast (weights float32)"
    )
    assert training.Compute.of("cpu", None).describe() == "on cpu in float32"


def test_autocast_is_for_the_device_in_use():
    on = training.Compute("cpu", True).autocast()
    assert (on.device, on.fast_dtype, on._enabled) == ("cpu", torch.bfloat16, True)
    with training.Compute("cpu", True).autocast():
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    with training.Compute("cpu", False).autocast():
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


def test_no_gpu_memory_is_measured_on_the_cpu():
    compute = training.Compute("cpu", False)
    compute.reset_peak_memory()
    assert compute.peak_memory_mb() is None


def assert_refused_in_one_line(refused: pytest.ExceptionInfo, device: str) -> None:
    """A ``SystemExit`` of one line that names the flag, the device asked for and the CPU, the
    one device there (the words are the device resolver's)."""
    message = str(refused.value)
    assert message.startswith("--device: ") and "\n" not in message, message
    assert device in message and "cpu" in message.replace(f"--device: {device}", ""), message


@NO_GPU
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_an_absent_device_is_one_line_naming_the_devices_there(device):
    with pytest.raises(SystemExit) as refused:
        training.Compute.of(device, None)
    assert_refused_in_one_line(refused, device)
    with pytest.raises(SystemExit) as refused:  # not a device at all
        training.Compute.of("gpu", None)
    message = str(refused.value)
    assert message.startswith("--device: ") and "gpu" in message and "\n" not in message


@NO_GPU
def test_both_trainers_refuse_an_absent_device_before_writing_anything(tmp_path):
    out = tmp_path / "run"
    for trainer in (cory, magrpo):
        with pytest.raises(SystemExit) as refused:
            trainer.main(["--model", "tiny", "--device", "cuda", "--out-dir", str(out)])
        assert_refused_in_one_line(refused, "cuda")
    assert not out.exists()


@NO_GPU
@pytest.mark.slow
@pytest.mark.parametrize("name", ["cory", "magrpo"])
def test_an_absent_device_on_the_command_line_is_one_line_not_a_traceback(name, tmp_path):
    script = ROOT / "baselines" / f"{name}.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--model", "tiny", "--device", "cuda"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("--device: ")
    assert "Traceback" not in proc.stderr and "cuda" in proc.stderr


# --------------------------------------------------------------------------- checkpoints
def test_a_checkpoint_holds_cpu_tensors_and_the_device_as_given(tmp_path):
    """What is written does not depend on the device that trained: plain CPU tensors (no
    parameters, no gradients), and the args as given (``auto``), not the device resolved."""
    layer = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(layer.parameters())
    layer(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    payload = {"weights": dict(layer.named_parameters()), "optimizer": optimizer.state_dict()}
    args = cory.resolve(cory.parse_args(["--model", "tiny", "--out-dir", str(tmp_path)]))
    training.save_checkpoint(tmp_path, 1, args, [], {"learner_A": payload})
    state, payloads = training.load_latest(tmp_path / "checkpoint")
    saved = payloads["learner_A"]
    tensors = [*saved["weights"].values(), *saved["optimizer"]["state"][0].values()]
    assert all(type(t) is torch.Tensor and t.device.type == "cpu" for t in tensors)
    assert not any(t.requires_grad for t in tensors)
    assert torch.equal(saved["weights"]["weight"], layer.weight.detach())
    assert state["args"]["device"] == "auto"
    folder = next((tmp_path / "checkpoint").iterdir())
    assert "cuda" not in (folder / "state.json").read_text()


def test_a_checkpoint_written_on_a_gpu_resumes_on_the_cpu(tmp_path, monkeypatch):
    """Tensors that a GPU run saved (their storages tagged ``cuda:0``) load onto the CPU
    (``map_location``): without it, torch refuses them on a machine without CUDA."""
    weights = torch.arange(6, dtype=torch.float32)
    registry = torch.serialization._package_registry
    with monkeypatch.context() as on_a_gpu:  # every storage written is tagged as on cuda:0
        on_a_gpu.setattr(
            torch.serialization, "_package_registry", [(0, lambda _: "cuda:0", None), *registry]
        )
        training.save_checkpoint(tmp_path, 3, cory.Args(), [], {"learner_A": {"w": weights}})
    folder = tmp_path / "checkpoint" / "iteration-000003"
    assert b"cuda:0" in (folder / "learner_A.pt").read_bytes()  # the tag is in the file
    state, payloads = training.load_latest(tmp_path / "checkpoint")
    assert state["iteration"] == 3
    assert torch.equal(payloads["learner_A"]["w"], weights)
    assert payloads["learner_A"]["w"].device.type == "cpu"


# --------------------------------------------------------------------------- on a GPU
@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cory_trains_on_cuda_then_resumes_on_the_cpu_and_back(tmp_path):
    out = tmp_path / "run"

    def small_run(*extra: str) -> list[str]:
        return [
            "--model",
            "tiny",
            "--env-kwargs",
            '{"data_source": "bundled"}',
            "--batch-size",
            "4",
            "--max-new-tokens",
            "8",
            "--out-dir",
            str(out),
            "--eval-episodes",
            "0",
            "--checkpoint-every",
            "1",
            *extra,
        ]

    metrics, roles = cory.train(cory.parse_args(small_run("--iterations", "1", "--device", "cuda")))
    for learner in roles.values():
        assert {p.device.type for p in learner.policy.model.parameters()} == {"cuda"}
        assert next(learner.value_head.parameters()).device.type == "cuda"
    assert metrics[0]["peak_gpu_memory_mb"] > 0
    state = json.loads(next((out / "checkpoint").rglob("state.json")).read_text())
    assert state["args"]["device"] == "cuda"
    on_cpu = cory.main(small_run("--iterations", "2", "--device", "cpu", "--resume"))
    assert [m["iteration"] for m in on_cpu] == [0, 1] and on_cpu[1]["peak_gpu_memory_mb"] is None
    back = cory.main(small_run("--iterations", "3", "--device", "cuda", "--resume"))
    assert [m["iteration"] for m in back] == [0, 1, 2] and back[2]["peak_gpu_memory_mb"] > 0
