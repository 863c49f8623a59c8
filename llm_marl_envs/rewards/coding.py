"""Joint reward of MAGRPO's cooperative coding task (MAGRPO: Liu et al., 2025, arXiv:2508.04652), static part and total.

The helper agent writes ``def aux(...)``, the main agent writes the entry-point function and
may call ``aux``. The joint reward (maximum 4.0) has gated levels:

* ``structure``: aux defined with a ``return`` +0.4 (does not gate); the entry point defined
  with a ``return`` +0.6, else stop;
* ``syntax``: prompt imports + aux + main parse with ``ast.parse`` +0.5, else stop;
* ``tests``: + passed / total, each assert of ``check(candidate)`` run separately in the
  sandbox (computed by the caller; this module never runs code);
* ``cooperation`` (only if at least one test passed and aux is defined): main calls ``aux(``
  +0.5; main is not a trivial wrapper (its body only ``return aux(...)``, or
  ``x = aux(...); return x``) +1.0; aux called as a bare statement with its result ignored
  -0.5.

Everything here is pure static analysis with :mod:`ast`: :func:`extract_code` unwraps
markdown fences, :func:`analyse` inspects the two answers, :func:`prepare` returns what the
sandbox must run, :func:`coding_reward` turns an analysis and test counts into named
components. The tests run in :mod:`llm_marl_envs.rewards.coding_sandbox`, which also holds
the whole reward with the TRL signature (:func:`~llm_marl_envs.rewards.coding_sandbox.coop_coding_reward`).
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from functools import lru_cache

from llm_marl_envs.sandbox import split_asserts

__all__ = [
    "CodeAnalysis",
    "PaperProgram",
    "analyse",
    "build_program",
    "coding_reward",
    "extract_code",
    "prepare",
    "split_tests",
]

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_code(text: str, function: str | None = None) -> str:
    """Unwrap markdown code fences; with several blocks prefer one that defines ``function``.

    Text without fences is returned as it is (stripped of surrounding blank lines).
    """
    blocks = [
        body
        for lang, body in _FENCE.findall(text)
        if lang.lower() in ("", "python", "py", "python3")
    ]
    if not blocks:
        return text.strip("\n")
    if function:
        for body in blocks:
            if re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(function)}\s*\(", body, re.M):
                return body.strip("\n")
    return blocks[0].strip("\n")


def prompt_imports(prompt: str) -> str:
    """The import statements of a HumanEval prompt (kept when the program is assembled)."""
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return ""
    return "\n".join(
        ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
    )


def build_program(prompt: str, aux_code: str, main_code: str) -> str:
    """The program that is tested: the prompt's imports, then aux, then main."""
    return "\n\n".join(
        part for part in (prompt_imports(prompt), aux_code, main_code) if part.strip()
    )


@dataclass(frozen=True)
class CodeAnalysis:
    """What static analysis finds in the two answers."""

    aux_defined: bool
    aux_returns: bool
    main_defined: bool
    main_returns: bool
    syntax_ok: bool
    calls_aux: bool
    trivial_wrapper: bool
    ignores_aux_result: bool
    syntax_error: str | None = None


def _find_function(tree: ast.AST | None, name: str) -> ast.FunctionDef | None:
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def _returns_value(function: ast.FunctionDef | None) -> bool:
    return function is not None and any(
        isinstance(n, ast.Return) and n.value is not None for n in ast.walk(function)
    )


