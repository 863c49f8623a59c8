"""llm_marl_envs: text Dec-POMDP environments for multi-agent RL with language models.

>>> import llm_marl_envs
>>> "llm_marl_envs/GSM8K-v0" in llm_marl_envs.list_envs()
True

Importing the package is light: it reads the registry and registers the ids with
PettingZoo, but imports no environment module, torch, transformers or datasets.
"""

from llm_marl_envs.core.spaces import FreeText, TextObservation
from llm_marl_envs.registry import (
    EnvSpec,
    UnknownEnvironmentError,
    latest_envs,
    list_envs,
    make,
    make_parallel,
    spec,
    token_budget,
)

__version__ = "0.1.0"

__all__ = [
    "EnvSpec",
    "FreeText",
    "TextObservation",
    "UnknownEnvironmentError",
    "__version__",
    "latest_envs",
    "list_envs",
    "make",
    "make_parallel",
    "spec",
    "token_budget",
]
