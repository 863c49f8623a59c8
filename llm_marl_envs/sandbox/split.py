"""Split a HumanEval-style ``def check(candidate): ...`` into one test per top-level assert."""

from __future__ import annotations

import ast

__all__ = ["split_asserts"]


def _mentions_assert(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def _is_trivial(node: ast.Assert) -> bool:
    """``assert True`` and friends test nothing and would be free reward."""
    return isinstance(node.test, ast.Constant) and bool(node.test.value)


def split_asserts(check_source: str, function: str = "check") -> list[str]:
    """One test source per top-level assert of ``check``.

    Statements of ``check`` that are not asserts (imports, assignments, ``for`` loops without
    asserts, ...) are helpers: each one is copied in front of every later test, so each test
    runs on its own with only ``candidate`` (and the names of the trusted ``setup``) bound.
    A compound statement that contains asserts (``for x in ...: assert ...``) becomes one
    test. Constant-true asserts (``assert True, "..."``) are dropped.

    Args:
        check_source: Python source holding ``def check(candidate): ...`` (other module-level
            code such as ``METADATA = ...`` is allowed and ignored here; pass the same source
            as ``setup`` so the tests can use its names).
        function: Name of the check function.

    Returns:
        Test sources that refer to ``candidate``. The parameter of ``check`` is renamed
        to ``candidate`` by binding it in front of each test when it has another name.

    Raises:
        SyntaxError: ``check_source`` does not parse.
        ValueError: There is no function named ``function``.
    """
    module = ast.parse(check_source)
    check = next(
        (
            n
            for n in module.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function
        ),
        None,
    )
    if check is None:
        raise ValueError(f"no top-level function named {function!r} in the check source")
    prelude: list[str] = []
    params = [a.arg for a in check.args.posonlyargs + check.args.args]
    if params and params[0] != "candidate":
        prelude.append(f"{params[0]} = candidate")
    helpers: list[str] = []
    tests: list[str] = []
    for statement in check.body:
        if (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            continue  # docstring
        if isinstance(statement, ast.Assert):
            if _is_trivial(statement):
                continue
        elif not _mentions_assert(statement):
            helpers.append(ast.unparse(statement))
            continue
        tests.append("\n".join(prelude + helpers + [ast.unparse(statement)]))
    return tests
