"""One home per concept, checked in the code itself (issue 27's "done when"): one
``REWARD_IMPLS``, no version subclasses or ``parallel_env_vN`` functions (versions are registry
arguments), every version of an environment made by one class, and no ``sys.path`` edits in
the trainers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import llm_marl_envs

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "llm_marl_envs"


def _trees(folder: Path):
    for path in sorted(folder.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def test_one_reward_impls_constant():
    homes = [
        str(path.relative_to(REPO))
        for path, tree in _trees(PACKAGE)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id == "REWARD_IMPLS"
    ]
    assert homes == ["llm_marl_envs/rewards/impls.py"]


def test_no_version_subclasses_or_parallel_env_versions():
    found = [
        f"{path.relative_to(REPO)}:{node.name}"
        for path, tree in _trees(PACKAGE / "envs")
        for node in ast.walk(tree)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef))
        and re.search(r"(V\d+|_v\d+)$", node.name)
    ]
    assert found == []


def test_every_version_of_an_environment_is_one_class():
    by_name: dict[str, set[str]] = {}
    for env_id in llm_marl_envs.list_envs():
        name = env_id.rpartition("-v")[0]
        by_name.setdefault(name, set()).add(llm_marl_envs.spec(env_id).entry_point)
    assert {name: len(points) for name, points in by_name.items()} == dict.fromkeys(by_name, 1)


def test_every_made_env_carries_its_version_name():
    assert llm_marl_envs.make("llm_marl_envs/MazeCollab-v1").metadata["name"] == "MazeCollab-v1"
    assert llm_marl_envs.make("llm_marl_envs/MazeCollab-v0").metadata["name"] == "MazeCollab-v0"


def test_the_trainers_do_not_edit_sys_path():
    edits = [
        f"{path.name}:{node.lineno}"
        for path, tree in _trees(REPO / "baselines")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    ]
    assert edits == []
