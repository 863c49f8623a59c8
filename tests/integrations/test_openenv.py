"""Registered environments served by OpenEnv's own server, played by OpenEnv's own clients.

Each server runs on 127.0.0.1 with a free port, in a background thread of this process; the
clients are :class:`~llm_marl_envs.integrations.openenv.LLMMarlEnv` (an OpenEnv ``EnvClient``
subclass, through OpenEnv's ``.sync()`` wrapper) and OpenEnv's schema-free
``GenericEnvClient``. Whole episodes played with the scripted players must match the same
episodes played locally: the same turn order, prompts and rewards.
"""

from __future__ import annotations

import itertools
import json
import urllib.error
import warnings
import urllib.request

import pytest

pytest.importorskip("openenv")

from websockets.exceptions import ConnectionClosed

import llm_marl_envs
from llm_marl_envs.policies.scripted import scripted_policy

# The integration is imported when the first test here runs, not when pytest collects this
# module: OpenEnv's server imports gradio (about 4 s), which each pytest-xdist worker would
# pay at collection; the module's tests share one worker (their servers start once).
pytestmark = pytest.mark.xdist_group("openenv")
LLMMarlAction = LLMMarlEnv = LLMMarlEnvironment = serve = None


@pytest.fixture(scope="module", autouse=True)
def _integration():
    global LLMMarlAction, LLMMarlEnv, LLMMarlEnvironment, serve
    from llm_marl_envs.integrations import openenv

    LLMMarlAction, LLMMarlEnv = openenv.LLMMarlAction, openenv.LLMMarlEnv
    LLMMarlEnvironment, serve = openenv.LLMMarlEnvironment, openenv.serve


GSM8K = ("llm_marl_envs/GSM8K-v0", {"data_source": "bundled"})
MAZE = ("llm_marl_envs/MazeCollab-v0", {"size": 5})
GAMES = [GSM8K, MAZE]
IDS = ["GSM8K", "MazeCollab"]


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def servers():
    running = {
        env_id: serve(env_id, port=0, block=False, max_concurrent_envs=8, **kwargs)
        for env_id, kwargs in GAMES
    }
    yield running
    for server in running.values():
        server.close()


def players(env_id: str, seed: int = 0) -> dict:
    agents = llm_marl_envs.make(env_id).possible_agents
    return {agent: scripted_policy(env_id, agent, seed) for agent in agents}


def local_episode(env_id: str, kwargs: dict, seed: int, options: dict | None = None):
    """The episode played in process: [(agent, prompt)] per live turn, and each agent's return."""
    env = llm_marl_envs.make(env_id, **kwargs)
    env.reset(seed=seed, options=options)
    policy = players(env_id, seed)
    turns, totals = [], dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        turns.append((agent, str(observation)))
        env.step(policy[agent](observation, info))
    return turns, totals


def remote_episode(env, env_id: str, seed: int, options: dict | None = None):
    """The same, over an OpenEnv session; checks every observation's turn-taking on the way."""
    policy = players(env_id, seed)
    result = env.reset(seed=seed, options=options)
    assert result.reward is None and not result.done and result.observation.acted is None
    turns, step_totals = [], dict.fromkeys(policy, 0.0)
    while not result.done:
        observation = result.observation
        agent = observation.current_agent
        assert agent in observation.agents and observation.text
        assert observation.messages and observation.messages[-1]["content"]
        turns.append((agent, observation.text))
        result = env.step(policy[agent](observation.text, observation.info))
        assert result.observation.acted == agent  # the agent whose turn it was played
        assert result.reward == result.observation.rewards[agent]
        for name, reward in result.observation.rewards.items():
            step_totals[name] += reward
    final = result.observation
    assert final.current_agent is None and final.agents == [] and final.text == ""
    assert all(final.terminations[a] or final.truncations[a] for a in policy)
    assert final.returns == pytest.approx(step_totals)
    return turns, final.returns


