"""The ``llm_marl_envs`` agent loop in verl (0.9.1), run as verl runs its loops on the CPU.

verl's ``AgentLoopWorker`` is built from verl's own trainer config (``ppo_trainer``, composed
by Hydra) naming the shipped YAML file, over the tiny model's saved tokenizer; its server
manager is :class:`ScriptedServer`, which answers from the decoded prompt as a served model
would. Datasets are written by ``write_dataset`` and read by verl's ``RLHFDataset`` and
``collate_fn`` into the ``DataProto`` the trainer hands the worker. The rewards are checked
against direct play (:func:`llm_marl_envs.rollout.play_episode`) with the same answers.

These tests need verl, which needs transformers < 5.11: ``make test`` runs them in the stack
environment ``.stacks/verl`` (built by ``make stacks``); elsewhere they skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip(
    "verl.experimental.agent_loop",
    reason="verl is not installed here; make test runs these tests in .stacks/verl",
)
import numpy as np  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopWorker,
    _agent_loop_registry,
)
from verl.protocol import DataProto  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import llm_marl_envs  # noqa: E402
from llm_marl_envs.integrations import verl as lv  # noqa: E402
from llm_marl_envs.models.tiny import tiny_model  # noqa: E402
from llm_marl_envs.policies.specs import PolicyFactory  # noqa: E402
from llm_marl_envs.registry import agent_names  # noqa: E402
from llm_marl_envs.rollout.play import play_episode  # noqa: E402
from small_envs import SMALL, short  # noqa: E402

GSM8K, TLDR, DONOR = (
    "llm_marl_envs/GSM8K-v0",
    "llm_marl_envs/TLDRSummarization-v0",
    "llm_marl_envs/DonorGame-v0",
)
USER = "<|im_start|>user\n"
TOKENIZER = tiny_model()[1]  # the chat template the scripted model reads prompts through


# ---------------------------------------------------------------------- scripted model
def last_user(text: str) -> str:
    """The content of the last user message of a ChatML text (the tiny tokenizer's)."""
    return text.rsplit(USER, 1)[-1].split("<|im_end|>", 1)[0]


def first_system(text: str) -> str:
    """The content of the first system message of a ChatML text ('' without one)."""
    head, system, rest = text.partition("<|im_start|>system\n")
    return rest.split("<|im_end|>", 1)[0] if system else ""


class Answers:
    """What the scripted model says to a prompt (a ChatML text), from its first system
    message and its last user message only: the same answer comes whether the prompt is a
    fresh chat or a seat's whole conversation."""

    def __init__(self, gold: dict[str, str]) -> None:
        self.gold = gold  # GSM8K question -> answer

    def __call__(self, text: str) -> str:
        system, user = first_system(text), last_user(text)
        for question, answer in self.gold.items():
            if question in user:  # GSM8K: the pioneer wrong; the observer (shown a
                # reference) right on questions of even length
                right = "Reference:" in user and len(question) % 2 == 0
                return f"The answer is {answer if right else 0}."
        rounds = re.findall(r"Round (\d+)\.", user)
        if rounds:  # the Donor game
            return f"Answer: {(int(rounds[-1]) * 3 + len(user)) % 7}"
        # any other text: some of the prompt's words, more when asked for detail
        words = user.split()
        count = (30 if "detail" in system else 8) + len(user) % 25
        return " ".join(words[-count:]) or "ok"


class ScriptedServer:
    """verl's server manager, answering token ids with :class:`Answers` (logprobs -0.5)."""

    def __init__(self, tokenizer, answers: Answers) -> None:
        self.tokenizer, self.answers = tokenizer, answers
        self.calls: list[dict] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        await asyncio.sleep(0)  # a real server answers later: let other rows run meanwhile
        text = self.tokenizer.decode(list(prompt_ids))
        answer = self.tokenizer.encode(self.answers(text), add_special_tokens=False)
        answer = answer[: sampling_params.get("max_tokens", len(answer))]
        ids = answer + [self.tokenizer.eos_token_id]
        ids = ids[: sampling_params.get("max_tokens", len(ids))]
        self.calls.append(
            {"request": request_id, "prompt": list(prompt_ids), "output": ids, **sampling_params}
        )
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids))


