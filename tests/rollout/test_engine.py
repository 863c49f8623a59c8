"""The batched rollout engine with scripted policies.

Model policies: tests/rollout/test_model_rollouts.py; custom executors: test_executors.py.
"""

from __future__ import annotations

import json

import pytest

import llm_marl_envs
from llm_marl_envs.policies import Completion, Policy, PolicyError
from llm_marl_envs.rollout import (
    EpisodePlan,
    LocalExecutor,
    RolloutError,
    play_episode,
    read_jsonl,
    rollout,
    scripted_policy,
    sft_examples,
)

DATA = {"data_source": "bundled"}
# Scripted policies without internal state: their answers do not depend on call order, so
# batched and one-at-a-time rollouts must agree exactly.
STATELESS = {
    "llm_marl_envs/GSM8K-v0": DATA,
    "llm_marl_envs/TLDRSummarization-v0": DATA,
    "llm_marl_envs/CoopCoding-v0": {},
    "llm_marl_envs/MazeCollab-v0": {},
    "llm_marl_envs/DonorGame-v0": {"num_agents": 4},
}


def _policies(env_id, **kwargs):
    env = llm_marl_envs.make(env_id, **kwargs)
    return {a: scripted_policy(env_id, a) for a in env.possible_agents}


def _dicts(result):
    return [episode.to_dict(include_tokens=True) for episode in result.episodes]


@pytest.mark.parametrize("env_id", sorted(STATELESS))
def test_batched_equals_one_at_a_time(env_id):
    kwargs = STATELESS[env_id]
    episodes = 3 if "Coop" in env_id else 6
    batched = rollout(
        env_id,
        _policies(env_id, **kwargs),
        episodes=episodes,
        batch_size=4,
        seed=7,
        env_kwargs=kwargs,
        progress=False,
    )
    sequential = rollout(
        env_id,
        _policies(env_id, **kwargs),
        episodes=episodes,
        batch_size=1,
        seed=7,
        env_kwargs=kwargs,
        progress=False,
    )
    assert _dicts(batched) == _dicts(sequential)
    assert [e.episode for e in batched.episodes] == list(range(episodes))
    assert batched.turns == sum(e.num_turns for e in batched.episodes)


@pytest.mark.parametrize("env_id", ["llm_marl_envs/MazeCollab-v0", "llm_marl_envs/GSM8K-v0"])
def test_records_match_a_plain_aec_loop(env_id):
    kwargs = STATELESS[env_id]
    result = rollout(
        env_id,
        _policies(env_id, **kwargs),
        episodes=3,
        batch_size=2,
        seed=11,
        env_kwargs=kwargs,
        progress=False,
    )
    env = llm_marl_envs.make(env_id, **kwargs)
    for record in result.episodes:
        returns = play_episode(env, _policies(env_id, **kwargs), seed=record.seed)
        assert returns == pytest.approx(record.returns)
        # Per-turn rewards add up to the return for the agent that moves first; others may
        # also receive rewards before their first action (the maze pays the team each turn).
        first = record.turns[0].agent
        first_rewards = [t.reward for t in record.turns if t.agent == first]
        assert sum(first_rewards) == pytest.approx(record.returns[first])
        assert record.data_source == env.data_source and record.row_id == env.row_id
    maze = result.episodes[0]
    if "Maze" in env_id:
        assert all(info["success"] for info in maze.final_infos.values())
        assert maze.num_turns == maze.final_infos["gnome_0"]["optimal_steps"]


def test_groups_share_a_seed_and_a_task():
    env_id = "llm_marl_envs/GSM8K-v0"
    result = rollout(
        env_id,
        _policies(env_id, **DATA),
        episodes=6,
        batch_size=4,
        seed=100,
        group_size=3,
        env_kwargs=DATA,
        progress=False,
    )
    seeds = [e.seed for e in result.episodes]
    assert seeds == [100, 100, 100, 101, 101, 101]
    assert [e.group for e in result.episodes] == [0, 0, 0, 1, 1, 1]
    first = {e.group: set() for e in result.episodes}
    for e in result.episodes:
        first[e.group].add(e.turns[0].observation)
    assert all(len(prompts) == 1 for prompts in first.values())


