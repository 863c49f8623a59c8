"""The leaderboard's own package (issue 49): it stands above the evaluation harness, which
never imports it; the old ``llm_marl_envs.evaluation.<module>`` paths still import for one
release, with a warning, and give the moved module itself; no file of it over 600 lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from llm_marl_envs.evaluation._moved import MOVED

PACKAGE = Path(__file__).resolve().parents[2] / "llm_marl_envs"


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_evaluation_harness_never_loads_the_leaderboard():
    """Every module of ``evaluation/`` but the deprecated aliases, imported in a fresh
    process: not one ``llm_marl_envs.leaderboard`` module is loaded."""
    names = sorted(
        f"llm_marl_envs.evaluation.{path.stem}"
        for path in (PACKAGE / "evaluation").glob("*.py")
        if path.stem not in MOVED
        and path.stem != "__init__"
        and not path.read_text(encoding="utf-8").startswith('"""Deprecated')
    )
    assert "llm_marl_envs.evaluation.evaluate" in names and len(names) >= 9
    loaded = json.loads(
        _run(
            "import importlib, json, sys\n"
            f"for name in {names!r}: importlib.import_module(name)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('llm_marl_envs'))))"
        )
    )
    assert set(names) <= set(loaded)
    assert [m for m in loaded if m.startswith("llm_marl_envs.leaderboard")] == []


def test_the_old_paths_warn_and_give_the_moved_modules():
    code = (
        "import importlib, warnings\n"
        f"for old, new in {sorted(MOVED.items())!r}:\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module('llm_marl_envs.evaluation.' + old)\n"
        "    moved = importlib.import_module('llm_marl_envs.leaderboard.' + new)\n"
        "    said = [str(w.message) for w in caught if w.category is DeprecationWarning]\n"
        "    print(old, module is moved, any(('is now ' + moved.__name__) in s for s in said))\n"
        "from llm_marl_envs.evaluation import leaderboard\n"
        "from llm_marl_envs.evaluation.submission import LeaderboardError\n"
        "import llm_marl_envs.leaderboard as package\n"
        "print('same:', leaderboard.build is package.build,"
        " LeaderboardError is package.LeaderboardError)\n"
    )
    lines = _run(code).split("\n")
    assert [line for line in lines if line.startswith(tuple(MOVED))] == [
        f"{old} True True" for old in sorted(MOVED)
    ]
    assert "same: True True" in lines


def test_importing_the_package_loads_nothing_heavy():
    loaded = _run(
        "import sys, llm_marl_envs.leaderboard, llm_marl_envs.cli.leaderboard\n"
        "print(' '.join(sorted(sys.modules)))"
    ).split()
    assert "llm_marl_envs.leaderboard.board" not in loaded
    assert not {"torch", "transformers", "datasets"} & set(loaded)


def test_no_file_of_the_package_is_over_500_lines():
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (PACKAGE / "leaderboard").rglob("*.py")
    }
    assert len(sizes) >= 15
    assert {name: n for name, n in sizes.items() if n > 500} == {}


def test_the_packages_lazy_names_are_the_boards_public_names():
    """``llm_marl_envs.leaderboard`` lists the board's names itself (reading
    ``board.__all__`` would import the board, and the CLI's import must stay light): the two
    lists agree, and each name resolves to the board's own object."""
    import llm_marl_envs.leaderboard as package
    from llm_marl_envs.leaderboard import board

    assert sorted(package.__all__) == sorted(board.__all__)
    for name in package.__all__:
        assert getattr(package, name) is getattr(board, name)
