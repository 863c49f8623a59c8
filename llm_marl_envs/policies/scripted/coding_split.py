"""How the scripted coding oracle writes a helper ``aux`` and a main function (pure, no I/O).

Tried in this order by :mod:`llm_marl_envs.policies.scripted.coding`; each returns
``(aux_code, main_code)``, or ``None`` where it cannot:

* :func:`split_solution`: a reference solution cut in two. The one other function the solution
  needs becomes ``aux`` (a function of the prompt, like HumanEval/10's ``is_palindrome``, or
  one defined inside the solution, like /39's ``is_prime``: the authors' program holds only
  ``aux`` and main, and their line-based extraction cuts a main short after an inner ``def``).
  Otherwise one sub-expression moves into ``aux`` (the "extract function" refactoring: the
  local names it reads become ``aux``'s parameters), the largest that leaves main more than a
  thin wrapper by the authors' check
  (:func:`~llm_marl_envs.rewards.coding_authors_analysis.is_thin_wrapper`). A main that would be one
  ``return E`` computes ``E`` on a line of its own: ``part = aux(...)`` first where that part
  is always evaluated first, else ``result = E`` / ``return result``. Every pair is checked to
  survive the authors' extraction whole.
* :func:`whole_solution`: the whole solution as ``aux``, main returning its result (a thin
  wrapper: no cooperation bonus beyond calling ``aux``).
* :func:`answer_table`: the answers that the problem's own asserts expect (privileged: the
  tests are hidden from real players). ``aux`` finds which asserted call it is given, main
  returns that call's expected answer.
"""

from __future__ import annotations

import ast
import builtins
import copy
from collections.abc import Iterator

from llm_marl_envs.rewards.coding_authors_analysis import (
    extract_cases,
    extract_function,
    is_thin_wrapper,
)

__all__ = ["answer_table", "split_solution", "whole_solution"]

_REFUSED = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.JoinedStr, ast.Starred)
_DYNAMIC = frozenset({"super", "locals", "vars", "globals", "eval", "exec"})

Pair = tuple[str, str]


# --------------------------------------------------------------------------- solutions
def split_solution(source: str, entry_point: str) -> Pair | None:
    """A solution (the prompt's code with the function written out) as ``aux`` and main."""
    module = _parse(source)
    functions = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    entry = functions.pop(entry_point, None)
    if entry is None:
        return None
    entry = _without_docstring(entry)
    used = _loaded_names(entry) & _module_names(module, entry_point)
    inner = [n for n in entry.body if isinstance(n, ast.FunctionDef)]
    helpers = [functions.get(name) for name in used] + inner
    if len(helpers) > 1 or None in helpers or (inner and _closes_over(inner[0], entry)):
        return None  # more than one function or name to bring along, or not a function
    if not helpers:
        pairs = _extracted(entry)
    else:
        entry.body = [n for n in entry.body if n not in inner]
        pairs = _function_helper(entry, _without_docstring(helpers[0]))
    return next((pair for pair in pairs if _playable(*pair, entry_point)), None)


def whole_solution(source: str, entry_point: str) -> Pair | None:
    """The whole solution as ``aux``, and main returning its result (a thin wrapper)."""
    entry = _function_named(_parse(source), entry_point)
    params = _parameters(entry)
    if params is None:
        return None
    aux = _without_docstring(entry)
    aux.name = "aux"
    main = _function(entry_point, params, ast.parse(f"aux({', '.join(params)})").body[0].value)
    pair = ast.unparse(aux), main
    return pair if _same_code(extract_function(pair[0], "aux"), pair[0]) else None


