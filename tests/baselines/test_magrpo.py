"""baselines/magrpo.py: the pure parts, and short training runs of the tiny model (TL;DR,
bundled)."""

from __future__ import annotations

import importlib.util
import errno
import json
import math
import random
import shutil
import signal
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

SCRIPT = Path(__file__).resolve().parents[2] / "baselines" / "magrpo.py"
if "magrpo_baseline" not in sys.modules:  # tyro reads Args' docstrings through sys.modules
    _spec = importlib.util.spec_from_file_location("magrpo_baseline", SCRIPT)
    sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_spec.name])
magrpo = sys.modules["magrpo_baseline"]

TINY = [
    "--model",
    "tiny",
    "--env-kwargs",
    '{"data_source": "bundled"}',
    "--batch-size",
    "2",
    "--group-size",
    "2",
    "--max-new-tokens",
    "16",
    "--lr",
    "1e-3",
    "--seed",
    "3",
    "--eval-episodes",
    "4",
    "--eval-every",
    "2",
    "--no-progress",
]


def algorithmic(metrics: list[dict]) -> list[dict]:
    """The metrics without the timing / memory fields."""
    return [{k: v for k, v in m.items() if k not in magrpo.TIMING_KEYS} for m in metrics]


def read_metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def full_run(one_thread, tmp_path_factory):
    """4 uninterrupted MAGRPO iterations (checkpoint every 2)."""
    out = tmp_path_factory.mktemp("full")
    metrics = magrpo.main(
        [*TINY, "--iterations", "4", "--checkpoint-every", "2", "--out-dir", str(out)]
    )
    return out, metrics


# --- pure parts ------------------------------------------------------------------------------


def test_group_advantages_by_hand():
    rewards = [1.0, 2.0, 3.0, 6.0, 0.5, 0.5, 0.5, 0.5]
    plain = magrpo.group_advantages(rewards, 4)
    assert plain.tolist() == [-2.0, -1.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0]
    clipped = magrpo.group_advantages(rewards, 4, clip=1.5)
    assert clipped.tolist() == [-1.5, -1.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0]
    normed = magrpo.group_advantages(rewards, 4, normalize_std=True)
    std = math.sqrt((4 + 1 + 0 + 9) / 4)  # population std of the first group
    assert normed[:4].tolist() == pytest.approx([-2 / std, -1 / std, 0.0, 3 / std])
    assert normed[4:].tolist() == [0.0] * 4  # a group with no spread gives no signal, not NaN
    with pytest.raises(RuntimeError):
        magrpo.group_advantages([1.0, 2.0, 3.0], 2)  # not a whole number of groups


def test_joint_reward_discounts_each_agents_turns():
    from llm_marl_envs.rollout import EpisodeRecord, TurnRecord

    def turn(agent, reward):
        return TurnRecord(
            agent=agent, role=None, observation="", messages=[], action="", reward=reward
        )

    episode = EpisodeRecord(
        env_id="x",
        seed=0,
        episode=0,
        group=0,
        turns=[turn("a", 2.0), turn("b", 2.0), turn("a", 1.0), turn("b", 1.0)],
    )
    assert magrpo.joint_reward(episode, ["a", "b"], 1.0) == 3.0
    assert magrpo.joint_reward(episode, ["a", "b"], 0.9) == pytest.approx(2.9)


def test_env_kwargs_and_args_parsing():
    assert magrpo.parse_env_kwargs('{"num_turns": 2}') == {"num_turns": 2}
    assert magrpo.parse_env_kwargs("num_turns=2, data_source=bundled") == {
        "num_turns": 2,
        "data_source": "bundled",
    }
    assert magrpo.parse_env_kwargs("") == {}
    args = magrpo.parse_args(["--group-size", "8", "--normalize-std", "--bf16-autocast"])
    assert (args.group_size, args.normalize_std, args.bf16_autocast) == (8, True, True)
    assert args.env == "llm_marl_envs/TLDRSummarization-v0" and args.temperature == 0.7
    with pytest.raises(SystemExit):
        magrpo.parse_args(["--algo", "ppo"])
    with pytest.raises(SystemExit, match="--group-size must be >= 2"):
        magrpo.parse_args(["--group-size", "1"])


# --- training runs ---------------------------------------------------------------------------


