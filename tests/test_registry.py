"""Public API, registry, light import and optional-dependency messages."""

from __future__ import annotations

import subprocess
import sys

import pettingzoo
import pytest
import yaml

import llm_marl_envs


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def test_import_is_light():
    out = _run(
        "import sys, llm_marl_envs; "
        "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'vaderSentiment', "
        "'ray', 'llm_marl_envs.envs.gsm8k') if m in sys.modules))"
    )
    assert out.strip() == "[]"


def test_the_rollout_package_does_not_import_ray():
    out = _run(
        "import sys, llm_marl_envs.rollout; from llm_marl_envs.rollout import RayExecutor; "
        "print('ray' in sys.modules)"
    )
    assert out.strip() == "False"


def test_registry_file_is_the_single_source_of_truth():
    path = llm_marl_envs.registry.registry_path()
    entries = yaml.safe_load(path.read_text())["environments"]
    assert [e["id"] for e in entries] == llm_marl_envs.list_envs()
    for entry in entries:
        for key in ("id", "entry_point", "parallel_entry_point", "kwargs", "description", "paper"):
            assert key in entry, (entry["id"], key)


@pytest.mark.parametrize("env_id", llm_marl_envs.list_envs())
def test_make_and_pettingzoo_make(env_id):
    env = llm_marl_envs.make(env_id)
    assert isinstance(env, pettingzoo.AECEnv)
    assert isinstance(pettingzoo.make("aec", env_id), type(env))
    assert env_id in pettingzoo.aec_registry
    assert llm_marl_envs.spec(env_id).id == env_id


def test_make_parallel_refuses_turn_based_games():
    with pytest.raises(ValueError, match="turn-based"):
        llm_marl_envs.make_parallel("llm_marl_envs/GSM8K-v0")


@pytest.mark.parametrize(
    ("wrong", "suggested"),
    [
        ("llm_marl_envs/GSM8k-v0", "llm_marl_envs/GSM8K-v0"),
        ("GSM8K-v0", "llm_marl_envs/GSM8K-v0"),
        ("llm_marl_envs/IMDB-v0", "llm_marl_envs/IMDBSentiment-v0"),
    ],
)
def test_unknown_id_suggests_close_ids(wrong, suggested):
    with pytest.raises(llm_marl_envs.UnknownEnvironmentError, match="Did you mean") as error:
        llm_marl_envs.make(wrong)
    assert suggested in str(error.value).split("Known ids")[0]


def test_kwargs_override_registry_defaults():
    env = llm_marl_envs.make(
        "llm_marl_envs/GSM8K-v0", reward_mode="individual", data_source="bundled"
    )
    assert env.reward_mode == "individual" and env.data.source == "bundled"


@pytest.mark.parametrize(
    ("block", "code", "extra"),
    [
        (
            "vaderSentiment",
            "llm_marl_envs.make('llm_marl_envs/IMDBSentiment-v0', data_source='bundled')",
            "sentiment",
        ),
        (
            "torch",
            "llm_marl_envs.make('llm_marl_envs/IMDBSentiment-v0', data_source='bundled', scorer='x/y')",
            "train",
        ),
        ("pyarrow", "from llm_marl_envs.data import read_table; read_table('x.parquet')", "data"),
    ],
)
@pytest.mark.slow
def test_missing_optional_dependency_names_the_extra(block, code, extra):
    script = (
        f"import sys; sys.modules[{block!r}] = None\n"
        "import llm_marl_envs\n"
        "try:\n"
        f"    {code}\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = _run(script)
    assert "MissingDependencyError" in out and f"pip install 'llm-marl-envs[{extra}]'" in out