def test_jsonl_round_trip_and_sft_examples(tmp_path):
    out = tmp_path / "episodes.jsonl"
    env_id = "llm_marl_envs/MazeCollab-v0"
    result = rollout(env_id, _policies(env_id), episodes=4, batch_size=3, out=out, progress=False)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and all(json.loads(line)["env_id"] == env_id for line in lines)
    loaded = sorted(read_jsonl(out), key=lambda e: e.episode)
    assert [e.to_dict() for e in loaded] == [e.to_dict() for e in result.episodes]
    examples = sft_examples(loaded, agents=["gnome_0"])
    assert examples and all(x["agent"] == "gnome_0" for x in examples)
    assert all(
        x["messages"][-1]["role"] == "assistant" and x["messages"][0]["role"] == "system"
        for x in examples
    )
    assert len(examples) == sum(1 for e in loaded for t in e.turns if t.agent == "gnome_0")
    assert sft_examples(loaded, min_return=100.0) == []


class _FailsAfter(Policy):
    """Answers like the maze oracle, then fails on call ``limit``."""

    name = "flaky"

    def __init__(self, limit, error=None):
        self.calls, self.limit = 0, limit
        self.error = PolicyError("server said 500") if error is None else error
        self.inner = scripted_policy("llm_marl_envs/MazeCollab-v0", "gnome_0")

    def generate(self, prompts):
        self.calls += 1
        if self.calls >= self.limit:
            raise self.error
        return [Completion(self.inner(p.observation, p.info)) for p in prompts]


@pytest.mark.parametrize("error", [PolicyError("server said 500"), ValueError("model blew up")])
def test_a_failing_policy_keeps_the_finished_episodes(tmp_path, error):
    out = tmp_path / "partial.jsonl"
    with pytest.raises(RolloutError) as caught:
        rollout(
            "llm_marl_envs/MazeCollab-v0",
            _FailsAfter(40, error),
            episodes=20,
            batch_size=2,
            out=out,
            progress=False,
        )
    kept = caught.value.result.episodes
    assert 0 < len(kept) < 20
    assert "finished episode(s) kept" in str(caught.value) and str(out) in str(caught.value)
    assert sorted(e.episode for e in read_jsonl(out)) == [e.episode for e in kept]
    assert all(all(info["success"] for info in e.final_infos.values()) for e in kept)


def test_non_string_answers_are_a_policy_error():
    with pytest.raises(RolloutError, match="str text"):
        rollout(
            "llm_marl_envs/MazeCollab-v0", lambda observation, info: 42, episodes=1, progress=False
        )


def test_parallel_env_factories_and_shared_policies():
    def make():
        return llm_marl_envs.make_parallel("llm_marl_envs/TLDRSummarization-v0", **DATA)

    calls = []

    def shared(observation, info):
        calls.append(info["role"])
        return "A short summary of the post."

    result = rollout(make, shared, episodes=4, batch_size=4, progress=False)
    assert len(result.episodes) == 4 and result.episodes[0].env_id == "TLDRSummarization-v0"
    # one shared policy: both agents' prompts of a step go into one call
    assert result.policy_calls == {"shared": 2}
    assert len(set(calls)) == 2  # both agents' roles went through the one policy


def test_bad_arguments_are_clear():
    with pytest.raises(ValueError, match="batch_size"):
        rollout("llm_marl_envs/MazeCollab-v0", lambda o, i: "stay", episodes=1, batch_size=0)
    with pytest.raises(ValueError, match="missing"):
        rollout("llm_marl_envs/MazeCollab-v0", {"gnome_0": lambda o, i: "stay"}, episodes=1)
    with pytest.raises(llm_marl_envs.UnknownEnvironmentError):
        rollout("llm_marl_envs/Mazecollab-v0", lambda o, i: "stay", episodes=1)
    with pytest.raises(TypeError, match="Policy or a callable"):
        rollout("llm_marl_envs/MazeCollab-v0", "not a policy", episodes=1)
    assert rollout("llm_marl_envs/MazeCollab-v0", lambda o, i: "stay", episodes=0).episodes == []


