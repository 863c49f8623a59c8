"""The checkpoint format (llm_marl_envs.models.checkpoints) as the trainers resume from it
(training.load_latest) and as ``ckpt:`` reads it: atomic writes, checksums, the fallback and the
kept checkpoints.

The trainer tests (test_cory.py, test_magrpo.py) inject the same faults into real runs and kill
real trainer processes; these check every fault and message on small payloads, in milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tyro")

import training  # noqa: E402 - baselines/training.py (conftest.py puts baselines/ on sys.path)

from llm_marl_envs.models import checkpoints  # noqa: E402
from llm_marl_envs.policies.checkpoint import CheckpointError, newest_checkpoint  # noqa: E402


def save(root: Path, iteration: int) -> Path:
    weights = torch.arange(2_000, dtype=torch.float32) * iteration
    state = {"iteration": iteration, "metrics": [{"x": 0.1}] * iteration}
    return checkpoints.save(
        root, iteration, state, {"learner_A": {"weights": weights, "eta": 0.05}}
    )


def folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def messages(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_save_keeps_the_newest_two_with_checksums_and_clears_leftovers(tmp_path):
    root = tmp_path / "checkpoint"
    for iteration in (1, 2, 3):
        save(root, iteration)
    assert folders(root) == ["iteration-000002", "iteration-000003"]
    newest = root / "iteration-000003"
    manifest = json.loads((newest / "manifest.json").read_text())
    assert manifest["iteration"] == 3 and set(manifest["files"]) == {"learner_A.pt", "state.json"}
    for name, entry in manifest["files"].items():
        data = (newest / name).read_bytes()
        assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    # Leftovers of killed processes (a half-written checkpoint, a half-deleted one) and a newer
    # checkpoint that a resume skipped as bad all go at the next save.
    (root / "iteration-000004.tmp").mkdir()
    (root / "iteration-000004.tmp" / "learner_A.pt").write_bytes(b"half")
    (root / "iteration-000001.trash").mkdir()
    (root / "iteration-000009").mkdir()
    save(root, 4)
    assert folders(root) == ["iteration-000003", "iteration-000004"]
    state, payloads = training.load_latest(root)
    assert state["iteration"] == 4 and len(state["metrics"]) == 4
    torch.testing.assert_close(payloads["learner_A"]["weights"], torch.arange(2_000.0) * 4)
    # A checkpoint written again (after a resume fell back past a bad one) replaces the old folder.
    save(root, 4)
    assert folders(root) == ["iteration-000003", "iteration-000004"]


def rewrite(folder: Path, name: str, data: bytes) -> None:
    """Replace a file and its manifest entry: bytes that pass the checksum but do not load."""
    (folder / name).write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def edit_manifest(path: Path, **changes) -> None:
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest))


def misstate_size(path: Path) -> None:
    """The manifest's size of ``path`` is wrong, its sha256 right."""
    manifest_path = path.parent / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][path.name]["bytes"] += 1
    manifest_path.write_text(json.dumps(manifest))


def flip(path: Path) -> None:
    data, rng = bytearray(path.read_bytes()), random.Random(1)
    for i in rng.sample(range(len(data)), 64):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def cut(size: int):
    return lambda path: path.write_bytes(path.read_bytes()[:size])


FAULTS = {  # name: (file, damage, the words of the message)
    "missing": ("learner_A.pt", Path.unlink, "is missing"),
    "empty": ("learner_A.pt", cut(0), "is empty"),
    "truncated": ("learner_A.pt", cut(100), "is truncated (100 of"),
    "too long": ("learner_A.pt", lambda p: p.write_bytes(p.read_bytes() + b"\0"), "is too long"),
    "flipped bytes": ("learner_A.pt", flip, "fails its checksum (sha256 mismatch"),
    "weights unreadable": (
        "learner_A.pt",
        lambda p: rewrite(p.parent, p.name, b"not a zip"),
        "is unreadable",
    ),
    "state unreadable": (
        "state.json",
        lambda p: rewrite(p.parent, p.name, b"{"),
        "is unreadable (JSONDecodeError",
    ),
    "manifest missing": ("manifest.json", Path.unlink, "is missing"),
    "manifest empty": ("manifest.json", cut(0), "is empty"),
    "manifest cut": ("manifest.json", cut(50), "is unreadable"),
    "manifest of another format": (
        "manifest.json",
        lambda p: edit_manifest(p, format=2),
        "is unreadable (format 2; this version reads 1)",
    ),
    "size misstated": ("learner_A.pt", misstate_size, "is truncated"),
}
LOAD_FAULTS = ("weights unreadable", "state unreadable")  # they pass verify(), fail to load


@pytest.mark.parametrize("fault", FAULTS)
def test_a_bad_checkpoint_is_named_in_one_line_and_the_previous_one_used(tmp_path, capsys, fault):
    root = tmp_path / "checkpoint"
    save(root, 1)
    name, damage, words = FAULTS[fault]
    bad = save(root, 2) / name
    damage(bad)
    capsys.readouterr()
    state, _ = training.load_latest(root)
    assert state["iteration"] == 1
    lines = messages(capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"--resume: {bad} {words}"), lines[0]
    assert lines[0].endswith("; falling back to the previous checkpoint iteration-000001")


def test_no_good_checkpoint_means_a_fresh_start_with_one_line(tmp_path, capsys):
    root = tmp_path / "checkpoint"
    assert training.load_latest(root) is None  # killed before the first checkpoint
    assert messages(capsys) == [f"--resume: no checkpoint in {root} yet; starting from scratch"]
    save(root, 1)
    flip(save(root, 2) / "learner_A.pt")
    (root / "iteration-000001" / "state.json").unlink()
    assert training.load_latest(root) is None
    lines = messages(capsys)
    assert len(lines) == 2 and "iteration-000002/learner_A.pt fails its checksum" in lines[0]
    assert lines[1].endswith(
        "iteration-000001/state.json is missing; no good checkpoint left, starting from scratch"
    )


def test_old_layouts_are_refused_in_one_line(tmp_path):
    # (changed arguments are refused by training.check_resume: test_common.py)
    root = tmp_path / "checkpoint"
    root.mkdir()
    (root / "state.pt").write_bytes(b"written by an earlier magrpo.py")
    with pytest.raises(SystemExit, match="earlier version .* move it away"):
        training.load_latest(root)


@pytest.mark.parametrize("fault", [f for f in FAULTS if f not in LOAD_FAULTS])
def test_ckpt_verifies_as_the_resume_does(tmp_path, fault):
    """The ``ckpt:`` policy skips every checkpoint a resume skips (format, sizes, sha256: not
    the sha256 alone), and says why when none is left."""
    root = tmp_path / "run" / "checkpoint"
    save(root, 1)
    name, damage, words = FAULTS[fault]
    damage(save(root, 2) / name)
    assert newest_checkpoint(tmp_path / "run") == root / "iteration-000001"
    damage(root / "iteration-000001" / name)
    with pytest.raises(CheckpointError, match=f"no checkpoint in .* verifies .*{re.escape(words)}"):
        newest_checkpoint(tmp_path / "run")


def test_load_reads_only_the_payloads_asked_for(tmp_path):
    folder = save(tmp_path / "checkpoint", 3)
    assert checkpoints.verify(folder) == ["learner_A"]
    state, payloads = checkpoints.load(folder, [])
    assert state["iteration"] == 3 and payloads == {}
    _, payloads = checkpoints.load(folder)
    torch.testing.assert_close(payloads["learner_A"]["weights"], torch.arange(2_000.0) * 3)
