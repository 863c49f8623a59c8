"""completion_logprobs agrees with the policy's own sampling log-probabilities."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from llm_marl_envs.models.scoring import completion_logprobs  # noqa: E402
from llm_marl_envs.policies import Prompt  # noqa: E402
from llm_marl_envs.policies.hf import HFPolicy  # noqa: E402


def test_matches_generation_logprobs_and_has_gradients():
    policy = HFPolicy.from_spec("tiny", max_new_tokens=10, seed=0, dtype="float64")
    prompts = [Prompt("a", text, [{"role": "user", "content": text}], {}) for text in ("hi", "a longer prompt here", "7")]
    completions = policy.generate(prompts)
    model = policy.model
    logprobs, mask, hidden, logits = completion_logprobs(
        model, [c.prompt_ids for c in completions], [c.completion_ids for c in completions],
        pad_id=policy.tokenizer.pad_token_id, return_hidden=True, return_logits=True,
    )
    for row, completion in enumerate(completions):
        n = len(completion.completion_ids)
        assert mask[row].sum().item() == n
        assert logprobs[row, :n].tolist() == pytest.approx(completion.logprobs, abs=1e-6)
    assert hidden.shape[:2] == logprobs.shape and logits.shape[:2] == logprobs.shape
    logprobs.sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_empty_completions_and_bad_lengths():
    policy = HFPolicy.from_spec("tiny", seed=0)
    logprobs, mask = completion_logprobs(policy.model, [[1, 2], [3]], [[], [4]], pad_id=0)
    assert logprobs.shape == (2, 1) and mask.tolist() == [[0.0], [1.0]]
    with pytest.raises(ValueError, match="prompts"):
        completion_logprobs(policy.model, [[1]], [], pad_id=0)
