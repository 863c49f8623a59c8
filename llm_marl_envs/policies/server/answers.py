"""What the policy server answers: a checked OpenAI request in, the JSON answer (or its
stream's chunks) out.

Held apart from :mod:`~llm_marl_envs.policies.server.serve` (the micro-batching worker) and
:mod:`~llm_marl_envs.policies.server.http` (the HTTP plumbing) because this is the API's
shape: which request fields are refused (HTTP 400), how chat messages become a
:class:`~llm_marl_envs.policies.base.Prompt`, and how completions become ``chat.completion`` /
``text_completion`` answers, with ``usage``, ``logprobs`` and vLLM's token-id fields, and
OpenAI's streaming chunks. The behaviour is documented in the package's docstring
(:mod:`llm_marl_envs.policies.server`). It reaches the server only through :class:`_Server`
(so it does not import ``serve``, which imports it).
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Protocol

from llm_marl_envs.policies.base import Completion, Prompt


class RequestError(Exception):
    """A request the server refuses; carries the HTTP status, OpenAI error type, the field it
    is about (``param``) and, for a full server, the seconds to wait (``retry_after``)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        *,
        param: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.param = param
        self.retry_after = retry_after


class _Server(Protocol):
    """What the answers need of a :class:`~llm_marl_envs.policies.server.serve.PolicyServer`."""

    model_name: str
    max_model_len: int | None
    limits: Any

    def submit(self, prompts: list[Prompt]) -> list[Completion]: ...

    def count_tokens(self, prompt: Prompt) -> int | None: ...


def _check_common(body: dict[str, Any]) -> None:
    if body.get("stream") not in (None, True, False):
        raise RequestError(400, "'stream' must be true or false")
    options = body.get("stream_options")
    if options is not None:
        if not body.get("stream"):
            raise RequestError(400, "'stream_options' is only allowed with \"stream\": true")
        if not isinstance(options, dict) or options.get("include_usage") not in (
            None,
            True,
            False,
        ):
            raise RequestError(
                400, "'stream_options' must be an object whose 'include_usage' is true or false"
            )
    if body.get("n") not in (None, 1):
        raise RequestError(400, "only n=1 is supported by this server", param="n")


def _check_budget(srv: _Server, body: dict[str, Any]) -> None:
    """``max_tokens`` (or ``max_completion_tokens``), when given: an integer from 1 to the
    server's ``limits.max_tokens``."""
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if type(value) is not int or not 1 <= value <= srv.limits.max_tokens:
            raise RequestError(
                400,
                f"'{name}' must be an integer from 1 to {srv.limits.max_tokens} on this server",
                param=name,
            )


def _message_text(content: Any) -> str:
    """A message's content as text (a string, None, or a list of ``{"type": "text"}`` parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(text, str) for text in parts):
            return "".join(parts)
    raise RequestError(400, "message content must be a string or a list of text parts")


def _chat_prompt(body: dict[str, Any], most: int | None = None) -> Prompt:
    """The prompt of a chat request's ``messages`` (HTTP 400 when they are malformed, or more
    than ``most``)."""
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise RequestError(400, "'messages' must be a non-empty list", param="messages")
    if most is not None and len(raw_messages) > most:
        raise RequestError(
            400, f"'messages' holds {len(raw_messages)} messages; at most {most}", param="messages"
        )
    messages = []
    for message in raw_messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise RequestError(400, "each message must be an object with a string 'role'")
        messages.append({"role": message["role"], "content": _message_text(message.get("content"))})
    user_turns = [m["content"] for m in messages if m["role"] == "user"]
    rendered = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
    observation = user_turns[-1] if user_turns else rendered
    return Prompt(agent="remote", observation=observation, messages=messages, info={})


def _text_prompts(body: dict[str, Any], most: int | None = None) -> list[Prompt]:
    """The prompts of a completion request's ``prompt`` (a string or a list of strings; at
    most ``most`` of them)."""
    texts = body.get("prompt")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise RequestError(
            400, "'prompt' must be a string or a non-empty list of strings", param="prompt"
        )
    if most is not None and len(texts) > most:
        raise RequestError(
            400, f"'prompt' holds {len(texts)} prompts; at most {most} per request", param="prompt"
        )
    return [Prompt(agent="remote", observation=t, messages=[], info={}) for t in texts]


def _check_context(srv: _Server, prompt: Prompt, body: dict[str, Any]) -> None:
    """HTTP 400 for a prompt that does not fit ``max_model_len`` with its ``max_tokens``, in
    vLLM's words (only when the server reports a length and its policy counts tokens)."""
    if srv.max_model_len is None:
        return
    count = srv.count_tokens(prompt)
    budget = body.get("max_tokens")
    budget = budget if isinstance(budget, int) and not isinstance(budget, bool) else 0
    if count is not None and count + budget > srv.max_model_len:
        raise RequestError(
            400,
            f"This model's maximum context length is {srv.max_model_len} tokens. However, you "
            f"requested {count + budget} tokens ({count} in the messages, {budget} in the "
            "completion). Please reduce the length of the messages or completion.",
        )


