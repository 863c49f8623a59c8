"""Frozen evaluation of models and teams of models: suites, statistics, cross-play, leaderboard.

``llm-marl eval`` and ``llm-marl leaderboard`` on the command line; in Python:

>>> from llm_marl_envs.evaluation import Team, evaluate, load_suite
>>> suite = load_suite("lite")
>>> [task.name for task in suite.tasks]
['gsm8k', 'imdb', 'tldr', 'arxiv', 'coding', 'maze', 'donor']

See ``docs/leaderboard.md`` for the suites, the statistics and how to submit an entry.
"""

from llm_marl_envs.evaluation.config import EvalConfig
from llm_marl_envs.evaluation.evaluate import EvalError, Team, evaluate, load_episodes
from llm_marl_envs.evaluation.suite import Suite, SuiteError, available_suites, load_suite

__all__ = [
    "EvalConfig",
    "EvalError",
    "Suite",
    "SuiteError",
    "Team",
    "available_suites",
    "evaluate",
    "load_episodes",
    "load_suite",
]
