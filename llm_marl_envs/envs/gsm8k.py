"""GSM8K-v0: grade-school math in CORY's pioneer -> observer protocol.

| | |
|---|---|
| Id | ``llm_marl_envs/GSM8K-v0`` |
| Agents | ``pioneer_0``, then ``observer_0`` (one turn each, AEC only) |
| Action | free text (``FreeText``, 8,192 chars) |
| Observation | the agent's prompt as text; ``infos[agent]["messages"]`` has it as chat |
| Reward | 1 if the answer's number equals the gold number, else 0 (r1, r2); ``reward_mode="collective"``: both get r1 + r2, ``"individual"``: own |
| Paper | Ma et al., "Coevolving with the Other You", NeurIPS 2024 |

**Prompts.** The pioneer sees an instruction, one worked example in the
``Question: ... / Answer: ...`` format, then ``Question: <question>`` and ``Answer:``. The
observer sees the same, with ``Reference: <pioneer's answer>`` before its ``Answer:``. The
chat form (``infos[agent]["messages"]``) holds the instruction as the system message, the
worked example as one user/assistant exchange, and the question (plus reference) as the last
user message.

**Scoring** (``llm_marl_envs.rewards.math``). The model's number is the first number after
"The answer is" when that phrase occurs, else the last number; commas and a trailing period
are dropped. ``reward_components`` per agent: ``correct`` (0/1), ``answer_found`` (0/1),
``extracted_answer`` (only when a finite number was found), ``task_reward``,
``format_failure``. ``infos[agent]["format_error"]`` says why an answer failed: ``"empty"``,
``"too_long"`` or ``"no_number"``. At the end both infos hold ``gold_answer``. From
``reset`` on, ``env.question`` and ``env.gold`` hold the current task and its gold answer
(for dataset builders such as the TRL integration; agents are never shown them).

**Data** (``data_source``): ``"auto"`` (Hub ``openai/gsm8k`` or its cache, else the bundled
sample), ``"hub"``, ``"bundled"`` (240 generated GSM8K-style problems), a local path in the
Hub schema (``question``, ``answer``), or ``"procedural"``: a fresh problem from
``llm_marl_envs.data.arithmetic`` at each reset, with ``difficulty`` 1-5 (number of
arithmetic steps) — the learning signal a small model can pick up on a CPU. ``infos`` give
``data_source`` and ``row_id`` (row index in the split, or the problem's seed).

**Arguments.** ``split`` ("train"/"test"), ``data_source``, ``difficulty`` (procedural only),
``reward_mode``, ``max_action_length``, ``max_cycles`` (accepted; an episode is one cycle),
``render_mode`` ("human"/"ansi"). ``reset(options={"row_index": i})`` plays row ``i``.

**Version history.** v0: initial version. Versions are registry arguments
(``envs_registry.yaml``); the class's defaults are v0's.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from llm_marl_envs.core.text_env import CleanAction
from llm_marl_envs.data.gsm8k import load_gsm8k
from llm_marl_envs.envs.base.pioneer_observer import PioneerObserverEnv
from llm_marl_envs.rewards.math import answers_match, extract_answer, extract_gold_answer

__all__ = ["GSM8KEnv", "env"]

INSTRUCTION = (
    "Solve the grade-school math problem. Reason step by step, then end with "
    '"The answer is <number>."'
)
OBSERVER_NOTE = "A reference answer written by another solver is shown; it may be wrong."
EXAMPLE_QUESTION = (
    "A library had 120 books. It bought 3 boxes of 15 books each and then gave 40 books "
    "to a school. How many books does the library have now?"
)
EXAMPLE_ANSWER = (
    "The boxes hold 3 * 15 = 45 books, so the library had 120 + 45 = 165 books. "
    "After giving away 40 it has 165 - 40 = 125 books. The answer is 125."
)
MAX_REFERENCE_CHARS = 2000


class GSM8KEnv(PioneerObserverEnv):
    """GSM8K in the pioneer -> observer protocol (see the module docstring)."""

    metadata = {**PioneerObserverEnv.metadata, "name": "GSM8K-v0"}

    def __init__(
        self,
        *,
        split: str = "train",
        data_source: str | os.PathLike[str] = "auto",
        difficulty: int = 2,
        reward_mode: str = "collective",
        max_cycles: int = 1,
        render_mode: str | None = None,
        max_action_length: int = 8192,
    ) -> None:
        super().__init__(
            reward_mode=reward_mode,
            max_cycles=max_cycles,
            render_mode=render_mode,
            max_action_length=max_action_length,
        )
        self.procedural = data_source == "procedural"
        if self.procedural:
            from llm_marl_envs.data.arithmetic import check_difficulty

            check_difficulty(difficulty)
            self.data = None
        else:
            self.data = load_gsm8k(split, data_source)
        self.difficulty = difficulty
        self.question = self.gold = ""

    def _draw_task(self, options: dict[str, Any]) -> None:
        if self.procedural:
            from llm_marl_envs.data.arithmetic import generate_problem

            if "row_index" in options:
                raise ValueError(
                    "options['row_index'] has no meaning with data_source='procedural'"
                )
            task_seed = int(self.np_random.integers(2**31))
            row = generate_problem(np.random.default_rng(task_seed), self.difficulty)
            self._set_task_info(f"procedural:difficulty={self.difficulty}", task_seed)
        else:
            index = self._pick_row(self.data, options)
            row = self.data.rows[index]
            self._set_task_info(self.data.source, self.data.row_ids[index])
        self.question = row["question"]
        self.gold = extract_gold_answer(row["answer"]) or ""

    def _pioneer_prompt(self) -> tuple[str, list[dict[str, str]]]:
        return self._prompt(INSTRUCTION, f"Question: {self.question}\nAnswer:")

    def _observer_prompt(self, pioneer_answer: str) -> tuple[str, list[dict[str, str]]]:
        reference = pioneer_answer.strip()[:MAX_REFERENCE_CHARS]
        return self._prompt(
            f"{INSTRUCTION} {OBSERVER_NOTE}",
            f"Question: {self.question}\nReference: {reference}\nAnswer:",
        )

    @staticmethod
    def _prompt(instruction: str, final: str) -> tuple[str, list[dict[str, str]]]:
        example_q = f"Question: {EXAMPLE_QUESTION}\nAnswer:"
        text = f"{instruction}\n\n{example_q} {EXAMPLE_ANSWER}\n\n{final}"
        messages = [
            {"role": "system", "content": instruction},
            {"role": "user", "content": example_q},
            {"role": "assistant", "content": EXAMPLE_ANSWER},
            {"role": "user", "content": final},
        ]
        return text, messages

    def _score(self, action: CleanAction) -> tuple[float, dict[str, float], str | None]:
        if action.failure is not None:
            return 0.0, {"correct": 0.0, "answer_found": 0.0}, action.failure
        predicted = extract_answer(action.text)
        correct = answers_match(predicted, self.gold)
        components = {"correct": float(correct), "answer_found": float(predicted is not None)}
        if predicted is not None and math.isfinite(float(predicted)):
            components["extracted_answer"] = float(predicted)
        return float(correct), components, (None if predicted is not None else "no_number")

    def _play(self, agent: str, action: CleanAction) -> None:
        super()._play(agent, action)
        if self.terminations.get(agent):
            for a in self.agents:
                self.infos[a]["gold_answer"] = self.gold

    def _task_summary(self) -> str:
        return f"Question: {self.question}\n(gold answer: {self.gold})"


def env(**kwargs: Any) -> GSM8KEnv:
    """PettingZoo-style constructor: ``gsm8k.env(data_source="bundled")``."""
    return GSM8KEnv(**kwargs)
