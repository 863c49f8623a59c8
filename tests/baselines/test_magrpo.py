"""baselines/magrpo.py: the pure parts, and short training runs of the tiny model (TL;DR, bundled)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

SCRIPT = Path(__file__).resolve().parents[2] / "baselines" / "magrpo.py"
_spec = importlib.util.spec_from_file_location("magrpo_baseline", SCRIPT)
magrpo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(magrpo)

TINY = [
    "--model", "tiny", "--env-kwargs", '{"data_source": "bundled"}', "--batch-size", "2",
    "--group-size", "2", "--max-new-tokens", "16", "--lr", "1e-3", "--seed", "3", "--no-progress",
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
    metrics = magrpo.main([*TINY, "--iterations", "4", "--checkpoint-every", "2", "--out-dir", str(out)])
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
        return TurnRecord(agent=agent, role=None, observation="", messages=[], action="", reward=reward)

    episode = EpisodeRecord(
        env_id="x", seed=0, episode=0, group=0,
        turns=[turn("a", 2.0), turn("b", 2.0), turn("a", 1.0), turn("b", 1.0)],
    )
    assert magrpo.joint_reward(episode, ["a", "b"], 1.0) == 3.0
    assert magrpo.joint_reward(episode, ["a", "b"], 0.9) == pytest.approx(2.9)


def test_env_kwargs_and_args_parsing():
    assert magrpo.parse_env_kwargs('{"num_turns": 2}') == {"num_turns": 2}
    assert magrpo.parse_env_kwargs("num_turns=2, data_source=bundled") == {
        "num_turns": 2, "data_source": "bundled"}
    assert magrpo.parse_env_kwargs("") == {}
    args = magrpo.parse_args(["--group-size", "8", "--normalize-std", "--bf16-autocast"])
    assert (args.group_size, args.normalize_std, args.bf16_autocast) == (8, True, True)
    assert args.env == "llm_marl_envs/TLDRSummarization-v0" and args.temperature == 0.7
    with pytest.raises(SystemExit):
        magrpo.parse_args(["--algo", "ppo"])
    with pytest.raises(SystemExit):
        magrpo.parse_args(["--group-size", "1"])


# --- training runs ---------------------------------------------------------------------------


def test_training_writes_finite_metrics_and_outputs(full_run):
    out, metrics = full_run
    assert [m["iteration"] for m in metrics] == [0, 1, 2, 3]
    assert sum(m["advantage_abs_mean"] > 0 for m in metrics) >= 2  # something to learn from
    assert read_metrics(out) == metrics
    for m in metrics:
        for key in ("loss/summarizer_0", "loss/elaborator_0", "grad_norm/summarizer_0",
                    "grad_norm/elaborator_0", "reward_mean", "reward_components/structure"):
            assert math.isfinite(m[key]), key
        assert 0.0 <= m["reward_mean"] <= 3.0 and m["episodes"] == 4
        assert 0 < m["completion_tokens/summarizer_0"] <= 16
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "checkpoint" / "state.pt").is_file()


def test_training_changes_the_parameters(full_run):
    from llm_marl_envs.models import load_model

    out, _ = full_run
    initial, _ = load_model("tiny")
    state = torch.load(out / "checkpoint" / "state.pt", weights_only=False)
    assert state["iteration"] == 4
    name = "transformer.h.0.attn.c_attn.weight"
    for learner in state["learners"]:
        trained = learner["params"][name]
        assert not torch.equal(trained, initial.state_dict()[name]), learner["agents"]
    # MAGRPO: two agents, two models that learn different things from the same start.
    first, second = (learner["params"][name] for learner in state["learners"])
    assert not torch.equal(first, second)


def test_same_seed_same_metrics_and_exact_resume(full_run, tmp_path):
    _, reference = full_run
    out = tmp_path / "resumed"
    base = [*TINY, "--checkpoint-every", "2", "--out-dir", str(out)]
    first = magrpo.main([*base, "--iterations", "2"])
    assert algorithmic(first) == algorithmic(reference[:2])  # same seed -> same run
    # A killed run may have logged iterations past its last checkpoint: resume drops them.
    with open(out / "metrics.jsonl", "a") as handle:
        handle.write(json.dumps({"iteration": 2, "partial": True}) + "\n")
    resumed = magrpo.main([*base, "--iterations", "4", "--resume"])
    assert algorithmic(resumed) == algorithmic(reference)
    assert algorithmic(read_metrics(out)) == algorithmic(reference)


def test_resume_refuses_changed_arguments(full_run):
    out, _ = full_run
    with pytest.raises(ValueError, match="lr"):
        magrpo.main([*TINY, "--lr", "5e-4", "--iterations", "5", "--resume", "--out-dir", str(out)])


def test_grpo_one_shared_model_plays_both_agents(tmp_path):
    metrics = magrpo.main([*TINY, "--algo", "grpo", "--iterations", "1", "--out-dir", str(tmp_path)])
    assert len(metrics) == 1
    assert "grad_norm/summarizer_0+elaborator_0" in metrics[0]
    assert math.isfinite(metrics[-1]["loss/summarizer_0"] + metrics[-1]["loss/elaborator_0"])
    state = torch.load(tmp_path / "checkpoint" / "state.pt", weights_only=False)
    assert [learner["agents"] for learner in state["learners"]] == [["summarizer_0", "elaborator_0"]]
    assert (tmp_path / "curves.png").is_file()
