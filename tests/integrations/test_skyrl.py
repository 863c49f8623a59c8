"""Every registered environment in SkyRL-Gym (skyrl-gym 0.4), made and played as SkyRL's
generator makes and plays them.

SkyRL's ``SkyRLGymGenerator.agent_loop`` (skyrl-train) sets ``extras["max_turns"]`` to its
``generator.max_turns``, makes the environment with ``skyrl_gym.make(env_class,
env_config=<DictConfig of environment.skyrl_gym[env_class]>, extras=<the dataset row less
prompt and env_class>)``, replaces the row's prompt with ``env.init(prompt)``'s chat, then
steps the model's text until ``done``, each step's reward at the end of its turn, and reads
``env.get_metrics()`` before ``env.close()``. :func:`generator_loop` does the same with a
scripted model, so the step rewards must add up to the seat's return in direct play.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the skyrl extra")
from omegaconf import DictConfig  # noqa: E402  (skyrl-gym's own dependency)

import llm_marl_envs  # noqa: E402
from llm_marl_envs.integrations import skyrl  # noqa: E402
from llm_marl_envs.policies.scripted import scripted_policy  # noqa: E402
from llm_marl_envs.registry import agent_names, gymnasium_id  # noqa: E402
from llm_marl_envs.rollout.play import play_episode  # noqa: E402
from small_envs import SMALL, short  # noqa: E402

ENV_IDS = llm_marl_envs.list_envs()
BIG = 10_000  # a generator.max_turns that never cuts an episode here


def generator_loop(env_class, row, env_config, model, max_turns=BIG):
    """SkyRL's agent loop, less the tokens: make, init, step until done, metrics, close."""
    extras = dict(row)
    prompt = extras.pop("prompt", [])
    extras.pop("env_class", None)
    extras["max_turns"] = max_turns
    env = skyrl_gym.make(env_class, env_config=DictConfig(env_config), extras=extras)
    chat, _ = env.init(prompt)
    rewards, observations = [], []
    done = False
    while not done:
        action = model(chat, env)
        out = env.step(action)
        rewards.append(out["reward"])
        observations.append(out["observations"])
        chat = chat + [{"role": "assistant", "content": action}] + out["observations"]
        done = out["done"]
    metrics = env.get_metrics()
    env.close()
    return rewards, observations, metrics, out


def scripted_model(env_id, agent, seed):
    """The seat's scripted player as the model. It reads what the environment holds for the
    seat (its observation and info: a scripted player reads fields a chat does not carry)."""
    policy = scripted_policy(env_id, agent, seed)

    def model(chat, env):
        observation, _, _, _, info = env.view.aec_env.last()
        assert chat[-1]["content"] in observation  # the chat holds the seat's latest prompt
        return policy(observation, info)

    return model


def direct_return(env_id, agent, seed, kwargs):
    env = llm_marl_envs.make(env_id, **kwargs)
    players = {a: scripted_policy(env_id, a, seed) for a in env.possible_agents}
    return play_episode(env, players, seed=seed)[agent]


def test_every_id_and_seat_is_in_skyrls_registry():
    for env_id in ENV_IDS:
        assert env_id in skyrl_gym.registry
        for agent in agent_names(env_id):
            assert gymnasium_id(env_id, agent) in skyrl_gym.registry
    assert skyrl.register_envs(["llm_marl_envs/GSM8K-v0"])  # a second call changes nothing


@pytest.mark.parametrize("env_id", ENV_IDS, ids=short)
def test_every_env_played_by_skyrls_loop_pays_what_direct_play_pays(env_id):
    kwargs = SMALL.get(env_id, {})
    agent = agent_names(env_id)[-1]  # the last seat: partners play before it
    seed = 3
    # the seat's scripted player reads its observation and info: give it the env's own
    env = skyrl_gym.make(
        gymnasium_id(env_id, agent), env_config=DictConfig(kwargs), extras={"seed": seed}
    )
    chat, info = env.init([])
    assert info["agent"] == agent and info["episode_seed"] == seed
    policy = scripted_policy(env_id, agent, seed)
    total, done = 0.0, False
    while not done:
        observation, _, _, _, seat_info = env.view.aec_env.last()  # the seat's turn
        out = env.step(policy(observation, seat_info))
        assert set(out) >= {"observations", "reward", "done", "metadata"}
        assert out["metadata"]["episode_seed"] == seed
        total += out["reward"]
        done = out["done"]
    assert out["observations"] == []  # nothing to read after the end
    assert env.get_metrics()["return"] == pytest.approx(total)
    env.close()
    assert total == pytest.approx(direct_return(env_id, agent, seed, kwargs))


