"""Building blocks shared by every environment: text spaces and the base text AEC env."""

from llm_marl_envs.core.spaces import FreeText, TextObservation
from llm_marl_envs.core.text_env import CleanAction, TextAECEnv, clean_text

__all__ = ["CleanAction", "FreeText", "TextAECEnv", "TextObservation", "clean_text"]
