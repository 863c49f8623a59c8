"""What a verl user installs: the extra, its one-line error when missing, and the shipped file.

These run in every test environment (the main one has no verl; ``.stacks/verl`` has it).
"""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_without_verl_the_error_names_the_extra():
    code = (
        "import sys; sys.modules['verl'] = None\n"
        "try:\n    import llm_marl_envs.integrations.verl\n"
        "except ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    said = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    ).stdout.strip()
    assert said.startswith("MissingDependencyError") and "\n" not in said
    assert "pip install 'llm-marl-envs[verl]'" in said


def test_the_extra_pulls_what_the_agent_loop_needs():
    """verl alone cannot import its agent loop (cachetools is in its verl-core extra); on the
    transformers line verl allows, TRL's tool-call parsing needs jmespath."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    extras = setup["options.extras_require"]
    verl = [line.strip() for line in extras["verl"].splitlines() if line.strip()]
    assert any(line.startswith("verl[verl-core]") for line in verl)
    assert any(line.startswith("jmespath") for line in verl)
    assert "%(verl)s" not in extras["all"]  # its transformers pin would hold the main env back


def test_the_agent_loop_file_names_the_loop():
    [entry] = yaml.safe_load((ROOT / "llm_marl_envs/integrations/verl_agent_loop.yaml").read_text())
    assert entry == {
        "name": "llm_marl_envs",
        "_target_": "llm_marl_envs.integrations.verl.LLMMarlAgentLoop",
    }
