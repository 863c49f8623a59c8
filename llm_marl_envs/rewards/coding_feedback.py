"""Between-turn feedback of MAGRPO's multi-turn coding, as the authors' released code writes it.

The MAGRPO authors (Liu et al., 2025, arXiv:2508.04652; code: OpenMLRL/LLM_Collab_Code_Generation,
``external/``) train two turns: after turn 1 an "external transition" turns the two previous
answers into each agent's whole turn-2 prompt. This module rebuilds that text exactly, for
their four offline modes:

* ``level_feedback`` (their default): the previous code, then static and execution
  diagnostics: aux / main definition found (and why not), syntax with line and column, each
  failed test with its error, and for main how it uses ``aux``;
* ``level_passed``: short signals (implementation, syntax, tests summary, aux usage);
* ``passed``: one signal, "All levels passed" or "Not all levels passed";
* ``plain``: the previous code and "revise", nothing else.

Their ``expert_edits`` mode asks an external LLM (DeepSeek-Coder, Claude, ...) for edits
through a network API; it is not offered here (:data:`UNSUPPORTED_MODES`).

**Prompt composition** (their ``original_prompt`` / ``previous_response`` flags, in their
trainer ``external_original_prompt`` / ``external_previous_response``): by default a turn-2
prompt holds the agent's previous response *without* the original problem;
``original_prompt=True`` puts their first-turn instructions with the problem in front
(:func:`original_prompt_context`), ``previous_response=False`` leaves the previous code out.

**Tests** (their ``external.sandbox_slice``, default 1): only the first assert of
``check(candidate)`` is executed for the feedback (:func:`select_feedback_tests`; ``N > 0``:
the first N, ``N < 0``: the last N, ``0`` / ``None`` / ``"all"``: every one).

Everything static is computed here, the authors' way (their line-based extraction of the
functions, ``ast`` syntax check, regex and ``ast`` checks of how main uses ``aux``): see
:func:`analyse_feedback`. What needs execution is an input: the outcome of each selected
test (:class:`CaseOutcome`). The caller runs :attr:`FeedbackAnalysis.program` against
:func:`sandbox_sources` in the sandbox (this layer never runs code; their runner allowed
:data:`TEST_TIMEOUT` seconds per test and stopped after :data:`MAX_TIMEOUTS` timeouts) and
reads the result with :func:`outcomes_from_sandbox`, which speaks their runner's words.
:func:`followup_prompts` composes the two prompts::

    cases = select_feedback_tests(problem["test"], entry_point)  # sandbox_slice=1
    analysis = analyse_feedback(problem["prompt"], aux_answer, main_answer, entry_point)
    run = cases_to_execute(analysis, cases, entry_point)  # none if the program does not parse
    result = sandbox.run_tests(analysis.program, sandbox_sources(run), entry_point,
                               setup=prompt_import_lines(problem["prompt"]), ...)
    outcomes = outcomes_from_sandbox(run, result.to_dict(), analysis=analysis,
                                     entry_point=entry_point)
    aux_prompt, main_prompt = followup_prompts("level_feedback", prompt=problem["prompt"],
        entry_point=entry_point, aux_completion=aux_answer, main_completion=main_answer,
        cases=cases, outcomes=outcomes, analysis=analysis)

Parity: ``tests/rewards/test_coding_feedback.py`` compares every mode and option
combination with the text their code produced on generated answers to real HumanEval
problems, character for character.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FEEDBACK_MODES",
    "MAX_TIMEOUTS",
    "TEST_TIMEOUT",
    "TIMEOUT_OUTCOME",
    "UNSUPPORTED_MODES",
    "CaseOutcome",
    "FeedbackAnalysis",
    "FeedbackCase",
    "analyse_feedback",
    "aux_misuses",
    "cases_to_execute",
    "collect_outcomes",
    "extract_cases",
    "extract_function",
    "first_turn_prompts",
    "followup_prompts",
    "function_blocks",
    "is_thin_wrapper",
    "original_prompt_context",
    "outcome_from_result",
    "parse_sandbox_slice",
    "outcomes_from_sandbox",
    "prompt_import_lines",
    "sandbox_sources",
    "select_feedback_tests",
    "slice_test_source",
    "static_case_outcome",
]

#: The modes rebuilt here (their ``external.mode`` values).
FEEDBACK_MODES = ("level_feedback", "level_passed", "passed", "plain")
#: Their modes that are not offered, with the reason.
UNSUPPORTED_MODES = {
    "expert_edits": "it asks an external LLM (their default DeepSeek-Coder) for edits through a "
    "network API, which an offline environment cannot do",
}
#: Their runner stops a program's tests after this many timeouts.
MAX_TIMEOUTS = 3
#: Their per-test time limit in seconds (``signal.alarm``); loading the program has none.
TEST_TIMEOUT = 10
#: What their runner reports for a test that ran past :data:`TEST_TIMEOUT`.
TIMEOUT_OUTCOME = ("TimeoutException", "Code execution timed out")

_NO_IMPL = "<no implementation found>"

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


@dataclass(frozen=True)
class CaseOutcome:
    """What their runner reports for one executed test.

    Attributes:
        passed: The assert ran without raising.
        error_type: The exception's class name (``"AssertionError"``, ``"TimeoutException"``...).
        message: ``str()`` of the exception ("" for a bare failed assert).
    """

    passed: bool
    error_type: str = ""
    message: str = ""


def parse_sandbox_slice(value: Any) -> int | None:
    """Their reading of ``external.sandbox_slice``: ``"all"`` -> 0, a numeric string or an int
    (``True`` counts as 1) -> that int, ``None`` or another string -> ``None``, anything else
    -> 0. ``0`` and ``None`` both mean every test.

    Raises:
        ValueError: A string such as ``"--2"`` that their check accepts but ``int`` does not.
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "all":
            return 0
        return int(text) if text.lstrip("-").isdigit() else None
    if isinstance(value, int):
        return int(value)
    return None if value is None else 0


