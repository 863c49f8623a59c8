"""Every registered environment as a verifiers (0.4) environment, run by verifiers itself.

verifiers loads each id by its taskset id (the shipped top-level modules), builds the
``Env`` from the config it narrows by that id, and plays episodes through its own agents:
each seat a tool-less ``null`` harness whose chat program ``uv`` installs (from the
wheelhouse ``make stacks`` fills, with no network) and runs as a local subprocess, talking to
the model through verifiers' interception server. The model is the package's OpenAI-compatible
stand-in server (a scripted policy reading the first system and the last user message) or a
real ``transformers serve``. Scores are checked against ``llm-marl rollout`` of the same seeds
through the same server, and against direct play of the answers verifiers' agents gave.

These tests need verifiers (openai < 3, mcp 2): ``make test`` runs them in
``.stacks/verifiers``; elsewhere they skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "verifiers.v1",
    reason="verifiers is not installed here; make test runs these tests in .stacks/verifiers",
)
import verifiers.v1 as vf  # noqa: E402

import llm_marl_envs  # noqa: E402
from llm_marl_envs.integrations import verifiers as lv  # noqa: E402
from llm_marl_envs.policies.base import Completion, Policy  # noqa: E402
from llm_marl_envs.policies.server import serve_policy  # noqa: E402
from llm_marl_envs.registry import agent_names  # noqa: E402
from llm_marl_envs.rollout.play import play_episode  # noqa: E402
from small_envs import short  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = Path(
    os.environ.get("LLM_MARL_VERIFIERS_WHEELHOUSE", ROOT / ".stacks/verifiers-wheels")
)
GSM8K, TLDR, DONOR = (
    "llm_marl_envs/GSM8K-v0",
    "llm_marl_envs/TLDRSummarization-v0",
    "llm_marl_envs/DonorGame-v0",
)
SMALL_DONOR = {"num_agents": 4, "num_rounds": 4}


# ---------------------------------------------------------------------- the model
def answer(system: str, user: str) -> str:
    """The scripted model: a function of the first system message and the last user
    message only, so a seat's whole conversation (verifiers) and its fresh prompt
    (``llm-marl rollout``) get the same answer."""
    if "Round " in user:  # the Donor game
        return f"Answer: {(len(user) * 7) % 6}"
    if "Question:" in user:  # GSM8K: right on even-length questions once shown a reference
        numbers = [w.strip(".,?$") for w in user.split() if w.strip(".,?$").isdigit()]
        guess = sum(int(n) for n in numbers) if len(user) % 2 == 0 else 0
        return f"The answer is {guess}."
    words = user.split()
    count = (30 if "detail" in system else 8) + len(user) % 25
    return " ".join(words[-count:]) or "ok"


def conversation_answer(messages) -> str:
    systems = [m["content"] for m in messages if m["role"] == "system"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    return answer(systems[0] if systems else "", users[-1] if users else "")


class ScriptedModel(Policy):
    """What the stand-in server serves: :func:`answer` of each request's messages."""

    def generate(self, prompts):
        return [Completion(conversation_answer(p.messages)) for p in prompts]


@pytest.fixture(scope="module")
def stand_in():
    with serve_policy(ScriptedModel(), model_name="scripted") as server:
        yield server


# ---------------------------------------------------------------------- verifiers' side
@pytest.fixture(scope="module")
def offline_uv(tmp_path_factory):
    """uv on PATH, installing the chat program from the wheelhouse alone (no network)."""
    if not any(WHEELHOUSE.glob("openai-*.whl")):
        pytest.skip(f"no chat-program wheelhouse at {WHEELHOUSE}: make stacks fills it")
    saved = dict(os.environ)
    os.environ.update(lv.offline_environment(WHEELHOUSE))
    os.environ["UV_CACHE_DIR"] = str(tmp_path_factory.mktemp("uv-cache"))
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    os.environ["STAND_IN_API_KEY"] = "none"
    yield dict(os.environ)
    os.environ.clear()
    os.environ.update(saved)


def play(env_id, seeds, server, model="scripted", **env_kwargs):
    """Episodes of ``env_id`` through verifiers' own machinery: its loader, the env's
    serving resources, one slot per task, its ModelContext; returns the episodes."""
    env = lv.load_environment(env_id, **env_kwargs)
    client = vf.EvalClientConfig(base_url=server.url, api_key_var="STAND_IN_API_KEY")
    ctx = vf.ModelContext(model=model, client=client)
    tasks = [t for t in env.taskset if t.data.seed in seeds][: len(seeds)]

    async def run():
        async with env.serving():
            return [await env.run_slot(slot, ctx) for t in tasks for slot in env.slots(t)]

    return asyncio.run(run())


