"""completion_logprobs agrees with the policy's own sampling log-probabilities."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from llm_marl_envs.models.scoring import completion_logprobs  # noqa: E402
from llm_marl_envs.policies import Prompt  # noqa: E402
from llm_marl_envs.policies.hf import HFPolicy  # noqa: E402


@pytest.mark.slow
def test_matches_generation_logprobs_and_has_gradients():
    policy = HFPolicy.from_spec("tiny", max_new_tokens=10, dtype="float64")
    prompts = [
        Prompt("a", text, [{"role": "user", "content": text}], {})
        for text in ("hi", "a longer prompt here", "7")
    ]
    completions = policy.generate(prompts)
    model = policy.model
    logprobs, mask, hidden, logits = completion_logprobs(
        model,
        [c.prompt_ids for c in completions],
        [c.completion_ids for c in completions],
        pad_id=policy.tokenizer.pad_token_id,
        return_hidden=True,
        return_logits=True,
    )
    for row, completion in enumerate(completions):
        n = len(completion.completion_ids)
        assert mask[row].sum().item() == n
        assert logprobs[row, :n].tolist() == pytest.approx(completion.logprobs, abs=1e-6)
    assert hidden.shape[:2] == logprobs.shape and logits.shape[:2] == logprobs.shape
    logprobs.sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_empty_completions_and_bad_lengths():
    policy = HFPolicy.from_spec("tiny")
    logprobs, mask = completion_logprobs(policy.model, [[1, 2], [3]], [[], [4]], pad_id=0)
    assert logprobs.shape == (2, 1) and mask.tolist() == [[0.0], [1.0]]
    with pytest.raises(ValueError, match="prompts"):
        completion_logprobs(policy.model, [[1]], [], pad_id=0)
    with pytest.raises(ValueError, match="at least one token"):
        completion_logprobs(policy.model, [[]], [[4]], pad_id=0)


def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return LlamaForCausalLM(config).double().eval()


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.slow
def test_batched_scoring_equals_each_row_alone(arch):
    """Padding (prompts left, completions right) and the completion-only LM head change nothing:
    every row's log-probs, hidden states and logits equal an unpadded full-sequence pass."""
    model = (
        HFPolicy.from_spec("tiny", dtype="float64").model.eval()
        if arch == "gpt2"
        else _tiny_llama()
    )
    prompts = [[5, 6, 7, 8, 9, 10, 11], [12], [13, 14, 15]]
    completions = [[20, 21], [22, 23, 24, 25], []]
    logprobs, mask, hidden, logits = completion_logprobs(
        model, prompts, completions, pad_id=0, return_hidden=True, return_logits=True
    )
    assert logprobs.shape == mask.shape == (3, 4) and mask.sum(1).tolist() == [2.0, 4.0, 0.0]
    for row, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
        n = len(completion)
        with torch.no_grad():
            out = model(torch.tensor([prompt + completion]), output_hidden_states=True)
        full = out.logits[0, len(prompt) - 1 : len(prompt) - 1 + n]
        expected = torch.log_softmax(full, -1)[
            torch.arange(n), torch.tensor(completion, dtype=torch.long)
        ]
        assert logprobs[row, :n].tolist() == pytest.approx(
            expected.tolist(), rel=1e-6, abs=1e-6
        )  # float32 softmax
        assert torch.allclose(logits[row, :n], full, atol=1e-9)
        assert torch.allclose(
            hidden[row, :n],
            out.hidden_states[-1][0, len(prompt) - 1 : len(prompt) - 1 + n],
            atol=1e-9,
        )
        # padding positions are zero, never stray values
        assert (
            logprobs[row, n:].abs().sum() == 0
            and logits[row, n:].abs().sum() == 0
            and hidden[row, n:].abs().sum() == 0
        )