@pytest.mark.slow
def test_training_writes_finite_metrics_and_outputs(full_run):
    out, metrics = full_run
    assert [m["iteration"] for m in metrics] == [0, 1, 2, 3]
    assert sum(m["advantage_abs_mean"] > 0 for m in metrics) >= 2  # something to learn from
    assert read_metrics(out) == metrics
    for m in metrics:
        for key in (
            "loss/summarizer_0",
            "loss/elaborator_0",
            "grad_norm/summarizer_0",
            "grad_norm/elaborator_0",
            "reward_mean",
            "reward_components/structure",
        ):
            assert math.isfinite(m[key]), key
        assert 0.0 <= m["reward_mean"] <= 3.0 and m["episodes"] == 4
        assert 0 < m["completion_tokens/summarizer_0"] <= 16
        assert m["peak_gpu_memory_mb"] is None  # on the CPU: no GPU memory
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in (out / "checkpoint").iterdir()) == [
        "iteration-000002",
        "iteration-000004",
    ]
    assert {p.name for p in (out / "checkpoint" / "iteration-000004").iterdir()} == {
        "learner_0.pt",
        "learner_1.pt",
        "torch_rng.pt",
        "state.json",
        "manifest.json",
    }


@pytest.mark.slow
def test_training_changes_the_parameters(full_run):
    from llm_marl_envs.models import load_model

    out, _ = full_run
    initial, _ = load_model("tiny")
    newest = out / "checkpoint" / "iteration-000004"
    assert json.loads((newest / "state.json").read_text())["iteration"] == 4
    learners = [torch.load(newest / f"learner_{i}.pt", weights_only=True) for i in range(2)]
    name = "transformer.h.0.attn.c_attn.weight"
    for learner in learners:
        trained = learner["params"][name]
        assert not torch.equal(trained, initial.state_dict()[name]), learner["agents"]
    # MAGRPO: two agents, two models that learn different things from the same start.
    first, second = (learner["params"][name] for learner in learners)
    assert not torch.equal(first, second)


@pytest.mark.slow
def test_same_seed_same_metrics_and_exact_resume(full_run, tmp_path):
    _, reference = full_run
    out = tmp_path / "resumed"
    base = [*TINY, "--checkpoint-every", "2", "--out-dir", str(out)]
    # --device cpu here, auto (the CPU here) in full_run and in the resume below: one run
    first = magrpo.main([*base, "--iterations", "2", "--device", "cpu"])
    assert algorithmic(first) == algorithmic(reference[:2])  # same seed -> same run
    # A killed run may have logged iterations past its last checkpoint: resume drops them.
    with open(out / "metrics.jsonl", "a") as handle:
        handle.write(json.dumps({"iteration": 2, "partial": True}) + "\n")
    resumed = magrpo.main([*base, "--iterations", "4", "--resume"])
    assert algorithmic(resumed) == algorithmic(reference)
    assert algorithmic(read_metrics(out)) == algorithmic(reference)
    assert read_evals(out) == read_evals(full_run[0])


def read_evals(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_fixed_evaluation_set(full_run, tmp_path):
    out, metrics = full_run
    evals = read_evals(out)
    # before training, after 2 updates (eval_every=2) and at the end (4)
    assert [e["iteration"] for e in evals] == [0, 2, 4]
    for e in evals:
        assert e["episodes"] == 4 and 0.0 <= e["reward_mean"] <= 3.0
        for agent in ("summarizer_0", "elaborator_0"):
            assert 0 < e[f"completion_tokens/{agent}"] <= 16
            assert 0.0 <= e[f"format_failure_rate/{agent}"] <= 1.0
    assert len({e["reward_mean"] for e in evals}) > 1  # the weights moved the fixed-set score
    # the checkpoint keeps them, for --resume
    state = json.loads((out / "checkpoint" / "iteration-000004" / "state.json").read_text())
    assert state["evals"] == evals
    # a pure function of the weights: the untrained model in a separate run scores the same
    magrpo.main([*TINY, "--iterations", "1", "--out-dir", str(tmp_path / "fresh")])
    assert read_evals(tmp_path / "fresh")[0] == evals[0]
    # and evaluating changes no training sample
    off = magrpo.main(
        [*TINY, "--iterations", "4", "--eval-episodes", "0", "--out-dir", str(tmp_path / "off")]
    )
    assert algorithmic(off) == algorithmic(metrics)
    assert not (tmp_path / "off" / "eval.jsonl").read_text()


@pytest.mark.slow
def test_resume_refuses_changed_arguments(full_run):
    out, _ = full_run
    with pytest.raises(SystemExit) as refused:  # one line, no traceback
        magrpo.main([*TINY, "--lr", "5e-4", "--iterations", "5", "--resume", "--out-dir", str(out)])
    assert str(refused.value) == (  # the message training.check_resume gives both trainers
        "--resume: --lr (checkpoint 0.001, now 0.0005) differs from the checkpoint's run; use "
        "the checkpoint's values, or a new --out-dir for a new run"
    )


@pytest.mark.slow
def test_grpo_one_shared_model_plays_both_agents(tmp_path):
    metrics = magrpo.main(
        [*TINY, "--algo", "grpo", "--iterations", "1", "--out-dir", str(tmp_path)]
    )
    assert len(metrics) == 1
    assert "grad_norm/summarizer_0+elaborator_0" in metrics[0]
    assert math.isfinite(metrics[-1]["loss/summarizer_0"] + metrics[-1]["loss/elaborator_0"])
    saved = tmp_path / "checkpoint" / "iteration-000001"
    learner = torch.load(saved / "learner_0.pt", weights_only=True)
    assert learner["agents"] == ["summarizer_0", "elaborator_0"]
    assert not (saved / "learner_1.pt").exists()
    assert (tmp_path / "curves.png").is_file()


# --- faults and resume -----------------------------------------------------------------------
# Checkpoint files are found by name wherever they sit in checkpoint/, so these tests also run
# (and fail, for the reasons the issue reported) against the trainer's earlier one-file layout.


def newest(out: Path, *names: str) -> Path:
    """The newest checkpoint's file with one of ``names``."""
    return max(
        (p for name in names for p in (out / "checkpoint").rglob(name)),
        key=lambda path: path.parent.name,
    )


def resume_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "--resume:" in line]