def tokenize(srv: _Server, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /tokenize`` as vLLM answers it: the prompt's token count (``messages`` rendered
    with the chat template, or ``prompt``); HTTP 404 when the policy counts no tokens."""
    prompt = _chat_prompt(body) if "messages" in body else _text_prompts(body)[0]
    count = srv.count_tokens(prompt)
    if count is None:
        raise RequestError(404, "this server's policy counts no tokens", "not_found_error")
    return {"count": count, "max_model_len": srv.max_model_len, "tokens": None}


def chat_completion(srv: _Server, body: dict[str, Any]) -> dict[str, Any]:
    _check_common(body)
    _check_budget(srv, body)
    prompt = _chat_prompt(body, srv.limits.max_prompts)
    _check_context(srv, prompt, body)
    completion = srv.submit([prompt])[0]
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": completion.text},
        "logprobs": None,
        "finish_reason": "stop",
    }
    if body.get("logprobs") and completion.logprobs is not None:
        choice["logprobs"] = {
            "content": [
                {"token": token, "logprob": logprob, "bytes": None, "top_logprobs": []}
                for token, logprob in zip(
                    _token_names(completion), completion.logprobs, strict=True
                )
            ]
        }
    if body.get("return_token_ids") and completion.completion_ids is not None:
        choice["token_ids"] = list(completion.completion_ids)
    answer = _envelope(srv, "chatcmpl", "chat.completion", [choice], [completion])
    if body.get("return_token_ids") and completion.prompt_ids is not None:
        answer["prompt_token_ids"] = list(completion.prompt_ids)
    return answer


def text_completion(srv: _Server, body: dict[str, Any]) -> dict[str, Any]:
    _check_common(body)
    _check_budget(srv, body)
    prompts = _text_prompts(body, srv.limits.max_prompts)
    for prompt in prompts:
        _check_context(srv, prompt, body)
    completions = srv.submit(prompts)
    want_logprobs = body.get("logprobs") is not None and body.get("logprobs") is not False
    choices = []
    for index, completion in enumerate(completions):
        logprobs = None
        if want_logprobs and completion.logprobs is not None:
            logprobs = {
                "tokens": _token_names(completion),
                "token_logprobs": list(completion.logprobs),
                "top_logprobs": None,
                "text_offset": None,
            }
        choices.append(
            {"index": index, "text": completion.text, "logprobs": logprobs, "finish_reason": "stop"}
        )
        if body.get("return_token_ids"):  # as vLLM: both id lists in each choice
            ids = {
                "prompt_token_ids": completion.prompt_ids,
                "token_ids": completion.completion_ids,
            }
            choices[-1].update({key: list(v) for key, v in ids.items() if v is not None})
    return _envelope(srv, "cmpl", "text_completion", choices, completions)


def _token_names(completion: Completion) -> list[str]:
    """``token_id:<id>`` per generated token when the ids are known, else empty strings."""
    ids = completion.completion_ids
    if ids is not None and len(ids) == len(completion.logprobs or []):
        return [f"token_id:{token_id}" for token_id in ids]
    return [""] * len(completion.logprobs or [])


def _envelope(
    srv: _Server,
    prefix: str,
    kind: str,
    choices: list[dict[str, Any]],
    completions: list[Completion],
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "id": f"{prefix}-{uuid.uuid4().hex}",
        "object": kind,
        "created": int(time.time()),
        "model": srv.model_name,
        "choices": choices,
    }
    usage: dict[str, int] = {}
    if all(c.prompt_ids is not None for c in completions):
        usage["prompt_tokens"] = sum(len(c.prompt_ids or []) for c in completions)
    if all(c.completion_ids is not None for c in completions):
        usage["completion_tokens"] = sum(len(c.completion_ids or []) for c in completions)
    if len(usage) == 2:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if usage:
        answer["usage"] = usage
    return answer


def chunks(answer: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """A finished answer as the chunks of its stream (OpenAI's streaming format)."""
    usage = answer.get("usage")
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    chat = answer["object"] == "chat.completion"
    head = {key: answer[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk" if chat else "text_completion"

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        event = {**head, "choices": choices, **extra}
        if include_usage:
            event.setdefault("usage", None)
        return event

    events = []
    for choice in answer["choices"]:
        index = choice["index"]
        ids = {k: choice[k] for k in ("prompt_token_ids", "token_ids") if k in choice}
        if chat:
            first: dict[str, Any] = {}
            if "prompt_token_ids" in answer:
                first["prompt_token_ids"] = answer["prompt_token_ids"]
            role = {"role": "assistant", "content": ""}
            events.append(
                chunk(
                    [{"index": index, "delta": role, "logprobs": None, "finish_reason": None}],
                    **first,
                )
            )
            content = {"content": choice["message"]["content"]}
            piece = {"index": index, "delta": content, "logprobs": choice["logprobs"]}
            last = {"index": index, "delta": {}, "logprobs": None}
        else:
            piece = {"index": index, "text": choice["text"], "logprobs": choice["logprobs"]}
            last = {"index": index, "text": "", "logprobs": None}
        events.append(chunk([{**piece, **ids, "finish_reason": None}]))
        events.append(chunk([{**last, "finish_reason": choice["finish_reason"]}]))
    if include_usage:
        events.append({**head, "choices": [], "usage": usage})
    return events
