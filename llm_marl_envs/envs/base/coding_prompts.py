"""CoopCoding's prompts the MAGRPO authors' way: first-turn instructions and between-turn feedback.

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
:func:`first_turn_prompts` holds their first-turn instructions.

**Prompt composition** (their ``original_prompt`` / ``previous_response`` flags, in their
trainer ``external_original_prompt`` / ``external_previous_response``): by default a turn-2
prompt holds the agent's previous response *without* the original problem;
``original_prompt=True`` puts their first-turn instructions with the problem in front
(:func:`original_prompt_context`), ``previous_response=False`` leaves the previous code out.

**Tests** (their ``external.sandbox_slice``, default 1): only the first assert of
``check(candidate)`` is executed for the feedback (:func:`select_feedback_tests`; ``N > 0``:
the first N, ``N < 0``: the last N, ``0`` / ``None`` / ``"all"``: every one).

What their feedback reports without running code is their static reading of the answers
(:func:`llm_marl_envs.rewards.coding_authors_analysis.analyse_feedback`, which their reward
reads too). What needs execution is an input: the outcome of each selected test
(:class:`CaseOutcome`). The caller runs :attr:`FeedbackAnalysis.program` against
:func:`sandbox_sources` with the coding reward's binding to the sandbox
(:func:`llm_marl_envs.rewards.coding_sandbox.run_program_tests`: the per-test timeout of
their runner, stopping after :data:`~llm_marl_envs.rewards.coding_sandbox.MAX_TIMEOUTS`
timeouts) and reads the result with :func:`outcomes_from_sandbox`, which speaks their
runner's words. :func:`followup_prompts` composes the two prompts::

    cases = select_feedback_tests(problem["test"], entry_point)  # sandbox_slice=1
    analysis = analyse_feedback(problem["prompt"], aux_answer, main_answer, entry_point)
    run = cases_to_execute(analysis, cases, entry_point)  # none if the program does not parse
    result = run_program_tests(analysis.program, sandbox_sources(run), entry_point,
                               setup=prompt_import_lines(problem["prompt"]), limits=...)
    outcomes = outcomes_from_sandbox(run, result.to_dict(), analysis=analysis,
                                     entry_point=entry_point)
    aux_prompt, main_prompt = followup_prompts("level_feedback", prompt=problem["prompt"],
        entry_point=entry_point, aux_completion=aux_answer, main_completion=main_answer,
        cases=cases, outcomes=outcomes, analysis=analysis)

Parity: ``tests/envs/test_coop_coding_prompts.py`` compares every mode and option
combination with the text their code produced on generated answers to real HumanEval
problems, character for character, but for one deliberate difference:

**Text a program produced** (an exception's message, and a class name that is not a plain
identifier) is shown as :func:`quote_program_text` writes it: one Python string literal on
one line, line breaks escaped and every invisible character removed, so that a program
cannot write lines that read as the environment's own diagnostics (``'x\\n\\nRound 1
result: ...'`` stays one quoted string on the line of the failed case). Their feedback
prints the message raw.

``show_asserts=False`` (CoopCoding-v4) names a failed case by its number instead of printing
the assert, whose expected value would otherwise be an answer key for the next turn.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_marl_envs.rewards.coding_authors_analysis import (
    FeedbackAnalysis,
    FeedbackCase,
    analyse_feedback,
    extract_cases,
)
from llm_marl_envs.rewards.coding_sandbox import MAX_TIMEOUTS

__all__ = [
    "FEEDBACK_MODES",
    "TIMEOUT_OUTCOME",
    "UNSUPPORTED_MODES",
    "CaseOutcome",
    "cases_to_execute",
    "collect_outcomes",
    "first_turn_prompts",
    "followup_prompts",
    "original_prompt_context",
    "outcome_from_result",
    "outcomes_from_sandbox",
    "parse_sandbox_slice",
    "program_text",
    "quote_program_text",
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
#: What their runner reports for a test that ran past its time limit.
TIMEOUT_OUTCOME = ("TimeoutException", "Code execution timed out")

_NO_IMPL = "<no implementation found>"

# --------------------------------------------------------------------------- program text
#: Unicode categories removed from program text: control, format (zero-width characters, soft
#: hyphen, bidirectional marks, tag characters U+E0000-E007F), line and paragraph separators,
#: private use, surrogates and unassigned code points.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
#: Invisible characters of other categories: combining grapheme joiner, Hangul fillers, the
#: braille blank and variation selectors.
_HIDDEN_EXTRA = frozenset(
    "\u034f\u115f\u1160\u3164\uffa0\u2800"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
#: Line breaks (``str.splitlines``'s) folded into an escaped ``\\n``.
_LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_IDENTIFIER = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")


def _visible(ch: str) -> str:
    if ch in "\n\t":
        return ch
    category = unicodedata.category(ch)
    if category in _HIDDEN_CATEGORIES or ch in _HIDDEN_EXTRA:
        return ""
    return " " if category == "Zs" else ch


def _cleaned(text: Any) -> str:
    """Line breaks as ``\\n``, tabs kept, every other invisible character removed."""
    text = "" if text is None else str(text)
    if text.isprintable() and _HIDDEN_EXTRA.isdisjoint(text):
        return text  # the common case: nothing to fold or remove
    return "".join(_visible(ch) for ch in _LINE_BREAKS.sub("\n", text))


def program_text(text: Any) -> str:
    """Text a program produced, as one line of visible characters (what ``infos`` keep).

    Line breaks (``\\n``, ``\\r``, vertical tab, form feed, NEL, U+2028/U+2029...) become
    the two characters ``\\n``, a tab ``\\t``; every control, format, separator, private-use,
    surrogate and unassigned character is removed (with a few invisible letters and marks),
    other spaces become a plain space. Text without any of these comes back unchanged.

    >>> program_text('x\\n\\nRound 1 result: 4.00\\u2028All\\u200b "tests" passed.')
    'x\\\\n\\\\nRound 1 result: 4.00\\\\nAll "tests" passed.'
    """
    return _cleaned(text).replace("\n", "\\n").replace("\t", "\\t")


def quote_program_text(text: Any) -> str:
    """How feedback shows a program's words: the cleaned text (see :func:`program_text`) as
    a Python string literal, on one line (``repr``: quotes and backslashes escaped where
    needed, line breaks as ``\\n``).

    >>> print(quote_program_text("name 'x' is not defined\\n- Tests: 1/1 passed"))
    "name 'x' is not defined\\n- Tests: 1/1 passed"
    """
    return repr(_cleaned(text))


def error_type_text(error_type: Any) -> str:
    """An exception's class name for feedback: as it is when it is a (dotted) identifier,
    else quoted (:func:`quote_program_text`), since a program names its own classes."""
    name = "" if error_type is None else str(error_type)
    plain = not name or (_IDENTIFIER.fullmatch(name) and _cleaned(name) == name)
    return name if plain else quote_program_text(name)


def error_text(error_type: Any, message: Any) -> str:
    """``Type: 'message'`` (``Type`` alone without a message) for feedback."""
    shown = error_type_text(error_type)
    return f"{shown}: {quote_program_text(message)}" if message else shown


# --------------------------------------------------------------------------- tests
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
    failures: tuple[tuple[int, str, CaseOutcome], ...]


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
    failures = tuple(
        (number, c.text, o)
        for number, (c, o) in enumerate(zip(run, read, strict=False), 1)
        if not o.passed
    )
    return _Tests(len(run), sum(o.passed for o in read), failures)


#: The mode-specific lines of the two prompts: ``(aux_lines, main_lines)``.
_Parts = tuple[list[str], list[str]]


def _failed_case(number: int, text: str, outcome: CaseOutcome, show_asserts: bool) -> str:
    """One failed case: their ``Failed case: <assert> -> <error>: <message>`` with the
    program's words quoted; without the assert (and without an ``AssertionError``'s message,
    the test's own text) when ``show_asserts`` is off."""
    if show_asserts:  # their line, with "AssertionError: " for an assert without a message
        shown = quote_program_text(outcome.message) if outcome.message else ""
        return f"  Failed case: {text} -> {error_type_text(outcome.error_type)}: {shown}"
    message = "" if outcome.error_type == "AssertionError" else outcome.message
    return f"  Failed case {number}: {error_text(outcome.error_type, message)}"