@pytest.mark.slow
def test_killed_before_the_first_checkpoint_resumes_from_scratch(full_run, tmp_path, capsys):
    _, reference = full_run
    out = tmp_path / "run"
    base = [*TINY, "--checkpoint-every", "2", "--out-dir", str(out)]
    # What a kill during iteration 1 leaves: a logged line, a checkpoint write never finished.
    (out / "checkpoint" / "iteration-000002.tmp").mkdir(parents=True)
    (out / "checkpoint" / "iteration-000002.tmp" / "learner_0.pt").write_bytes(b"PK\x03\x04")
    (out / "metrics.jsonl").write_text(json.dumps(reference[0]) + "\n")
    capsys.readouterr()
    resumed = magrpo.main([*base, "--iterations", "2", "--resume"])
    lines = resume_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "no checkpoint" in lines[0] and "from scratch" in lines[0], lines
    assert algorithmic(resumed) == algorithmic(reference[:2])
    assert algorithmic(read_metrics(out)) == algorithmic(reference[:2])
    assert sorted(p.name for p in (out / "checkpoint").iterdir()) == ["iteration-000002"]


@pytest.mark.slow
def test_empty_or_truncated_checkpoint_files_fall_back_or_start_afresh(full_run, tmp_path, capsys):
    _, reference = full_run
    out = tmp_path / "run"
    shutil.copytree(full_run[0], out)  # checkpoints after 2 and 4 iterations
    base = [
        *TINY,
        "--checkpoint-every",
        "2",
        "--iterations",
        "4",
        "--resume",
        "--out-dir",
        str(out),
    ]
    empty = newest(out, "state.json", "state.pt")
    empty.write_bytes(b"")
    capsys.readouterr()
    assert algorithmic(magrpo.main(base)) == algorithmic(reference)
    lines = resume_lines(capsys.readouterr().err)
    assert len(lines) == 1 and str(empty) in lines[0] and "empty" in lines[0], lines
    assert "falling back to the previous checkpoint iteration-000002" in lines[0]
    assert algorithmic(read_metrics(out)) == algorithmic(reference)
    # Both checkpoints bad (the resumed run rewrote the newest): from scratch, the same run again.
    truncated = newest(out, "learner_1.pt")
    manifest = out / "checkpoint" / "iteration-000002" / "manifest.json"
    truncated.write_bytes(truncated.read_bytes()[:1000])
    manifest.write_bytes(b"")
    assert algorithmic(magrpo.main(base)) == algorithmic(reference)
    lines = resume_lines(capsys.readouterr().err)
    assert len(lines) == 2, lines
    assert str(truncated) in lines[0] and "truncated (1000 of" in lines[0]
    assert str(manifest) in lines[1] and "empty" in lines[1] and "starting from scratch" in lines[1]
    assert algorithmic(read_metrics(out)) == algorithmic(reference)