def direct_return(env_id, env_kwargs, seed, seat, answers, partners="self"):
    """The seat's return in direct play: every self-play seat answers its own prompt as the
    scripted model does; scripted partners play as the loop's."""
    env = llm_marl_envs.make(env_id, **env_kwargs)
    factory = PolicyFactory(env_id, seed=seed)

    budget = llm_marl_envs.registry.token_budget(env_id)  # what the loop asks the server for

    def model(observation, info):
        messages = info.get("messages") or [{"role": "user", "content": str(observation)}]
        answer = answers(TOKENIZER.apply_chat_template(messages, tokenize=False))
        return TOKENIZER.decode(TOKENIZER.encode(answer, add_special_tokens=False)[:budget])

    policies = {}
    for agent in env.possible_agents:
        if agent != seat and partners == "scripted":
            policies[agent] = factory("scripted", agent).fn
        else:
            policies[agent] = model
    try:
        return play_episode(env, policies, seed=seed)[seat]
    finally:
        env.close()


# ---------------------------------------------------------------------- verl's side
@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """The tiny model and tokenizer saved as a model folder (what verl loads by path)."""
    folder = tmp_path_factory.mktemp("tiny")
    model, tokenizer = tiny_model()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, tokenizer


def verl_config(model_dir, response_length=512, prompt_length=2048, log_probs=True):
    """verl's trainer config (its ppo_trainer, composed by Hydra) for our agent loop."""
    import verl

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(
            config_name="ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model_dir}",
                "actor_rollout_ref.rollout.name=vllm",
                "actor_rollout_ref.rollout.mode=async",
                f"actor_rollout_ref.rollout.prompt_length={prompt_length}",
                f"actor_rollout_ref.rollout.response_length={response_length}",
                f"actor_rollout_ref.rollout.calculate_log_probs={log_probs}",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={lv.AGENT_LOOP_CONFIG}",
            ],
        )


@pytest.fixture(scope="module")
def gold():
    """GSM8K question -> answer of the bundled rows the seeds below draw."""
    env = llm_marl_envs.make(GSM8K, data_source="bundled")
    table = {}
    for seed in range(6):
        env.reset(seed=seed)
        table[env.question] = env.gold
    env.close()
    return table


def rollout(tokenizer_dir, path, answers, n=1, **config):
    """verl's way from a parquet file to the agent loops' batch: RLHFDataset, collate_fn,
    DataProto (repeated n times, as GRPO does), AgentLoopWorker.generate_sequences."""
    folder, tokenizer = tokenizer_dir
    cfg = verl_config(folder, **config)
    server = ScriptedServer(tokenizer, answers)
    worker = AgentLoopWorker(cfg, llm_client=server)
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=tokenizer, config=cfg.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    batch = batch.repeat(n, interleave=True)
    return asyncio.run(worker.generate_sequences(batch)), server, tokenizer


def rows_of(out):
    """Per row: its reward, prompt and response ids (unpadded), mask, and extra fields."""
    rows = []
    for i in range(len(out)):
        prompt = out.batch["prompts"][i]
        attention = out.batch["attention_mask"][i]
        width = prompt.shape[0]
        prompt_ids = prompt[attention[:width].bool()].tolist()
        length = int(attention[width:].sum())
        rows.append(
            {
                "reward": float(out.batch["rm_scores"][i].sum()),
                "prompt": prompt_ids,
                "response": out.batch["responses"][i][:length].tolist(),
                "mask": out.batch["response_mask"][i][:length].tolist(),
                "logprobs": out.batch["rollout_log_probs"][i][:length].tolist()
                if "rollout_log_probs" in out.batch.keys()
                else None,
                **{k: out.non_tensor_batch[k][i] for k in EXTRA},
            }
        )
    return rows


