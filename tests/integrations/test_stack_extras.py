"""What verl and verifiers users install: the extras, their one-line errors when missing, and
the files the stacks load (verl's agent-loop YAML, verifiers' taskset modules).

These run in every test environment (the main one has neither stack; ``.stacks/*`` have them).
"""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import llm_marl_envs
from llm_marl_envs.integrations.tasksets import MODULES_DIR, module_source, taskset_id

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("blocked", "module", "extra"),
    [
        ("verl", "llm_marl_envs.integrations.verl", "verl"),
        ("verifiers", "llm_marl_envs.integrations.verifiers", "verifiers"),
        ("verifiers", "llm_marl_envs_gsm8k_v0", "verifiers"),  # a taskset module
    ],
)
def test_without_the_stack_the_error_names_the_extra(blocked, module, extra):
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        f"try:\n    import {module}\n"
        "except ImportError as e:\n    print(type(e).__name__, e)\n"
    )
    said = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    ).stdout.strip()
    assert said.startswith("MissingDependencyError") and "\n" not in said
    assert f"pip install 'llm-marl-envs[{extra}]'" in said


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
    verifiers = extras["verifiers"].split()
    assert any(line.startswith("verifiers") for line in verifiers)
    assert any(line.startswith("uv") for line in verifiers)  # it runs agent turns through uv
    assert "%(verifiers)s" not in extras["all"]  # its openai <3 would hold the main env back


def test_the_agent_loop_file_names_the_loop():
    [entry] = yaml.safe_load((ROOT / "llm_marl_envs/integrations/verl_agent_loop.yaml").read_text())
    assert entry == {
        "name": "llm_marl_envs",
        "_target_": "llm_marl_envs.integrations.verl.LLMMarlAgentLoop",
    }


def test_the_shipped_taskset_modules_are_current():
    """One top-level module per registered id, as scripts/write_verifiers_tasksets.py
    writes it (verifiers loads an environment by such a module's name)."""
    folder = ROOT / MODULES_DIR
    shipped = {p.stem: p.read_text(encoding="utf-8") for p in folder.glob("*.py")}
    expected = {taskset_id(e): module_source(e) for e in llm_marl_envs.list_envs()}
    assert shipped == expected, "run: python scripts/write_verifiers_tasksets.py"
    assert all(name.isidentifier() and name.islower() for name in shipped)