def _is_aux_call(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "aux"


def _body_without_docstring(function: ast.FunctionDef) -> list[ast.stmt]:
    body = list(function.body)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return body


def _is_trivial_wrapper(function: ast.FunctionDef) -> bool:
    body = _body_without_docstring(function)
    if len(body) == 1:
        return isinstance(body[0], ast.Return) and _is_aux_call(body[0].value)
    if len(body) == 2:
        first, second = body
        return (
            isinstance(first, ast.Assign)
            and len(first.targets) == 1
            and isinstance(first.targets[0], ast.Name)
            and _is_aux_call(first.value)
            and isinstance(second, ast.Return)
            and isinstance(second.value, ast.Name)
            and second.value.id == first.targets[0].id
        )
    return False


def _quiet_parse(code: str) -> ast.Module:
    """``ast.parse`` without the compiler's warnings: agents' code is data, and its invalid
    escape sequences (SyntaxWarning, DeprecationWarning before 3.12) are not the user's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(code)


def _parse(code: str) -> ast.Module | None:
    try:
        return _quiet_parse(code)
    except (SyntaxError, ValueError):  # ValueError: source with NUL bytes
        return None


def analyse(prompt: str, aux_code: str, main_code: str, entry_point: str) -> CodeAnalysis:
    """Static facts about one joint answer (``aux_code`` from the helper, ``main_code`` from main)."""
    aux_fn = _find_function(_parse(aux_code), "aux")
    main_fn = _find_function(_parse(main_code), entry_point)
    syntax_error = None
    try:
        _quiet_parse(build_program(prompt, aux_code, main_code))
        syntax_ok = True
    except (SyntaxError, ValueError) as error:
        syntax_ok, syntax_error = False, f"{type(error).__name__}: {error}"
    calls = main_fn is not None and any(_is_aux_call(n) for n in ast.walk(main_fn))
    ignored = main_fn is not None and any(
        isinstance(n, ast.Expr) and _is_aux_call(n.value) for n in ast.walk(main_fn)
    )
    return CodeAnalysis(
        aux_defined=aux_fn is not None,
        aux_returns=_returns_value(aux_fn),
        main_defined=main_fn is not None,
        main_returns=_returns_value(main_fn),
        syntax_ok=syntax_ok,
        calls_aux=calls,
        trivial_wrapper=main_fn is not None and _is_trivial_wrapper(main_fn),
        ignores_aux_result=ignored,
        syntax_error=syntax_error,
    )


def coding_reward(analysis: CodeAnalysis, passed: int, total: int) -> dict[str, float]:
    """Named components (``structure``, ``syntax``, ``tests``, ``cooperation``, ``total``)."""
    out = {"structure": 0.0, "syntax": 0.0, "tests": 0.0, "cooperation": 0.0}
    if analysis.aux_defined and analysis.aux_returns:
        out["structure"] += 0.4
    if analysis.main_defined and analysis.main_returns:
        out["structure"] += 0.6
        if analysis.syntax_ok:
            out["syntax"] = 0.5
            out["tests"] = passed / total if total else 0.0
            if passed > 0 and analysis.aux_defined:
                cooperation = 0.0
                if analysis.calls_aux:
                    cooperation += 0.5
                    if not analysis.trivial_wrapper:
                        cooperation += 1.0
                if analysis.ignores_aux_result:
                    cooperation -= 0.5
                out["cooperation"] = cooperation
    out["total"] = out["structure"] + out["syntax"] + out["tests"] + out["cooperation"]
    return out


@lru_cache(maxsize=1024)
def split_tests(test_source: str) -> tuple[str, ...]:
    """The tests of a ``check(candidate)`` source, each assert on its own (see
    :func:`llm_marl_envs.sandbox.split_asserts`); cached, as every episode of a problem asks."""
    return tuple(split_asserts(test_source))


@dataclass(frozen=True)
class PaperProgram:
    """One joint answer, prepared for the sandbox.

    Attributes:
        analysis: :func:`analyse` of the two answers.
        aux_code: The helper's code, unwrapped from fences.
        main_code: Main's code, unwrapped from fences.
        program: What the sandbox loads: the prompt's imports, aux, main.
        tests: One source per assert of ``check(candidate)`` (:func:`split_tests`).
        setup: The tests' namespace: the prompt and the test source.
    """

    analysis: CodeAnalysis
    aux_code: str
    main_code: str
    program: str
    tests: tuple[str, ...]
    setup: str

    @property
    def runs(self) -> bool:
        """The climb reaches the tests: main defined with a return, and the program parses."""
        a = self.analysis
        return a.main_defined and a.main_returns and a.syntax_ok


def prepare(
    prompt: str, aux_answer: str, main_answer: str, test: str, entry_point: str
) -> PaperProgram:
    """Static analysis of one joint answer and the tests to run (answers as the env reads them)."""
    aux_code = extract_code(aux_answer, "aux")
    main_code = extract_code(main_answer, entry_point)
    return PaperProgram(
        analysis=analyse(prompt, aux_code, main_code, entry_point),
        aux_code=aux_code,
        main_code=main_code,
        program=build_program(prompt, aux_code, main_code),
        tests=split_tests(test),
        setup=f"{prompt}\n{test}",
    )