EXTRA = (
    "agent_id",
    "role",
    "env_id",
    "episode_seed",
    "group_id",
    "turn_indices",
    "turn_spans",
    "turn_scores",
    "truncated",
    "env_return",
)


def check_mask(row, server):
    """The mask is 1 exactly on the tokens the server generated for the trained seat: each
    span is one call's output, asked with the seat's conversation up to that span."""
    full = row["prompt"] + row["response"]
    marked = [0] * len(row["response"])
    for start, end in row["turn_spans"]:
        before = full[: len(row["prompt"]) + start]
        calls = [c for c in server.calls if c["prompt"] == before]
        assert calls, "no server call was asked with the seat's conversation"
        assert row["response"][start:end] in [c["output"] for c in calls]
        marked[start:end] = [1] * (end - start)
    assert row["mask"] == marked
    if row["logprobs"] is None:
        return
    assert [lp for lp, m in zip(row["logprobs"], marked, strict=True) if m] == [-0.5] * sum(marked)
    assert all(lp == 0.0 for lp, m in zip(row["logprobs"], marked, strict=True) if not m)


# ---------------------------------------------------------------------- the tests
@pytest.mark.slow
@pytest.mark.parametrize("partners", ["self", "scripted"])
def test_gsm8k_pays_what_direct_play_pays(tokenizer_dir, tmp_path, gold, partners):
    path = lv.write_dataset(
        tmp_path / "gsm8k.parquet",
        GSM8K,
        range(4),
        agents="all",
        partners=partners,
        data_source="bundled",
    )
    answers = Answers(gold)
    out, server, tokenizer = rollout(tokenizer_dir, path, answers)
    rows = rows_of(out)
    assert [r["agent_id"] for r in rows] == ["pioneer_0"] * 4 + ["observer_0"] * 4
    assert [r["role"] for r in rows] == ["pioneer"] * 4 + ["observer"] * 4
    for row in rows:
        expected = direct_return(
            GSM8K,
            {"data_source": "bundled"},
            row["episode_seed"],
            row["agent_id"],
            answers,
            partners,
        )
        assert row["reward"] == pytest.approx(expected)
        assert row["env_return"] == pytest.approx(expected)
        assert row["turn_indices"] == ([0] if row["agent_id"] == "pioneer_0" else [1])
        check_mask(row, server)
    assert len({r["reward"] for r in rows}) > 1  # the scripted model is right and wrong
    # the rows of one seed share a group; the seats' rows differ in agent only
    groups = {(r["group_id"], r["episode_seed"]) for r in rows}
    assert len(groups) == 4
    # scripted partners never reach the server; self-play partners do, with their own prompt
    calls_per_row = 1 if partners == "scripted" else 2
    assert len(server.calls) == calls_per_row * len(rows)


@pytest.mark.slow
def test_the_observer_prompt_holds_the_self_play_pioneer_answer(tokenizer_dir, tmp_path, gold):
    path = lv.write_dataset(
        tmp_path / "obs.parquet", GSM8K, [2], agents="observer_0", data_source="bundled"
    )
    out, server, tokenizer = rollout(tokenizer_dir, path, Answers(gold))
    (row,) = rows_of(out)
    pioneer_call, observer_call = server.calls
    pioneer_text = tokenizer.decode(pioneer_call["output"], skip_special_tokens=True)
    assert pioneer_text in tokenizer.decode(row["prompt"])  # the partner's answer, as context
    assert row["mask"] == [1] * len(row["response"])  # one turn: all of it is the seat's
    assert observer_call["max_tokens"] == llm_marl_envs.registry.token_budget(GSM8K)


