"""Log-probabilities of completions under a causal LM, with gradients: what trainers need.

A rollout's :class:`~llm_marl_envs.policies.Completion` carries ``prompt_ids`` and
``completion_ids``; :func:`completion_logprobs` runs the model once over the
concatenations (prompts left-padded as in generation, completions right-padded) and returns,
for every completion token, ``log pi(token | prompt, earlier tokens)``, with a mask for the
padding. The LM head runs only at the positions that predict completion tokens, so long prompts
cost no vocabulary-sized logits. With ``return_hidden=True`` it also returns the last
hidden state at each completion position (for a value head).

>>> # lp, mask = completion_logprobs(model, [[1, 2, 3]], [[4, 5]], pad_id=0)   # lp: (1, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_marl_envs.core.optional import require

__all__ = ["completion_logprobs"]


def completion_logprobs(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    completion_ids: Sequence[Sequence[int]],
    *,
    pad_id: int,
    return_hidden: bool = False,
    return_logits: bool = False,
) -> tuple[Any, ...]:
    """Per-token log-probabilities of each completion (differentiable).

    Args:
        model: A transformers causal LM (a peft model works too).
        prompt_ids: Token ids of each prompt (unpadded).
        completion_ids: Token ids of each completion (unpadded; may be empty).
        pad_id: Id used for padding (masked out of attention).
        return_hidden: Also return the last layer's hidden states at the positions that
            predict each completion token, shape ``(batch, T, hidden)``.
        return_logits: Also return the logits at those positions, ``(batch, T, vocab)``
            (for full-vocabulary KL).

    Returns:
        ``(logprobs, mask)``, both ``(batch, T)`` where ``T`` is the longest completion; then
        the hidden states and/or logits if asked for. ``mask`` is 1.0 on real tokens.
    """
    torch = require("torch", "train", "computing log-probabilities")
    if len(prompt_ids) != len(completion_ids):
        raise ValueError(f"{len(prompt_ids)} prompts but {len(completion_ids)} completions")
    if any(len(p) == 0 for p in prompt_ids):
        raise ValueError(
            "every prompt needs at least one token (it predicts the first completion token)"
        )
    device = next(model.parameters()).device
    batch = len(prompt_ids)
    start = max((len(p) for p in prompt_ids), default=0)  # every completion begins at this column
    steps = max((len(c) for c in completion_ids), default=0)
    input_ids = torch.full((batch, start + steps), pad_id, dtype=torch.long)
    attention = torch.zeros((batch, start + steps), dtype=torch.long)
    targets = torch.zeros((batch, steps), dtype=torch.long)
    mask = torch.zeros((batch, steps), dtype=torch.float32)
    for i, (prompt, completion) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        # [pad ... prompt | completion ... pad]: prompts left-padded as in generation, so the
        # logits that predict completion tokens sit in the same columns for every row.
        row = torch.tensor(list(prompt) + list(completion), dtype=torch.long)
        first = start - len(prompt)
        input_ids[i, first : first + len(row)] = row
        attention[i, first : first + len(row)] = 1
        targets[i, : len(completion)] = row[len(prompt) :]
        mask[i, : len(completion)] = 1.0
    positions = (attention.cumsum(1) - 1).clamp(min=0)  # as generate() numbers left-padded rows
    # Only the columns start - 1 ... start + steps - 2 predict completion tokens: the LM head runs
    # on those alone (logits over the prompt would cost (prompt length) x vocab floats per row).
    output = model(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        position_ids=positions.to(device),
        output_hidden_states=return_hidden,
        logits_to_keep=steps + 1,
    )
    targets, mask = targets.to(device), mask.to(device)
    gather_logits = output.logits[:, :steps] * mask[..., None].to(output.logits.dtype)
    gather_hidden = None
    if return_hidden:
        gather_hidden = output.hidden_states[-1][:, start - 1 : start - 1 + steps]
        gather_hidden = gather_hidden * mask[..., None].to(gather_hidden.dtype)
    logprobs = (
        torch.log_softmax(gather_logits.float(), dim=-1)
        .gather(-1, targets.unsqueeze(-1))
        .squeeze(-1)
    )
    logprobs = logprobs * mask
    result: tuple[Any, ...] = (logprobs, mask)
    if return_hidden:
        result += (gather_hidden,)
    if return_logits:
        result += (gather_logits,)
    return result
