"""Each registry entry names the token budget a whole answer needs (issue 18: answers were cut
off at the demo's old 64 tokens); the CLI, the demo and run_rollout use it unless told."""

from __future__ import annotations

import argparse

import pytest

import llm_marl_envs
from llm_marl_envs.cli.options import generation_config
from llm_marl_envs.cli.commands import RolloutOutput, run_demo, run_rollout
from llm_marl_envs.policies import GenerationConfig, PolicyFactory
from llm_marl_envs.registry import DEFAULT_TOKEN_BUDGET, load_registry, token_budget


def test_every_entry_names_a_budget():
    for env_id, entry in load_registry().items():
        assert isinstance(entry.max_new_tokens, int) and entry.max_new_tokens >= 16, env_id
        assert token_budget(env_id) == entry.max_new_tokens
    # the MAGRPO paper's budget: ~190 words, inside the arXiv task's 128-256 words
    assert llm_marl_envs.token_budget("llm_marl_envs/ArxivExpansion-v1") == 256
    assert token_budget("llm_marl_envs/MazeCollab-v1") == 64


def test_budget_of_an_entry_without_one(tmp_path):
    registry = tmp_path / "envs_registry.yaml"
    registry.write_text(
        "environments:\n  - {id: x/Y-v0, entry_point: 'a:B', description: d, paper: p, "
        "scripted_policy: 'a:c'}\n"
    )
    assert load_registry(registry)["x/Y-v0"].max_new_tokens is None
    assert DEFAULT_TOKEN_BUDGET == 128


def test_unknown_id_is_the_usual_error():
    with pytest.raises(llm_marl_envs.UnknownEnvironmentError):
        token_budget("llm_marl_envs/Nope-v0")


def _args(max_new_tokens, temperature=0.0):
    return argparse.Namespace(
        max_new_tokens=max_new_tokens,
        device="auto",
        dtype="auto",
        compile=False,
        temperature=temperature,
        top_p=0.9,
    )


def test_cli_generation_uses_the_env_budget_unless_given():
    assert generation_config(_args(40)) == GenerationConfig(max_new_tokens=40)
    unset = generation_config(_args(None))
    assert unset.max_new_tokens is None  # the factory gives each environment its budget
    coding = PolicyFactory("llm_marl_envs/CoopCoding-v2", generation=unset)
    assert coding.generation.max_new_tokens == 256
    assert generation_config(_args(None, 0.7)) == GenerationConfig(
        do_sample=True, temperature=0.7, top_p=0.9
    )


@pytest.mark.slow
def test_rollout_policy_gets_the_env_budget():
    result = run_rollout(
        "llm_marl_envs/IMDBSentiment-v1",
        policy="tiny",
        episodes=1,
        env_kwargs={"data_source": "bundled"},
        write=lambda _: None,
        output=RolloutOutput(progress=False),
    )
    lengths = [len(t.completion_ids) for t in result.episodes[0].turns]
    assert max(lengths) <= 32 and min(lengths) >= 1


@pytest.mark.slow
def test_demo_gives_each_env_its_budget_with_one_shared_model():
    lines: list[str] = []
    results = run_demo(
        ["llm_marl_envs/IMDBSentiment-v1", "llm_marl_envs/MazeCollab-v1"],
        policy="tiny",
        episodes=1,
        write=lines.append,
    )
    headers = [line for line in lines if line.startswith("\n#####")]
    assert "32 tokens per turn" in headers[0] and "64 tokens per turn" in headers[1]
    for env_id, budget in (
        ("llm_marl_envs/IMDBSentiment-v1", 32),
        ("llm_marl_envs/MazeCollab-v1", 64),
    ):
        turns = results[env_id].episodes[0].turns
        assert max(len(t.completion_ids) for t in turns) <= budget
    # a budget given by the caller wins everywhere
    lines.clear()
    run_demo(
        ["llm_marl_envs/MazeCollab-v1"],
        policy="tiny",
        episodes=1,
        generation=GenerationConfig(max_new_tokens=8),
        write=lines.append,
    )
    assert any("8 tokens per turn" in line for line in lines)