@pytest.mark.slow
def test_tldr_simultaneous_seats(tokenizer_dir, tmp_path, gold):
    path = lv.write_dataset(
        tmp_path / "tldr.parquet", TLDR, range(3), agents="all", data_source="bundled"
    )
    answers = Answers(gold)
    out, server, _ = rollout(tokenizer_dir, path, answers)
    rows = rows_of(out)
    assert sorted({r["agent_id"] for r in rows}) == sorted(agent_names(TLDR))
    rewards = []
    for row in rows:
        expected = direct_return(
            TLDR, {"data_source": "bundled"}, row["episode_seed"], row["agent_id"], answers
        )
        assert row["reward"] == pytest.approx(expected)
        check_mask(row, server)
        rewards.append(row["reward"])
    assert len(set(rewards)) > 1


@pytest.mark.slow
def test_donor_seat_over_several_turns_with_masked_context(tokenizer_dir, tmp_path, gold):
    seats = ["player_0", "player_5"]
    path = lv.write_dataset(
        tmp_path / "donor.parquet", DONOR, [0, 1], agents=seats, partners="scripted"
    )
    answers = Answers(gold)
    out, server, tokenizer = rollout(tokenizer_dir, path, answers, n=2, response_length=4096)
    rows = rows_of(out)
    assert len(rows) == 8  # 2 seats x 2 seeds, each twice (rollout.n)
    for row in rows:
        assert len(row["turn_spans"]) >= 2 and not row["truncated"]
        expected = direct_return(
            DONOR, {}, row["episode_seed"], row["agent_id"], answers, "scripted"
        )
        assert row["reward"] == pytest.approx(expected)
        assert sum(row["turn_scores"]) == pytest.approx(row["reward"])
        check_mask(row, server)
        # between two of its turns: its next prompt (masked), without the system message
        (_, end), (start, _) = row["turn_spans"][:2]
        between = tokenizer.decode(row["response"][end:start])
        assert re.search(r"Round \d+\. You are the donor", between)
        assert "<|im_start|>system" not in between
        assert "<|im_start|>system" in tokenizer.decode(row["prompt"])
        assert row["turn_indices"] == sorted(row["turn_indices"])
    assert len({r["reward"] for r in rows}) > 1


@pytest.mark.slow
def test_a_spent_response_budget_cuts_the_episode(tokenizer_dir, tmp_path, gold):
    path = lv.write_dataset(
        tmp_path / "donor.parquet", DONOR, [0], agents="player_0", partners="scripted"
    )
    out, server, _ = rollout(tokenizer_dir, path, Answers(gold), response_length=200)
    (row,) = rows_of(out)
    assert row["truncated"]
    assert len(row["response"]) <= 200
    assert all(call["max_tokens"] <= 200 for call in server.calls)
    check_mask(row, server)
    assert row["reward"] == pytest.approx(sum(row["turn_scores"]))  # what it received so far
    full, _, _ = rollout(tokenizer_dir, path, Answers(gold), response_length=4096)
    (whole,) = rows_of(full)
    assert not whole["truncated"] and len(whole["turn_spans"]) > len(row["turn_spans"])


@pytest.mark.slow
@pytest.mark.parametrize("env_id", llm_marl_envs.list_envs(), ids=short)
def test_every_environment_every_seat(tokenizer_dir, tmp_path, gold, env_id):
    kwargs = SMALL.get(env_id, {"size": 5} if "Maze" in env_id else {})
    path = lv.write_dataset(tmp_path / "rows.parquet", env_id, [7], agents="all", **kwargs)
    answers = Answers(gold)
    out, server, _ = rollout(tokenizer_dir, path, answers, response_length=65536)
    for row in rows_of(out):
        assert not row["truncated"]
        expected = direct_return(env_id, kwargs, 7, row["agent_id"], answers)
        assert row["reward"] == pytest.approx(expected), row["agent_id"]
        check_mask(row, server)