def _function_helper(entry: ast.FunctionDef, helper: ast.FunctionDef) -> Iterator[Pair]:
    """``helper`` (a function of the prompt, or one defined inside the solution) as ``aux``."""
    renamed = _Renamer(helper.name, "aux")
    main = renamed.visit(copy.deepcopy(entry))
    aux = renamed.visit(copy.deepcopy(helper))
    aux.name = "aux"
    imports = [n for n in entry.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    aux.body = [*imports, *aux.body]
    aux_code = ast.unparse(aux)
    if not _single_return(main):
        yield aux_code, ast.unparse(main)
        return
    yield aux_code, ast.unparse(_on_its_own_line(main))
    for node in _eager_parts(main.body[0].value):
        yield aux_code, ast.unparse(_hoisted(main, node, node))


def _extracted(entry: ast.FunctionDef) -> Iterator[Pair]:
    """One sub-expression moved into ``aux``, largest first; local names become parameters.

    In a body that is a single ``return E``, main computes ``E`` on a line of its own, the
    part first where it is always evaluated first (``part = aux(...)``)."""
    local = _bound_names(entry)
    single = _single_return(entry)
    eager = _eager_parts(entry.body[0].value) if single else []
    for node in sorted(_candidates(entry), key=lambda node: -_size(node)):
        names = _free_names(node)
        if _DYNAMIC & set(names):
            continue
        params = [name for name in names if name in local]
        call = ast.Call(ast.Name("aux", ast.Load()), [ast.Name(p, ast.Load()) for p in params], [])
        main = _Replacer(node, call).visit(copy.deepcopy(entry))
        if any(node is part for part in eager):
            main = _hoisted(entry, node, call)
        elif single:
            main = _on_its_own_line(main)
        yield _function("aux", params, node), ast.unparse(main)


def _closes_over(inner: ast.FunctionDef, entry: ast.FunctionDef) -> bool:
    """``inner`` reads a local name of ``entry`` (besides imports, which ``aux`` repeats)."""
    imported = {
        (a.asname or a.name).split(".")[0]
        for n in entry.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    outside = _loaded_names(inner) - _bound_names(inner)
    return bool(outside & (_bound_names(entry) - imported))


def _playable(aux: str, main: str, entry_point: str) -> bool:
    """Main calls aux, is no thin wrapper, and both survive the authors' extraction whole."""
    return (
        "aux(" in main
        and not is_thin_wrapper(main)
        and _same_code(extract_function(aux, "aux"), aux)
        and _same_code(extract_function(main, entry_point), main)
    )


def _same_code(extracted: str, written: str) -> bool:
    try:
        return ast.dump(ast.parse(extracted)) == ast.dump(ast.parse(written))
    except SyntaxError:
        return False


def _single_return(function: ast.FunctionDef) -> bool:
    body = function.body
    return len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None


def _on_its_own_line(function: ast.FunctionDef) -> ast.FunctionDef:
    """``return E`` as ``result = E`` / ``return result``."""
    name = _unused(function, "result")
    function = copy.deepcopy(function)
    value = function.body[0].value
    function.body = [
        ast.Assign([ast.Name(name, ast.Store())], value, lineno=0),
        ast.Return(ast.Name(name, ast.Load())),
    ]
    return function


def _unused(function: ast.FunctionDef, stem: str) -> str:
    taken = _loaded_names(function) | _bound_names(function)
    return next(n for n in (stem, *(f"{stem}_{i}" for i in range(1, 99))) if n not in taken)


def _hoisted(function: ast.FunctionDef, node: ast.expr, value: ast.expr) -> ast.FunctionDef:
    """``return E`` as ``part = value`` / ``return E`` with ``node`` read from ``part``."""
    name = _unused(function, "part")
    rest = _Replacer(node, ast.Name(name, ast.Load())).visit(copy.deepcopy(function.body[0]))
    function = copy.deepcopy(function)
    function.body = [ast.Assign([ast.Name(name, ast.Store())], value, lineno=0), rest]
    return function


def _eager_parts(value: ast.expr) -> list[ast.expr]:
    """The parts of ``value`` that are always evaluated, and before the rest of it: safe to
    compute first on a line of their own (not ``value`` itself)."""
    found: list[ast.expr] = []
    pending = list(_eager_children(value))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Name, ast.Constant, ast.Starred)):
            continue
        found.append(node)
        pending.extend(_eager_children(node))
    return found


def _eager_children(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Subscript, ast.Attribute)):
        return [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return list(node.elts)
    if isinstance(node, ast.Compare):
        return [node.left, node.comparators[0]]
    if isinstance(node, ast.BoolOp):
        return node.values[:1]
    if isinstance(node, ast.IfExp):
        return [node.test]
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return [node.generators[0].iter]
    return []


def _candidates(entry: ast.FunctionDef) -> Iterator[ast.expr]:
    """Sub-expressions of the body that can move into a function of their own."""
    for statement in entry.body:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.expr)
                and not isinstance(node, (ast.Name, ast.Constant, ast.Slice, *_REFUSED))
                and isinstance(getattr(node, "ctx", ast.Load()), ast.Load)
                and not any(isinstance(inner, _REFUSED) for inner in ast.walk(node))
                and not _inside_fstring(statement, node)
            ):
                yield node


def _inside_fstring(statement: ast.stmt, node: ast.expr) -> bool:
    return any(
        node is inner
        for string in ast.walk(statement)
        if isinstance(string, ast.JoinedStr)
        for inner in ast.walk(string)
    )


def _free_names(node: ast.AST, inner: frozenset[str] = frozenset()) -> list[str]:
    """Names ``node`` reads from outside itself, in order of first reading."""
    found: list[str] = []
    for name in _reads(node, inner):
        if name not in found:
            found.append(name)
    return found


def _reads(node: ast.AST, inner: frozenset[str]) -> Iterator[str]:
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id not in inner:
            yield node.id
        return
    if isinstance(node, ast.Lambda):
        yield from _reads_all(node.args.defaults + node.args.kw_defaults, inner)
        yield from _reads(node.body, inner | {a.arg for a in _all_args(node.args)})
        return
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        yield from _reads_comprehension(node, inner)
        return
    yield from _reads_all(ast.iter_child_nodes(node), inner)