def test_heavy_steps_run_in_threads_and_count_env_time():
    env_id = "llm_marl_envs/CoopCoding-v0"
    result = rollout(env_id, _policies(env_id), episodes=4, batch_size=4, progress=False)
    assert len(result.episodes) == 4
    assert result.env_seconds > 0 and sum(result.policy_seconds.values()) >= 0
    assert all(e.turns[-1].reward_components.get("tests_total", 0) > 0 for e in result.episodes)


def test_heavy_steps_leave_the_main_thread_and_give_the_same_episodes():
    import threading

    from llm_marl_envs.envs.maze_collab import MazeCollabEnv

    threads = set()

    class SlowMaze(MazeCollabEnv):
        heavy_step = True

        def step(self, action):
            threads.add(threading.current_thread().name)
            super().step(action)

    policies = _policies("llm_marl_envs/MazeCollab-v0")
    threaded = rollout(SlowMaze, policies, episodes=5, batch_size=3, progress=False)
    assert any(name.startswith("env-step") for name in threads)  # live steps ran in workers
    inline = rollout(
        SlowMaze, policies, episodes=5, batch_size=3, executor=LocalExecutor(0), progress=False
    )
    assert _dicts(threaded) == _dicts(inline)


def test_frozen_episode_list_pins_seeds_and_rows(tmp_path):
    """``seeds`` and ``reset_options`` name each group's task (an evaluation suite's episodes)."""
    env_id = "llm_marl_envs/GSM8K-v0"
    out = tmp_path / "frozen.jsonl"
    result = rollout(
        env_id,
        _policies(env_id, **DATA),
        plan=EpisodePlan(seeds=[5, 7, 9], reset_options=[{"row_index": 0}, {"row_index": 3}, None]),
        group_size=2,
        batch_size=4,
        env_kwargs=DATA,
        out=out,
        progress=False,
    )
    assert [(e.seed, e.group) for e in result.episodes] == [
        (5, 0),
        (5, 0),
        (7, 1),
        (7, 1),
        (9, 2),
        (9, 2),
    ]
    data = llm_marl_envs.make(env_id, **DATA).unwrapped.data
    assert [e.row_id for e in result.episodes[:4]] == [data.row_ids[0]] * 2 + [data.row_ids[3]] * 2
    assert [e.reset_options for e in read_jsonl(out)][:4] == [{"row_index": 0}] * 2 + [
        {"row_index": 3}
    ] * 2
    # the same seeds replay the same episodes, whatever the batch
    again = rollout(
        env_id,
        _policies(env_id, **DATA),
        plan=EpisodePlan(seeds=[9], reset_options=[None]),
        group_size=2,
        env_kwargs=DATA,
        progress=False,
    )
    assert [e.to_dict()["turns"] for e in again.episodes] == [
        e.to_dict()["turns"] for e in result.episodes[4:]
    ]
    # a plain rollout's records carry no reset_options key
    plain = rollout(env_id, _policies(env_id, **DATA), episodes=1, env_kwargs=DATA, progress=False)
    assert "reset_options" not in plain.episodes[0].to_dict()


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({}, TypeError, "needs episodes=N"),
        ({"seeds": [1, 2], "episodes": 3}, ValueError, "leave episodes out"),
        ({"seeds": "12"}, TypeError, "one per group"),
        ({"episodes": 3, "reset_options": [{}]}, ValueError, "one dict (or None) per group"),
        ({"seeds": [1], "reset_options": ["row 3"]}, TypeError, "dict or None"),
    ],
)
def test_frozen_episode_list_bad_arguments(kwargs, error, words):
    env_id = "llm_marl_envs/GSM8K-v0"
    fields = dict(kwargs)
    episodes = fields.pop("episodes", None)
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        policies = _policies(env_id, **DATA)
        plan = EpisodePlan(**fields)
        rollout(env_id, policies, episodes=episodes, env_kwargs=DATA, progress=False, plan=plan)


# --------------------------------------------------------------- keep (issue 33, item 2)
DONOR = "llm_marl_envs/DonorGame-v0"


def _donor(tmp_path, keep, episodes=6, **kwargs):
    return rollout(
        DONOR,
        _policies(DONOR, num_agents=4),
        episodes=episodes,
        batch_size=3,
        seed=2,
        env_kwargs={"num_agents": 4},
        out=tmp_path / f"{keep}.jsonl",
        keep=keep,
        progress=False,
        **kwargs,
    )