def seat_results(episode):
    """seat -> (return, metrics, its replies) from an episode's traces."""
    results = {}
    for trace in episode.traces:
        replies = [n.message.content for n in trace.nodes if n.sampled]
        results[trace.agent.name] = (trace.reward, dict(trace.metrics), replies)
    return results


def direct_returns(env_id, seed, env_kwargs, act):
    """Each seat's return in direct play; ``act`` plays every seat, or is ``{seat: act}``."""
    env = llm_marl_envs.make(env_id, **env_kwargs)
    acts = act if isinstance(act, dict) else dict.fromkeys(env.possible_agents, act)
    try:
        return play_episode(env, acts, seed=seed)
    finally:
        env.close()


def scripted_act(observation, info):
    messages = info.get("messages") or [{"role": "user", "content": str(observation)}]
    return conversation_answer(messages)


# ---------------------------------------------------------------------- loading
@pytest.mark.parametrize("env_id", llm_marl_envs.list_envs(), ids=short)
def test_each_id_loads_as_verifiers_loads_it(env_id):
    name = lv.taskset_id(env_id)
    taskset = vf.load_taskset(vf.taskset_config_type(name)(id=name))
    assert type(taskset).__name__ == "LLMMarlTaskset"
    assert vf.environment_class(name).__name__ == "LLMMarlEnv"
    config_type = vf.env_config_type(name)
    config = config_type(taskset={"id": name, "num_tasks": 3, "first_seed": 5})
    roles = {k: v for k, v in config if isinstance(v, vf.AgentConfig)}
    assert list(roles) == agent_names(env_id)  # one role per seat
    for role in roles.values():  # chat-only, on this machine; the run's model
        assert role.harness.id == "null" and role.runtime.type == "subprocess"
        assert role.model is None
    env = vf.load_environment(config)
    assert [t.data.seed for t in env.taskset] == [5, 6, 7]
    assert {t.data.env_id for t in env.taskset} == {env_id}


def test_load_environment_takes_the_environment_arguments():
    env = lv.load_environment(GSM8K, data_source="bundled")
    (task,) = list(env.taskset.take(1))
    assert task.data.env_kwargs == {"data_source": "bundled"} and task.data.seed == 0
    assert isinstance(env, vf.Env)


@pytest.mark.parametrize(
    ("env_kwargs", "said"), [({"data_source": "nowhere"}, "data_source"), ({"sizee": 5}, "sizee")]
)
def test_bad_environment_arguments_are_one_line_errors(env_kwargs, said):
    env_id = GSM8K if "data_source" in env_kwargs else "llm_marl_envs/MazeCollab-v1"
    with pytest.raises(ValueError, match=said) as caught:
        lv.load_environment(env_id, **env_kwargs)
    assert "\n" not in str(caught.value) and env_id in str(caught.value)


def test_load_environment_declares_the_seats_its_arguments_build():
    env = lv.load_environment(DONOR, num_agents=4)
    roles = [k for k, v in env.config if isinstance(v, vf.AgentConfig)]
    assert roles == ["player_0", "player_1", "player_2", "player_3"]
    bigger = lv.load_environment(DONOR, num_agents=16, num_rounds=4)
    roles = [k for k, v in bigger.config if isinstance(v, vf.AgentConfig)]
    assert roles[-1] == "player_15" and len(roles) == 16


def test_a_taskset_whose_arguments_build_undeclared_seats_is_refused_in_one_line():
    name = lv.taskset_id(DONOR)  # the shipped module declares the registry's 12 seats
    config = vf.env_config_type(name)(taskset={"id": name, "env_kwargs": {"num_agents": 16}})
    with pytest.raises(ValueError, match="player_12") as caught:
        vf.load_environment(config)
    assert "\n" not in str(caught.value) and "load_environment" in str(caught.value)
    fewer = vf.env_config_type(name)(taskset={"id": name, "env_kwargs": SMALL_DONOR})
    assert isinstance(vf.load_environment(fewer), vf.Env)  # the extra roles never play