def test_dataset_rows_are_what_verl_reads(tokenizer_dir, tmp_path):
    folder, tokenizer = tokenizer_dir
    path = lv.write_dataset(
        tmp_path / "rows.parquet",
        GSM8K,
        [3, 4],
        agents="all",
        partners={"observer_0": "random"},
        data_source="bundled",
    )
    dataset = RLHFDataset(
        data_files=[str(path)], tokenizer=tokenizer, config=verl_config(folder).data
    )
    items = [dataset[i] for i in range(len(dataset))]
    assert [item["agent_name"] for item in items] == ["llm_marl_envs"] * 4
    assert [item["index"] for item in items] == [0, 1, 2, 3]
    settings = [lv.EpisodeSettings.from_row(item) for item in items]
    assert [(s.agent, s.seed) for s in settings] == [
        ("pioneer_0", 3),
        ("pioneer_0", 4),
        ("observer_0", 3),
        ("observer_0", 4),
    ]
    assert settings[0].partners == {"observer_0": "random"}
    assert settings[2].partners == {"pioneer_0": "self"}
    assert settings[0].env_kwargs == {"data_source": "bundled"}
    assert settings[0].group == settings[2].group != settings[1].group
    env = llm_marl_envs.make(GSM8K, data_source="bundled")
    env.reset(seed=3)
    first = env.infos["pioneer_0"]["messages"]
    assert [dict(m) for m in items[0]["raw_prompt"]] == [dict(m) for m in first]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"extra_info": {"seed": 1}}, "no env_id"),
        ({"extra_info": {"env_id": GSM8K}}, "no seed"),
        ({"extra_info": {"env_id": "llm_marl_envs/GSM9K-v0", "seed": 1}}, "GSM8K"),
        ({"extra_info": {"env_id": GSM8K, "seed": 1, "agent": "judge"}}, "has no seat 'judge'"),
        ({"extra_info": {"env_id": GSM8K, "seed": -1}}, "non-negative int"),
        ({"extra_info": {"env_id": GSM8K, "seed": 1, "env_kwargs": "{oops"}}, "not JSON"),
        ({"extra_info": {"env_id": GSM8K, "seed": 1, "env_kwargs": "[1]"}}, "must be a mapping"),
        (
            {"extra_info": {"env_id": GSM8K, "seed": 1, "partners": {"player_3": "scripted"}}},
            "not seats here",
        ),
        ({"extra_info": {"env_id": GSM8K, "seed": 1, "max_tokens_per_turn": 0}}, "positive"),
        ({"extra_info": "seed=1"}, "extra_info must be a mapping"),
    ],
)
def test_bad_rows_are_one_line_errors(row, message):
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        lv.EpisodeSettings.from_row(row)
    assert "\n" not in str(caught.value)


def test_bad_dataset_arguments_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match="has no seat 'judge'"):
        lv.dataset_rows(GSM8K, [0], agents="judge", data_source="bundled")
    with pytest.raises(ValueError, match="not seats here"):
        lv.dataset_rows(GSM8K, [0], partners={"observer": "random"}, data_source="bundled")
    with pytest.raises(ValueError, match="non-negative int"):
        lv.dataset_rows(GSM8K, ["x"], data_source="bundled")


def test_a_top_level_column_wins_over_extra_info():
    row = {"extra_info": {"env_id": GSM8K, "seed": 1, "agent": "pioneer_0"}, "agent": "observer_0"}
    assert lv.EpisodeSettings.from_row(row).agent == "observer_0"


def test_verl_workers_find_the_loop_through_the_shipped_file(tmp_path):
    """A Ray worker that never imported this package: the YAML file alone gets it the loop."""
    script = f"""
import json
from omegaconf import OmegaConf
import hydra
from verl.experimental.agent_loop import agent_loop
assert "llm_marl_envs" not in agent_loop._agent_loop_registry
for entry in OmegaConf.load({str(lv.AGENT_LOOP_CONFIG)!r}):
    agent_loop._agent_loop_registry[entry.name] = entry
cls = hydra.utils.get_class(agent_loop._agent_loop_registry["llm_marl_envs"]["_target_"])
print(json.dumps([cls.__module__, cls.__name__, issubclass(cls, agent_loop.AgentLoopBase)]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [
        "llm_marl_envs.integrations.verl",
        "LLMMarlAgentLoop",
        True,
    ]
    assert lv.AGENT_LOOP_CONFIG.is_file()


def test_importing_the_module_registers_the_loop_in_process():
    """In a process that only imports the module (no worker has read the YAML file yet)."""
    script = """
