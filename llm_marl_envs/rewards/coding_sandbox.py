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

**The authors' harness** (``authors_harness``, :data:`AUTHORS_HARNESSES`; CoopCoding-v3 and
``docs/magrpo_parity.md``). ``"legacy"`` (the default; CoopCoding-v1 and v2) runs the authors'
tests as the sandbox always has: a test past its time kills the program and the next one
reloads it, printing never fails, only the standard library is importable, and
:func:`coop_coding_reward` reads an answer as the env's action (control characters dropped,
over ``max_action_length`` scored as empty). ``"exact"`` runs them as their in-process runner
does: the timeout is raised inside the program, which goes on with its state kept
(``SandboxLimits.on_timeout="raise"``), stdout is strict UTF-8 (printing a lone surrogate
raises), numpy is importable (read-only) when installed, and the answer is scored as written,
up to :data:`SCORED_TEXT_CAP` characters.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from typing import Any

from llm_marl_envs.core.text_env import clean_text
from llm_marl_envs.rewards import coding, coding_authors, coding_hardened
from llm_marl_envs.rewards.inputs import completion_text, per_row
from llm_marl_envs.rewards.impls import DEFAULT_REWARD_IMPL, check_reward_impl
from llm_marl_envs.sandbox import ProgramResult, SandboxLimits, run_tests

