"""``llm_marl_envs.integrations.trl`` became a folder (a module per way in, all on ``replay``);
the package still exports exactly what the module did, the same functions, and the classes
``tool_environment`` makes still name the package as their module."""

from __future__ import annotations

import pytest

pytest.importorskip("datasets")
pytest.importorskip("trl")

from llm_marl_envs.integrations import trl as package  # noqa: E402
from llm_marl_envs.integrations.trl import dataset, reward, rollout_func, tools  # noqa: E402
from llm_marl_envs.rewards.coding_sandbox import coop_coding_reward  # noqa: E402


def test_the_package_exports_what_the_module_exported():
    assert package.__all__ == [
        "coop_coding_reward",
        "env_dataset",
        "env_reward",
        "env_rollout_func",
        "episode_reward",
        "tool_environment",
    ]
    assert package.env_dataset is dataset.env_dataset
    assert package.env_reward is reward.env_reward
    assert package.env_rollout_func is rollout_func.env_rollout_func
    assert package.episode_reward is rollout_func.episode_reward
    assert package.tool_environment is tools.tool_environment
    assert package.coop_coding_reward is coop_coding_reward


@pytest.mark.parametrize(
    ("env_id", "kwargs", "base", "tool"),
    [
        ("llm_marl_envs/MazeCollab-v0", {"size": 5, "max_cycles": 3}, tools.MazeTools, "move"),
        ("llm_marl_envs/DonorGame-v0", {}, tools.DonorTools, "donate"),
        ("llm_marl_envs/DonorGame-v0", {"punishment": True}, tools.DonorPunishTools, "punish"),
        ("llm_marl_envs/GSM8K-v0", {"data_source": "bundled"}, tools.TextTools, "act"),
    ],
)
def test_tool_environments_keep_their_classes_and_module(env_id, kwargs, base, tool):
    agent = "observer_0" if "GSM8K" in env_id else None
    if agent is None:
        import llm_marl_envs

        agent = llm_marl_envs.make(env_id, **kwargs).possible_agents[0]
    made = package.tool_environment(env_id, agent, env_kwargs=kwargs)
    assert made.__mro__[1] is base and issubclass(made, tools.ToolEnvironment)
    assert made.__module__ == "llm_marl_envs.integrations.trl"
    assert callable(getattr(made, tool))