def _reads_comprehension(node: ast.AST, inner: frozenset[str]) -> Iterator[str]:
    """The first ``iter`` reads outside the comprehension; the rest see its targets."""
    scope = inner
    for number, generator in enumerate(node.generators):
        yield from _reads(generator.iter, inner if number == 0 else scope)
        scope = scope | {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
        yield from _reads_all(generator.ifs, scope)
    results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    yield from _reads_all(results, scope)


def _reads_all(nodes, inner: frozenset[str]) -> Iterator[str]:
    for child in nodes:
        if child is not None:
            yield from _reads(child, inner)


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _function(name: str, params: list[str], value: ast.expr) -> str:
    """``def name(params): return value`` as source."""
    function = ast.parse(f"def {name}({', '.join(params)}):\n    return 0").body[0]
    function.body[0].value = value
    return ast.unparse(function)


def _bound_names(function: ast.FunctionDef) -> set[str]:
    """Every name the function binds anywhere inside it (parameters, targets, inner defs)."""
    bound = {a.arg for a in _all_args(function.args)}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not function:
            bound.add(node.name)
        if isinstance(node, (ast.Lambda, ast.FunctionDef)):
            bound.update(a.arg for a in _all_args(node.args))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


def _loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _module_names(module: ast.Module, entry_point: str) -> set[str]:
    """Names the prompt defines at its top level besides the entry point and its imports."""
    names: set[str] = set()
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name != entry_point:
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return names


def _without_docstring(function: ast.FunctionDef) -> ast.FunctionDef:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str) and len(body) > 1:
            function = copy.deepcopy(function)
            function.body = body[1:]
    return function


def _size(node: ast.AST) -> int:
    return sum(1 for _ in ast.walk(node))


class _Renamer(ast.NodeTransformer):
    """Every read of one name becomes another (calls of a function, its recursion)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


class _Replacer(ast.NodeTransformer):
    """One node (found in a copy by its position) replaced by another."""

    def __init__(self, target: ast.AST, replacement: ast.AST) -> None:
        self.where = _position(target)
        self.replacement = replacement

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and _position(node) == self.where:
            return self.replacement
        return super().generic_visit(node)


def _position(node: ast.AST) -> tuple:
    return (
        type(node).__name__,
        getattr(node, "lineno", None),
        getattr(node, "col_offset", None),
        getattr(node, "end_lineno", None),
        getattr(node, "end_col_offset", None),
    )


# --------------------------------------------------------------------------- tests
def answer_table(prompt: str, test: str, entry_point: str) -> Pair | None:
    """``aux`` finds which asserted call it is given; main returns its expected answer."""
    params = _parameters(_function_named(_parse(prompt), entry_point))
    cases = [c for c in map(_asserted_call, extract_cases(test, entry_point)) if c]
    if params is None or not cases:
        return None
    calls = ", ".join(ast.unparse(ast.Tuple(list(args), ast.Load())) for args, _ in cases)
    answers = ", ".join(ast.unparse(expected) for _, expected in cases)
    aux = (
        "def aux(*args):\n"
        f"    cases = [{calls}]\n"
        "    for index, case in enumerate(cases):\n"
        "        if case == args:\n"
        "            return index\n"
        "    return None\n"
    )
    passed = ", ".join(params)
    main = (
        f"def {entry_point}({passed}):\n"
        f"    answers = [{answers}]\n"
        f"    index = aux({passed})\n"
        "    if index is None:\n"
        "        return None\n"
        "    return answers[index]\n"
    )
    return aux, main


def _parse(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError:
        return ast.Module([], [])


def _function_named(module: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _parameters(function: ast.FunctionDef | None) -> list[str] | None:
    """The names of ``function``'s parameters if they are all plain positional ones."""
    if function is None:
        return None
    args = function.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
        return None
    return [a.arg for a in args.args]


def _asserted_call(case) -> tuple[list[ast.expr], ast.expr] | None:
    """``(arguments, expected)`` of ``assert candidate(...) == E`` or
    ``assert abs(candidate(...) - E) < tol``, when both are plain values."""
    test = ast.parse(case.source).body[0].test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(test.ops[0], ast.Lt) and _is_call(left, "abs") and len(left.args) == 1:
        inner = left.args[0]
        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Sub):
            left, right = inner.left, inner.right
    elif not isinstance(test.ops[0], ast.Eq):
        return None
    if not _is_call(left, "candidate") or left.keywords:
        return None
    if not all(map(_is_plain_value, [*left.args, right])):
        return None
    return left.args, right


def _is_call(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _is_plain_value(node: ast.expr) -> bool:
    """Built only from literals and builtins (nothing the test defined for itself)."""
    return not any(isinstance(n, ast.Starred) for n in ast.walk(node)) and all(
        hasattr(builtins, name) for name in _loaded_names(node)
    )
