"""The executor seam of the rollout engine: custom executors give the same records.

An executor owns the environment copies and decides where resets and steps run; the engine
only sees slot indices and the updates (see llm_marl_envs/rollout/executors.py).
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import Future

import pytest

import llm_marl_envs
from llm_marl_envs.policies import Completion, Policy, PolicyError
from llm_marl_envs.rollout import (
    EnvExecutor,
    LocalExecutor,
    RolloutError,
    rollout,
    scripted_policy,
)
from llm_marl_envs.rollout.executors import AgentView, EnvUpdate, advance

MAZE = "llm_marl_envs/MazeCollab-v0"
GSM8K = "llm_marl_envs/GSM8K-v0"
DATA = {"data_source": "bundled"}


def _policies(env_id, **kwargs):
    env = llm_marl_envs.make(env_id, **kwargs)
    return {a: scripted_policy(env_id, a) for a in env.possible_agents}


def _dicts(result):
    return [episode.to_dict(include_tokens=True) for episode in result.episodes]


class Counting(LocalExecutor):
    """The local executor, counting what the engine asks of it."""

    def __init__(self, env_workers=None):
        super().__init__(env_workers)
        self.calls = Counter()
        self.resets: list[tuple[int, int, int]] = []  # (slot, seed, group)
        self.in_flight: set[int] = set()

    def open(self, env, env_kwargs, copies):
        self.calls["open"] += 1
        self.copies = copies
        return super().open(env, env_kwargs, copies)

    def reset(self, slots, seeds, groups):
        self.calls["reset"] += 1
        self.resets += list(zip(slots, seeds, groups, strict=True))
        return self._watch(slots, super().reset(slots, seeds, groups))

    def step(self, slots, actions):
        self.calls["step"] += 1
        self.calls["steps"] += len(slots)
        return self._watch(slots, super().step(slots, actions))

    def close(self):
        self.calls["close"] += 1
        super().close()

    def _watch(self, slots, futures):
        assert len(slots) == len(set(slots)) and not self.in_flight & set(slots)
        self.in_flight |= set(slots)
        for slot, future in zip(slots, futures, strict=True):
            future.add_done_callback(lambda _, slot=slot: self.in_flight.discard(slot))
        return futures


@pytest.mark.parametrize(("env_id", "kwargs"), [(MAZE, {}), (GSM8K, DATA)])
def test_a_counting_executor_sees_every_reset_and_step_and_changes_nothing(env_id, kwargs):
    args = {
        "episodes": 7,
        "batch_size": 3,
        "seed": 4,
        "group_size": 2,
        "env_kwargs": kwargs,
        "progress": False,
    }
    plain = rollout(env_id, _policies(env_id, **kwargs), **args)
    counting = Counting()
    counted = rollout(env_id, _policies(env_id, **kwargs), executor=counting, **args)
    assert _dicts(counted) == _dicts(plain)
    assert counting.calls["open"] == counting.calls["close"] == 1 and counting.copies == 3
    assert counting.calls["steps"] == counted.turns
    # one reset per episode, in episode order, with the group's seed; slots 0..2 only
    assert len(counting.resets) == 7
    assert [(seed, group) for _, seed, group in counting.resets] == [
        (4 + i // 2, i // 2) for i in range(7)
    ]
    assert {slot for slot, _, _ in counting.resets} == {0, 1, 2}
    assert counting.envs == []  # closed: the executor let go of its copies


class Late(LocalExecutor):
    """Steps inline, but answers late, from another thread, the last slot first."""

    def step(self, slots, actions):
        done = super().step(slots, actions)
        late = [Future() for _ in done]

        def deliver():
            time.sleep(0.005)
            for source, target in reversed(list(zip(done, late, strict=True))):
                target.set_result(source.result())

        threading.Thread(target=deliver, daemon=True).start()
        return late


def test_an_executor_that_answers_late_and_out_of_order_gives_the_same_records():
    plain = rollout(MAZE, _policies(MAZE), episodes=5, batch_size=3, seed=2, progress=False)
    late = rollout(
        MAZE, _policies(MAZE), episodes=5, batch_size=3, seed=2, progress=False, executor=Late()
    )
    assert _dicts(late) == _dicts(plain) and late.turns == plain.turns


class TwoShards(EnvExecutor):
    """A toy sharded executor: two local shards; all episodes of a group on one shard.

    Each shard holds a copy for every slot; a slot is bound to shard ``group % 2`` at each
    reset (what a Ray executor would do with environment shards on actors).
    """

    def __init__(self):
        self.shards = [LocalExecutor(), LocalExecutor()]
        self.where: dict[int, int] = {}
        self.group_shards: dict[int, set[int]] = defaultdict(set)
        self.shard_steps = Counter()

    def open(self, env, env_kwargs, copies):
        described = [shard.open(env, env_kwargs, copies) for shard in self.shards]
        return described[0]

    def reset(self, slots, seeds, groups):
        futures = []
        for slot, seed, group in zip(slots, seeds, groups, strict=True):
            self.where[slot] = group % 2
            self.group_shards[group].add(group % 2)
            futures += self.shards[group % 2].reset([slot], [seed], [group])
        return futures

    def step(self, slots, actions):
        by_shard = defaultdict(list)
        for slot, action in zip(slots, actions, strict=True):
            by_shard[self.where[slot]].append((slot, action))
        futures = {}
        for shard, batch in by_shard.items():  # one call per shard
            self.shard_steps[shard] += 1
            batch_slots = [slot for slot, _ in batch]
            done = self.shards[shard].step(batch_slots, [action for _, action in batch])
            futures.update(zip(batch_slots, done, strict=True))
        return [futures[slot] for slot in slots]

    def close(self):
        for shard in self.shards:
            shard.close()


def test_a_group_aligned_sharded_executor_gives_the_same_records():
    args = {
        "episodes": 8,
        "batch_size": 4,
        "seed": 9,
        "group_size": 2,
        "env_kwargs": DATA,
        "progress": False,
    }
    plain = rollout(GSM8K, _policies(GSM8K, **DATA), **args)
    sharded = TwoShards()
    result = rollout(GSM8K, _policies(GSM8K, **DATA), executor=sharded, **args)
    assert _dicts(result) == _dicts(plain)
    assert all(len(shards) == 1 for shards in sharded.group_shards.values())
    assert set(sharded.shard_steps) == {0, 1}


def test_heavy_envs_step_in_threads_through_the_local_executor():
    from llm_marl_envs.envs.maze_collab import MazeCollabEnv

    threads = set()

    class SlowMaze(MazeCollabEnv):
        heavy_step = True

        def step(self, action):
            threads.add(threading.current_thread().name)
            super().step(action)

    counting = Counting()
    threaded = rollout(
        SlowMaze, _policies(MAZE), episodes=4, batch_size=2, progress=False, executor=counting
    )
    assert any(name.startswith("env-step") for name in threads)
    inline = rollout(
        SlowMaze,
        _policies(MAZE),
        episodes=4,
        batch_size=2,
        progress=False,
        executor=LocalExecutor(env_workers=0),
    )
    assert _dicts(threaded) == _dicts(inline) and counting.calls["close"] == 1


class _FailsOnCall(Policy):
    name = "fails"

    def __init__(self, limit):
        self.calls, self.limit = 0, limit
        self.inner = scripted_policy(MAZE, "gnome_0")

    def generate(self, prompts):
        self.calls += 1
        if self.calls >= self.limit:
            raise PolicyError("server said 500")
        return [Completion(self.inner(p.observation, p.info)) for p in prompts]


def test_the_executor_is_closed_after_a_policy_error_or_an_env_error(tmp_path):
    counting = Counting()
    with pytest.raises(RolloutError, match="finished episode"):
        rollout(
            MAZE, _FailsOnCall(30), episodes=10, batch_size=2, progress=False, executor=counting
        )
    assert counting.calls["close"] == 1

    class Broken(Counting):
        def step(self, slots, actions):
            super().step(slots, actions)
            raise OSError("worker lost")

    broken = Broken()
    with pytest.raises(OSError, match="worker lost"):
        rollout(MAZE, _policies(MAZE), episodes=2, progress=False, executor=broken)
    assert broken.calls["close"] == 1


def test_executor_arguments_are_checked():
    with pytest.raises(TypeError, match="EnvExecutor"):
        rollout(MAZE, _policies(MAZE), episodes=1, executor=object())
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="env_workers"):
        rollout(MAZE, _policies(MAZE), episodes=1, executor=LocalExecutor(), env_workers=2)
    with pytest.warns(DeprecationWarning, match=r"pass executor=RayExecutor\(num_workers=\.\.\.\)"):
        with pytest.raises(ValueError, match="num_workers applies to executor='ray'"):
            rollout(MAZE, _policies(MAZE), episodes=1, executor="local", num_workers=2)
    with pytest.raises(ValueError, match="env_workers"):
        LocalExecutor(env_workers=-1)


def test_advance_records_every_last_up_to_the_next_live_turn():
    env = llm_marl_envs.make(MAZE, size=5, max_cycles=1)
    env.reset(seed=0)
    first = advance(env)
    assert not first.done and [v.agent for v in first.views] == ["gnome_0"]
    assert isinstance(first.views[0], AgentView) and first.views[0].observation
    update = first
    while not update.done:
        env.step("MOVE: stay")
        update = advance(env)
        assert isinstance(update, EnvUpdate)
    # the end: both gnomes seen as out (terminated or truncated), no live turn left
    assert {v.agent for v in update.views} <= {"gnome_0", "gnome_1"}
    assert all(v.observation is None and (v.terminated or v.truncated) for v in update.views)
    assert not env.agents
