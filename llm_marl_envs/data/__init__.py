"""Dataset loaders (Hub, local files in the Hub's schema, bundled samples)."""

from llm_marl_envs.data.gsm8k import load_gsm8k
from llm_marl_envs.data.imdb import load_imdb
from llm_marl_envs.data.loading import DataSourceError, TaskData, read_table

__all__ = ["DataSourceError", "TaskData", "load_gsm8k", "load_imdb", "read_table"]