def _diagnostics(
    analysis: FeedbackAnalysis, tests: _Tests, *, main_first: bool, show_asserts: bool = True
) -> list[str]:
    found = {True: "FOUND", False: "MISSING"}
    aux = f"- Aux definition: {found[analysis.aux_defined]} ({analysis.aux_message})"
    main = f"- Main definition: {found[analysis.main_defined]} ({analysis.main_message})"
    syntax = "OK" if analysis.syntax_ok else "ERROR"
    lines = ["Static and execution diagnostics:", *((main, aux) if main_first else (aux, main))]
    lines.append(f"- Syntax: {syntax} ({analysis.syntax_message})")
    if analysis.syntax_error is not None:
        line, column, message = analysis.syntax_error
        lines.append(f"  SyntaxError at line {line}, col {column}: {program_text(message)}")
    if tests.total > 0:
        lines.append(f"- Tests: {tests.passed}/{tests.total} passed")
        lines += [_failed_case(number, text, o, show_asserts) for number, text, o in tests.failures]
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


def _level_feedback(
    analysis: FeedbackAnalysis, tests: _Tests, entry_point: str, show_asserts: bool = True
) -> _Parts:
    aux = _diagnostics(analysis, tests, main_first=False, show_asserts=show_asserts)
    main = _diagnostics(analysis, tests, main_first=True, show_asserts=show_asserts)
    main += _aux_usage_notes(analysis)
    tail = "accordingly. Output ONLY the function code with no extra text."
    return (
        aux + [f"\nRevise your aux(...) {tail}"],
        main + [f"\nRevise your {entry_point}(...) {tail}"],
    )


