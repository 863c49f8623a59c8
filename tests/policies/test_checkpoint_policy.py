"""``ckpt:RUN_DIR#LEARNER``: a model trained by a reference trainer, from its checkpoint."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tyro")
pytestmark = pytest.mark.slow  # trains a model to have a checkpoint

from llm_marl_envs.evaluation.evaluate import Team, evaluate  # noqa: E402
from llm_marl_envs.evaluation.suite import parse_suite  # noqa: E402
from llm_marl_envs.policies.checkpoint import CheckpointError, checkpoint_policy  # noqa: E402
from llm_marl_envs.policies import GenerationConfig, PolicyFactory  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "baselines" / "magrpo.py"


def magrpo():
    if "magrpo_baseline" not in sys.modules:  # tyro reads Args' docstrings through sys.modules
        if str(SCRIPT.parent) not in sys.path:  # its `import training`, as `python magrpo.py` has
            sys.path.insert(0, str(SCRIPT.parent))
        spec = importlib.util.spec_from_file_location("magrpo_baseline", SCRIPT)
        sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules["magrpo_baseline"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Four MAGRPO iterations of the tiny model on TL;DR: two learners, one checkpoint."""
    out = tmp_path_factory.mktemp("magrpo")
    magrpo().main(
        [
            "--model", "tiny", "--env-kwargs", '{"data_source": "bundled"}', "--batch-size", "2",
            "--group-size", "2", "--max-new-tokens", "16", "--lr", "1e-3", "--iterations", "4",
            "--seed", "3", "--checkpoint-every", "0", "--eval-episodes", "0", "--no-progress",
            "--out-dir", str(out),
        ]
    )  # fmt: skip
    return out


def test_the_learners_weights_are_loaded(run):
    from llm_marl_envs.models import load_model

    newest = run / "checkpoint" / "iteration-000004"
    saved = torch.load(newest / "learner_1.pt", weights_only=True)["params"]
    policy = checkpoint_policy(f"{run}#1", GenerationConfig(max_new_tokens=4))
    state = dict(policy.model.named_parameters())
    for name, tensor in saved.items():
        assert torch.equal(state[name], tensor), name
    base, _ = load_model("tiny")
    name = "transformer.h.0.attn.c_attn.weight"
    assert not torch.equal(state[name], base.state_dict()[name])  # trained, not the base
    assert policy.checkpoint["learner"] == "1" and policy.name.startswith("ckpt:")
    assert policy.max_new_tokens == 4
    described = policy.describe()
    assert described["model_id"].startswith(f"ckpt:{run}#1 (trained from ")
    assert described["checkpoint"] == str(newest)


def test_specs_in_a_team(run, tmp_path):
    suite = parse_suite(
        {
            "name": "one",
            "version": 1,
            "tasks": [
                {
                    "name": "tldr",
                    "env": "llm_marl_envs/TLDRSummarization-v0",
                    "kwargs": {"data_source": "bundled", "split": "test"},
                    "rows": "0:2",
                    "max_reward": 3.0,
                    "metrics": ["reward_share"],
                    "primary": "reward_share",
                }
            ],
        }
    )
    team = Team.parse(team=[f"0=ckpt:{run}#0", f"1=ckpt:{run}#1"])
    results = evaluate(suite, team, tmp_path / "eval", progress=False, write=lambda _: None)
    assert results["tasks"]["tldr"]["metrics"]["reward_share"]["n"] == 2
    policies = results["manifest"]["policies"]
    assert set(policies) == {f"ckpt:{run}#0", f"ckpt:{run}#1"}
    hashes = {info["weights_sha256"] for info in policies.values()}
    assert len(hashes) == 2  # two different trained models
    assert all(info["checkpoint"].endswith("iteration-000004") for info in policies.values())


def test_bad_specs_say_what_is_wrong(run, tmp_path):
    with pytest.raises(CheckpointError, match="has 2 learners \\(0, 1\\): name one"):
        checkpoint_policy(str(run))
    with pytest.raises(CheckpointError, match="no learner '7'; its learners: 0, 1"):
        checkpoint_policy(f"{run}#7")
    with pytest.raises(CheckpointError, match="holds no checkpoint"):
        checkpoint_policy(str(tmp_path))
    broken = tmp_path / "broken"
    (broken / "checkpoint").mkdir(parents=True)
    import shutil

    shutil.copytree(
        run / "checkpoint" / "iteration-000004", broken / "checkpoint" / "iteration-000004"
    )
    manifest = broken / "checkpoint" / "iteration-000004" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["files"]["learner_0.pt"]["sha256"] = "0" * 64
    manifest.write_text(json.dumps(data))
    with pytest.raises(
        CheckpointError, match="no checkpoint in .* verifies .*learner_0.pt fails its checksum"
    ):
        checkpoint_policy(f"{broken}#0")
    factory = PolicyFactory("llm_marl_envs/TLDRSummarization-v0")
    with pytest.raises(CheckpointError, match="name one"):
        factory(f"ckpt:{run}", "summarizer_0")
