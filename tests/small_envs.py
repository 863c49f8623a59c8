"""Constructor arguments that keep every registered environment small and offline (bundled
data, a 5x5 maze), for tests that play each environment through another stack's API."""

from __future__ import annotations

#: ``env_kwargs`` per id; ids not named here take their defaults.
SMALL = {
    "llm_marl_envs/GSM8K-v0": {"data_source": "bundled"},
    "llm_marl_envs/IMDBSentiment-v0": {"data_source": "bundled"},
    "llm_marl_envs/TLDRSummarization-v0": {"data_source": "bundled"},
    "llm_marl_envs/ArxivExpansion-v0": {"data_source": "bundled"},
    "llm_marl_envs/MazeCollab-v0": {"size": 5},
}


def short(env_id: str) -> str:
    """A test id: the env id without its namespace."""
    return env_id.split("/")[1]