def test_a_seat_can_have_its_own_model():
    config_type = vf.env_config_type(lv.taskset_id(GSM8K))
    config = config_type.model_validate(
        {"taskset": {"id": lv.taskset_id(GSM8K)}, "observer_0": {"model": "judge-model"}}
    )
    assert config.observer_0.model == "judge-model" and config.pioneer_0.model is None
    assert config.observer_0.harness.id == "null"  # the pins stay under an override


# ---------------------------------------------------------------------- episodes
@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "env_kwargs"),
    [(GSM8K, {"data_source": "bundled"}), (TLDR, {"data_source": "bundled"}), (DONOR, SMALL_DONOR)],
    ids=["GSM8K", "TLDR", "Donor"],
)
def test_episodes_pay_each_seat_what_direct_play_pays(offline_uv, stand_in, env_id, env_kwargs):
    seeds = [0, 1]
    episodes = play(env_id, seeds, stand_in, **env_kwargs)
    assert [e.ok for e in episodes] == [True, True], [e.errors for e in episodes]
    for seed, episode in zip(seeds, episodes, strict=True):
        results = seat_results(episode)
        expected = direct_returns(env_id, seed, env_kwargs, scripted_act)
        assert {seat: r[0] for seat, r in results.items()} == pytest.approx(expected)
        for metrics, replies in (r[1:] for r in results.values()):
            assert metrics["turns"] == len(replies) >= 1
            assert "format_errors" in metrics
            assert set(episode.traces[0].rewards) == {"return"}  # components are metrics
    if env_id == DONOR:  # several turns per seat in one conversation
        assert max(len(r[2]) for r in seat_results(episodes[0]).values()) >= 2


@pytest.mark.slow
def test_a_seats_later_prompts_join_its_conversation(offline_uv, stand_in):
    (episode,) = play(DONOR, [3], stand_in, **SMALL_DONOR)
    trace = episode.traces[0]
    roles = [n.message.role for n in trace.nodes]
    assert roles[0] == "system" and roles.count("system") == 1
    assert roles.count("assistant") >= 2 and roles.count("user") >= 2


@pytest.mark.slow
def test_vf_eval_scores_equal_llm_marl_rollout(offline_uv, stand_in, tmp_path):
    name = lv.taskset_id(GSM8K)
    command = [
        str(Path(sys.executable).parent / "vf-eval"), name, "--no-push", "--no-rich",
        "-m", "scripted", "--client.base-url", stand_in.url,
        "--client.api-key-var", "STAND_IN_API_KEY", "-n", "3",
        "--env.taskset.env-kwargs", json.dumps({"data_source": "bundled"}),
        "-o", str(tmp_path / "outputs"),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    [traces] = (tmp_path / "outputs").glob("*/traces.jsonl")
    scores = {}
    for line in traces.read_text().splitlines():
        episode = json.loads(line)
        seed = episode["task"]["data"]["seed"]
        for trace in episode["traces"]:
            scores[(seed, trace["agent"]["name"])] = trace["rewards"]["return"]["score"]
    out = tmp_path / "rollout.jsonl"
    rollout = subprocess.run(
        [sys.executable, "-m", "llm_marl_envs.cli", "rollout", GSM8K, "--policy",
         f"openai:{stand_in.url}#scripted", "--env-arg", "data_source=bundled",
         "--seed", "0", "--episodes", "3", "--out", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert rollout.returncode == 0, rollout.stderr[-3000:]
    expected = {}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        for seat, value in record["returns"].items():
            expected[(record["seed"], seat)] = value
    assert scores == pytest.approx(expected)
    assert len(scores) == 6 and len(set(scores.values())) > 1


def test_the_chat_program_wants_what_the_wheelhouse_holds():
    """Every package verifiers' chat program declares has a wheel in the wheelhouse that
    make stacks filled (uv resolves from it alone in the tests)."""
    import re

    wants = lv.chat_program_requirements()
    assert "openai" in wants and any(w.startswith("mcp") for w in wants)
    if not WHEELHOUSE.is_dir():
        pytest.skip(f"no chat-program wheelhouse at {WHEELHOUSE}: make stacks fills it")
    wheels = {p.name.split("-")[0].lower() for p in WHEELHOUSE.glob("*.whl")}
    for want in wants:
        name = re.split(r"[<>=!~\[ ]", want, maxsplit=1)[0].replace("-", "_").lower()
        assert name in wheels, f"{want} has no wheel in {WHEELHOUSE}"
