"""The cooperative-coding reward of the MAGRPO authors' released code, bit for bit.

MAGRPO: Liu et al., 2025 (arXiv:2508.04652). Their code: ``OpenMLRL/LLM_Collab_Code_Generation``,
``rewards/code_rewards.py`` (``execution_reward_aux``, the version that also ships the
reward-model option) and ``rewards/code_utils.py``. CoopCoding's ``reward_impl="authors"``.
Levels, in their order (the total is accumulated in that order, so it is bit-identical):

* **structure**: their line-based extraction of ``aux`` from the helper's raw answer and of
  the entry point from main's (:func:`~llm_marl_envs.rewards.coding_authors_analysis.extract_function`:
  fences and prose dropped, a function runs while lines are blank or indented deeper than its
  ``def``); a function counts as defined when the regex ``return\\s+`` finds a return in it:
  aux +0.4 (not gating), main +0.6, else stop;
* **syntax**: the prompt's import lines + aux + main, joined by blank lines, parse: +0.5,
  else stop;
* **tests**: the asserts of ``check(candidate)`` read line by line (``candidate`` replaced by
  the entry point's name; no assert line: stop); each is run as their runner runs it (see
  :func:`test_source`), 10 s each, stop after 3 timeouts: + passed / total;
* **cooperation**, only if a test passed and aux was extracted: main mentions ``aux(``
  (regex) +0.5, and then: not a thin wrapper (their line-based check) +1.0, and their regex
  for an ignored aux result (``aux`` + exactly one whitespace + ``(`` + one character +
  ``)`` alone on a line, so ``aux (x)`` is caught and ``aux(x)`` is not) -0.5.

Differences from the paper's description (CoopCoding-v0, :mod:`llm_marl_envs.rewards.coding`):
regex and indentation instead of ``ast`` (``return`` in a comment counts; a function nested or
indented oddly may be missed); no unwrapping of fences by language; the ignored-result penalty
uses their odd pattern; asserts are split per line (a ``for`` loop's assert fails alone; two
asserts on one line fail, since their parser takes ``"2; assert ..."`` as the expected value);
a check with no ``assert ... candidate`` line ends the climb at 1.5 with no test reward; each
``assert f(args) == expected`` calls the function twice and formats both values with
``str`` (a result whose ``str`` raises, such as an int over 4300 digits, fails the test).

**Where we differ from their harness, and why** (the sandbox stays the executor):

* their runner executes the program in its own process, with no time limit while it loads: a
  program that hangs at load hangs their training, one that calls ``exit()`` or raises
  ``KeyboardInterrupt`` ends it. Here loading is bounded (the per-test timeout) and such a
  program fails to load: no test passes, so no test reward and no cooperation bonus;
* values cross from the program to the tests as plain data (``None``, bool, int, float,
  complex, str, bytes and containers of them): a result of another type fails its test (their
  in-process comparison would call its ``__eq__``), and tests see only the prompt's imports
  and ``math``, not the program's other globals;
* a program that swallows their timeout exception would run forever there; here it is killed;
  memory is capped (:data:`MEMORY_BYTES`, 4 GiB; output is not, :data:`MAX_OUTPUT_BYTES`); the
  whole program's time is bounded by what their runner allows anyway, one timeout per test
  plus one for loading (``program_timeout``, unless set); a program past a limit fails its
  remaining tests.

With ``authors_harness="exact"`` (:mod:`llm_marl_envs.rewards.coding_sandbox`, CoopCoding-v3)
the sandbox also runs the tests as their runner does: the timeout is raised inside the
program, which keeps its state; stdout is strict UTF-8; numpy is importable. What remains
different is listed, with how often it occurred on a generated set, in
``docs/magrpo_parity.md``.

All functions are pure; :func:`prepare` returns what the sandbox must run, :func:`score` the
components from its outcome; :func:`llm_marl_envs.rewards.coding_sandbox.score_authors` runs
it in the sandbox (their 10 s per test is
:data:`~llm_marl_envs.rewards.coding_sandbox.TEST_TIMEOUT` there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_marl_envs.rewards.coding_authors_analysis import (
    analyse_feedback,
    extract_cases,
    prompt_import_lines,
)

__all__ = [
    "MAX_OUTPUT_BYTES",
    "MEMORY_BYTES",
    "AuthorsProgram",
    "ignores_aux_result",
    "prepare",
    "score",
    "test_source",
]

#: The untrusted process's memory limit for this reward: their runner has none, so a program
#: that grows without end runs into their 10 s alarm; with the sandbox's usual 1 GiB it would
#: fail with ``MemoryError`` first, which changes how many timeouts are counted (measured on a
#: mutated HumanEval/123: 1 GiB gives 1.75, 4 GiB gives their 1.5).
MEMORY_BYTES = 4 << 30
#: Output the program may write: their runner lets it print to the terminal without limit
#: (a recursive solution that calls a printing main prints thousands of lines), so the cap is
#: set out of reach; the sandbox keeps only the first 64 KiB of it either way.
MAX_OUTPUT_BYTES = 1 << 40
_EQUALITY = re.compile(r"assert\s+(\w+)\(([^)]*)\)\s*==\s*(.+)")
_IGNORED_CALL = re.compile(r"aux\s\([^)]\)")
_IGNORED_LINE = (
    re.compile(r"^aux\s\([^)]\)$"),
    re.compile(r"^aux\s\([^)]\);?\s$"),
    re.compile(r"^\saux\s\([^)]\)\s*$"),
)


def ignores_aux_result(main_function: str) -> bool:
    """Their regex test for an aux call whose result is thrown away (see the module doc)."""
    if not main_function or "aux" not in main_function:
        return False
    for raw in main_function.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#") or not _IGNORED_CALL.search(line):
            continue
        if any(pattern.search(line) for pattern in _IGNORED_LINE):
            return True
    return False


def test_source(line: str) -> str:
    """The trusted test that reproduces their runner on one assert line.

    For ``assert name(args) == expected`` (their regex): evaluate the call, then the expected
    text, format both with ``str`` (their log lines do, before the assert runs), then execute
    the line itself; for any other line, execute it. Every step that raises fails the test.
    """
    found = _EQUALITY.search(line)
    if found is None:
        return f"exec({line!r})"
    call = f"{found.group(1)}({found.group(2)})"
    return (
        f"_actual = eval({call!r})\n"
        f"_expected = eval({found.group(3)!r})\n"
        'f"{_expected}"\n'
        'f"{_actual}"\n'
        f"exec({line!r})"
    )


@dataclass(frozen=True)
class AuthorsProgram:
    """One joint answer, prepared for the sandbox.

    Attributes:
        structure: Level-1 points, in their order (0.4 and/or 0.6, accumulated from 0.0).
        gate: ``"structure"`` / ``"syntax"`` / ``"no_tests"`` where the climb stops before
            any execution, else ``None`` (run the tests).
        program: What the sandbox loads: ``import math`` (their runner's globals hold
            ``math``) and the joint program.
        tests: One trusted source per assert line (:func:`test_source`).
        setup: The tests' namespace: ``math`` and the prompt's imports.
        aux_extracted: aux was found in the helper's answer.
        calls_aux: Main mentions ``aux(``.
        thin_wrapper: Their wrapper check on main.
        ignores_result: :func:`ignores_aux_result` on main.
        syntax_error: Why the program does not parse, if it does not.
    """

    structure: float
    gate: str | None
    program: str
    tests: tuple[str, ...]
    setup: str
    aux_extracted: bool
    calls_aux: bool
    thin_wrapper: bool
    ignores_result: bool
    syntax_error: str | None = None


def prepare(
    prompt: str, aux_answer: str, main_answer: str, test: str, entry_point: str
) -> AuthorsProgram:
    """Static analysis of one joint answer and the tests to run (answers as generated)."""
    analysis = analyse_feedback(prompt, aux_answer, main_answer, entry_point)
    structure = 0.0
    if analysis.aux_defined:
        structure += 0.4
    gate = None
    if analysis.main_defined:
        structure += 0.6
    else:
        gate = "structure"
    cases = extract_cases(test, entry_point)
    if gate is None and not analysis.syntax_ok:
        gate = "syntax"
    if gate is None and not cases:
        gate = "no_tests"
    imports = prompt_import_lines(prompt)
    return AuthorsProgram(
        structure=structure,
        gate=gate,
        program=f"import math\n{analysis.program}",
        tests=tuple(test_source(case.text) for case in cases),
        setup="\n".join(part for part in ("import math", imports) if part),
        aux_extracted=bool(analysis.aux_function),
        calls_aux=analysis.aux_called,
        thin_wrapper=analysis.thin_wrapper,
        ignores_result=ignores_aux_result(analysis.main_function),
        syntax_error=None if analysis.syntax_ok else analysis.syntax_message,
    )


def score(prepared: AuthorsProgram, passed: int = 0) -> dict[str, float]:
    """The components (``structure``, ``syntax``, ``tests``, ``cooperation``, ``total``) once
    ``passed`` of the tests passed; ``total`` is accumulated in their order."""
    out = {"structure": prepared.structure, "syntax": 0.0, "tests": 0.0, "cooperation": 0.0}
    total = prepared.structure
    if prepared.gate in ("structure", "syntax"):
        return {**out, "total": total}
    out["syntax"] = 0.5
    total += 0.5
    if prepared.gate == "no_tests":
        return {**out, "total": total}
    out["tests"] = (passed / len(prepared.tests)) * 1.0
    total += out["tests"]
    if passed > 0 and prepared.aux_extracted and prepared.calls_aux:
        before = total
        total += 0.5
        if not prepared.thin_wrapper:
            total += 1.0
        if prepared.ignores_result:
            total -= 0.5
        out["cooperation"] = total - before
    return {**out, "total": total}