def slice_test_source(test_source: str, n: int | None) -> str:
    """The test source their trainer hands the feedback for ``sandbox_slice=n``.

    ``n`` of 0 or ``None`` keeps it whole. Otherwise it is rebuilt as the lines before
    ``def check(candidate):`` (stripped), then ``def check(candidate):`` with the first ``n``
    (``n > 0``) or last ``-n`` (``n < 0``) lines after it that start with ``assert`` and
    mention ``candidate``, each line on its own (an assert spread over several lines keeps
    only its first line). Without such lines the source is kept whole.
    """
    if not isinstance(test_source, str) or not test_source.strip() or not n:
        return test_source
    lines = test_source.splitlines()
    header = next(
        (
            i
            for i, line in enumerate(lines)
            if re.match(r"\s*def\s+check\s*\(candidate\)\s*:\s*", line)
        ),
        None,
    )
    preamble = lines if header is None else lines[:header]
    body = lines if header is None else lines[header + 1 :]
    asserts = [
        s for s in (line.strip() for line in body) if s.startswith("assert") and "candidate" in s
    ]
    if not asserts:
        return test_source
    chosen = asserts[:n] if n > 0 else asserts[n:]
    head = "\n".join(preamble).strip()
    parts = ([head] if head else []) + ["def check(candidate):"] + [f"    {a}" for a in chosen]
    return "\n".join(parts) + "\n"


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


def select_feedback_tests(
    test_source: str, entry_point: str, sandbox_slice: Any = 1
) -> list[FeedbackCase]:
    """The tests of the feedback for their ``external.sandbox_slice`` setting (default 1: only
    the first assert): :func:`parse_sandbox_slice`, :func:`slice_test_source`,
    :func:`extract_cases`."""
    n = parse_sandbox_slice(sandbox_slice)
    return extract_cases(slice_test_source(test_source, n) or test_source, entry_point)


