"""The command line's old homes, ``llm_marl_envs.commands``, ``llm_marl_envs.evaluation.cli``
and ``llm_marl_envs.leaderboard.cli``, still import for one release: with a
``DeprecationWarning`` naming the new path, as the moved module itself (not a copy), with the
names the old module gave."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

OLD_TO_NEW = {
    "llm_marl_envs.commands": "llm_marl_envs.cli.commands",
    "llm_marl_envs.evaluation.cli": "llm_marl_envs.cli.eval",
    "llm_marl_envs.leaderboard.cli": "llm_marl_envs.cli.leaderboard",
}

#: What each old module listed in its ``__all__``.
OLD_NAMES = {
    "llm_marl_envs.commands": [
        "DEMO_ENV_KWARGS",
        "format_episode",
        "parse_assignments",
        "parse_env_args",
        "run_demo",
        "run_play",
        "run_rollout",
        "summary_table",
    ],
    "llm_marl_envs.evaluation.cli": [
        "add_batch_size_option",
        "add_eval_parser",
        "add_placement_options",
        "add_server_options",
        "os_error",
        "placement",
        "run_eval",
        "server_options",
    ],
    "llm_marl_envs.leaderboard.cli": ["add_leaderboard_parser", "run_leaderboard"],
}


def _import_fresh(old: str) -> dict:
    """Import ``old`` in a fresh process with deprecation warnings as errors, then again."""
    new = OLD_TO_NEW[old]
    code = (
        "import importlib, json, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n"
        f"    importlib.import_module({old!r})\n"
        "    warned = None\n"
        "except DeprecationWarning as warning:\n"
        "    warned = str(warning)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        f"names = {OLD_NAMES[old]!r}\n"
        "print(json.dumps({'warned': warned, 'same': old is new,\n"
        "    'missing': [n for n in names if not hasattr(old, n)]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("old", sorted(OLD_TO_NEW))
def test_an_old_path_warns_and_is_the_new_module(old):
    seen = _import_fresh(old)
    assert seen["warned"] == f"{old} is now {OLD_TO_NEW[old]}: import that instead"
    assert seen["same"] is True
    assert seen["missing"] == []


def test_the_env_argument_parsers_are_the_registrys():
    """The trainers' ``from llm_marl_envs.commands import parse_env_args`` gives the
    registry's function, which sits below the command line."""
    import warnings

    from llm_marl_envs import registry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from llm_marl_envs.commands import parse_assignments, parse_env_args

    assert parse_env_args is registry.parse_env_args
    assert parse_assignments is registry.parse_assignments
    assert parse_env_args("num_turns=2") == {"num_turns": 2}
