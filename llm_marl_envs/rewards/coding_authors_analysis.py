"""The MAGRPO authors' static reading of a joint coding answer, as their released code reads it.

MAGRPO: Liu et al., 2025 (arXiv:2508.04652); their code: OpenMLRL/LLM_Collab_Code_Generation
(``rewards/code_utils.py``: ``cleanup_code``, ``extract_specific_function``,
``extract_test_cases``; ``external/``: ``analyze_code``). Both of their uses read answers this
way: the reward (:mod:`llm_marl_envs.rewards.coding_authors`) and the between-turn feedback
(:mod:`llm_marl_envs.envs.base.coding_prompts`).

* :func:`function_blocks` and :func:`extract_function`: their line-based extraction of the
  functions from a raw answer (fences and prose dropped, a function runs while lines are blank
  or indented deeper than its ``def``); :func:`prompt_import_lines`: the prompt's imports;
* :func:`aux_misuses` and :func:`is_thin_wrapper`: how main uses ``aux``;
* :func:`analyse_feedback`: all of the above for one joint answer (:class:`FeedbackAnalysis`,
  named after the feedback that reports it), with the ``ast`` syntax check of the program;
* :func:`extract_cases`: the asserts of ``check(candidate)`` their runner executes.

Everything here is pure: no code runs (``tests/envs/test_coop_coding_prompts.py`` checks it).
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = [
    "FeedbackAnalysis",
    "FeedbackCase",
    "analyse_feedback",
    "aux_misuses",
    "extract_cases",
    "extract_function",
    "function_blocks",
    "is_thin_wrapper",
    "prompt_import_lines",
]

# --------------------------------------------------------------------------- extraction
_DEF_LINE = re.compile(r"^(\s*)def\s+\w+\s*\(")
_ANY_DEF = re.compile(r"def\s+\w+\s*\(")
_PROSE = re.compile(r"^[A-Z][a-z].*[.!?:]$")
_CODE_HINTS = ("def ", "return ", "if ", "for ", "while ", "=", "(", ")", "[", "]")
_IMPORT_LINE = (
    re.compile(r"^from\s+[\w\.]+\s+import\s+.*$"),
    re.compile(r"^import\s+[\w\.,\s]+$"),
)
_QUOTES = ('"""', "'''")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _continues(line: str, base: int) -> bool:
    """A line that stays in a function whose ``def`` is indented ``base``: blank or deeper."""
    return not line.strip() or line.startswith(" " * (base + 1)) or line.startswith("\t")


def prompt_import_lines(prompt: str) -> str:
    """The prompt's import lines (``import x`` / ``from x import y``), each once, in order."""
    found: list[str] = []
    for raw in (prompt or "").split("\n"):
        line = raw.strip()
        if any(p.match(line) for p in _IMPORT_LINE) and line not in found:
            found.append(line)
    return "\n".join(found)


def _scan_blocks(lines: list[str]) -> Iterator[list[str]]:
    """The ``def`` blocks of ``lines``, the authors' way (indentation, docstrings at def level)."""
    block: list[str] | None = None
    base = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if _DEF_LINE.match(line):
            if block is not None:
                yield block
            block, base = [line], _indent(line)
        elif block is not None:
            head = line.strip()
            if _continues(line, base):
                block.append(line)
            elif head.startswith(_QUOTES):
                quote = head[:3]
                block.append(line)
                if not (head.endswith(quote) and len(head) > 3):
                    # A docstring at the def's level runs to the next line holding the quote.
                    i += 1
                    while i < len(lines):
                        block.append(lines[i])
                        if quote in lines[i]:
                            break
                        i += 1
            else:
                yield block
                block = None
        i += 1
    if block is not None:
        yield block


def _is_prose(line: str) -> bool:
    """A sentence between functions (kept: comments, docstrings, anything code-like)."""
    head = line.strip()
    return (
        bool(head)
        and not head.startswith(("#", *_QUOTES))
        and not any(hint in line for hint in _CODE_HINTS)
        and _PROSE.match(head) is not None
    )


def function_blocks(code: str) -> str:
    """Only the function definitions of an answer (their ``cleanup_code``); "" if none.

    Markdown fences are dropped, every ``def`` block kept (a block ends at the first
    non-blank line that is not indented deeper than its ``def``; a docstring at the ``def``'s
    own level stays in), blocks are joined by a blank line, prose-like lines are removed and
    the whole is stripped.
    """
    if not code or not isinstance(code, str):
        return ""
    code = re.sub(r"```\s*\n?", "", re.sub(r"```python\s*\n?", "", code))
    joined = "\n\n".join("\n".join(b) for b in _scan_blocks(code.split("\n")))
    kept = "\n".join(line for line in joined.split("\n") if not _is_prose(line)).strip()
    return kept if _ANY_DEF.search(kept) else ""