@pytest.mark.slow
def test_flipped_bytes_in_saved_weights_fail_the_checksum(full_run, tmp_path, capsys):
    _, reference = full_run
    out = tmp_path / "run"
    base = [*TINY, "--checkpoint-every", "1", "--out-dir", str(out)]
    magrpo.main([*base, "--iterations", "2"])  # checkpoints after 1 and 2 iterations
    bad = newest(out, "learner_0.pt", "state.pt")
    data, rng = bytearray(bad.read_bytes()), random.Random(64)
    for i in rng.sample(range(len(data) // 10, len(data) * 9 // 10), 64):  # 64 bytes of the weights
        data[i] ^= 0xFF
    bad.write_bytes(bytes(data))
    capsys.readouterr()
    resumed = magrpo.main([*base, "--iterations", "4", "--resume"])
    lines = resume_lines(capsys.readouterr().err)
    assert len(lines) == 1 and str(bad) in lines[0] and "checksum" in lines[0], lines
    assert "iteration-000001" in lines[0]  # the fallback
    assert algorithmic(resumed) == algorithmic(reference)  # not the corrupted weights' metrics
    assert algorithmic(read_metrics(out)) == algorithmic(reference)


KILL_TEST = "test_kill_9_at_random_points_then_resume_is_exact"


@pytest.fixture(scope="module", autouse=True)
def killed_twice(request, tmp_path_factory, kill9, background):
    """The child processes of the kill -9 test, started when this module starts (if that test
    is selected), so that they run beside the in-process tests: a MAGRPO run killed inside a
    checkpoint write, then its --resume killed at a random moment. Yields (out, argv, future)."""
    if not kill9.selected(request, KILL_TEST):
        yield None
        return
    rng = random.Random(2024)
    out = tmp_path_factory.mktemp("magrpo-killed") / "run"
    argv = [*TINY, "--iterations", "4", "--checkpoint-every", "1", "--out-dir", str(out)]
    # A checkpoint takes 8 fsyncs: its 5 files (learner_0, learner_1, torch_rng, state.json,
    # manifest.json), the temporary folder, the parent after the rename and after the clean-up.
    # Kill after one of the files of the first or second checkpoint (seed 2024: after learner_1
    # of the second).
    fsync = 8 * rng.randrange(2) + rng.randint(1, 5)
    yield out, argv, background.submit(kill9.twice, SCRIPT, argv, out, fsync, rng.uniform(0.0, 0.6))


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume_is_exact(full_run, killed_twice):
    """A real trainer process killed twice (inside a checkpoint write, then at a random moment
    of its resumed run), then resumed: the same metrics as without the kills."""
    _, reference = full_run
    out, argv, children = killed_twice
    children.result()  # both kills done
    resumed = magrpo.main([*argv, "--resume"])
    assert algorithmic(resumed) == algorithmic(reference)
    assert algorithmic(read_metrics(out)) == algorithmic(reference)


# --- graceful stops ---------------------------------------------------------------------------
@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_resume_is_exact(full_run, tmp_path, kill9):
    """A scheduler's SIGTERM after the first iteration of a run that checkpoints every 5: it
    finishes the iteration in progress, saves, exits with one line (status 143); --resume
    logs the uninterrupted run's metrics (before: killed at once, the resume from scratch)."""
    _, reference = full_run
    out = tmp_path / "run"
    argv = [*TINY, "--iterations", "4", "--checkpoint-every", "5", "--out-dir", str(out)]
    done = kill9.signal_after_progress(
        SCRIPT, argv, out / "metrics.jsonl", 1, signal.SIGTERM, tmp_path
    )
    assert done.returncode == 143, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("magrpo: stopped by SIGTERM after ") and "--resume" in last, last
    stopped_after = int(last.split(" after ")[1].split()[0])
    assert 1 <= stopped_after < 4 and f"iteration-{stopped_after:06d}" in last
    resumed = magrpo.main([*argv, "--resume"])
    assert algorithmic(resumed) == algorithmic(reference)
    assert algorithmic(read_metrics(out)) == algorithmic(reference)


@pytest.mark.slow
def test_a_full_disk_while_saving_ends_in_one_line(tmp_path, monkeypatch, capsys):
    training = sys.modules["training"]
    target = tmp_path / "run" / "checkpoint" / "iteration-000001.tmp" / "learner_0.pt"

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(training.checkpoints, "save", no_space)
    with pytest.raises(SystemExit) as stopped:
        magrpo.main(
            [*TINY, "--iterations", "1", "--eval-episodes", "0", "--out-dir", str(tmp_path / "run")]
        )
    assert stopped.value.code == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"magrpo: cannot write {target}: No space left on device"), last
    assert "there is no checkpoint yet" in last and "--resume" in last
