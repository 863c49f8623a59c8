"""CoopCoding-v4's coding reward: the MAGRPO authors' reward with a cooperation bonus that must
be earned.

MAGRPO: Liu et al., 2025 (arXiv:2508.04652). CoopCoding's ``reward_impl="hardened"``. The
authors' reward (:mod:`llm_marl_envs.rewards.coding_authors`) pays the cooperation bonus
(+0.5 for a main that calls ``aux``, +1.0 more when main is not a thin wrapper by their
line-based check, -0.5 for their ignored-result pattern) as soon as *one* test passes. A
helper that returns a constant and a main that hands it on in two steps
(``r = aux(*a); s = r; return s``) collects the whole +1.5 wherever that constant happens to
be the expected answer of one assert: 47 of the 100 HumanEval training problems, a mean joint
reward of 2.40 against 1.50 for an honest failure (``docs/magrpo_parity.md``).

**The rule.** Structure, syntax and tests are the authors' levels, point for point. The
cooperation bonus is paid only when all three hold:

1. **a passing solution**: every test passes (:data:`COOPERATION_THRESHOLD`, a fraction of
   the tests, is 1.0), main mentions ``aux(`` and aux was extracted (their checks);
2. **aux's result is used**: the tests are run again with every call of ``aux`` answering
   something else (:func:`probe_program` ``"result"``: ``not`` of a bool, 0 or 1 for a
   number, an empty or one-element container or string for another; a helper that returns
   ``None`` and works on its arguments works on copies instead), and at least one test then
   fails;
3. **aux does work on its input**: the tests are run again with every call of ``aux``
   answering another question (``"inputs"``: each call is given the arguments of the first
   call of the run, or of the second where its own are the first's; the first call changed
   arguments: numbers + 1, bools negated, strings reversed and extended, each element of a
   container changed and one more added), and at least one test then fails. A helper that
   returns a constant answers every question alike, so every test still passes: no bonus.
   A call without arguments asks no question: there the result is replaced, as in 2 (a
   helper that hands over a table or a function main needs is real work; a constant
   *answer* cannot pass every test).

Then the bonus is the authors' amounts: +0.5, and +1.0 more when main is not a thin
wrapper by their check. Their -0.5 for an ignored result is dropped: a main that ignores
aux's result fails condition 2 and gets no bonus at all. Only the cooperation level
changes, so a joint answer that fails any condition scores what an honest answer with the
same tests passed and no cooperation scores.

**What it cannot see.** The probes run inside the program's own process: a program can
notice that ``aux`` was swapped (its code object, timing), or break what the probe calls
(builtins, the globals it shares with the program), and fail on purpose, which passes
conditions 2 and 3; so can a program made slow on purpose under the probe (arguments
costly to compare or copy), which loses a test to the probe's shorter time limit. A main
that solves the problem alone but refuses to answer unless ``aux()``, called without
arguments, returns an agreed value (a "handshake") passes them too. All of these pay only
on a problem the pair solved (condition 1): the bonus for a solution that exists, never for
a failure.

The probes run only for answers that pass every test and call ``aux``; each is one more
sandbox run of the same tests, stopped at its first timeout, with less time per test
(:func:`probe_timeout`: a test that now runs far longer than in the real run is lost). A
probe run whose program no longer loads counts as no evidence (no bonus).
:func:`llm_marl_envs.rewards.coding_sandbox.score_hardened` runs all of it in the sandbox;
this module is pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_marl_envs.rewards import coding_authors
from llm_marl_envs.rewards.coding_authors import AuthorsProgram

__all__ = [
    "COOPERATION_THRESHOLD",
    "PROBES",
    "PROBE_SOURCE",
    "PROBE_TIMEOUT_FACTOR",
    "PROBE_TIMEOUT_MARGIN",
    "Probes",
    "needs_probes",
    "prepare",
    "probe_program",
    "probe_timeout",
    "score",
]

#: Fraction of the tests that must pass for the cooperation bonus: all of them.
COOPERATION_THRESHOLD = 1.0
#: The two reruns: aux's arguments changed, aux's result changed.
PROBES = ("inputs", "result")
#: A probe's time per test: this many times the real run's slowest test, plus
#: :data:`PROBE_TIMEOUT_MARGIN` seconds (:func:`probe_timeout`). A probe that makes a test run
#: that much longer changed what the program does: the test counts as lost.
PROBE_TIMEOUT_FACTOR = 4.0
PROBE_TIMEOUT_MARGIN = 1.0

#: Appended to the program for a probe run (``_PROBE_MODE_`` becomes ``"inputs"`` or
#: ``"result"``): it rebinds the global ``aux`` to a function that, for each outermost call
#: (calls made from inside aux itself, as in recursion, go to the real one), either calls the
#: real aux with the arguments of one of the run's first two calls, whichever differ from its
#: own (the first call: changed arguments; a call without arguments: as the other mode), or
#: calls it on copies of its arguments and returns another value
#: (a helper that returns ``None`` works on its arguments: the copies keep that from main).
PROBE_SOURCE = """

