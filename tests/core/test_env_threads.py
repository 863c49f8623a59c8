"""One env object used from two threads at once raises a clear error (issue 33, item 5);
an env handed from one thread to another between calls, pickled or deep-copied still works."""

from __future__ import annotations

import copy
import pickle
import sys
import threading

import pytest

from llm_marl_envs.core.simultaneous import SimultaneousTextEnv, TextParallelEnv
from llm_marl_envs.core.text_env import CleanAction, TextAECEnv
from llm_marl_envs.envs.donor_game import DonorGameEnv
from llm_marl_envs.policies.scripted.donor import fraction_giver, reputation_reciprocator

TWO_THREADS = "used from two threads at once.*make one env per thread"


class _Gate(TextAECEnv):
    """One agent; an action "wait" blocks inside the step until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(["a"], {"a": "player"}, max_cycles=10)
        self.inside = threading.Event()
        self.release = threading.Event()

    def _new_episode(self, options: dict) -> None:
        self._set_prompt("a", "say something", [])

    def _play(self, agent: str, action: CleanAction) -> None:
        if action.text == "wait":
            self.inside.set()
            assert self.release.wait(10)
        self.rewards[agent] = 1.0


class _SimGate(SimultaneousTextEnv):
    def __init__(self) -> None:
        super().__init__(["a", "b"], {"a": "x", "b": "y"}, max_cycles=10)
        self.inside = threading.Event()
        self.release = threading.Event()

    def _new_episode(self, options: dict) -> None:
        for agent in self.agents:
            self._set_prompt(agent, "go", [])

    def _resolve(self, actions: dict[str, CleanAction]) -> None:
        if actions["a"].text == "wait":
            self.inside.set()
            assert self.release.wait(10)
        for agent in actions:
            self.rewards[agent] = 1.0


def _in_thread(call):
    """Run ``call`` in a thread; returns (thread, box) where box gets its result or error."""
    box: dict = {}

    def run():
        try:
            box["result"] = call()
        except BaseException as error:  # noqa: BLE001 - the test reads it
            box["error"] = error

    thread = threading.Thread(target=run, name="first-thread")
    thread.start()
    return thread, box


@pytest.mark.parametrize("second", ["step", "reset"])
def test_a_call_during_another_threads_step_raises_and_voids_the_episode(second):
    env = _Gate()
    env.reset(seed=0)
    thread, box = _in_thread(lambda: env.step("wait"))
    assert env.inside.wait(10)
    calls = {"step": lambda: env.step("hello"), "reset": env.reset}
    with pytest.raises(RuntimeError, match=TWO_THREADS) as raised:
        calls[second]()
    assert f"_Gate.{second}()" in str(raised.value)
    env.release.set()
    thread.join(10)
    # the call in progress learns of the clash too: its episode is not played on silently
    assert isinstance(box.get("error"), RuntimeError)
    assert "two threads" in str(box["error"])
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("again")
    env.reset(seed=1)  # a reset from one thread makes it playable again
    env.step("fine")
    assert env.rewards["a"] == 1.0


def test_the_parallel_form_is_guarded_for_its_whole_call():
    env = TextParallelEnv(_SimGate())
    env.reset(seed=0)
    thread, box = _in_thread(lambda: env.step({"a": "wait", "b": "x"}))
    assert env.aec_env.inside.wait(10)
    with pytest.raises(RuntimeError, match=TWO_THREADS):
        env.step({"a": "x", "b": "x"})
    with pytest.raises(RuntimeError, match=TWO_THREADS):
        env.reset(seed=3)
    env.aec_env.release.set()
    thread.join(10)
    assert isinstance(box.get("error"), RuntimeError)
    assert env.agents == []  # needs a reset
    _, infos = env.reset(seed=1)
    assert set(infos) == {"a", "b"}


def _donor_policies(env):
    kinds = [fraction_giver(0.3), reputation_reciprocator(0.8)]
    return {a: kinds[i % 2] for i, a in enumerate(env.possible_agents)}


def _play(env, policies, seed):
    env.reset(seed=seed)
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        totals[agent] += reward
        env.step(None if term or trunc else policies[agent](obs, info))
    return totals


def test_two_threads_hammering_one_env_get_the_error():
    """Before the guard, two threads sharing one DonorGame env finished episodes with wrong
    returns and no exception; now a thread stops at the first overlap with the error.

    Only overlapping calls can be seen: calls that happen to take turns look like an env
    handed between threads (which is allowed), so episodes finished before the first overlap
    may already be mixed, and this test does not claim otherwise."""
    policies = _donor_policies(DonorGameEnv(num_agents=4, num_rounds=4))
    shared = DonorGameEnv(num_agents=4, num_rounds=4)
    outcomes: dict[str, dict] = {}
    start = threading.Barrier(2)

    def worker(name):
        outcome = outcomes[name] = {"finished": [], "error": None}
        start.wait()
        try:
            for seed in range(40):
                outcome["finished"].append((seed, _play(shared, policies, seed)))
        except RuntimeError as error:
            outcome["error"] = error

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so that calls overlap
    try:
        threads = [threading.Thread(target=worker, args=(n,), name=n) for n in ("t1", "t2")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        sys.setswitchinterval(interval)
    errors = [o["error"] for o in outcomes.values() if o["error"] is not None]
    assert errors, "two threads shared one env and no error was raised"
    assert any("two threads" in str(e) for e in errors), errors
    assert not any(thread.is_alive() for thread in threads)  # the error ended them, no hang


def test_steps_handed_between_threads_one_at_a_time_are_fine():
    """The rollout engine's worker threads step one env from different threads in turn."""
    env = DonorGameEnv(num_agents=4, num_rounds=4)
    policies = _donor_policies(env)
    expected = _play(DonorGameEnv(num_agents=4, num_rounds=4), policies, 5)
    env.reset(seed=5)
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        totals[agent] += reward
        action = None if term or trunc else policies[agent](obs, info)
        thread, box = _in_thread(lambda action=action: env.step(action))
        thread.join(10)
        assert "error" not in box
    assert totals == pytest.approx(expected)


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda env: pickle.loads(pickle.dumps(env))])
def test_an_env_still_pickles_and_copies_with_its_own_guard(clone):
    env = DonorGameEnv(num_agents=4, num_rounds=4)
    policies = _donor_policies(env)
    env.reset(seed=2)
    twin = clone(env)
    assert twin._guard is not env._guard
    assert _play(twin, policies, 2) == pytest.approx(_play(env, policies, 2))