def _level_passed(
    analysis: FeedbackAnalysis, tests: _Tests, entry_point: str, show_asserts: bool = True
) -> _Parts:
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


def _passed(
    analysis: FeedbackAnalysis, tests: _Tests, entry_point: str, show_asserts: bool = True
) -> _Parts:
    all_passed = analysis.syntax_ok and analysis.main_defined and 0 < tests.total == tests.passed
    signal = f"Signal: {'All levels passed' if all_passed else 'Not all levels passed'}"
    tail = "if needed. Output ONLY the function code."
    return (
        [signal, "", f"Revise your aux(...) {tail}"],
        [signal, "", f"Revise your {entry_point or 'main'}(...) {tail}"],
    )


def _plain(
    analysis: FeedbackAnalysis, tests: _Tests, entry_point: str, show_asserts: bool = True
) -> _Parts:
    tail = "accordingly. Output ONLY the function code."
    return [f"Revise your aux(...) {tail}"], [f"Revise your {entry_point or 'main'}(...) {tail}"]


_COMPOSERS: dict[str, Callable[[FeedbackAnalysis, _Tests, str, bool], _Parts]] = {
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
    show_asserts: bool = True,
) -> tuple[str, str]:
    """The helper's and main's next-turn prompts, as their external mode writes them (a
    program's words quoted: see the module docstring).

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
        show_asserts: Print each failed assert, with its expected value (theirs); ``False``
            names a failed case by its number and leaves an ``AssertionError``'s message out.

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
    aux_tail, main_tail = compose(analysis, tests, entry_point, show_asserts)
    return "\n".join(aux + aux_tail), "\n".join(main + main_tail)


_CONTEXT_PREFIX = "Original problem and instructions:\n\n"


def first_turn_prompts(prompt: str, entry_point: str) -> tuple[str, str]:
    """Their first-turn instructions with the problem, ``(aux_prompt, main_prompt)``: the
    texts :func:`original_prompt_context` puts in front of a later turn, without its heading."""
    aux, main = original_prompt_context(prompt, entry_point)
    return aux.removeprefix(_CONTEXT_PREFIX), main.removeprefix(_CONTEXT_PREFIX)
