"""Reading an OpenAI-compatible answer: the action text, log-probabilities and token ids.

Held apart from ``openai_compat`` because it is pure logic on decoded JSON (no network, no
threads): what makes an answer unusable (a :class:`~llm_marl_envs.policies.base.PolicyError`
saying what is missing), where chat and text completions keep their log-probabilities, and
where vLLM puts prompt and completion token ids.
"""

from __future__ import annotations

import json
from typing import Any

from llm_marl_envs.policies.base import Completion, PolicyError

_ERROR_BODY_CHARS = 300  # how much of an error response goes into a PolicyError


def _parse_completion(payload: Any, url: str) -> Completion:
    """A Completion from a chat or text completion answer; PolicyError if it has no usable text."""
    text, problem = _answer_text(payload)
    if problem is not None:
        snippet = json.dumps(payload)[:_ERROR_BODY_CHARS]
        raise PolicyError(f"POST {url}: unusable answer: {problem}: {snippet}")
    choice = payload["choices"][0]
    return Completion(text=text, logprobs=_parse_logprobs(choice.get("logprobs")))


def _token_ids(payload: dict[str, Any]) -> tuple[list[int] | None, list[int] | None]:
    """``(prompt ids, completion ids)`` from an answer, as vLLM gives them (None if absent).

    Prompt ids: ``prompt_token_ids`` of the answer (chat) or of the choice (completions).
    Completion ids: the choice's ``token_ids``, else its logprob tokens if they all read
    ``token_id:<id>`` (``return_tokens_as_token_ids``).
    """
    choice = payload["choices"][0]
    prompt = _int_list(choice.get("prompt_token_ids"))
    if prompt is None:
        prompt = _int_list(payload.get("prompt_token_ids"))
    completion = _int_list(choice.get("token_ids"))
    if completion is None and isinstance(choice.get("logprobs"), dict):
        logprobs = choice["logprobs"]
        if isinstance(logprobs.get("content"), list):  # chat
            tokens = [e.get("token") if isinstance(e, dict) else None for e in logprobs["content"]]
        else:  # completions
            tokens = logprobs.get("tokens")
        prefix = "token_id:"
        if isinstance(tokens, list) and all(
            isinstance(t, str) and t.startswith(prefix) and t[len(prefix) :].isdigit()
            for t in tokens
        ):
            completion = [int(t[len(prefix) :]) for t in tokens]
    return prompt, completion


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return list(value)
    return None


def _answer_text(payload: Any) -> tuple[str, str | None]:
    """``(text, None)``, or ``("", what is wrong)`` for an answer no action can be made of."""
    if not isinstance(payload, dict):
        return "", f"the answer is a JSON {type(payload).__name__}, not an object"
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        return (
            "",
            "no choices" if choices is None else f"choices is {choices!r}, not a non-empty list",
        )
    choice = choices[0]
    if not isinstance(choice, dict):
        return "", f"choices[0] is a {type(choice).__name__}, not an object"
    if "message" in choice:
        message = choice["message"]
        if not isinstance(message, dict):
            return "", f"choices[0].message is {type(message).__name__}, not an object"
        field_name, text = "choices[0].message.content", message.get("content")
        extras = [
            key
            for key in ("tool_calls", "function_call", "refusal", "reasoning_content")
            if message.get(key)
        ]
    elif "text" in choice:
        field_name, text, extras = "choices[0].text", choice["text"], []
    else:
        return "", "choices[0] has neither a message nor a text"
    if text is None:
        why = f"{field_name} is null or missing"
        if extras:  # tool-call-only, refusals, reasoning models cut off before answering
            why += f" (the message has {', '.join(extras)} only)"
        if choice.get("finish_reason"):
            why += f"; finish_reason {choice['finish_reason']!r}"
        return "", why + "; there is no text to use as the action"
    if not isinstance(text, str):
        return "", f"{field_name} is a {type(text).__name__}, not a string"
    return text, None


def _parse_logprobs(logprobs: Any) -> list[float] | None:
    """Per-token log-probs from chat (``content[i].logprob``) or legacy (``token_logprobs``)."""
    if not isinstance(logprobs, dict):
        return None
    if isinstance(logprobs.get("content"), list):
        values = [
            entry.get("logprob") if isinstance(entry, dict) else None
            for entry in logprobs["content"]
        ]
    elif isinstance(logprobs.get("token_logprobs"), list):
        values = logprobs["token_logprobs"]
    else:
        return None
    if not all(_is_number(value) for value in values):
        return None
    return [float(value) for value in values]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