def _probe_install(_mode, _real):
    _copy = __import__("copy").deepcopy
    _depth = [0]
    _seen = []
    _filled = (
        (str, "a"), (bytes, b"a"), (list, [0]), (tuple, (0,)), (dict, {0: 0}),
        (frozenset, frozenset({0})), (set, {0}),
    )

    def _copied(value):
        try:
            return _copy(value)
        except Exception:
            return value

    def _shift(value, level=0):
        if level > 3:
            return value
        if isinstance(value, bool):
            return not value
        if isinstance(value, (int, float, complex)):
            return value + 1 + level
        if isinstance(value, str):
            return value[::-1] + "aZ9 "
        if isinstance(value, bytes):
            return value[::-1] + b"aZ9 "
        if isinstance(value, (list, tuple)):
            items = [_shift(item, level + 1) for item in value]
            items.append(_shift(value[-1], level + 1) if value else 0)
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            changed = {key: _shift(item, level + 1) for key, item in value.items()}
            changed[len(changed) + 1000003] = 0
            return changed
        if isinstance(value, (set, frozenset)):
            return type(value)({_shift(item, level + 1) for item in value} | {1000003})
        if value is None:
            return 0
        return value

    def _other(value):
        if isinstance(value, bool):
            return not value
        if isinstance(value, (int, float, complex)):
            return 0 if value else 1
        for kind, filled in _filled:
            if isinstance(value, kind):
                return kind() if value else filled
        return None

    def _other_arguments(args, kwargs):
        try:
            key = repr((args, sorted(kwargs.items())))
        except Exception:
            key = None
        earlier = next((seen for seen in _seen if seen[0] != key), None)
        if key is not None and len(_seen) < 2 and all(seen[0] != key for seen in _seen):
            _seen.append((key, _copied((args, kwargs))))
        if earlier is None:
            return [_shift(a, i) for i, a in enumerate(args)], {
                k: _shift(v) for k, v in kwargs.items()
            }
        return _copied(earlier[1])

    def aux(*args, **kwargs):
        if _depth[0]:
            return _real(*args, **kwargs)
        _depth[0] += 1
        try:
            if _mode == "inputs" and (args or kwargs):
                args, kwargs = _other_arguments(args, kwargs)
                return _real(*args, **kwargs)
            args, kwargs = _copied((args, kwargs))
            value = _real(*args, **kwargs)
            return None if value is None else _other(value)
        finally:
            _depth[0] -= 1

    return aux


aux = _probe_install(_PROBE_MODE_, aux)
del _probe_install
"""


def prepare(
    prompt: str, aux_answer: str, main_answer: str, test: str, entry_point: str
) -> AuthorsProgram:
    """The authors' reading of one joint answer (:func:`coding_authors.prepare`)."""
    return coding_authors.prepare(prompt, aux_answer, main_answer, test, entry_point)


def probe_timeout(timeout: float, durations: list[float]) -> float:
    """Seconds per test in a probe run: :data:`PROBE_TIMEOUT_FACTOR` times the slowest test
    of the real run plus :data:`PROBE_TIMEOUT_MARGIN`, at most the real run's ``timeout``."""
    slowest = max(durations, default=0.0)
    return min(float(timeout), PROBE_TIMEOUT_MARGIN + PROBE_TIMEOUT_FACTOR * slowest)


def needs_probes(prepared: AuthorsProgram, passed: int) -> bool:
    """Whether the bonus is still possible after the real run, so the probes must run."""
    total = len(prepared.tests)
    return (
        prepared.gate is None
        and total > 0
        and passed >= COOPERATION_THRESHOLD * total
        and prepared.aux_extracted
        and prepared.calls_aux
    )


def probe_program(program: str, mode: str) -> str:
    """``program`` with ``aux`` swapped for the probe ``mode`` (:data:`PROBES`)."""
    if mode not in PROBES:
        raise ValueError(f"probe mode must be one of {list(PROBES)}, got {mode!r}")
    return program + PROBE_SOURCE.replace("_PROBE_MODE_", repr(mode))


@dataclass(frozen=True)
class Probes:
    """Tests passed in each probe run (``None``: not run).

    Attributes:
        inputs: With aux's arguments changed.
        result: With aux's result changed.
    """

    inputs: int | None = None
    result: int | None = None

    def aux_matters(self, passed: int) -> bool:
        """Both probes ran and each lost at least one of the ``passed`` tests."""
        return (
            self.inputs is not None
            and self.result is not None
            and self.inputs < passed
            and self.result < passed
        )


def score(prepared: AuthorsProgram, passed: int = 0, probes: Probes = Probes()) -> dict[str, float]:
    """The components (``structure``, ``syntax``, ``tests``, ``cooperation``, ``total``) once
    ``passed`` of the tests passed and the probes gave ``probes`` (see the module doc)."""
    levels = coding_authors.score(prepared, passed)
    before = levels["structure"] + levels["syntax"] + levels["tests"]  # their order
    cooperation = 0.0
    if needs_probes(prepared, passed) and probes.aux_matters(passed):
        cooperation = 0.5 if prepared.thin_wrapper else 1.5
    return {**levels, "cooperation": cooperation, "total": before + cooperation}
