"""Deprecated: moved to :mod:`llm_marl_envs.cli.commands` (``parse_env_args`` and
``parse_assignments`` to :mod:`llm_marl_envs.registry`, still importable from here); this
alias goes in the next release."""

from llm_marl_envs.core.moved import alias

alias(__name__, "llm_marl_envs.cli.commands")