def test_keep_none_writes_every_record_and_keeps_none(tmp_path):
    full = _donor(tmp_path, "all")
    none = _donor(tmp_path, "none")
    summaries = _donor(tmp_path, "summaries")
    assert none.episodes == [] and none.finished == 6 == full.finished
    assert (tmp_path / "none.jsonl").read_bytes() == (tmp_path / "all.jsonl").read_bytes()
    # summaries: the records without their turns, in episode order
    assert [e.episode for e in summaries.episodes] == list(range(6))
    assert all(e.turns == [] for e in summaries.episodes)
    assert [e.returns for e in summaries.episodes] == [e.returns for e in full.episodes]
    assert [e.final_infos for e in summaries.episodes] == [e.final_infos for e in full.episodes]
    # the running totals are the same whatever is kept, and equal the records' own
    for result in (none, summaries):
        assert result.mean_returns() == pytest.approx(full.mean_returns())
        for agent, stats in result.stats.items():
            mine = full.stats[agent]
            assert (stats.episodes, stats.turns, stats.format_failures) == (
                mine.episodes,
                mine.turns,
                mine.format_failures,
            )
            assert stats.std == pytest.approx(mine.std)
    first = full.episodes[0].turns[0].agent
    returns = [e.returns[first] for e in full.episodes]
    stats = full.stats[first]
    assert (stats.min, stats.max) == (min(returns), max(returns))
    assert stats.turns == sum(t.agent == first for e in full.episodes for t in e.turns)


def test_keep_is_checked():
    with pytest.raises(ValueError, match="keep must be one of all, summaries, none"):
        rollout(DONOR, _policies(DONOR, num_agents=4), episodes=1, keep="some")


@pytest.mark.slow  # about 1.6 s: many episodes
def test_keep_none_memory_does_not_grow_with_episodes(tmp_path):
    """Records were all kept even with ``out`` (~200 KB per Donor episode); with
    ``keep="none"`` the memory the rollout allocates stays flat from 10 to 60 episodes."""
    import gc
    import tracemalloc

    def peak(episodes):
        gc.collect()
        tracemalloc.start()
        try:
            _donor(tmp_path, "none", episodes=episodes)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(10), peak(60)
    assert large - small < 2_000_000, (small, large)  # keeping them: about 10 MB more


def test_episode_numbers_continue_an_uninterrupted_run(tmp_path):
    """A resumed run numbers its records as the uninterrupted run did (episode, group and the
    seed of ``seed + group``), so its lines are byte for byte that run's."""
    whole = rollout(
        DONOR,
        _policies(DONOR, num_agents=4),
        episodes=8,
        group_size=2,
        batch_size=3,
        seed=5,
        env_kwargs={"num_agents": 4},
        out=tmp_path / "whole.jsonl",
        progress=False,
    )
    rest = rollout(
        DONOR,
        _policies(DONOR, num_agents=4),
        episodes=4,
        group_size=2,
        batch_size=3,
        seed=5,
        env_kwargs={"num_agents": 4},
        out=tmp_path / "rest.jsonl",
        plan=EpisodePlan(episode_numbers=[2, 3, 6, 7]),
        progress=False,
    )
    assert [(e.episode, e.group, e.seed) for e in rest.episodes] == [
        (2, 1, 6),
        (3, 1, 6),
        (6, 3, 8),
        (7, 3, 8),
    ]
    by_number = {
        json.loads(line)["episode"]: line
        for line in (tmp_path / "whole.jsonl").read_text().splitlines()
    }
    for line in (tmp_path / "rest.jsonl").read_text().splitlines():
        assert line == by_number[json.loads(line)["episode"]]
    assert _dicts(rest) == [whole.episodes[i].to_dict(include_tokens=True) for i in (2, 3, 6, 7)]


def test_episode_numbers_with_frozen_seeds_keep_the_seeds_of_this_call():
    result = rollout(
        "llm_marl_envs/GSM8K-v0",
        _policies("llm_marl_envs/GSM8K-v0", **DATA),
        plan=EpisodePlan(
            seeds=[11, 12],
            reset_options=[{"row_index": 3}, {"row_index": 4}],
            episode_numbers=[9, 4],
        ),
        env_kwargs=DATA,
        progress=False,
    )
    assert [(e.episode, e.group, e.seed, e.reset_options) for e in result.episodes] == [
        (4, 4, 12, {"row_index": 4}),
        (9, 9, 11, {"row_index": 3}),
    ]