def cases_to_execute(
    analysis: FeedbackAnalysis, cases: Sequence[FeedbackCase], entry_point: str
) -> list[FeedbackCase]:
    """The cases their runner executes: all of them when the program parses, else none."""
    return list(cases) if analysis.syntax_ok and entry_point and cases else []


def static_case_outcome(case: FeedbackCase) -> CaseOutcome | None:
    """The outcome of a case that cannot even compile (e.g. the first line of a multi-line
    assert that slicing cut off), known without running it; ``None`` for a case to run."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(case.text, "<string>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return CaseOutcome(False, type(error).__name__, str(error))
    except (ValueError, RecursionError, MemoryError) as error:
        return CaseOutcome(False, type(error).__name__, str(error))
    return None


def outcome_from_result(result: Mapping[str, Any] | CaseOutcome) -> CaseOutcome:
    """A sandbox test result (``TestResult.to_dict()``: ``passed``, ``timed_out``,
    ``error_type``, ``message``) in their runner's words.

    A timeout becomes their ``TimeoutException: Code execution timed out``; a message equal to
    the error type (the sandbox's stand-in for an empty message) becomes "". Other messages
    pass through (the sandbox caps them at a few hundred characters; their runner does not).
    """
    if isinstance(result, CaseOutcome):
        return result
    if result.get("passed"):
        return CaseOutcome(True)
    if result.get("timed_out"):
        return CaseOutcome(False, *TIMEOUT_OUTCOME)
    error_type = str(result.get("error_type") or "")
    message = str(result.get("message") or "")
    return CaseOutcome(False, error_type, "" if message == error_type else message)


def collect_outcomes(
    cases: Sequence[FeedbackCase],
    results: Sequence[Mapping[str, Any] | CaseOutcome | None],
    *,
    load_error: tuple[str, str] | None = None,
    max_timeouts: int = MAX_TIMEOUTS,
) -> list[CaseOutcome]:
    """Their runner's outcome list from per-case sandbox results.

    Args:
        cases: The executed cases (:func:`cases_to_execute`).
        results: One entry per case, in order: a sandbox result (see
            :func:`outcome_from_result`) or a :class:`CaseOutcome`; entries of cases that
            :func:`static_case_outcome` settles are ignored (may be ``None``).
        load_error: ``(error_type, message)`` when loading the program raised: then every
            case fails with it, as in their runner.
        max_timeouts: Their runner stops after this many timeouts; later cases are left out.
    """
    if load_error is not None:
        return [CaseOutcome(False, *load_error) for _ in cases]
    if len(results) != len(cases):
        raise ValueError(f"need one result per case: {len(cases)} cases, {len(results)} results")
    outcomes: list[CaseOutcome] = []
    timeouts = 0
    for case, result in zip(cases, results, strict=True):
        outcome = static_case_outcome(case)
        if outcome is None:
            if result is None:
                raise ValueError(f"no result for a case that compiles: {case.text!r}")
            outcome = outcome_from_result(result)
        outcomes.append(outcome)
        if (outcome.error_type, outcome.message) == TIMEOUT_OUTCOME:
            timeouts += 1
            if timeouts >= max_timeouts:
                break
    return outcomes


def sandbox_sources(cases: Sequence[FeedbackCase]) -> list[str]:
    """The tests to hand the sandbox for ``cases``: the sources of those that compile, or
    ``["pass"]`` when none does (the program is still loaded: a load error wins in their
    runner). Read the result with :func:`outcomes_from_sandbox`."""
    return [c.source for c in cases if static_case_outcome(c) is None] or ["pass"]


def outcomes_from_sandbox(
    cases: Sequence[FeedbackCase],
    program_result: Mapping[str, Any],
    *,
    analysis: FeedbackAnalysis,
    entry_point: str,
    max_timeouts: int = MAX_TIMEOUTS,
) -> list[CaseOutcome]:
    """Their runner's outcomes from one sandbox run of :func:`sandbox_sources` (``cases``).

    ``program_result`` is the sandbox's ``ProgramResult.to_dict()`` (``status``,
    ``error_type``, ``message``, ``tests``). A program that fails to load fails every case with
    its error. A program without the entry point loads fine in their runner, and each case
    that compiles then fails with ``NameError: name '<entry point>' is not defined`` (the
    sandbox refuses such a program with a ``NameError`` about the entry point instead).
    """
    status = program_result.get("status")
    if status != "ok":
        error = (
            str(program_result.get("error_type") or ""),
            str(program_result.get("message") or ""),
        )
        missing_entry = (
            not analysis.main_function
            and status == "load_error"
            and error[0] == "NameError"
            and error[1].startswith("entry point")
        )
        if not missing_entry:
            return collect_outcomes(cases, [], load_error=error, max_timeouts=max_timeouts)
        absent = CaseOutcome(False, "NameError", f"name '{entry_point}' is not defined")
        results: list[Any] = [absent] * len(cases)
    else:
        ran = iter(program_result.get("tests") or [])
        results = [next(ran, None) if static_case_outcome(c) is None else None for c in cases]
    return collect_outcomes(cases, results, max_timeouts=max_timeouts)


# --------------------------------------------------------------------------- composition
def original_prompt_context(prompt: str, entry_point: str) -> tuple[str, str]:
    """Their first-turn instructions with the problem, for ``original_prompt=True``:
    ``(aux_text, main_text)``."""
    aux = (
        "Original problem and instructions:\n\n"
        "Create a helper function for this coding problem.\n\n"
        f"Problem:\n{prompt}\n\n"
        "IMPORTANT INSTRUCTIONS:\n"
        "- Output ONLY the function code, no explanations or examples\n"
        "- Do NOT include markdown code blocks (```python)\n"
        "- Do NOT include any text before or after the function\n"
        "- Do NOT include test cases or example usage\n"
        "- Create a helper function named 'aux' that can assist the main function\n"
        "- The function should return useful data for solving the problem\n\n"
        "Your output should follow this format:\n\n"
        "def aux(...):\n # your function code here\nreturn result\n"
    )
    target = f"the '{entry_point}' function" if entry_point else "the required function"
    signature = f"def {entry_point}(...)" if entry_point else "def <entry_point>(...)"
    main = (
        "Original problem and instructions:\n\n"
        "Solve this coding problem by implementing the required function.\n\n"
        f"Problem:\n{prompt}\n\n"
        "You have access to a helper function: aux(...)\n\n"
        "IMPORTANT INSTRUCTIONS:\n"
        "- Output ONLY the function code, no explanations or examples\n"
        "- Do NOT include markdown code blocks (```python)\n"
        "- Do NOT include any text before or after the function\n"
        "- Do NOT include test cases or example usage\n"
        "- Do NOT redefine the aux() function\n"
        f"- Implement ONLY {target} as specified\n"
        "- You can call aux() to assign value to a variable within your function if helpful\n\n"
        "Your output should follow this format:\n\n"
        f"{signature}:\n # your function code here\nreturn result\n"
    )
    return aux, main


@dataclass(frozen=True)
class _Tests:
    """The test part of the feedback: cases executed and their outcomes."""

    total: int
    passed: int
    failures: tuple[tuple[str, CaseOutcome], ...]


def _tests(
    analysis: FeedbackAnalysis,
    cases: Sequence[FeedbackCase],
    outcomes: Sequence[CaseOutcome | Mapping[str, Any]],
    entry_point: str,
) -> _Tests:
    run = cases_to_execute(analysis, cases, entry_point)
    if not run:
        return _Tests(0, 0, ())
    if len(outcomes) > len(run):
        raise ValueError(f"more outcomes ({len(outcomes)}) than executed cases ({len(run)})")
    read = [outcome_from_result(o) for o in outcomes]
    failures = tuple((c.text, o) for c, o in zip(run, read, strict=False) if not o.passed)
    return _Tests(len(run), sum(o.passed for o in read), failures)


#: The mode-specific lines of the two prompts: ``(aux_lines, main_lines)``.
_Parts = tuple[list[str], list[str]]


def _diagnostics(analysis: FeedbackAnalysis, tests: _Tests, *, main_first: bool) -> list[str]:
    found = {True: "FOUND", False: "MISSING"}
    aux = f"- Aux definition: {found[analysis.aux_defined]} ({analysis.aux_message})"
    main = f"- Main definition: {found[analysis.main_defined]} ({analysis.main_message})"
    syntax = "OK" if analysis.syntax_ok else "ERROR"
    lines = ["Static and execution diagnostics:", *((main, aux) if main_first else (aux, main))]
    lines.append(f"- Syntax: {syntax} ({analysis.syntax_message})")
    if analysis.syntax_error is not None:
        line, column, message = analysis.syntax_error
        lines.append(f"  SyntaxError at line {line}, col {column}: {message}")
    if tests.total > 0:
        lines.append(f"- Tests: {tests.passed}/{tests.total} passed")
        lines += [
            f"  Failed case: {text} -> {o.error_type}: {o.message}" for text, o in tests.failures
        ]
    else:
        lines.append("- Tests: no test cases found")
    return lines


def _aux_usage_notes(analysis: FeedbackAnalysis) -> list[str]:
    if not analysis.main_defined:
        return []
    if not analysis.aux_called:
        notes = ["- Aux usage: main does NOT call aux"]
    elif analysis.aux_misuses:
        notes = [f"- Aux usage: called but misused ({', '.join(analysis.aux_misuses[:2])})"]
    else:
        notes = ["- Aux usage: main calls aux and uses its result"]
    if analysis.thin_wrapper:
        notes.append("- Warning: main appears to be a thin wrapper over aux")
    return notes


def _level_feedback(analysis: FeedbackAnalysis, tests: _Tests, entry_point: str) -> _Parts:
    aux = _diagnostics(analysis, tests, main_first=False)
    main = _diagnostics(analysis, tests, main_first=True) + _aux_usage_notes(analysis)
    tail = "accordingly. Output ONLY the function code with no extra text."
    return (
        aux + [f"\nRevise your aux(...) {tail}"],
        main + [f"\nRevise your {entry_point}(...) {tail}"],
    )


def _level_passed(analysis: FeedbackAnalysis, tests: _Tests, entry_point: str) -> _Parts:
    syntax = "Syntax correct" if analysis.syntax_ok else "Syntax not correct"
    if tests.total == 0:
        summary = "No tests found"
    elif tests.passed == tests.total:
        summary = "Passed all tests"
    elif tests.passed == 0:
        summary = "No tests passed"
    else:
        summary = f"Passed {tests.passed}/{tests.total} tests"
    missing = "No implementation found in required structure"
    if not analysis.main_defined:
        usage = "Main missing; cannot check aux usage"
    elif not analysis.aux_called:
        usage = "Main does not call aux"
    elif analysis.aux_misuses:
        usage = "Aux called but result not used properly"
    else:
        usage = "Aux call present and used"
    tail = "accordingly. Output ONLY the function code."
    aux = [
        "Signals:",
        f"- Implementation: {'OK' if analysis.aux_defined else missing}",
        f"- Syntax: {syntax}",
        f"- Tests: {summary}",
        "",
        f"Revise your aux(...) {tail}",
    ]
    main = [
        "Signals:",
        f"- Implementation: {'OK' if analysis.main_defined else missing}",
        f"- Syntax: {syntax}",
        f"- Tests: {summary}",
        f"- Aux usage: {usage}",
        "",
        f"Revise your {entry_point}(...) {tail}",
    ]
    return aux, main


def _passed(analysis: FeedbackAnalysis, tests: _Tests, entry_point: str) -> _Parts:
    all_passed = analysis.syntax_ok and analysis.main_defined and 0 < tests.total == tests.passed
    signal = f"Signal: {'All levels passed' if all_passed else 'Not all levels passed'}"
    tail = "if needed. Output ONLY the function code."
    return (
        [signal, "", f"Revise your aux(...) {tail}"],
        [signal, "", f"Revise your {entry_point or 'main'}(...) {tail}"],
    )


def _plain(analysis: FeedbackAnalysis, tests: _Tests, entry_point: str) -> _Parts:
    tail = "accordingly. Output ONLY the function code."
    return [f"Revise your aux(...) {tail}"], [f"Revise your {entry_point or 'main'}(...) {tail}"]


_COMPOSERS: dict[str, Callable[[FeedbackAnalysis, _Tests, str], _Parts]] = {
    "level_feedback": _level_feedback,
    "level_passed": _level_passed,
    "passed": _passed,
    "plain": _plain,
}


def _mode(mode: str) -> str:
    key = (mode or "").lower()
    if key in UNSUPPORTED_MODES:
        raise ValueError(f"feedback mode {mode!r} is not offered: {UNSUPPORTED_MODES[key]}")
    if key not in _COMPOSERS:
        raise ValueError(f"unknown feedback mode {mode!r}; expected one of {FEEDBACK_MODES}")
    return key


def followup_prompts(
    mode: str,
    *,
    prompt: str,
    entry_point: str,
    aux_completion: str,
    main_completion: str,
    cases: Sequence[FeedbackCase] = (),
    outcomes: Sequence[CaseOutcome | Mapping[str, Any]] = (),
    original_prompt: bool = False,
    previous_response: bool = True,
    analysis: FeedbackAnalysis | None = None,
) -> tuple[str, str]:
    """The helper's and main's next-turn prompts, exactly as their external mode writes them.

    Args:
        mode: ``"level_feedback"`` (their default), ``"level_passed"``, ``"passed"`` or
            ``"plain"`` (case-insensitive). ``"expert_edits"`` raises (see
            :data:`UNSUPPORTED_MODES`).
        prompt: The problem's prompt (HumanEval ``prompt``).
        entry_point: The function main writes.
        aux_completion, main_completion: The two previous answers, as generated (their
            trainer hands over one joint answer of the previous turn).
        cases: The feedback's tests (:func:`select_feedback_tests`).
        outcomes: What running :func:`cases_to_execute` gave, in order, possibly cut short
            after the third timeout (:func:`collect_outcomes`); ignored when no case is
            executed (the program does not parse). Unused by ``"plain"``.
        original_prompt: Put their first-turn instructions with the problem first
            (their ``external_original_prompt``; default off).
        previous_response: Show each agent its previous function (their
            ``external_previous_response``; default on).
        analysis: :func:`analyse_feedback` of these answers, if the caller has it already.

    Returns:
        ``(aux_prompt, main_prompt)``.
    """
    compose = _COMPOSERS[_mode(mode)]
    if analysis is None:
        analysis = analyse_feedback(prompt, aux_completion, main_completion, entry_point)
    tests = _tests(analysis, cases, outcomes, entry_point)
    aux: list[str] = []
    main: list[str] = []
    if original_prompt:
        aux_context, main_context = original_prompt_context(prompt, entry_point)
        aux += [aux_context, ""]
        main += [main_context, ""]
    if previous_response:
        aux += ["Your previous aux(...) implementation:", analysis.aux_function or _NO_IMPL, ""]
        main += ["Your previous main implementation:", analysis.main_function or _NO_IMPL, ""]
    aux_tail, main_tail = compose(analysis, tests, entry_point)
    return "\n".join(aux + aux_tail), "\n".join(main + main_tail)


_CONTEXT_PREFIX = "Original problem and instructions:\n\n"


def first_turn_prompts(prompt: str, entry_point: str) -> tuple[str, str]:
    """Their first-turn instructions with the problem, ``(aux_prompt, main_prompt)``: the
    texts :func:`original_prompt_context` puts in front of a later turn, without its heading."""
    aux, main = original_prompt_context(prompt, entry_point)
    return aux.removeprefix(_CONTEXT_PREFIX), main.removeprefix(_CONTEXT_PREFIX)