def test_a_dataset_written_for_skyrl_feeds_its_loop(tmp_path):
    """Rows written by write_dataset, read back as SkyRL's PromptDataset reads them (prompt
    and env_class out, the rest as extras): init gives the row's prompt, rewards add up."""
    datasets = pytest.importorskip("datasets")
    env_id, agent, kwargs = "llm_marl_envs/GSM8K-v0", "observer_0", {"data_source": "bundled"}
    path = skyrl.write_dataset(tmp_path / "train.parquet", env_id, range(4), agent, **kwargs)
    rows = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert len(rows) == 4
    for row in rows:
        assert row["env_class"] == "llm_marl_envs/GSM8K-observer_0-v0"
        env = skyrl_gym.make(row["env_class"], env_config=DictConfig(kwargs), extras=dict(row))
        chat, _ = env.init(row["prompt"])
        assert chat == row["prompt"]  # the row's prompt is the one the episode gives
        env.close()
        rewards, _, metrics, out = generator_loop(
            row["env_class"], row, kwargs, scripted_model(env_id, agent, row["seed"])
        )
        assert len(rewards) == 1 and out["done"]
        assert sum(rewards) == pytest.approx(direct_return(env_id, agent, row["seed"], kwargs))
        assert metrics["turns"] == 1


def test_a_seat_beyond_the_registrys_plays_through_the_ids_own_class():
    env_id, env_config = "llm_marl_envs/DonorGame-v1", {"num_agents": 16, "num_rounds": 4}
    (row,) = skyrl.dataset_rows(env_id, [3], "player_13", **env_config)
    assert row["env_class"] == gymnasium_id(env_id) and row["agent"] == "player_13"
    model = scripted_model(env_id, "player_13", 3)
    rewards, _, _, _ = generator_loop(row["env_class"], row, env_config, model)
    assert len(rewards) > 1  # it played its turns, the last paying its return
    assert sum(rewards) == pytest.approx(direct_return(env_id, "player_13", 3, env_config))


def test_a_donor_seat_plays_several_turns_and_its_rewards_add_up():
    env_id, agent, seed = "llm_marl_envs/DonorGame-v1", "player_3", 4
    row = {"seed": seed, "agent": agent}
    rewards, observations, metrics, _ = generator_loop(
        env_id, row, {}, scripted_model(env_id, agent, seed)
    )
    assert len(rewards) > 2 and metrics["turns"] == len(rewards)
    assert sum(rewards) == pytest.approx(direct_return(env_id, agent, seed, {}))
    # later turns bring the next prompt as new messages, the system message not repeated
    assert all(m["role"] != "system" for turn in observations[:-1] for m in turn)
    assert all(turn for turn in observations[:-1])


def test_the_generators_max_turns_cuts_a_long_episode():
    env_id, agent = "llm_marl_envs/DonorGame-v1", "player_3"
    rewards, _, metrics, out = generator_loop(
        env_id, {"seed": 1, "agent": agent}, {}, scripted_model(env_id, agent, 1), max_turns=1
    )
    assert len(rewards) == 1 and metrics["turns"] == 1
    assert out["done"] and out["metadata"]["truncated"]


def test_settings_come_from_the_row_then_the_config():
    config = DictConfig({"data_source": "bundled", "partners": "random", "agent": "pioneer_0"})
    env = skyrl_gym.make(
        "llm_marl_envs/GSM8K-v0",
        env_config=config,
        extras={"agent": "observer_0", "env_kwargs": json.dumps({"max_cycles": 4}), "seed": 2},
    )
    assert env.agent == "observer_0"  # the row's seat, over the config's
    assert env.view.aec_env.unwrapped.max_cycles == 4
    env.close()
    empty = skyrl_gym.make("llm_marl_envs/GSM8K-v0", env_config=config, extras={"agent": None})
    assert empty.agent == "pioneer_0"  # an empty cell of a parquet column: the config's seat
    empty.close()


@pytest.mark.parametrize(
    ("extras", "error", "match"),
    [
        ({"agent": "nobody"}, ValueError, "unknown learner 'nobody'"),
        ({"env_kwargs": "{not json"}, ValueError, "env_kwargs is not JSON"),
        ({"env_kwargs": 3}, TypeError, "expected a mapping"),
    ],
)
def test_bad_settings_are_one_line_errors(extras, error, match):
    with pytest.raises(error, match=match) as caught:
        skyrl_gym.make(
            "llm_marl_envs/GSM8K-v0", env_config={"data_source": "bundled"}, extras=extras
        )
    assert "\n" not in str(caught.value)


def test_a_step_after_the_end_is_refused():
    env = skyrl_gym.make(
        "llm_marl_envs/GSM8K-observer_0-v0", env_config={"data_source": "bundled"}, extras={}
    )
    env.init([])
    assert env.step("#### 1")["done"]
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.step("#### 2")


def test_without_skyrl_gym_the_error_names_the_extra():
    code = (
        "import sys; sys.modules['skyrl_gym'] = None\n"
        "try:\n    import llm_marl_envs.integrations.skyrl\n"
        "except ImportError as e:\n    print(e)\n"
    )
    said = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    ).stdout
    assert "skyrl" in said and "pip install" in said