def extract_function(code: str, name: str) -> str:
    """The function ``name`` of an answer (their ``extract_specific_function``); "" if absent.

    In :func:`function_blocks`, a ``def name(`` line starts the function (one met again
    inside it starts it afresh), which runs while lines are blank or indented deeper than
    that line; the result is stripped.
    """
    if not code or not name:
        return ""
    start = re.compile(rf"^(\s*)def\s+{re.escape(name)}\s*\(")
    found: list[str] = []
    base = 0
    inside = False
    for line in function_blocks(code).split("\n"):
        if start.match(line):
            found, base, inside = [line], _indent(line), True
        elif inside:
            if not _continues(line, base):
                break
            found.append(line)
    return "\n".join(found).strip()


def _definition(function: str, description: str) -> tuple[bool, str]:
    if not function:
        return False, f"{description} not defined"
    if re.search(r"return\s+", function) is None:
        return False, f"{description} missing return statement"
    return True, f"{description} properly defined with return statement"


# --------------------------------------------------------------------------- aux usage
_AUX_CALL = re.compile(r"\baux\s*\(")
_AUX_ASSIGNED = re.compile(r"(\w+)\s*=\s*aux\s*\(")


def _quiet_parse(code: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(code)


def _preorder(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """``(node, parent)`` in the order ``ast.NodeVisitor`` visits them."""
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        stack.extend((child, node) for child in reversed(list(ast.iter_child_nodes(node))))


def _reassigned_before_use(tree: ast.Module, name: str, after: int) -> int | None:
    """The first line after ``after`` that rebinds ``name`` before any later read of it."""
    rebinds, reads = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno > after:
            rebinds += [
                node.lineno for t in node.targets if isinstance(t, ast.Name) and t.id == name
            ]
        if (
            isinstance(node, ast.Name)
            and node.id == name
            and isinstance(node.ctx, ast.Load)
            and node.lineno > after
        ):
            reads.append(node.lineno)
    if rebinds and min(rebinds) < min(reads, default=float("inf")):
        return min(rebinds)
    return None


def _assignment_problem(
    tree: ast.Module, assign: ast.Assign, reads: Mapping[str, list[int]]
) -> str | None:
    """Why ``x = aux(...)`` wastes the result, judged on the reads seen so far in visit order."""
    for target in assign.targets:
        if not isinstance(target, ast.Name):
            continue
        name = target.id
        if not any(line > assign.lineno for line in reads.get(name, ())):
            return f"assigned to {name} but never used"
        again = _reassigned_before_use(tree, name, assign.lineno)
        if again:
            return f"assigned to {name} but reassigned on line {again} before use"
    return None


def aux_misuses(main_function: str) -> list[str]:
    """``"Line N: reason"`` for each call of ``aux`` whose result is wasted (their analyser).

    A bare call statement is "standalone call (not assigned)"; ``x = aux(...)`` is wasted when
    ``x`` is not read later ("assigned to x but never used") or rebound before it is read;
    any other place (return value, argument, expression, condition, collection...) is fine.
    Their analyser judges "read later" on the reads it has visited *before* the call (visit
    order, so in straight-line code an assigned result always counts as unused); this keeps
    that. Code that does not parse: [].
    """
    if not main_function or "aux" not in main_function:
        return []
    try:
        tree = _quiet_parse(main_function)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    reads: dict[str, list[int]] = {}
    problems: list[str] = []
    for node, parent in _preorder(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads.setdefault(node.id, []).append(node.lineno)
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "aux"
        ):
            continue
        reason = None
        if parent is None or isinstance(parent, ast.Expr):
            reason = "standalone call (not assigned)"
        elif isinstance(parent, ast.Assign):
            reason = _assignment_problem(tree, parent, reads)
        if reason:
            problems.append(f"Line {node.lineno}: {reason}")
    return problems


def _code_lines(function: str) -> list[str]:
    """The stripped lines of a function minus blanks, comments, ``def`` lines and docstrings
    (their line-based reading: a line that opens with triple quotes and does not close them
    on itself opens a docstring, even the closing ``\"\"\"`` line)."""
    lines: list[str] = []
    in_doc = False
    for raw in function.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(_QUOTES):
            # Opens a docstring unless it also closes on this line (which keeps the state).
            in_doc = in_doc or not (line.endswith(line[:3]) and len(line) > 3)
            continue
        if in_doc:
            in_doc = not any(q in line for q in _QUOTES)
            continue
        if not line.startswith(("#", "def ")):
            lines.append(line)
    return lines


def is_thin_wrapper(main_function: str) -> bool:
    """Main is only ``return aux(...)`` or ``x = aux(...); return x`` (their line-based test;
    a body with no code lines left counts as a wrapper)."""
    if not main_function:
        return False
    lines = _code_lines(main_function)
    if not lines:
        return True
    if len(lines) == 1:
        return lines[0].startswith("return ") and "aux" in lines[0]
    if len(lines) == 2:
        assigned = _AUX_ASSIGNED.search(lines[0])
        return assigned is not None and lines[1] == f"return {assigned.group(1)}"
    return False


# --------------------------------------------------------------------------- analysis
@dataclass(frozen=True)
class FeedbackAnalysis:
    """The static facts their feedback reports about one joint answer.

    Attributes:
        aux_function: ``aux`` as extracted from the helper's answer ("" if absent).
        main_function: The entry point as extracted from main's answer ("" if absent).
        aux_defined, aux_message: ``aux`` found with a ``return``, and their sentence for it.
        main_defined, main_message: The same for the entry point.
        program: What their runner executes: the prompt's imports, ``aux``, the entry point.
        syntax_ok, syntax_message: ``ast.parse`` of ``program``, and their sentence for it.
        syntax_error: ``(line, column, message)`` of the syntax error, else ``None``.
        aux_called: Main's code calls ``aux(``.
        aux_misuses: ``"Line N: reason"`` per wasted ``aux`` result (see :func:`aux_misuses`).
        thin_wrapper: Main is a thin wrapper over ``aux`` (see :func:`is_thin_wrapper`).
    """

    aux_function: str
    main_function: str
    aux_defined: bool
    aux_message: str
    main_defined: bool
    main_message: str
    program: str
    syntax_ok: bool
    syntax_message: str
    syntax_error: tuple[int | None, int | None, str] | None
    aux_called: bool
    aux_misuses: tuple[str, ...]
    thin_wrapper: bool


def _syntax(program: str) -> tuple[bool, str, tuple[int | None, int | None, str] | None]:
    try:
        _quiet_parse(program)
    except SyntaxError as error:
        where = (error.lineno, error.offset, error.msg)
        return False, f"Combined code has syntax error: {error}", where
    except (ValueError, RecursionError, MemoryError) as error:  # NUL bytes, absurd nesting
        return False, f"Combined code has syntax error: {error}", (None, None, str(error))
    return True, "Combined code syntax OK", None


def analyse_feedback(
    prompt: str, aux_completion: str, main_completion: str, entry_point: str
) -> FeedbackAnalysis:
    """Everything their feedback reports that needs no execution (their ``analyze_code``).

    Args:
        prompt: The problem's prompt (HumanEval ``prompt``); its imports join the program.
        aux_completion: The helper's previous answer, as generated.
        main_completion: Main's previous answer, as generated.
        entry_point: The function main must write.
    """
    aux_function = extract_function(aux_completion, "aux")
    main_function = extract_function(main_completion, entry_point)
    aux_defined, aux_message = _definition(aux_function, "Aux function")
    main_defined, main_message = _definition(main_function, f"Main function ({entry_point})")
    program = "\n\n".join(
        part
        for part in (
            prompt_import_lines(prompt),
            function_blocks(aux_function),
            function_blocks(main_function),
        )
        if part
    )
    syntax_ok, syntax_message, syntax_error = _syntax(program)
    return FeedbackAnalysis(
        aux_function=aux_function,
        main_function=main_function,
        aux_defined=aux_defined,
        aux_message=aux_message,
        main_defined=main_defined,
        main_message=main_message,
        program=program,
        syntax_ok=syntax_ok,
        syntax_message=syntax_message,
        syntax_error=syntax_error,
        aux_called=bool(main_function) and _AUX_CALL.search(main_function) is not None,
        aux_misuses=tuple(aux_misuses(main_function)),
        thin_wrapper=is_thin_wrapper(main_function),
    )


# --------------------------------------------------------------------------- tests
@dataclass(frozen=True)
class FeedbackCase:
    """One test of the feedback.

    Attributes:
        source: The assert line as the test source has it (uses ``candidate``): run this in
            the sandbox, which binds ``candidate`` to the entry point.
        text: The same line with ``candidate`` replaced by the entry point's name: what their
            runner executes and what the feedback shows.
    """

    source: str
    text: str


def extract_cases(test_source: str, entry_point: str) -> list[FeedbackCase]:
    """The asserts their runner executes (their ``extract_test_cases``).

    In the body of ``def check(candidate):`` (up to a blank line followed by ``def``), each
    line that starts with ``assert`` plus whitespace and mentions ``candidate``, stripped, each
    distinct line once.
    """
    if not test_source or not entry_point:
        return []
    found = re.search(r"def check\(candidate\):(.*?)(?=\n\ndef|\Z)", test_source, re.DOTALL)
    if found is None:
        return []
    lines: list[str] = []
    for raw in found.group(1).strip().split("\n"):
        line = raw.strip()
        if re.match(r"assert\s+[^\n]*candidate", line) and line not in lines:
            lines.append(line)
    return [FeedbackCase(line, line.replace("candidate", entry_point)) for line in lines]
