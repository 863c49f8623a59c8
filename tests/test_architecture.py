"""The package's import graph: layers that only import downwards, and no import circles.

Every ``import`` of every module of ``llm_marl_envs`` (function-level ones included) is read
with the standard library's ``ast``. A package may import itself and any package of a lower
layer; a cycle between modules fails whatever the layers say. Adding a module to a new
package means giving that package a layer here, on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "llm_marl_envs"

#: Lower layers never import higher ones. "" is the package's own ``__init__``.
LAYERS = {
    "core": 0,
    "sandbox": 1,
    "data": 2,
    "rewards": 2,
    "models": 2,
    "games": 2,
    "registry": 2,
    "": 3,
    "envs": 3,
    "policies": 4,
    "rollout": 5,
    "algorithms": 6,
    "integrations": 6,
    "commands": 6,  # the deprecated alias of cli.commands (a one-line file, no imports)
    "testing": 6,  # real servers for users' tests (and ours): transformers serve, Ray clusters
    "evaluation": 7,
    "leaderboard": 8,
    "bench": 9,  # the deprecated alias of evaluation
    "cli": 9,  # the llm-marl command: main, the commands, their option groups, eval, leaderboard
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The package modules that ``name`` imports (``from pkg import submodule`` included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1]
                    + ([base] if base else [])
                )
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        out.update(t for t in targets if t in MODULES and t != name)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer_of(module: str) -> tuple[str, int]:
    parts = module.split(".")
    package = parts[1] if len(parts) > 1 else ""
    if package not in LAYERS:
        pytest.fail(f"{module}: package {package!r} has no layer in tests/test_architecture.py")
    return package, LAYERS[package]


def test_every_import_points_down_the_layers():
    upward = []
    for module, targets in GRAPH.items():
        package, rank = _layer_of(module)
        for target in targets:
            other, other_rank = _layer_of(target)
            if other != package and other_rank >= rank:
                upward.append(f"{module} -> {target}")
    assert upward == [], "imports that do not point to a lower layer:\n" + "\n".join(upward)


def test_there_are_no_import_circles():
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in GRAPH:
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_graph_is_read_at_all():
    # Guards the two tests above against passing on an empty or mis-parsed graph.
    assert "llm_marl_envs.envs.gsm8k" in GRAPH
    assert "llm_marl_envs.envs.base.pioneer_observer" in GRAPH["llm_marl_envs.envs.gsm8k"]
    assert "llm_marl_envs.sandbox._codec" in GRAPH["llm_marl_envs.sandbox.pool"]
    assert sum(len(t) for t in GRAPH.values()) > 100


@pytest.mark.parametrize(
    "module",
    [
        "llm_marl_envs.envs.donor_evolution",
        "llm_marl_envs.rollout.scripted",
        "llm_marl_envs.envs.cory",
        "llm_marl_envs.envs.writing",
    ],
)
def test_envs_holds_environments_only(module):
    assert module not in MODULES  # moved: see CHANGELOG.md
