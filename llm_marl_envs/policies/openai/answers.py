"""Reading an OpenAI-compatible answer: the action text, log-probabilities, token ids, usage.

Held apart from :mod:`~llm_marl_envs.policies.openai.policy` because it is pure logic on
decoded JSON (no threads): what makes an answer unusable (a
:class:`~llm_marl_envs.policies.base.PolicyError` saying what is missing), where chat and text
completions keep their log-probabilities, where vLLM puts prompt and completion token ids, the
token counts of ``usage``, and how a streamed answer (server-sent events, :func:`read_stream`)
is put together into the shape of a whole one.

**One text per answer.** Every route strips the answer's leading and trailing whitespace
(:func:`clean_text`), as the in-process transformers policy does after decoding, so one model's
records are the same whether it ran in-process or behind a server.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

from llm_marl_envs.policies.base import Completion, PolicyError

ERROR_BODY_CHARS = 300  # how much of an error response goes into a PolicyError


def clean_text(text: str) -> str:
    """An answer as every route records it: without leading and trailing whitespace (the
    in-process policy's ``decode(...).strip()``)."""
    return text.strip()


def parse_completion(payload: Any, url: str) -> Completion:
    """A Completion from a chat or text completion answer; PolicyError if it has no usable text."""
    text, problem = _answer_text(payload)
    if problem is not None:
        snippet = json.dumps(payload)[:ERROR_BODY_CHARS]
        raise PolicyError(f"POST {url}: unusable answer: {problem}: {snippet}")
    choice = payload["choices"][0]
    prompt_tokens, completion_tokens = _usage(payload)
    return Completion(
        text=clean_text(text),
        logprobs=_parse_logprobs(choice.get("logprobs")),
        completion_tokens=completion_tokens,
        prompt_tokens=prompt_tokens,
    )


def _usage(payload: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(prompt_tokens, completion_tokens)`` of the answer's ``usage`` (None where absent)."""
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return None, None

    def count(key: str) -> int | None:
        value = usage.get(key)
        return (
            value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
        )

    return count("prompt_tokens"), count("completion_tokens")


def read_stream(response: Any, cap: int) -> dict[str, Any]:
    """A streamed answer (``stream: true``: server-sent ``data:`` events, ending with
    ``data: [DONE]`` or with the connection) put together into the shape of a whole answer:
    the text of every chunk, the last ``finish_reason``, every log-probability and token id,
    ``usage`` and ``model``. A stream longer than ``cap`` bytes is refused as it is read; an
    error event is a :class:`PolicyError`; a stream that stops without a ``finish_reason`` or
    ``[DONE]`` is cut short (:class:`http.client.IncompleteRead`, retried)."""
    stream = _Stream()
    for data in _events(response, cap):
        if data == b"[DONE]":
            stream.done = True
            break
        try:
            chunk = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise PolicyError(
                f"the server streamed invalid JSON ({error}): {data[:80]!r}"
            ) from None
        if isinstance(chunk, dict):
            stream.add(chunk)
    return stream.answer()


def _events(response: Any, cap: int) -> Iterator[bytes]:
    """The data of each ``data:`` line of a server-sent event stream (blank lines, comments,
    ``event:`` and ``id:`` fields skipped); a PolicyError once more than ``cap`` bytes came."""
    read = 0
    while True:
        line = response.readline(cap + 1 - read)
        if not line:
            return
        read += len(line)
        if read > cap:
            raise PolicyError(
                f"the streamed answer is longer than max_response_bytes={cap}; refused after "
                f"reading {read} bytes"
            )
        line = line.strip()
        if line.startswith(b"data:"):
            yield line[5:].strip()


class _Stream:
    """The pieces of a streamed answer, gathered chunk by chunk (:func:`read_stream`)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.seen_text = False
        self.chat: bool | None = None  # chat deltas (True) or completion texts (False)
        self.finish: Any = None
        self.done = False  # data: [DONE] came
        self.extras: set[str] = set()  # what a chat message held instead of text
        self.content_logprobs: list[Any] = []
        self.tokens: list[Any] = []
        self.token_logprobs: list[Any] = []
        self.token_ids: list[Any] = []
        self.prompt_ids: Any = None
        self.usage: Any = None
        self.model: Any = None

    def add(self, chunk: dict[str, Any]) -> None:
        """Take in one chunk; a PolicyError for an error event."""
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise PolicyError(f"the server's stream ended in an error: {str(message)[:200]}")
        self.usage = chunk.get("usage") or self.usage
        self.model = chunk.get("model") or self.model
        if self.prompt_ids is None and isinstance(chunk.get("prompt_token_ids"), list):
            self.prompt_ids = chunk["prompt_token_ids"]
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._add_choice(choice)

    def _add_choice(self, choice: dict[str, Any]) -> None:
        logprobs = choice.get("logprobs") if isinstance(choice.get("logprobs"), dict) else {}
        if isinstance(choice.get("delta"), dict):  # chat
            self.chat, delta = True, choice["delta"]
            if isinstance(delta.get("content"), str):
                self.parts.append(delta["content"])
                self.seen_text = True
            self.extras |= {k for k in ("tool_calls", "function_call", "refusal") if delta.get(k)}
            if delta.get("reasoning_content") or delta.get("reasoning"):
                self.extras.add("reasoning_content")
            self.content_logprobs += logprobs.get("content") or []
        elif "text" in choice:  # completions
            self.chat = False
            if isinstance(choice["text"], str):
                self.parts.append(choice["text"])
                self.seen_text = True
            self.tokens += logprobs.get("tokens") or []
            self.token_logprobs += logprobs.get("token_logprobs") or []
        if isinstance(choice.get("token_ids"), list):
            self.token_ids += choice["token_ids"]
        if self.prompt_ids is None and isinstance(choice.get("prompt_token_ids"), list):
            self.prompt_ids = choice["prompt_token_ids"]
        self.finish = choice.get("finish_reason") or self.finish

    def answer(self) -> dict[str, Any]:
        """The whole answer the chunks make; IncompleteRead for a stream cut short."""
        if not self.done and self.finish is None:
            raise http.client.IncompleteRead(b"".join(p.encode() for p in self.parts[-3:]))
        # no text at all is an empty answer (a model that stopped at once), unless the message
        # held something else instead (tool calls, a refusal, reasoning): then it is unusable
        text = "".join(self.parts) if self.seen_text or not self.extras else None
        if self.chat is False:
            choice: dict[str, Any] = {"text": text, "finish_reason": self.finish}
            if self.tokens:
                choice["logprobs"] = {"tokens": self.tokens, "token_logprobs": self.token_logprobs}
        else:
            message = {"content": text, **dict.fromkeys(sorted(self.extras), True)}
            choice = {"message": message, "finish_reason": self.finish}
            if self.content_logprobs:
                choice["logprobs"] = {"content": self.content_logprobs}
        if self.token_ids:
            choice["token_ids"] = self.token_ids
        if self.prompt_ids is not None:
            choice["prompt_token_ids"] = self.prompt_ids
        return {"choices": [choice], "usage": self.usage, "model": self.model}


def token_ids(payload: dict[str, Any]) -> tuple[list[int] | None, list[int] | None]:
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
