"""Log-probabilities of completions under a causal LM, with gradients: what trainers need.

A rollout's :class:`~llm_marl_envs.policies.Completion` carries ``prompt_ids`` and
``completion_ids``; :func:`completion_logprobs` runs the model once over the right-padded
concatenations and returns, for every completion token, ``log pi(token | prompt, earlier
tokens)``, with a mask for the padding. With ``return_hidden=True`` it also returns the last
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
    device = next(model.parameters()).device
    rows = [list(p) + list(c) for p, c in zip(prompt_ids, completion_ids, strict=True)]
    width = max(len(r) for r in rows)
    steps = max((len(c) for c in completion_ids), default=0)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):  # right padding: positions start at 0 for every row
        input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        attention[i, : len(row)] = 1
    output = model(
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        output_hidden_states=return_hidden,
    )
    logits = output.logits
    batch = len(rows)
    gather_logits = logits.new_zeros((batch, steps, logits.shape[-1]))
    targets = torch.zeros((batch, steps), dtype=torch.long, device=device)
    mask = torch.zeros((batch, steps), dtype=torch.float32, device=device)
    hidden = output.hidden_states[-1] if return_hidden else None
    gather_hidden = hidden.new_zeros((batch, steps, hidden.shape[-1])) if return_hidden else None
    for i, (prompt, completion) in enumerate(zip(prompt_ids, completion_ids, strict=True)):
        n, start = len(completion), len(prompt) - 1  # logits at t predict token t + 1
        if n == 0:
            continue
        gather_logits[i, :n] = logits[i, start : start + n]
        targets[i, :n] = torch.tensor(list(completion), dtype=torch.long, device=device)
        mask[i, :n] = 1.0
        if return_hidden:
            gather_hidden[i, :n] = hidden[i, start : start + n]
    logprobs = torch.log_softmax(gather_logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logprobs = logprobs * mask
    result: tuple[Any, ...] = (logprobs, mask)
    if return_hidden:
        result += (gather_hidden,)
    if return_logits:
        result += (gather_logits,)
    return result
