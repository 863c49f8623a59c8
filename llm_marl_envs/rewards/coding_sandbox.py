"""The coding reward with its tests run in the sandbox: used by CoopCoding and by TRL alike.

MAGRPO's joint coding reward (Liu et al., 2025, arXiv:2508.04652) has two implementations:
``"paper"``, the paper's description (:mod:`llm_marl_envs.rewards.coding`), and
``"authors"``, their released code bit for bit (:mod:`llm_marl_envs.rewards.coding_authors`).
``"hardened"`` (CoopCoding-v4) is the authors' reward with a cooperation bonus that must be
earned (:mod:`llm_marl_envs.rewards.coding_hardened`).
Each prepares one joint answer without running it; this module is the one place where the
reward runs code: :func:`run_program_tests` hands a program and its tests to
:mod:`llm_marl_envs.sandbox`, each test run separately for at most :data:`TEST_TIMEOUT` seconds
(per implementation), the rest failing unrun after :data:`MAX_TIMEOUTS` timeouts.

* :func:`score_paper` / :func:`score_authors` / :func:`score_hardened`: one joint answer's
  components, the sandbox's
  result and the prepared program (what CoopCoding's rounds and feedback read);
* :func:`coop_coding_reward`: the same reward with the TRL signature (a ``GRPOTrainer``
  ``reward_funcs`` entry as it is; also ``llm_marl_envs.integrations.trl.coop_coding_reward``).

Every call of a process shares one pool of sandbox processes per isolation mode, started on
first use and stopped at exit (:func:`llm_marl_envs.sandbox.shutdown`): a trainer that scores
thousands of completions starts its sandbox workers once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from llm_marl_envs.core.text_env import clean_text
from llm_marl_envs.rewards import coding, coding_authors, coding_hardened
from llm_marl_envs.rewards.inputs import completion_text, per_row
from llm_marl_envs.rewards.impls import DEFAULT_REWARD_IMPL, check_reward_impl
from llm_marl_envs.sandbox import ProgramResult, SandboxLimits, run_tests

__all__ = [
    "MAX_TIMEOUTS",
    "TEST_TIMEOUT",
    "coop_coding_reward",
    "run_program_tests",
    "sandbox_limits",
    "score_authors",
    "score_hardened",
    "score_paper",
]

#: Seconds per test, per implementation: ours for the paper's reward, and the authors' runner's
#: ``signal.alarm(10)``.
TEST_TIMEOUT = {"paper": 3.0, "authors": 10.0, "hardened": 10.0}
#: Both implementations stop a program's tests after this many timeouts.
MAX_TIMEOUTS = 3
_AUTHORS_LIMITS = {
    "memory_bytes": coding_authors.MEMORY_BYTES,
    "max_output_bytes": coding_authors.MAX_OUTPUT_BYTES,
}


def _check_impl(reward_impl: object) -> str:
    return check_reward_impl("coding", reward_impl)


def sandbox_limits(
    reward_impl: str, test_timeout: float | None = None, program_timeout: float | None = None
) -> SandboxLimits:
    """An implementation's sandbox limits: ``test_timeout`` seconds per test (default
    :data:`TEST_TIMEOUT`), ``program_timeout`` for the whole program (default: the sandbox's),
    and for ``"authors"`` and ``"hardened"`` their memory and output caps (see
    :mod:`llm_marl_envs.rewards.coding_authors`)."""
    if test_timeout is None:
        test_timeout = TEST_TIMEOUT[_check_impl(reward_impl)]
    return SandboxLimits(
        timeout=float(test_timeout),
        program_timeout=None if program_timeout is None else float(program_timeout),
        **(_AUTHORS_LIMITS if reward_impl in ("authors", "hardened") else {}),
    )


def run_program_tests(
    program: str,
    tests: list[str] | tuple[str, ...],
    entry_point: str,
    *,
    setup: str,
    limits: SandboxLimits,
    isolation: str = "auto",
) -> ProgramResult:
    """Run each test against the program's entry point in the sandbox, as the coding reward
    does (stop after :data:`MAX_TIMEOUTS` timeouts)."""
    return run_tests(
        program,
        list(tests),
        entry_point,
        setup=setup,
        limits=limits,
        max_timeouts=MAX_TIMEOUTS,
        isolation=isolation,
    )


def score_paper(
    prompt: str,
    aux_answer: str,
    main_answer: str,
    test: str,
    entry_point: str,
    *,
    limits: SandboxLimits | None = None,
    isolation: str = "auto",
) -> tuple[dict[str, float], ProgramResult | None, coding.PaperProgram]:
    """The paper's coding reward of one joint answer, tests run in the sandbox.

    Returns the components (:func:`llm_marl_envs.rewards.coding.coding_reward`), the sandbox's
    ``ProgramResult`` (``None`` when the climb stopped before the tests) and the prepared
    program (:func:`llm_marl_envs.rewards.coding.prepare`).
    """
    prepared = coding.prepare(prompt, aux_answer, main_answer, test, entry_point)
    result = None
    if prepared.runs:
        result = run_program_tests(
            prepared.program,
            prepared.tests,
            entry_point,
            setup=prepared.setup,
            limits=limits or sandbox_limits("paper"),
            isolation=isolation,
        )
    passed = result.tests_passed if result else 0
    return coding.coding_reward(prepared.analysis, passed, len(prepared.tests)), result, prepared


def score_authors(
    prompt: str,
    aux_answer: str,
    main_answer: str,
    test: str,
    entry_point: str,
    *,
    limits: SandboxLimits | None = None,
    isolation: str = "auto",
) -> tuple[dict[str, float], ProgramResult | None, coding_authors.AuthorsProgram]:
    """The authors' coding reward of one joint answer, tests run in the sandbox.

    Returns the components (``total`` bit-identical to their ``execution_reward_aux``), the
    sandbox's ``ProgramResult`` (``None`` when the climb stopped before the tests) and the
    prepared program (:func:`llm_marl_envs.rewards.coding_authors.prepare`).
    """
    prepared = coding_authors.prepare(prompt, aux_answer, main_answer, test, entry_point)
    if prepared.gate is not None:
        return coding_authors.score(prepared), None, prepared
    limits = limits or sandbox_limits("authors")
    if limits.program_timeout is None:  # their runner: every test may take its full timeout
        limits = replace(limits, program_timeout=limits.timeout * (len(prepared.tests) + 1))
    result = run_program_tests(
        prepared.program,
        prepared.tests,
        entry_point,
        setup=prepared.setup,
        limits=limits,
        isolation=isolation,
    )
    return coding_authors.score(prepared, result.tests_passed), result, prepared


def score_hardened(
    prompt: str,
    aux_answer: str,
    main_answer: str,
    test: str,
    entry_point: str,
    *,
    limits: SandboxLimits | None = None,
    isolation: str = "auto",
) -> tuple[dict[str, float], ProgramResult | None, coding_authors.AuthorsProgram]:
    """CoopCoding-v4's coding reward of one joint answer
    (:mod:`llm_marl_envs.rewards.coding_hardened`), tests run in the sandbox.

    The tests run as :func:`score_authors` runs them; when every test passes and main calls
    ``aux``, they run twice more (the two probes, each stopped at its first timeout) to decide
    the cooperation bonus. Returns the components, the real run's ``ProgramResult`` (``None``
    when the climb stopped before the tests) and the prepared program.
    """
    prepared = coding_hardened.prepare(prompt, aux_answer, main_answer, test, entry_point)
    if prepared.gate is not None:
        return coding_hardened.score(prepared), None, prepared
    limits = limits or sandbox_limits("hardened")
    if limits.program_timeout is None:  # as the authors' runner: each test its full timeout
        limits = replace(limits, program_timeout=limits.timeout * (len(prepared.tests) + 1))
    result = run_program_tests(
        prepared.program,
        prepared.tests,
        entry_point,
        setup=prepared.setup,
        limits=limits,
        isolation=isolation,
    )
    passed = result.tests_passed
    probes = coding_hardened.Probes()
    if coding_hardened.needs_probes(prepared, passed):
        timeout = coding_hardened.probe_timeout(
            limits.timeout, [test.duration for test in result.tests]
        )
        probe_limits = replace(
            limits,
            timeout=timeout,
            program_timeout=min(limits.program_timeout, timeout * (len(prepared.tests) + 1)),
        )
        counts: dict[str, int | None] = {}
        for mode in coding_hardened.PROBES:
            probe = run_tests(
                coding_hardened.probe_program(prepared.program, mode),
                list(prepared.tests),
                entry_point,
                setup=prepared.setup,
                limits=probe_limits,
                max_timeouts=1,
                isolation=isolation,
            )
            counts[mode] = probe.tests_passed if probe.status == "ok" else None
        probes = coding_hardened.Probes(**counts)
    return coding_hardened.score(prepared, passed, probes), result, prepared


_SCORERS = {"paper": score_paper, "authors": score_authors, "hardened": score_hardened}
_HELPERS, _MAINS = ("helper_0", "helper"), ("main_0", "main")


def _answer(completion: Any, max_length: int) -> str:
    """A completion as CoopCoding reads an action: control characters dropped; empty or too
    long (a format failure): ""."""
    text = completion_text(completion)
    if len(text) > max_length:
        return ""
    text = clean_text(text)
    return text if text.strip() else ""


def coop_coding_reward(
    completions: list[Any],
    *,
    problem_prompt: list[str] | str,
    test: list[str] | str,
    entry_point: list[str] | str,
    partner_completion: list[Any],
    agent: list[str] | str = "main_0",
    reward_impl: str | list[str] = DEFAULT_REWARD_IMPL,
    max_action_length: int | list[int] = 8192,
    **kwargs: Any,
) -> list[float]:
    """The joint coding reward (``total``, at most 4.0) of each completion and its partner's.

    The TRL reward signature: ``GRPOTrainer`` passes ``prompts``, ``completions`` (strings or
    chat messages) and every dataset column. One round of CoopCoding, step for step: each
    answer read as the env reads an action, then :func:`score_paper` or :func:`score_authors`
    with the implementation's default limits.

    Args:
        completions: The learner's answers.
        problem_prompt: The problem's prompt (HumanEval ``prompt``: signature and docstring).
        test: Its test source (``def check(candidate): ...``).
        entry_point: The function under test.
        partner_completion: The other agent's answers.
        agent: Which one the learner is: ``"main_0"`` (writes the entry point) or
            ``"helper_0"`` (writes ``aux``); a column or one value.
        reward_impl: ``"paper"`` (CoopCoding-v0's), ``"authors"`` (CoopCoding-v1's and v2's)
            or ``"hardened"`` (CoopCoding-v4's);
            a column or one value (``env_dataset`` writes the env's).
        max_action_length: Longer answers are format failures (no code), as in the env; a
            column or one value (``env_dataset`` writes the env's).
        **kwargs: Other dataset columns and TRL's own keywords, ignored.
    """
    n = len(completions)
    rows = zip(
        completions,
        per_row(reward_impl, n, "reward_impl"),
        per_row(max_action_length, n, "max_action_length"),
        per_row(partner_completion, n, "partner_completion"),
        per_row(agent, n, "agent"),
        per_row(problem_prompt, n, "problem_prompt"),
        per_row(test, n, "test"),
        per_row(entry_point, n, "entry_point"),
        strict=True,
    )
    rewards = []
    for mine, impl, max_length, other, role, prompt, test_source, entry in rows:
        score = _SCORERS[_check_impl(impl)]
        if role in _HELPERS:
            aux, main = mine, other
        elif role in _MAINS:
            aux, main = other, mine
        else:
            raise ValueError(f"agent must be 'helper_0' or 'main_0', got {role!r}")
        aux, main = _answer(aux, max_length), _answer(main, max_length)
        levels, _, _ = score(prompt, aux, main, test_source, entry)
        rewards.append(levels["total"])
    return rewards
