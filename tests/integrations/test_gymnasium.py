"""The Gymnasium single-agent view: check_env, ids, vector envs, replay, partners, rewards."""

from __future__ import annotations

import copy
import subprocess
import sys
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

import llm_marl_envs
from llm_marl_envs.integrations.gymnasium import SingleAgentEnv
from llm_marl_envs.policies import Completion, Policy, Prompt
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.registry import GYMNASIUM_ENTRY_POINT, gymnasium_ids
from llm_marl_envs.registry import gymnasium_id as gym_id

ENV_IDS = llm_marl_envs.list_envs()
MAZE = "llm_marl_envs/MazeCollab-v0"
DONOR = "llm_marl_envs/DonorGame-v0"
# Small settings so that vector tests cross an episode end in a few steps.
SHORT = {MAZE: {"max_cycles": 2}}


def _learner(env_id: str) -> str:
    return llm_marl_envs.make(env_id, **SHORT.get(env_id, {})).possible_agents[-1]


def _play(env, seed, learner_of=None):
    """One episode of ``env`` (a view) with the scripted learner; every return value kept."""
    learner = (learner_of or scripted_policy)(env.unwrapped.env_id, env.unwrapped.agent, seed)
    observation, info = env.reset(seed=seed)
    steps = [(observation, info)]
    done = False
    while not done:
        result = env.step(learner(observation, info))
        observation, _, terminated, truncated, info = result
        steps.append(result)
        done = terminated or truncated
    return steps


# --------------------------------------------------------------------------- ids and check_env
REGISTERED_IDS = [gid for gid, _ in gymnasium_ids()]


def test_every_env_and_agent_has_an_id():
    expected = []
    for env_id in ENV_IDS:
        expected.append(env_id)
        expected += [gym_id(env_id, a) for a in llm_marl_envs.make(env_id).possible_agents]
    assert REGISTERED_IDS == expected
    for gid, kwargs in gymnasium_ids():  # registered by the registry, once
        assert gymnasium.spec(gid).entry_point == GYMNASIUM_ENTRY_POINT
        assert gymnasium.spec(gid).kwargs == kwargs
    assert "llm_marl_envs/DonorGame-player_11-v0" in gymnasium.registry
    assert gymnasium.spec("llm_marl_envs/GSM8K-observer_0-v0").kwargs == {
        "env_id": "llm_marl_envs/GSM8K-v0",
        "agent": "observer_0",
    }


@pytest.mark.parametrize("gid", REGISTERED_IDS)
def test_check_env_passes_without_warnings(gid, capsys):
    env = gymnasium.make(gid)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)  # the render modes too, through env.spec (human prints)
    assert [str(w.message) for w in caught] == []
    env.close()


def test_make_passes_env_kwargs_and_partners():
    seen = []

    def pioneer(observation, info):
        seen.append((observation, info["role"]))
        return "The answer is 7."

    env = gymnasium.make(
        "llm_marl_envs/GSM8K-observer_0-v0", data_source="procedural", partners=pioneer
    )
    observation, info = env.reset(seed=3)
    assert env.unwrapped.aec_env.data_source.startswith("procedural")
    assert len(seen) == 1 and seen[0][1] == "pioneer"
    assert "The answer is 7." in observation  # the observer sees the pioneer's answer
    assert info["role"] == "observer" and info["episode_seed"] == 3
    _, reward, terminated, truncated, _ = env.step("7")
    assert terminated and not truncated and isinstance(reward, float)


def test_env_level_id_takes_the_first_agent_or_agent_kwarg():
    assert gymnasium.make("llm_marl_envs/MazeCollab-v0").unwrapped.agent == "gnome_0"
    env = gymnasium.make("llm_marl_envs/MazeCollab-v0", agent="gnome_1")
    assert env.unwrapped.agent == "gnome_1"
    assert env.observation_space == env.unwrapped.aec_env.observation_space("gnome_1")
    assert env.action_space.max_length == 2048


