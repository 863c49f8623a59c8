"""How the package's house reads: underscore modules, private names imported across modules,
functions' lengths and parameter counts (issue 51's measures).

    python scripts/house_metrics.py [--list]

Reads every module of ``llm_marl_envs`` with ``ast``; imports nothing of the package. A
*private name imported across modules* is ``from x import _name`` (or ``x._name``-style
attribute access on an imported module) where ``x`` is another module of the package; deprecated
alias modules (docstring starting "Deprecated", see ``core/moved.py``) are left out.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "llm_marl_envs"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_alias(tree: ast.Module) -> bool:
    """A deprecated alias module: its docstring starts with "Deprecated" (core/moved.py)."""
    return (ast.get_docstring(tree) or "").startswith("Deprecated")


def _resolve(name: str, path: Path, node: ast.ImportFrom) -> str:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        head = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(head + ([base] if base else []))
    return base


def imported_modules(name: str, path: Path) -> set[str]:
    """The package modules ``name`` imports (``import x``, ``from x import y``, and ``y`` when
    it is a module), function-level imports included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("llm_marl_envs"))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, path, node)
            if base.startswith("llm_marl_envs"):
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
    return found


def measure(mods: dict[str, Path]) -> dict:
    private_imports, long_functions, params = [], [], []
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in mods.items()}
    aliases = {name for name, tree in trees.items() if _is_alias(tree)}
    underscore = [  # __main__ (what python -m runs) is a dunder, not a private module
        m
        for m in mods
        if m.rsplit(".", 1)[-1].startswith("_") and not m.endswith("__") and m not in aliases
    ]
    total_functions = 0
    for name, path in mods.items():
        if name in aliases:
            continue
        tree = trees[name]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(name, path, node)
                if not base.startswith("llm_marl_envs") or base == name:
                    continue
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        if f"{base}.{a.name}" in mods:
                            continue  # a module, counted as an underscore module
                        private_imports.append(f"{name}: {base}.{a.name}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                total_functions += 1
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long_functions.append(f"{name}.{node.name}: {length} lines")
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                count -= 1 if a.args and a.args[0].arg in {"self", "cls"} else 0
                params.append((count, f"{name}.{node.name}"))
    params.sort(reverse=True)
    return {
        "modules": len(mods) - len(aliases),
        "deprecated aliases": sorted(aliases),
        "underscore modules": underscore,
        "private names imported across modules": private_imports,
        "functions": total_functions,
        "functions over 60 lines": long_functions,
        "most parameters": params[:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the names behind each count")
    args = parser.parse_args()
    result = measure(modules())
    for key, value in result.items():
        if isinstance(value, list) and key != "most parameters":
            print(f"{key}: {len(value)}")
            if args.list:
                print("".join(f"    {v}\n" for v in value), end="")
        elif key == "most parameters":
            print(f"{key}: " + ", ".join(f"{n} {f}" for n, f in value[:5]))
        else:
            print(f"{key}: {value}")
    share = len(result["functions over 60 lines"]) / max(result["functions"], 1)
    print(f"share over 60 lines: {share:.1%}")


if __name__ == "__main__":
    main()
