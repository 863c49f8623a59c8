"""Every fenced ``python`` example of the README and of the docs pages that took the README's
examples (environments, rollouts, the leaderboard) and docs/sandbox.md runs as written, alone,
and prints something (docs/integrations.md's examples have their own test).

Each block runs in a fresh interpreter, in a temporary working directory, offline. The
rollout example loads the embedded SmolLM2 model (the package's default), like the README's
reader would; its group example samples, so the four episodes of a group differ.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_marl_envs.core.optional import MissingDependencyError
from llm_marl_envs.models.embedded import gguf_path

REPO = Path(__file__).resolve().parents[1]
PAGES = (
    "README.md",
    "docs/environments.md",
    "docs/rollout.md",
    "docs/leaderboard.md",
    "docs/sandbox.md",
)


def _blocks() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        for i, code in enumerate(re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)):
            found.append((f"{page}#{i}", code))
    return found


BLOCKS = _blocks()


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=900
    )


def test_every_page_has_its_examples():
    for page in PAGES:
        assert any(where.startswith(f"{page}#") for where, _ in BLOCKS), page
    assert len(BLOCKS) >= 6  # the quick start, Parallel, maze, rollout, evaluation, sandbox


@pytest.mark.slow  # each example runs alone in a fresh interpreter (the embedded model's for minutes)
@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_example_runs_alone_and_prints(where, code, tmp_path):
    if 'from_spec("default"' in code:
        try:
            gguf_path()
        except MissingDependencyError:
            pytest.skip("the embedded model's weights are not here (llm-marl fetch-model)")
    done = _run(code, tmp_path)
    assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{where} printed nothing"
    if "group_size=4" in code:  # a sampled GRPO group: not four copies of one answer
        lines = [line.split() for line in done.stdout.splitlines() if line[:1].isdigit()]
        groups: dict[str, set[str]] = {}
        for group, _row, value in lines:
            groups.setdefault(group, set()).add(value)
        assert len(groups) == 2 and all(len(v) > 1 for v in groups.values()), done.stdout