def test_plain_import_registers_the_ids_without_importing_the_view():
    code = (
        "import sys, gymnasium, llm_marl_envs\n"
        "assert 'llm_marl_envs/GSM8K-pioneer_0-v0' in gymnasium.registry\n"
        "assert 'llm_marl_envs/DonorGame-player_11-v0' in gymnasium.registry\n"
        "assert 'llm_marl_envs.integrations.gymnasium' not in sys.modules\n"
        "env = gymnasium.make('llm_marl_envs/GSM8K-pioneer_0-v0', data_source='bundled')\n"
        "print(env.reset(seed=0)[1]['role'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pioneer"


def test_module_colon_id_imports_the_view_itself():
    code = (
        "import gymnasium\n"
        "env = gymnasium.make('llm_marl_envs.integrations.gymnasium:"
        "llm_marl_envs/GSM8K-pioneer_0-v0', data_source='bundled')\n"
        "print(env.reset(seed=0)[1]['role'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pioneer"


def test_an_env_instance_works_and_bad_arguments_are_clear():
    env = SingleAgentEnv(llm_marl_envs.make(MAZE, size=5), "gnome_1")
    assert env.env_id == MAZE
    env.reset(seed=0)
    with pytest.raises(TypeError, match="str"):
        env.step(3)
    env.step("up")  # the failed step changed nothing
    with pytest.raises(TypeError, match="env id"):
        SingleAgentEnv(llm_marl_envs.make(MAZE), size=5)
    with pytest.raises(ValueError, match="unknown learner"):
        SingleAgentEnv(MAZE, "gnome_7")
    with pytest.raises(ValueError, match="not partners"):
        SingleAgentEnv(MAZE, "gnome_0", {"gnome_0": "random"})
    with pytest.raises(TypeError, match="partner"):
        SingleAgentEnv(MAZE, "gnome_0", 42)
    fresh = SingleAgentEnv(MAZE)
    with pytest.raises(RuntimeError, match="reset"):
        fresh.step("up")
    gsm = SingleAgentEnv("llm_marl_envs/GSM8K-v0", data_source="bundled")
    gsm.reset(seed=0)
    gsm.step("The answer is 1.")
    with pytest.raises(RuntimeError, match="episode is over"):
        gsm.step("again")


# --------------------------------------------------------------------------- vector envs
def _action(env_id):
    """A fixed action of the learner: the scripted learner's first answer of episode 0."""
    env = SingleAgentEnv(env_id, _learner(env_id), **SHORT.get(env_id, {}))
    observation, info = env.reset(seed=0)
    return scripted_policy(env_id, env.agent, 0)(observation, info)


def _vector_run(vector_env, env_id, steps_after_end=2, cap=30):
    """Reset with seed 1 and step with a fixed action until both sub-envs ended once."""
    action = _action(env_id)
    observations, infos = vector_env.reset(seed=1)
    record = [(observations, None, None, None, infos["episode_seed"].tolist())]
    ended = [False, False]
    extra = 0
    for _ in range(cap):
        actions = (action, action)
        assert all(vector_env.single_action_space.contains(a) for a in actions)
        observations, rewards, terminated, truncated, infos = vector_env.step(actions)
        record.append(
            (
                observations,
                rewards.tolist(),
                terminated.tolist(),
                truncated.tolist(),
                infos["episode_seed"].tolist(),
            )
        )
        ended = [e or te or tr for e, te, tr in zip(ended, terminated, truncated, strict=True)]
        if all(ended):
            extra += 1
            if extra > steps_after_end:
                break
    assert all(ended), "no episode ended"
    vector_env.close()
    return record


def _fns(env_id):
    gid = gym_id(env_id, _learner(env_id))
    return [lambda: gymnasium.make(gid, **SHORT.get(env_id, {}))] * 2


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sync_vector_env_steps_and_autoresets(env_id):
    record = _vector_run(SyncVectorEnv(_fns(env_id)), env_id)
    seeds = [r[4] for r in record]
    assert seeds[0] == [1, 2]  # Gymnasium seeds the sub-envs seed, seed + 1
    assert len({tuple(s) for s in seeds}) > 1, "autoreset drew new episode seeds"
    for observations, *_ in record:
        assert all(isinstance(o, str) and o for o in observations)


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("shared_memory", [False, True])
def test_async_vector_env_matches_sync(env_id, shared_memory):
    sync = _vector_run(SyncVectorEnv(_fns(env_id)), env_id)
    done = _vector_run(AsyncVectorEnv(_fns(env_id), shared_memory=shared_memory), env_id)
    assert [r[1:] for r in done] == [r[1:] for r in sync]  # rewards, ends, episode seeds
    # Observations too: with shared memory they travel as code points through the buffer
    # that AsyncVectorEnv reads once and hands out after every step (a live view).
    assert [tuple(r[0]) for r in done] == [tuple(r[0]) for r in sync]


# --------------------------------------------------------------------------- episodes
@pytest.mark.parametrize("env_id", [MAZE, DONOR, "llm_marl_envs/TLDRSummarization-v0"])
def test_same_seed_same_episode_and_unseeded_resets_replay(env_id):
    env = gymnasium.make(gym_id(env_id, _learner(env_id)))
    first, again = _play(env, 5), _play(env, 5)
    assert first == again
    env.reset(seed=7)
    unseeded = _play(env, None, lambda e, a, s: scripted_policy(e, a, 0))
    seed = unseeded[0][1]["episode_seed"]
    assert seed != 7
    replayed = _play(env, seed, lambda e, a, s: scripted_policy(e, a, 0))
    assert replayed == unseeded


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_info_is_a_snapshot(env_id):
    """Nothing the view returned changes later, down to the chat messages and records."""
    env = SingleAgentEnv(env_id, _learner(env_id))
    learner = scripted_policy(env_id, env.agent, 0)
    observation, info = env.reset(seed=0)
    kept = [(info, copy.deepcopy(info))]
    for _ in range(2):  # this episode to its end, then the next one
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(learner(observation, info))
            kept.append((info, copy.deepcopy(info)))
            done = terminated or truncated
        observation, info = env.reset()
    assert all(info == frozen for info, frozen in kept)
    live = env.aec_env.infos[env.agent]
    for key, value in info.items():
        if isinstance(value, (dict, list)):
            assert value is not live[key]


def test_donor_rewards_add_up_to_the_raw_env():
    seed, learner = 4, "player_3"
    env = SingleAgentEnv(DONOR, learner)
    steps = _play(env, seed)
    total = steps[0][1]["reward_before_first_turn"] + sum(s[1] for s in steps[1:])
    assert len(steps) > 2  # several turns of the learner

    raw = llm_marl_envs.make(DONOR)
    players = {a: scripted_policy(DONOR, a, seed) for a in raw.possible_agents}
    raw.reset(seed=seed)
    raw_total = 0.0
    for agent in raw.agent_iter():
        observation, _, terminated, truncated, info = raw.last()
        raw.step(None if terminated or truncated else players[agent](observation, info))
        raw_total += raw.rewards.get(learner, 0.0)
    assert total == pytest.approx(raw_total)
    assert steps[-1][0] == raw.observe(learner)


class _Recorder(Policy):
    name = "recorder"

    def __init__(self):
        self.prompts, self.seeds = [], []

    def reseed(self, seed):
        self.seeds.append(seed)

    def generate(self, prompts):
        self.prompts += prompts
        return [Completion("A short summary.") for _ in prompts]


def test_partners_as_policy_and_callable_in_a_simultaneous_game():
    env_id = "llm_marl_envs/TLDRSummarization-v0"
    policy = _Recorder()
    env = gymnasium.make(gym_id(env_id, "summarizer_0"), partners={"elaborator_0": policy})
    env.reset(seed=11)
    env.step("MARKER-FROM-THE-LEARNER")
    env.reset()
    assert policy.seeds[0] == 11 and len(policy.seeds) == 2
    assert [p.agent for p in policy.prompts] == ["elaborator_0"]  # the learner acts first
    assert "MARKER" not in policy.prompts[0].observation  # same round: not seen
    assert policy.prompts[0].messages == policy.prompts[0].info["messages"]

    calls = []
    env = SingleAgentEnv(env_id, "elaborator_0", lambda o, i: calls.append(o) or "Summary.")
    observation, _ = env.reset(seed=0)
    assert len(calls) == 1 and calls[0] != observation  # the partner answered its own prompt
    _, reward, terminated, _, info = env.step("A long elaboration.")
    assert terminated and info["reward_components"]


def test_scripted_and_random_partners_follow_the_episode_seed():
    a = SingleAgentEnv(MAZE, "gnome_0", "random")
    b = SingleAgentEnv(MAZE, "gnome_0", {"gnome_1": "random"})
    for seed in (0, 1):
        assert _play(a, seed) == _play(b, seed)
    assert _play(a, 0) != _play(a, 1)


def test_partner_seed_keeps_the_partners_of_every_episode_and_their_actions_are_listed():
    """What the TRL adapter builds on: partners seeded once (``partner_seed``), their actions."""
    imdb, probe = "llm_marl_envs/IMDBSentiment-v0", "A review that needs an ending:"
    fixed = SingleAgentEnv(imdb, "observer_0", partner_seed=4, data_source="bundled")
    per_episode = SingleAgentEnv(imdb, "observer_0", data_source="bundled")
    with pytest.raises(RuntimeError, match="call reset"):
        per_episode.partner_policies()

    def answer(view) -> str:
        [policy] = view.partner_policies().values()
        return policy.generate([Prompt("pioneer_0", probe, [])])[0].text

    assert answer(fixed) == scripted_policy(imdb, "pioneer_0", 4)(probe, {})  # from the start
    for seed in (0, 1, 2):
        for view, partner_seed in ((fixed, 4), (per_episode, seed)):
            observation, _ = view.reset(seed=seed)
            [(agent, action)] = view.partner_actions  # the pioneer wrote before the observer
            assert agent == "pioneer_0" and action in observation
            assert answer(view) == scripted_policy(imdb, "pioneer_0", partner_seed)(probe, {})
        view.step("The end.")
        assert view.partner_actions == [("pioneer_0", action)]  # a new list at each reset


# --------------------------------------------------------------------------- docs example
def test_docs_example():
    def my_policy(observation: str) -> str:  # the user's model
        return "The answer is 12."

    # --- the example of docs/integrations.md, as written there
    import llm_marl_envs  # noqa: F401  (registers the ids with Gymnasium)

    env = gymnasium.make("llm_marl_envs/GSM8K-observer_0-v0", partners="scripted")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(my_policy(observation))
    # ---
    assert terminated and reward in (0.0, 1.0, 2.0)


def test_docs_example_vector():
    def my_policy(observation: str) -> str:  # the user's model
        return "The answer is 12."

    # --- the vector example of docs/integrations.md, as written there
    envs = gymnasium.make_vec("llm_marl_envs/GSM8K-observer_0-v0", num_envs=4)
    observations, infos = envs.reset(seed=0)
    observations, rewards, terminated, truncated, infos = envs.step(
        tuple(my_policy(o) for o in observations)
    )
    # ---
    assert terminated.all() and infos["episode_seed"].tolist() == [0, 1, 2, 3]
    assert all(isinstance(o, str) and o for o in observations)
    envs.close()
