"""The manifest's commit is this package's own (issue 51, item 6): an installed package inside a
user's git work tree (a virtual environment in their repository) recorded the user's commit as
the package's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from llm_marl_envs.evaluation.results import package_commit

PACKAGE = Path(__file__).resolve().parents[2] / "llm_marl_envs"


def test_an_installed_package_inside_someone_elses_repository_records_no_commit(tmp_path):
    user = tmp_path / "their-project"
    installed = user / ".venv" / "lib" / "python3.11" / "site-packages" / "llm_marl_envs"
    installed.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(user)], check=True)
    (user / "README").write_text("theirs\n")
    subprocess.run(["git", "-C", str(user), "add", "README"], check=True)
    subprocess.run(
        ["git", "-C", str(user), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"],
        check=True,
    )
    assert package_commit(installed) is None
    outside = tmp_path / "site-packages" / "llm_marl_envs"
    outside.mkdir(parents=True)
    assert package_commit(outside) is None


def test_an_editable_checkout_records_its_own_commit():
    if not (PACKAGE.parent / ".git").exists():
        pytest.skip("not run from a git checkout of the package")
    commit = package_commit(PACKAGE)
    assert commit is not None and re.fullmatch(r"[0-9a-f]{40}(-dirty)?", commit)
