"""TRL's ``GRPOTrainer`` on the package's environments: datasets, rewards, rollouts, tools.

One agent of a multi-agent environment is the *learner* (the model TRL trains); the other
agents are *partners*, played by policies (``"scripted"`` by default: the environment's
built-in players, deterministic for a seed), with ``partner_seed`` in every episode. Every
episode here is seen through the Gymnasium view,
:class:`~llm_marl_envs.integrations.gymnasium.SingleAgentEnv`: reset with a seed, the partners
play until the learner's turn, the learner acts, the partners play again, and so on; the
learner's return is what the view's steps pay it. Four ways in, from the simplest:

* **reward_funcs**: :func:`env_dataset` builds a ``datasets.Dataset`` of the learner's first
  prompts (text or chat messages), each with its episode ``seed`` and the columns its reward
  needs; the reward functions of :mod:`llm_marl_envs.rewards` read those columns
  (``coop_coding_reward``, the coding one, is importable from here too).
* **env_reward**: :func:`env_reward` scores each completion by replaying its episode in the
  real environment: reset with the row's seed, partners play their turns, the completion is
  the learner's action (its later turns, in multi-turn games, are played by
  ``continuation``); the reward is the learner's return from that action on.
* **rollout_func**: :func:`env_rollout_func` plays whole episodes through
  :func:`llm_marl_envs.rollout.rollout` with the trainer's model as the learner (a
  :class:`~llm_marl_envs.policies.hf.HFPolicy` around it) and hands TRL the learner's tokens;
  :func:`episode_reward` is the matching reward function.
* **environment_factory**: :func:`tool_environment` wraps a multi-turn game (MazeCollab:
  ``move``; DonorGame: ``donate``, plus ``punish`` in the punishment variant; any other env:
  ``act``) as a TRL environment whose methods are the model's tools.

The dataset and the rewards must be built with the same ``env_kwargs``, ``partners`` and
``partner_seed``: a replay that does not reproduce the row's prompt raises ``ValueError``.

>>> from llm_marl_envs.integrations.trl import env_dataset       # doctest: +SKIP
>>> from llm_marl_envs.rewards import gsm8k_reward                # doctest: +SKIP
>>> dataset = env_dataset("llm_marl_envs/GSM8K-v0", "observer_0", 64)       # doctest: +SKIP
>>> GRPOTrainer(model, reward_funcs=gsm8k_reward, train_dataset=dataset)   # doctest: +SKIP
"""

from llm_marl_envs.core.optional import require

require("datasets", "integrations", "the TRL integration")
require("trl", "integrations", "the TRL integration")

from llm_marl_envs.integrations.trl.dataset import env_dataset  # noqa: E402
from llm_marl_envs.integrations.trl.reward import env_reward  # noqa: E402
from llm_marl_envs.integrations.trl.rollout_func import env_rollout_func, episode_reward  # noqa: E402
from llm_marl_envs.integrations.trl.tools import tool_environment  # noqa: E402
from llm_marl_envs.rewards.coding_sandbox import coop_coding_reward  # noqa: E402

__all__ = [
    "coop_coding_reward",
    "env_dataset",
    "env_reward",
    "env_rollout_func",
    "episode_reward",
    "tool_environment",
]