__all__ = [
    "AUTHORS_HARNESSES",
    "MAX_TIMEOUTS",
    "SCORED_TEXT_CAP",
    "TEST_TIMEOUT",
    "check_authors_harness",
    "coop_coding_reward",
    "harness_packages",
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
#: How the authors' reward runs (see the module docstring): ``"legacy"`` (the default) or
#: ``"exact"`` (their in-process runner's behaviour).
AUTHORS_HARNESSES = ("legacy", "exact")
#: The one limit the exact harness keeps on a scored answer, in characters: far above any
#: model's token budget (1 MiB of text is over 250,000 tokens); a longer answer is scored as
#: empty, where the authors would score it whole.
SCORED_TEXT_CAP = 1 << 20
_AUTHORS_LIMITS = {
    "memory_bytes": coding_authors.MEMORY_BYTES,
    "max_output_bytes": coding_authors.MAX_OUTPUT_BYTES,
}
#: What the exact harness changes in the sandbox: their runner's alarm raises inside the
#: program, which keeps running; their stdout is a strict UTF-8 stream.
_EXACT_LIMITS = {"on_timeout": "raise", "stdout_errors": "strict"}


def _check_impl(reward_impl: object) -> str:
    return check_reward_impl("coding", reward_impl)


def check_authors_harness(harness: object) -> str:
    """``harness`` if it is one of :data:`AUTHORS_HARNESSES`, else a one-line ``ValueError``."""
    if harness not in AUTHORS_HARNESSES:
        raise ValueError(
            f"authors_harness must be one of {list(AUTHORS_HARNESSES)}, got {harness!r}"
        )
    return harness


def sandbox_limits(
    reward_impl: str,
    test_timeout: float | None = None,
    program_timeout: float | None = None,
    authors_harness: str = "legacy",
) -> SandboxLimits:
    """An implementation's sandbox limits: ``test_timeout`` seconds per test (default
    :data:`TEST_TIMEOUT`), ``program_timeout`` for the whole program (default: the sandbox's),
    and for ``"authors"`` and ``"hardened"`` their memory and output caps (see
    :mod:`llm_marl_envs.rewards.coding_authors`) and, with ``authors_harness="exact"``, their
    runner's timeouts and stdout (see the module docstring)."""
    if test_timeout is None:
        test_timeout = TEST_TIMEOUT[_check_impl(reward_impl)]
    exact = check_authors_harness(authors_harness) == "exact" and reward_impl == "authors"
    return SandboxLimits(
        timeout=float(test_timeout),
        program_timeout=None if program_timeout is None else float(program_timeout),
        **(_AUTHORS_LIMITS if reward_impl in ("authors", "hardened") else {}),
        **(_EXACT_LIMITS if exact else {}),
    )


def harness_packages(authors_harness: str) -> tuple[str, ...]:
    """Packages the program may import besides the standard library: numpy for the exact
    harness when it is installed (their training environment has it), else none."""
    if check_authors_harness(authors_harness) == "exact" and importlib.util.find_spec("numpy"):
        return ("numpy",)
    return ()


def run_program_tests(
    program: str,
    tests: list[str] | tuple[str, ...],
    entry_point: str,
    *,
    setup: str,
    limits: SandboxLimits,
    isolation: str = "auto",
    packages: tuple[str, ...] = (),
) -> ProgramResult:
    """Run each test against the program's entry point in the sandbox, as the coding reward
    does (stop after :data:`MAX_TIMEOUTS` timeouts); ``packages`` are importable besides the
    standard library (:func:`harness_packages`)."""
    return run_tests(
        program,
        list(tests),
        entry_point,
        setup=setup,
        limits=limits,
        max_timeouts=MAX_TIMEOUTS,
        isolation=isolation,
        packages=packages,
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
    authors_harness: str = "legacy",
) -> tuple[dict[str, float], ProgramResult | None, coding_authors.AuthorsProgram]:
    """The authors' coding reward of one joint answer, tests run in the sandbox.

    Returns the components (``total`` bit-identical to their ``execution_reward_aux``), the
    sandbox's ``ProgramResult`` (``None`` when the climb stopped before the tests) and the
    prepared program (:func:`llm_marl_envs.rewards.coding_authors.prepare`).
    ``authors_harness="exact"`` runs the tests as their in-process runner does (see the
    module docstring; it sets ``on_timeout`` and ``stdout_errors`` of ``limits``);
    ``"legacy"``, the default, as CoopCoding-v1 and v2 do.
    """
    exact = check_authors_harness(authors_harness) == "exact"
    prepared = coding_authors.prepare(prompt, aux_answer, main_answer, test, entry_point)
    if prepared.gate is not None:
        return coding_authors.score(prepared), None, prepared
    limits = _authors_limits(limits or sandbox_limits("authors"), len(prepared.tests))
    if exact:
        limits = replace(limits, **_EXACT_LIMITS)
    result = run_program_tests(
        prepared.program,
        prepared.tests,
        entry_point,
        setup=prepared.setup,
        limits=limits,
        isolation=isolation,
        packages=harness_packages(authors_harness),
    )
    return coding_authors.score(prepared, result.tests_passed), result, prepared


def _authors_limits(limits: SandboxLimits, tests: int) -> SandboxLimits:
    """``limits`` with, when unset, the program budget of the authors' runner: every test may
    take its full timeout."""
    if limits.program_timeout is not None:
        return limits
    return replace(limits, program_timeout=limits.timeout * (tests + 1))


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
    limits = _authors_limits(limits or sandbox_limits("hardened"), len(prepared.tests))
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


def _answer(completion: Any, max_length: int, harness: str = "legacy") -> str:
    """A completion as CoopCoding reads an action: control characters dropped; empty or too
    long (a format failure): "". The exact harness scores the text as written, up to
    :data:`SCORED_TEXT_CAP` characters."""
    text = completion_text(completion)
    if harness == "exact":
        return text if len(text) <= SCORED_TEXT_CAP else ""
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
    authors_harness: str | list[str] = "legacy",
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
        authors_harness: ``"legacy"`` (CoopCoding-v1's and v2's) or ``"exact"``
            (CoopCoding-v3's: the authors' runner, and answers scored as written; see the
            module docstring); a column or one value (``env_dataset`` writes the env's).
        **kwargs: Other dataset columns and TRL's own keywords, ignored.
    """
    n = len(completions)
    rows = zip(
        completions,
        per_row(reward_impl, n, "reward_impl"),
        per_row(max_action_length, n, "max_action_length"),
        per_row(authors_harness, n, "authors_harness"),
        per_row(partner_completion, n, "partner_completion"),
        per_row(agent, n, "agent"),
        per_row(problem_prompt, n, "problem_prompt"),
        per_row(test, n, "test"),
        per_row(entry_point, n, "entry_point"),
        strict=True,
    )
    rewards = []
    for mine, impl, max_length, harness, other, role, prompt, test_source, entry in rows:
        impl = _check_impl(impl)
        harness = check_authors_harness(harness) if impl == "authors" else "legacy"
        if role in _HELPERS:
            aux, main = mine, other
        elif role in _MAINS:
            aux, main = other, mine
        else:
            raise ValueError(f"agent must be 'helper_0' or 'main_0', got {role!r}")
        aux, main = _answer(aux, max_length, harness), _answer(main, max_length, harness)
        if impl == "authors":
            levels, _, _ = score_authors(
                prompt, aux, main, test_source, entry, authors_harness=harness
            )
        else:
            levels, _, _ = _SCORERS[impl](prompt, aux, main, test_source, entry)
        rewards.append(levels["total"])
    return rewards
