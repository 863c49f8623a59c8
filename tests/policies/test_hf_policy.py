"""HFPolicy on the tiny model: batching, logprobs, seeding, truncation, LoRA, an episode."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import llm_marl_envs
from llm_marl_envs.models import tiny_model
from llm_marl_envs.policies import Completion, GenerationConfig, Policy, Prompt
from llm_marl_envs.policies.hf import HFPolicy, fitting_batch_size, sequence_bytes


def sampled(**fields) -> GenerationConfig:
    """Sampling settings (``do_sample=True``) with ``fields``."""
    return GenerationConfig(do_sample=True, **fields)


SENTENCE = "You are a gnome in a maze and the exit is two cells to the left of the door"


def _prompts(n: int = 8) -> list[Prompt]:
    prompts = []
    for i in range(n):
        question = " ".join(SENTENCE.split()[: 1 + 2 * i])
        messages = [
            {"role": "system", "content": "Answer with one move."},
            {"role": "user", "content": question},
        ]
        prompts.append(Prompt(f"gnome_{i % 2}", question, messages, {}))
    return prompts


@pytest.fixture(scope="module")
def tiny():
    return tiny_model(seed=0)


def _same(a: list[Completion], b: list[Completion]) -> bool:
    return [(c.text, c.completion_ids) for c in a] == [(c.text, c.completion_ids) for c in b]


def test_is_a_policy_and_answers_in_order(tiny):
    policy = HFPolicy(*tiny, max_new_tokens=8)
    assert isinstance(policy, Policy) and policy.use_chat_template
    completions = policy.generate(_prompts())
    assert len(completions) == 8
    assert all(isinstance(c.text, str) and c.text == c.text.strip() for c in completions)
    assert policy.generate([]) == []


@pytest.mark.slow
def test_batched_equals_one_by_one(tiny):
    policy = HFPolicy(*tiny, max_new_tokens=24)
    prompts = _prompts()
    batched = policy.generate(prompts)
    alone = [policy.generate([p])[0] for p in prompts]
    assert _same(batched, alone)
    assert [c.prompt_ids for c in batched] == [c.prompt_ids for c in alone]
    assert len({len(c.prompt_ids) for c in batched}) == 8  # really different lengths


@pytest.mark.slow
def test_micro_batches_match_one_batch(tiny):
    prompts = _prompts()
    whole = HFPolicy(*tiny, max_new_tokens=16).generate(prompts)
    micro = HFPolicy(*tiny, max_new_tokens=16, batch_size=3).generate(prompts)
    assert _same(whole, micro)


@pytest.mark.slow
def test_min_new_tokens_masks_eos_until_then():
    model, tokenizer = tiny_model(seed=2)
    policy = HFPolicy(model, tokenizer, max_new_tokens=8)
    boost = torch.zeros(model.config.vocab_size)
    boost[policy.eos_token_ids] = 50.0  # a model that wants to stop at once
    hook = model.lm_head.register_forward_hook(lambda module, inputs, logits: logits + boost)
    try:
        prompts = _prompts(4)
        assert [len(c.completion_ids) for c in policy.generate(prompts)] == [1, 1, 1, 1]
        at_least = HFPolicy(model, tokenizer, max_new_tokens=8, min_new_tokens=5).generate(prompts)
        # five tokens that are not eos, then the eos it was held back from
        assert all(len(c.completion_ids) == 6 for c in at_least)
        assert all(c.completion_ids[-1] in policy.eos_token_ids for c in at_least)
        assert all(not set(c.completion_ids[:5]) & set(policy.eos_token_ids) for c in at_least)
        fixed = HFPolicy(model, tokenizer, max_new_tokens=8, min_new_tokens=8).generate(prompts)
        assert all(len(c.completion_ids) == len(c.logprobs) == 8 for c in fixed)
        assert all(math.isfinite(x) for c in fixed for x in c.logprobs)
    finally:
        hook.remove()
    with pytest.raises(ValueError, match="min_new_tokens"):
        HFPolicy(model, tokenizer, max_new_tokens=8, min_new_tokens=9)


def test_prompt_ids_are_the_rendered_chat(tiny):
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer, max_new_tokens=4)
    prompt = _prompts()[2]
    [completion] = policy.generate([prompt])
    rendered = tokenizer.apply_chat_template(
        prompt.messages, tokenize=False, add_generation_prompt=True
    )
    assert completion.prompt_ids == tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert policy.render(prompt) == rendered


# generate() computes scores in float32, so float64 models agree to float32 rounding.
@pytest.mark.parametrize(("dtype", "atol"), [(torch.float64, 1e-5), (torch.float32, 1e-3)])
def test_greedy_logprobs_match_a_forward_pass(dtype, atol):
    model, tokenizer = tiny_model(seed=1, dtype=dtype)
    completions = HFPolicy(model, tokenizer, max_new_tokens=12).generate(_prompts())
    for completion in completions:
        assert len(completion.logprobs) == len(completion.completion_ids) > 0
        assert all(math.isfinite(x) and x <= 0 for x in completion.logprobs)
        ids = torch.tensor([completion.prompt_ids + completion.completion_ids])
        with torch.no_grad():
            log_probs = torch.log_softmax(model(ids).logits[0].double(), dim=-1)
        start = len(completion.prompt_ids) - 1
        positions = torch.arange(start, start + len(completion.completion_ids))
        expected = log_probs[positions, torch.tensor(completion.completion_ids)]
        # Greedy picks the most likely token at every step.
        assert torch.equal(log_probs[positions].argmax(-1), torch.tensor(completion.completion_ids))
        assert torch.allclose(
            torch.tensor(completion.logprobs, dtype=torch.float64), expected, atol=atol
        )


@pytest.mark.slow
def test_sampling_is_seeded_and_leaves_global_rng_alone(tiny):
    prompts = _prompts()
    before = torch.random.get_rng_state()
    first = HFPolicy(*tiny, max_new_tokens=16, generation=sampled(seed=7)).generate(prompts)
    assert torch.equal(before, torch.random.get_rng_state())
    again = HFPolicy(*tiny, max_new_tokens=16, generation=sampled(seed=7)).generate(prompts)
    other = HFPolicy(*tiny, max_new_tokens=16, generation=sampled(seed=8)).generate(prompts)
    greedy = HFPolicy(*tiny, max_new_tokens=16).generate(prompts)
    assert _same(first, again)
    assert not _same(first, other)
    assert not _same(first, greedy)
    for completion in first:
        assert len(completion.logprobs) == len(completion.completion_ids)
        assert all(math.isfinite(x) for x in completion.logprobs)


def test_successive_calls_draw_fresh_samples_and_reseed_replays(tiny):
    prompts = _prompts(4)
    policy = HFPolicy(*tiny, max_new_tokens=16, generation=sampled(temperature=1.5, seed=3))
    first, second = policy.generate(prompts), policy.generate(prompts)
    assert not _same(first, second)
    policy.reseed(3)
    assert _same(policy.generate(prompts), first)


def test_top_p_sampling_logprobs_are_of_the_truncated_distribution(tiny):
    policy = HFPolicy(*tiny, max_new_tokens=16, generation=sampled(top_p=0.5))
    for completion in policy.generate(_prompts()):
        assert all(math.isfinite(x) and x <= 1e-6 for x in completion.logprobs)


def test_max_new_tokens_is_respected(tiny):
    for limit in (1, 5):
        for completion in HFPolicy(*tiny, max_new_tokens=limit).generate(_prompts()):
            assert 1 <= len(completion.completion_ids) <= limit
            assert len(completion.logprobs) == len(completion.completion_ids)


def test_completion_stops_at_eos_and_keeps_it(tiny):
    prompts = _prompts()
    free = HFPolicy(*tiny, max_new_tokens=20).generate(prompts)
    stop_token = free[0].completion_ids[2]  # pretend this token ends a turn
    policy = HFPolicy(*tiny, max_new_tokens=20)
    policy.eos_token_ids = [*policy.eos_token_ids, stop_token]
    stopped = policy.generate(prompts)
    for before, after in zip(free, stopped, strict=True):
        ids = before.completion_ids
        end = ids.index(stop_token) + 1 if stop_token in ids else len(ids)
        assert after.completion_ids == ids[:end]
        assert len(after.logprobs) == end
    assert stopped[0].completion_ids[-1] == stop_token and len(stopped[0].completion_ids) <= 3


def test_empty_messages_fall_back_to_the_observation(tiny):
    model, tokenizer = tiny
    prompt = Prompt("gnome_0", "Where is the exit?", [], {})
    [chat] = HFPolicy(model, tokenizer, max_new_tokens=4).generate([prompt])
    assert "Where is the exit?" in tokenizer.decode(chat.prompt_ids)
    [plain] = HFPolicy(model, tokenizer, max_new_tokens=4, use_chat_template=False).generate(
        [prompt]
    )
    assert plain.prompt_ids == tokenizer("Where is the exit?")["input_ids"]


def test_system_prompt_is_used_when_messages_have_none(tiny):
    policy = HFPolicy(*tiny, system_prompt="You are gnome_0.")
    with_system = _prompts()[1]
    without = Prompt("a", "go", [{"role": "user", "content": "go"}], {})
    assert "You are gnome_0." not in policy.render(with_system)
    assert policy.render(without).startswith("<|im_start|>system\nYou are gnome_0.<|im_end|>")
    plain = HFPolicy(*tiny, system_prompt="Rules.", use_chat_template=False)
    assert plain.render(without) == "Rules.\n\ngo"


def test_long_prompts_are_cut_from_the_left_with_one_warning(tiny):
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer, max_new_tokens=24, use_chat_template=False)
    long_text = " ".join(["move left then right"] * (model.config.n_positions // 3)) + " EXIT"
    full = tokenizer(long_text)["input_ids"]
    limit = model.config.n_positions - 24
    assert len(full) > limit
    with pytest.warns(UserWarning, match="cut from the left"):
        [completion] = policy.generate([Prompt("a", long_text, [], {})])
    assert completion.prompt_ids == full[-limit:]
    assert len(completion.completion_ids) <= 24
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy.generate([Prompt("a", long_text, [], {})])  # warned once only


def test_restores_training_mode(tiny):
    model, tokenizer = tiny_model()
    model.train()
    HFPolicy(model, tokenizer, max_new_tokens=2).generate(_prompts(2))
    assert model.training


def test_without_logprobs(tiny):
    [completion] = HFPolicy(*tiny, max_new_tokens=3, return_logprobs=False).generate(_prompts(1))
    assert completion.logprobs is None and completion.completion_ids


def test_from_spec_tiny():
    policy = HFPolicy.from_spec("tiny", max_new_tokens=4, dtype="float64")
    assert policy.name == "hf:tiny"
    assert next(policy.model.parameters()).dtype == torch.float64
    assert len(policy.generate(_prompts(2))) == 2


def test_invalid_arguments(tiny):
    with pytest.raises(ValueError):
        HFPolicy(*tiny, max_new_tokens=0)
    with pytest.raises(ValueError):
        HFPolicy(*tiny, batch_size=0)
    with pytest.raises(ValueError):
        HFPolicy(*tiny, generation=GenerationConfig(top_p=0.0))
    with pytest.raises(ValueError, match="no room"):
        HFPolicy(*tiny, max_new_tokens=5000).generate(_prompts(1))


def test_the_old_generation_keywords_warn_and_still_take_effect(tiny):
    prompts = _prompts(4)
    with pytest.warns(
        DeprecationWarning, match=r"generation=GenerationConfig\(do_sample=\.\.\., seed"
    ):
        old = HFPolicy(*tiny, max_new_tokens=12, do_sample=True, seed=5)
    new = HFPolicy(*tiny, max_new_tokens=12, generation=sampled(seed=5))
    assert (old.do_sample, old.temperature, old.top_p) == (new.do_sample, new.temperature, 1.0)
    assert _same(old.generate(prompts), new.generate(prompts))
    with pytest.warns(DeprecationWarning, match="temperature"):
        spec = HFPolicy.from_spec("tiny", max_new_tokens=4, do_sample=True, temperature=0.3)
    assert spec.temperature == 0.3 and spec.do_sample


def test_an_unknown_keyword_is_a_type_error_naming_it(tiny):
    with pytest.raises(TypeError, match="tempreature"):
        HFPolicy(*tiny, tempreature=0.5)


# --- LoRA -------------------------------------------------------------------------------


def _trainable(model) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing:FutureWarning")
@pytest.mark.slow
def test_add_lora_trains_only_the_adapter_and_still_generates():
    pytest.importorskip("peft")
    model, tokenizer = tiny_model()
    policy = HFPolicy(model, tokenizer, max_new_tokens=8)
    base = policy.generate(_prompts())
    total = _trainable(model)
    peft_model = policy.add_lora(r=4, alpha=8)
    assert policy.model is peft_model
    assert 0 < _trainable(peft_model) < total
    assert _same(policy.generate(_prompts()), base)  # a fresh adapter starts as a no-op
    with pytest.raises(ValueError, match="already"):
        policy.add_lora()


@pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing:FutureWarning")
@pytest.mark.slow
def test_saved_adapter_reloads_to_the_same_outputs(tmp_path):
    pytest.importorskip("peft")
    model, tokenizer = tiny_model()
    policy = HFPolicy(model, tokenizer, max_new_tokens=12)
    base = policy.generate(_prompts())
    policy.add_lora(r=4, alpha=8)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:  # stand-in for training: make the adapter matter
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
    tuned = policy.generate(_prompts())
    assert not _same(tuned, base)
    policy.model.save_pretrained(tmp_path)

    fresh_model, fresh_tokenizer = tiny_model()
    reloaded = HFPolicy(fresh_model, fresh_tokenizer, max_new_tokens=12, lora_adapter=tmp_path)
    assert _same(reloaded.generate(_prompts()), tuned)
    assert _trainable(reloaded.model) == 0


# --- in an environment ------------------------------------------------------------------


@pytest.mark.slow
def test_plays_a_gsm8k_episode(tiny):
    policy = HFPolicy(*tiny, max_new_tokens=16)
    env = llm_marl_envs.make("llm_marl_envs/GSM8K-v0", data_source="bundled")
    env.reset(seed=0)
    actions = {}
    for agent in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        prompt = Prompt(agent, str(observation), info["messages"], info)
        [completion] = policy.generate([prompt])
        assert isinstance(completion.text, str)
        actions[agent] = completion.text
        env.step(completion.text)
    assert set(actions) == {"pioneer_0", "observer_0"}
    env.close()


@pytest.mark.slow
def test_tokenizer_padding_side_is_left_alone():
    model, tokenizer = tiny_model()
    tokenizer.padding_side = "right"
    policy = HFPolicy(model, tokenizer, max_new_tokens=12)
    prompts = _prompts()
    assert _same(policy.generate(prompts), [policy.generate([p])[0] for p in prompts])
    assert tokenizer.padding_side == "right"


# SmolLM2-135M's shape: 30 layers, 9 heads of 64 (3 key/value heads), a vocabulary of 49152.
SMOLLM2 = SimpleNamespace(
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    hidden_size=576,
    vocab_size=49152,
)


def test_a_sequence_holds_its_kv_cache_and_its_scores():
    # 2 x 30 layers x 3 kv heads x 64 dims x (255 + 64) tokens x 2 bytes (bf16) ...
    cache = 2 * 30 * 3 * 64 * 319 * 2
    assert sequence_bytes(SMOLLM2, tokens=319, new_tokens=0, dtype_bytes=2) == cache == 7_349_760
    # ... and 64 steps of float32 scores over the vocabulary for the log-probabilities
    with_scores = sequence_bytes(SMOLLM2, tokens=319, new_tokens=64, dtype_bytes=2)
    assert with_scores == cache + 64 * 49152 * 4 == 19_932_672
    gpt2 = SimpleNamespace(num_hidden_layers=2, num_attention_heads=4, hidden_size=32, vocab_size=9)
    assert (
        sequence_bytes(gpt2, tokens=10, new_tokens=1, dtype_bytes=4) == 2 * 2 * 4 * 8 * 10 * 4 + 36
    )


def test_the_batch_that_fits_is_half_the_free_memory_capped_at_256():
    per_sequence = 19_932_672  # SmolLM2, 255 + 64 tokens, bf16, with scores
    assert fitting_batch_size(2 * 2**30, per_sequence) == 53  # 1 GiB // 19.9 MB
    assert fitting_batch_size(80 * 2**30, per_sequence) == 256  # 2154 fit: the cap
    assert fitting_batch_size(10 * 2**20, per_sequence) == 1  # never 0
    assert fitting_batch_size(2 * 2**30, per_sequence, safety=0.25, cap=512) == 26


def test_a_call_on_the_cpu_is_one_micro_batch_and_on_a_gpu_what_fits(tiny, monkeypatch):
    model, tokenizer = tiny
    policy = HFPolicy(model, tokenizer, max_new_tokens=4)
    prompts = [[1, 2, 3]] * 300
    assert policy._fitting_batch_size(prompts) == 300  # the CPU: all at once, as before
    monkeypatch.setattr(policy, "_device", lambda: torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (3_000_000, 8_000_000))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device: 1_000_000)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device: 0)
    per_sequence = sequence_bytes(model.config, tokens=3 + 4, new_tokens=4, dtype_bytes=4)
    assert policy._fitting_batch_size(prompts) == 2_000_000 // per_sequence  # free + cached


def test_compile_needs_a_cuda_device(tiny):
    with pytest.raises(ValueError, match="compile .* needs a CUDA device; the model is on cpu"):
        HFPolicy(*tiny, generation=GenerationConfig(compile=True))
