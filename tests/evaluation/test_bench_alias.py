"""``llm_marl_envs.bench``, the evaluation harness's old name, still imports (with a warning)
and is the same code as ``llm_marl_envs.evaluation``, not a copy."""

from __future__ import annotations

import subprocess
import sys


def test_the_old_name_warns_and_gives_the_same_modules():
    code = (
        "import warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n"
        "    import llm_marl_envs.bench\n"
        "except DeprecationWarning as warning:\n"
        "    print('warned:', warning)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "import llm_marl_envs.bench.stats as old\n"
        "from llm_marl_envs.bench.leaderboard import LeaderboardError\n"
        "import llm_marl_envs.evaluation.stats as new\n"
        "from llm_marl_envs.evaluation import leaderboard\n"
        "print(old is new, LeaderboardError is leaderboard.LeaderboardError)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "warned: llm_marl_envs.bench is now llm_marl_envs.evaluation" in out.stdout
    assert out.stdout.strip().endswith("True True")
