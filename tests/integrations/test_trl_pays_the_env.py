"""Every TRL route pays exactly what the env pays, for every registered id and learner.

For each id (``llm_marl_envs.list_envs()``: a new id is covered at once), each learner and
each reward mode, the test plays episodes itself: partners scripted, the learner's first
answer from its scripted player or random words, its later turns scripted. What the env paid
the learner from that answer on is the reference. Then the TRL routes score the same answers:

* ``env_reward`` (replay in the env), for every id;
* the column reward of ``llm_marl_envs.rewards`` on ``env_dataset``'s rows, where the env
  family has one. Where the columns cannot hold the reward (the pioneer's collective reward
  needs the observer's answer, which comes later) it refuses, naming ``env_reward``;
* ``tool_environment``'s ``get_reward`` (the answer played as one tool call, the rest by the
  scripted continuation);
* ``env_rollout_func``'s ``episode_return`` (read by ``episode_reward``): the same answers
  played through the rollout engine, the learner's return summed as the rollout function does.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

pytest.importorskip("trl")

import llm_marl_envs  # noqa: E402
from llm_marl_envs.integrations.trl import (  # noqa: E402
    coop_coding_reward,
    env_dataset,
    env_reward,
    tool_environment,
)
from llm_marl_envs.integrations.trl.rollout_func import learner_episode_return  # noqa: E402
from llm_marl_envs.policies.scripted import scripted_policy  # noqa: E402
from llm_marl_envs.registry import agent_names  # noqa: E402
from llm_marl_envs.rewards import gsm8k_reward, joint_reward, sentiment_reward  # noqa: E402
from llm_marl_envs.rollout import EpisodePlan, rollout  # noqa: E402

#: The column reward of each environment; None: multi-turn games, paid through env_reward.
COLUMN_REWARDS = {
    "GSM8K": gsm8k_reward,
    "IMDBSentiment": sentiment_reward,
    "TLDRSummarization": joint_reward,
    "ArxivExpansion": joint_reward,
    "CoopCoding": coop_coding_reward,
    "MazeCollab": None,
    "DonorGame": None,
}
SEEDS = (0, 1, 2)
_WORDS = "the answer is 7 12 great movie however because so def aux return up left donate".split()


def _family(env_id: str) -> str:
    return env_id.split("/")[-1].rpartition("-v")[0]


def _cases() -> list:
    cases = []
    for env_id in llm_marl_envs.list_envs():
        defaults = llm_marl_envs.spec(env_id).kwargs
        kwargs = {"data_source": "bundled"} if "data_source" in defaults else {}
        modes = [{}, {"reward_mode": "individual"}] if "reward_mode" in defaults else [{}]
        for agent in agent_names(env_id):
            for mode in modes:
                label = f"{env_id.split('/')[-1]}-{agent}" + ("-individual" if mode else "")
                cases.append(pytest.param(env_id, agent, {**kwargs, **mode}, id=label))
    return cases


def _scripted(env_id: str, agent: str):
    return scripted_policy(env_id, agent, 0)


def _random(env_id: str, agent: str):
    def play(observation: str, info: dict) -> str:
        rng = np.random.default_rng(zlib.crc32(observation.encode()))
        return " ".join(rng.choice(_WORDS, size=int(rng.integers(1, 40))))

    return play


def _env_pays(env_id: str, agent: str, kwargs: dict, seed: int, answer) -> tuple[str, float]:
    """The learner's first answer in the episode of ``seed`` and what the env paid it from
    that answer to the end (partners and the learner's later turns scripted, seed 0)."""
    env = llm_marl_envs.make(env_id, **kwargs)
    players = {a: scripted_policy(env_id, a, 0) for a in env.possible_agents}
    env.reset(seed=seed)
    first, paid = None, 0.0
    for current in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        if current == agent and first is not None:
            paid += float(reward)
        if terminated or truncated:
            env.step(None)
        elif current == agent and first is None:
            first = answer(str(observation), info)
            env.step(first)
        else:
            env.step(players[current](str(observation), info))
    assert first is not None, f"{agent} never acted"
    return first, paid


def _tool_pays(tool: type, seed: int, answer: str) -> float:
    """tool_environment: the answer as the learner's one tool call, then get_reward()."""
    environment = tool()
    environment.reset(seed=seed)
    environment._act(answer)
    return environment.get_reward()


def _rollout_pays(env_id: str, agent: str, kwargs: dict, seed: int, answer: str) -> float:
    """The rollout engine (env_rollout_func's path): the answer as the learner's first turn,
    its later turns and the partners scripted; the return as env_rollout_func sums it."""
    later, turns = scripted_policy(env_id, agent, 0), []

    def learner(observation: str, info: dict) -> str:
        turns.append(observation)
        return answer if len(turns) == 1 else later(observation, info)

    players = {a: scripted_policy(env_id, a, 0) for a in agent_names(env_id)} | {agent: learner}
    plan = EpisodePlan(seeds=[seed])
    result = rollout(env_id, players, plan=plan, batch_size=1, env_kwargs=kwargs, progress=False)
    return learner_episode_return(result.episodes[0], agent)


@pytest.mark.parametrize(("env_id", "agent", "kwargs"), _cases())
def test_every_trl_route_pays_what_the_env_pays(env_id, agent, kwargs):
    rows = env_dataset(env_id, agent, len(SEEDS), env_kwargs=kwargs)
    columns = {name: rows[name] for name in rows.column_names if name != "prompt"}
    replay = env_reward(env_id, agent, env_kwargs=kwargs)
    tool = tool_environment(env_id, agent, env_kwargs=kwargs, continuation="scripted")
    column_reward = COLUMN_REWARDS[_family(env_id)]
    refused = columns.get("reward_mode", [None])[0] == "collective" and (
        "partner_reward" not in columns
    )
    for player in (_scripted, _random):
        played = [_env_pays(env_id, agent, kwargs, s, player(env_id, agent)) for s in SEEDS]
        answers, paid = [a for a, _ in played], [p for _, p in played]
        assert replay(completions=answers, prompts=rows["prompt"], **columns) == paid
        tools = [_tool_pays(tool, s, a) for s, a in zip(SEEDS, answers, strict=True)]
        assert tools == pytest.approx(paid, abs=1e-12)  # summed in another order
        rolled = [
            _rollout_pays(env_id, agent, kwargs, s, a) for s, a in zip(SEEDS, answers, strict=True)
        ]
        assert rolled == pytest.approx(paid, abs=1e-12)
        if column_reward is None:
            continue
        chat = [[{"role": "assistant", "content": a}] for a in answers]
        if refused:
            with pytest.raises(ValueError, match="env_reward"):
                column_reward(completions=chat, prompts=rows["prompt"], **columns)
        else:
            assert column_reward(completions=chat, prompts=rows["prompt"], **columns) == paid


def test_the_v1_writing_rows_carry_the_authors_implementation():
    """The defect: on TLDRSummarization-v1 rows joint_reward scored with 'paper'."""
    rows = env_dataset(
        "llm_marl_envs/TLDRSummarization-v1",
        "summarizer_0",
        1,
        env_kwargs={"data_source": "bundled"},
    )
    assert rows[0]["reward_impl"] == "authors"
