"""GSM8K-v0: prompts, rewards in both modes, components, data sources, options."""

from __future__ import annotations

import pytest

import llm_marl_envs
from llm_marl_envs.data.arithmetic import check_worked_solution
from llm_marl_envs.rewards.math import extract_gold_answer

ID = "llm_marl_envs/GSM8K-v0"


def _play(env, pioneer: str, observer: str, seed=0, options=None):
    env.reset(seed=seed, options=options)
    returns, infos = {}, {}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        returns[agent] = reward
        infos[agent] = info
        if not (term or trunc):
            env.step(pioneer if agent == "pioneer_0" else observer)
        else:
            env.step(None)
    return returns, infos


@pytest.mark.parametrize(
    ("mode", "p_right", "o_right", "expected"),
    [
        ("collective", True, True, (2.0, 2.0)),
        ("collective", True, False, (1.0, 1.0)),
        ("collective", False, False, (0.0, 0.0)),
        ("individual", True, False, (1.0, 0.0)),
        ("individual", False, True, (0.0, 1.0)),
    ],
)
def test_rewards_per_mode(mode, p_right, o_right, expected):
    env = llm_marl_envs.make(ID, data_source="bundled", reward_mode=mode)
    env.reset(seed=4)
    gold = env.gold
    wrong = str(int(gold) + 1)
    returns, infos = _play(
        env,
        f"The answer is {gold if p_right else wrong}.",
        f"The answer is {gold if o_right else wrong}.",
        seed=4,
    )
    assert (returns["pioneer_0"], returns["observer_0"]) == expected
    assert infos["pioneer_0"]["reward_components"]["correct"] == float(p_right)
    assert infos["observer_0"]["reward_components"]["task_reward"] == float(o_right)
    assert infos["observer_0"]["gold_answer"] == gold


def test_prompts_follow_the_cory_protocol():
    env = llm_marl_envs.make(ID, data_source="bundled")
    env.reset(seed=1)
    question = env.question
    pioneer_obs = str(env.observe("pioneer_0"))
    assert pioneer_obs.endswith(f"Question: {question}\nAnswer:")
    assert pioneer_obs.count("Question:") == 2  # one worked example, then the task
    assert env.observe("observer_0") == ""  # nothing observed before its turn
    env.step("Let me think. The answer is 7.")
    observer_obs = str(env.observe("observer_0"))
    assert observer_obs.endswith(
        f"Question: {question}\nReference: Let me think. The answer is 7.\nAnswer:"
    )
    messages = env.infos["observer_0"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"] == observer_obs.split("\n\n")[-1]
    assert env.infos["observer_0"]["role"] == "observer"


def test_components_when_no_number():
    env = llm_marl_envs.make(ID, data_source="bundled")
    env.reset(seed=0)
    env.step("I do not know.")
    info = env.infos["pioneer_0"]
    assert info["format_error"] == "no_number"
    assert info["reward_components"] == {
        "correct": 0.0,
        "answer_found": 0.0,
        "task_reward": 0.0,
        "format_failure": 1.0,
    }
    env.step("The answer is 3.")
    assert env.infos["observer_0"]["reward_components"]["extracted_answer"] == 3.0


def test_row_index_option_and_provenance(shared_data):
    env = llm_marl_envs.make(ID, split="test", data_source=shared_data / "gsm8k")
    env.reset(seed=0, options={"row_index": 5})
    assert env.infos["pioneer_0"]["row_id"] == 5
    assert env.infos["pioneer_0"]["data_source"].startswith("local:")
    assert env.question.startswith(env.data.rows[5]["question"][:30])
    with pytest.raises(ValueError, match="row_index"):
        env.reset(options={"row_index": 10**6})


def test_real_gsm8k_solution_scores_one(shared_data):
    env = llm_marl_envs.make(ID, split="test", data_source=shared_data / "gsm8k")
    env.reset(seed=3)
    solution = env.data.rows[env.row_id]["answer"]
    final = solution.replace("####", "The answer is")
    returns, _ = _play(env, final, "The answer is -1", seed=3)
    assert returns == {"pioneer_0": 1.0, "observer_0": 1.0}


@pytest.mark.parametrize("difficulty", [1, 3, 5])
def test_procedural_problems(difficulty):
    env = llm_marl_envs.make(ID, data_source="procedural", difficulty=difficulty)
    seen = set()
    for seed in range(5):
        env.reset(seed=seed)
        seen.add(env.question)
        assert env.infos["pioneer_0"]["data_source"] == f"procedural:difficulty={difficulty}"
        assert isinstance(env.infos["pioneer_0"]["row_id"], int)
    assert len(seen) == 5
    # the same row id regenerates the same problem
    import numpy as np
    from llm_marl_envs.data.arithmetic import generate_problem

    row = generate_problem(np.random.default_rng(env.row_id), difficulty)
    assert row["question"] == env.question and extract_gold_answer(row["answer"]) == env.gold
    assert check_worked_solution(row["answer"]) == []


def test_bad_difficulty():
    with pytest.raises(ValueError, match="difficulty"):
        llm_marl_envs.make(ID, data_source="procedural", difficulty=9)
