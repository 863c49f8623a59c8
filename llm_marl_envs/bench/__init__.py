"""Frozen evaluation of models and teams of models: suites, statistics, leaderboard.

Work in progress (issue 19); see ``docs/leaderboard.md`` once it lands.
"""
