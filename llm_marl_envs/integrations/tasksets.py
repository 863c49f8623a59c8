"""The verifiers taskset ids of the registered environments, and their modules' text.

Light (no verifiers import), so the tests and ``scripts/write_verifiers_tasksets.py`` check
and write the shipped modules anywhere; :mod:`llm_marl_envs.integrations.verifiers` builds
the classes.
"""

from __future__ import annotations

import re

import llm_marl_envs


def taskset_id(env_id: str) -> str:
    """The taskset id (a top-level module name) of a registered environment id."""
    env_id = llm_marl_envs.spec(env_id).id
    return "llm_marl_envs_" + re.sub(r"[^0-9a-z]+", "_", env_id.split("/", 1)[1].lower())


def taskset_ids() -> dict[str, str]:
    """Taskset id -> environment id, for every registered id."""
    return {taskset_id(env_id): env_id for env_id in llm_marl_envs.list_envs()}


#: Where the repository keeps the taskset modules (shipped as top-level modules).
MODULES_DIR = "verifiers_tasksets"


def module_source(env_id: str) -> str:
    """The text of ``env_id``'s taskset module (``scripts/write_verifiers_tasksets.py``
    writes them into :data:`MODULES_DIR`; a test checks that they are current)."""
    env_id = llm_marl_envs.spec(env_id).id
    return f'''"""The verifiers taskset and environment of {env_id}.

vf-eval {taskset_id(env_id)}; written by scripts/write_verifiers_tasksets.py from
llm_marl_envs.integrations.verifiers.
"""

from llm_marl_envs.integrations.verifiers import exports

LLMMarlTaskset, LLMMarlTasksetConfig, LLMMarlEnv, LLMMarlEnvConfig = exports(
    "{env_id}"
)

__all__ = ["LLMMarlEnv", "LLMMarlEnvConfig", "LLMMarlTaskset", "LLMMarlTasksetConfig"]
'''