@pytest.mark.parametrize(
    ("numbers", "group_size", "error", "words"),
    [
        ([0, 1], 1, ValueError, "2 numbers for 3 episodes"),
        ([0, 0, 1], 1, ValueError, "distinct"),
        ([0, -1, 2], 1, ValueError, "episode_numbers"),
        ("012", 1, TypeError, "list of ints"),
        ([1, 2, 4], 3, ValueError, "different groups of 3"),
    ],
)
def test_episode_numbers_bad_arguments(numbers, group_size, error, words):
    with pytest.raises(error, match=words):
        rollout(
            DONOR,
            _policies(DONOR, num_agents=4),
            episodes=3,
            group_size=group_size,
            env_kwargs={"num_agents": 4},
            plan=EpisodePlan(episode_numbers=numbers),
            progress=False,
        )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            {"seeds": [5, 7], "reset_options": [{"row_index": 2}, None]},
            {"plan": EpisodePlan(seeds=[5, 7], reset_options=[{"row_index": 2}, None])},
        ),
        (
            {"episodes": 2, "episode_numbers": [3, 1]},
            {"episodes": 2, "plan": EpisodePlan(episode_numbers=[3, 1])},
        ),
        (
            {"episodes": 2, "env_workers": 0},
            {"episodes": 2, "executor": LocalExecutor(env_workers=0)},
        ),
    ],
)
def test_the_old_keywords_warn_and_play_what_the_new_form_plays(old, new):
    env_id = "llm_marl_envs/GSM8K-v0"
    with pytest.warns(DeprecationWarning) as caught:
        before = rollout(env_id, _policies(env_id, **DATA), env_kwargs=DATA, progress=False, **old)
    said = [str(w.message) for w in caught]
    names = [k for k in old if k != "episodes"]
    assert len(said) == len(names)
    for name, message in zip(names, said, strict=True):
        assert message.startswith(f"rollout({name}=...) is deprecated: pass ")
        assert ("plan=EpisodePlan(" in message) == (name != "env_workers")
    assert caught[0].filename == __file__  # the warning points at the caller
    after = rollout(env_id, _policies(env_id, **DATA), env_kwargs=DATA, progress=False, **new)
    assert _dicts(before) == _dicts(after)


def test_old_keywords_and_a_plan_together_or_unknown_keywords_are_refused():
    env_id = "llm_marl_envs/GSM8K-v0"
    policies = _policies(env_id, **DATA)
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="put them in the plan"):
        rollout(env_id, policies, plan=EpisodePlan(seeds=[1]), seeds=[2], env_kwargs=DATA)
    with pytest.raises(TypeError, match="unexpected keyword argument 'seed_list'"):
        rollout(env_id, policies, episodes=1, seed_list=[2], env_kwargs=DATA)
    with pytest.raises(TypeError, match="plan must be an EpisodePlan"):
        rollout(env_id, policies, plan={"seeds": [1]}, env_kwargs=DATA)


def test_an_episode_plan_is_checked_when_made_and_frozen():
    plan = EpisodePlan(seeds=[3, 4], reset_options=({"row_index": 1}, None))
    assert plan.seeds == (3, 4) and plan.reset_options == ({"row_index": 1}, None)
    assert plan.episode_count(None, group_size=3) == 6
    with pytest.raises(ValueError, match="episodes=5 but 2 seeds x group_size=3 give 6"):
        plan.episode_count(5, group_size=3)
    with pytest.raises(AttributeError):
        plan.seeds = (1,)  # type: ignore[misc]
    options = {"row_index": 1}
    copied = EpisodePlan(reset_options=[options])
    options["row_index"] = 9
    assert copied.reset_options == ({"row_index": 1},)  # the plan holds its own copy
    with pytest.raises(ValueError, match="distinct"):
        EpisodePlan(episode_numbers=[1, 1])
    with pytest.raises(TypeError, match="list of ints"):
        EpisodePlan(episode_numbers="01")
    with pytest.raises(ValueError, match="one dict"):
        EpisodePlan(reset_options={"row_index": 1})