@pytest.mark.parametrize("game", GAMES, ids=IDS)
def test_a_whole_episode_over_openenv_matches_the_local_one(servers, game):
    env_id, kwargs = game
    with LLMMarlEnv(base_url=servers[env_id].url).sync() as env:
        for seed in (0, 1):
            turns, returns = remote_episode(env, env_id, seed)
            local_turns, local_returns = local_episode(env_id, kwargs, seed)
            assert turns == local_turns  # same turn order, same prompts
            assert returns == pytest.approx(local_returns)
            state = env.state()
            assert state.env_id == env_id and state.step_count == len(turns)
            assert state.current_agent is None and state.returns == pytest.approx(returns)
    if env_id == GSM8K[0]:  # the scripted pair solves the bundled rows: 1 + 1 each, collective
        assert returns == {"pioneer_0": 2.0, "observer_0": 2.0}
    assert all(a != b for (a, _), (b, _) in itertools.pairwise(turns))  # both games alternate


def test_turn_taking_refuses_the_wrong_agent_and_changes_nothing(servers):
    env_id = GSM8K[0]
    with LLMMarlEnv(base_url=servers[env_id].url).sync() as env:
        first = env.reset(seed=3).observation
        assert first.current_agent == "pioneer_0" and first.agents == ["pioneer_0", "observer_0"]
        with pytest.raises(RuntimeError, match="pioneer_0's turn, not observer_0's"):
            env.step(LLMMarlAction(text="The answer is 1.", agent="observer_0"))
        assert env.state().step_count == 0
        result = env.step(LLMMarlAction(text="The answer is 1.", agent="pioneer_0"))
        assert result.observation.current_agent == "observer_0" and not result.done
        assert "The answer is 1." in result.observation.text  # the observer sees the pioneer
        result = env.step("The answer is 2.")  # a plain string is the current agent's text
        assert result.done and result.observation.acted == "observer_0"
        with pytest.raises(RuntimeError, match="call reset"):
            env.step("too late")


def test_reset_options_pick_the_row_and_unknown_arguments_fail(servers):
    env_id, kwargs = GSM8K
    with LLMMarlEnv(base_url=servers[env_id].url).sync() as env:
        remote = env.reset(seed=0, options={"row_index": 2}).observation
        local = llm_marl_envs.make(env_id, **kwargs)
        local.reset(seed=0, options={"row_index": 2})
        assert remote.text == str(local.observe("pioneer_0"))
        assert remote.info["row_id"] == local.infos["pioneer_0"]["row_id"]
        with pytest.raises(RuntimeError, match="unknown reset argument"):
            env.reset(row_index=2)


def test_concurrent_sessions_each_get_their_own_environment(servers):
    env_id, kwargs = MAZE
    seeds = [0, 1, 2]
    clients = [LLMMarlEnv(base_url=servers[env_id].url).sync() for _ in seeds]
    try:
        for client in clients:
            client.connect()
        policy = {seed: players(env_id, seed) for seed in seeds}
        results = {
            seed: client.reset(seed=seed) for seed, client in zip(seeds, clients, strict=True)
        }
        turns = {seed: [] for seed in seeds}
        while not all(result.done for result in results.values()):
            for seed, client in zip(
                seeds, clients, strict=True
            ):  # interleaved: one move per session
                result = results[seed]
                if result.done:
                    continue
                observation = result.observation
                turns[seed].append((observation.current_agent, observation.text))
                action = policy[seed][observation.current_agent](observation.text, observation.info)
                results[seed] = client.step(action)
        for seed in seeds:
            local_turns, local_returns = local_episode(env_id, kwargs, seed)
            assert turns[seed] == local_turns
            assert results[seed].observation.returns == pytest.approx(local_returns)
        assert len({tuple(turns[seed]) for seed in seeds}) == len(seeds)  # three different mazes
    finally:
        for client in clients:
            client.close()


def test_openenvs_generic_client_plays_the_served_environment(servers):
    from openenv.core import GenericEnvClient

    env_id, kwargs = GSM8K
    policy = players(env_id)
    with GenericEnvClient(base_url=servers[env_id].url).sync() as env:
        result = env.reset(seed=5)
        while not result.done:
            observation = result.observation  # a plain dict
            agent = observation["current_agent"]
            result = env.step({"text": policy[agent](observation["text"], observation["info"])})
    assert result.observation["returns"] == pytest.approx(local_episode(env_id, kwargs, 5)[1])