from verl.experimental.agent_loop import agent_loop
assert "llm_marl_envs" not in agent_loop._agent_loop_registry
import llm_marl_envs.integrations.verl
print(agent_loop._agent_loop_registry["llm_marl_envs"]["_target_"])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    target = "llm_marl_envs.integrations.verl.LLMMarlAgentLoop"
    assert done.stdout.split() == [target]
    assert _agent_loop_registry[lv.AGENT_NAME]["_target_"] == target


def test_sampling_settings_reach_the_server(tokenizer_dir, tmp_path, gold):
    path = lv.write_dataset(tmp_path / "g.parquet", GSM8K, [0], data_source="bundled")
    out, server, _ = rollout(tokenizer_dir, path, Answers(gold), log_probs=False)
    assert [call["temperature"] for call in server.calls] == [1.0, 1.0]
    assert all(call["logprobs"] is False for call in server.calls)
    assert "rollout_log_probs" not in out.batch.keys()  # not asked for: none given
    assert np.all(out.batch["response_mask"].sum(-1).numpy() > 0)


class JunkServer(ScriptedServer):
    """A policy gone wrong: random token ids (special tokens included), never an end of turn,
    as many as it may; or, every third call, nothing at all."""

    def __init__(self, tokenizer, seed) -> None:
        super().__init__(tokenizer, None)
        self.rng = np.random.default_rng(seed)

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        count = int(sampling_params["max_tokens"]) if len(self.calls) % 3 else 0
        ids = self.rng.integers(0, len(self.tokenizer), size=count).tolist()
        self.calls.append({"request": request_id, "prompt": list(prompt_ids), "output": ids})
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids))


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [GSM8K, DONOR, "llm_marl_envs/CoopCoding-v4"], ids=short)
def test_junk_tokens_get_the_envs_penalties_not_a_crash(tokenizer_dir, tmp_path, env_id):
    folder, tokenizer = tokenizer_dir
    kwargs = SMALL.get(env_id, {})
    path = lv.write_dataset(tmp_path / "junk.parquet", env_id, [0, 1], agents="all", **kwargs)
    cfg = verl_config(folder, response_length=4096)
    server = JunkServer(tokenizer, seed=0)
    worker = AgentLoopWorker(cfg, llm_client=server)
    dataset = RLHFDataset(data_files=[str(path)], tokenizer=tokenizer, config=cfg.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    out = asyncio.run(worker.generate_sequences(batch))
    rows = rows_of(out)
    for row in rows:
        assert np.isfinite(row["reward"])
        assert row["reward"] == pytest.approx(sum(row["turn_scores"]))
        check_mask(row, server)
    errors = out.non_tensor_batch["format_errors"]
    assert sum(int(e) for e in errors) > 0  # empty answers are the envs' format errors


def test_the_seats_are_those_of_the_game_its_arguments_build():
    """Issue 51, item 7: a 4-player Donor game has player_0..player_3, whatever the
    registry's default of 12 says; agents="all" lists those, and a row naming player_4 of that
    game is one clear error."""
    donor = "llm_marl_envs/DonorGame-v1"
    rows = lv.dataset_rows(donor, [0], agents="all", num_agents=4, num_rounds=2)
    assert [row["extra_info"]["agent"] for row in rows] == [f"player_{i}" for i in range(4)]
    assert len(agent_names(donor)) == 12  # the registry's default game
    row = {"extra_info": {**rows[0]["extra_info"], "agent": "player_4"}}
    with pytest.raises(ValueError, match="has no seat 'player_4'"):
        lv.EpisodeSettings.from_row(row)
    assert lv.EpisodeSettings.from_row(rows[3]).agent == "player_3"
