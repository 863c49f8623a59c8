"""The verifiers taskset and environment of llm_marl_envs/MazeCollab-v1.

vf-eval llm_marl_envs_mazecollab_v1; written by scripts/write_verifiers_tasksets.py from
llm_marl_envs.integrations.verifiers.
"""

from llm_marl_envs.integrations.verifiers import exports

LLMMarlTaskset, LLMMarlTasksetConfig, LLMMarlEnv, LLMMarlEnvConfig = exports(
    "llm_marl_envs/MazeCollab-v1"
)

__all__ = ["LLMMarlEnv", "LLMMarlEnvConfig", "LLMMarlTaskset", "LLMMarlTasksetConfig"]