def test_capacity_is_one_environment_per_session():
    env_id, kwargs = GSM8K
    server = serve(env_id, port=0, block=False, max_concurrent_envs=1, **kwargs)
    try:
        with LLMMarlEnv(base_url=server.url).sync() as first:
            first.reset(seed=0)
            second = LLMMarlEnv(base_url=server.url).sync()
            try:
                # The server sends CAPACITY_REACHED and closes: the client sees the error, or
                # the closed socket if the close wins the race with its first message.
                with pytest.raises((RuntimeError, ConnectionClosed)) as refused:
                    second.reset(seed=0)
                assert "capacity" in str(refused.value).lower() or isinstance(
                    refused.value, ConnectionClosed
                )
            finally:
                second.close()
            assert not first.reset(seed=1).done  # the first session is unharmed
    finally:
        server.close()


def test_http_endpoints_describe_the_environment(servers):
    url = servers[MAZE[0]].url
    with urllib.request.urlopen(url + "/health", timeout=10) as answer:
        assert json.load(answer)["status"] == "healthy"
    with urllib.request.urlopen(url + "/schema", timeout=10) as answer:
        schema = json.load(answer)
    assert {"text", "agent"} <= set(schema["action"]["properties"])
    assert {"current_agent", "rewards", "terminations"} <= set(schema["observation"]["properties"])
    with urllib.request.urlopen(url + "/metadata", timeout=10) as answer:
        assert json.load(answer)["name"] == MAZE[0]


def test_unknown_ids_and_arguments_fail_before_serving():
    with pytest.raises(llm_marl_envs.UnknownEnvironmentError):
        serve("llm_marl_envs/NoSuchGame-v0", port=0, block=False)
    with pytest.raises(TypeError):
        serve(GSM8K[0], port=0, block=False, no_such_argument=1)
    environment = LLMMarlEnvironment(GSM8K[0], **GSM8K[1])
    with pytest.raises(RuntimeError, match="reset"):
        environment.step("x")
    assert environment.state.current_agent is None
    environment.close()


def test_stateless_http_step_is_a_client_error_naming_the_websocket_route(servers):
    """Issue 30: POST /step answered a bare 500 (and logged a traceback)."""
    url = servers[MAZE[0]].url
    body = json.dumps({"action": {"text": "MOVE: up"}}).encode()
    request = urllib.request.Request(
        url + "/step", data=body, headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=10)
    with answered.value as error:
        assert error.code == 409
        detail = json.load(error)["detail"]
    host = url.removeprefix("http://")
    assert f"ws://{host}/ws" in detail and "WebSocket" in detail and "reset" not in detail
    # the session route still plays: /step's refusal is only for the stateless endpoint
    with LLMMarlEnv(base_url=url).sync() as env:
        assert not env.reset(seed=0).done


def test_two_owners_of_the_openenv_package_are_reported_with_the_fix():
    """Issue 30: openenv-core (<= 0.3.0) and openenv (its new name, 0.3.0 and later) both
    install ``openenv/``; with both installed, whichever came last owns a mix of files."""
    from importlib import metadata

    from llm_marl_envs.integrations.openenv import OPENENV_FIX, _check_openenv_owner

    def installed(*names):
        versions = {"openenv": "0.10.0", "openenv-core": "0.3.0"}

        def version(name):
            if name not in names:
                raise metadata.PackageNotFoundError(name)
            return versions[name]

        return version

    with pytest.warns(RuntimeWarning, match="openenv==0.10.0 and openenv-core==0.3.0") as caught:
        _check_openenv_owner(installed("openenv", "openenv-core"))
    assert OPENENV_FIX in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _check_openenv_owner(installed("openenv")) == ["openenv==0.10.0"]
        assert _check_openenv_owner(installed("openenv-core")) == ["openenv-core==0.3.0"]


def test_the_integrations_extra_requires_upstreams_current_distribution_name():
    import configparser
    from pathlib import Path

    config = configparser.ConfigParser()
    config.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    extra = config["options.extras_require"]["integrations"].split()
    assert "openenv>=0.3" in extra and not any(r.startswith("openenv-core") for r in extra)
