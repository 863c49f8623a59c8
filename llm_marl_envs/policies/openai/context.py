"""What an OpenAI-compatible server says about itself, and prompts fitted to its context.

**What is served.** :func:`served_models` reads ``GET {base_url}/models``: the model ids a
server lists and, where it reports one (vLLM's ``max_model_len``), each model's context
length. :func:`identity_at` is what a server seat *is* by that listing rather than by its URL's
text, so one server reached as ``localhost`` or as ``127.0.0.1`` is one seat.

**Context limits.** The in-process policy cuts a prompt longer than the model's context minus
the answer's budget from the left and warns once
(:meth:`~llm_marl_envs.policies.hf.HFPolicy.encode`). :class:`ContextFit` does the same on the
server route where the server reports ``max_model_len``:

* the server's ``/models`` listing is asked once per policy: at the first prompt longer than
  :data:`ASK_FROM` tokens by the bound below, or when the server refuses a request (HTTP 400,
  as vLLM refuses a prompt over its context), after which the prompt is fitted and sent once
  more;
* a prompt whose UTF-8 length (plus an allowance for the chat template) is within the limit
  fits as it is: a byte-level tokenizer never makes more tokens than bytes, so most prompts
  cost no extra request;
* a longer one is counted by the server itself, ``POST /tokenize`` at the server's root
  (beside ``/v1``; vLLM and SGLang answer ``{"count": ...}``), and when it is over the limit
  the oldest text is cut from the left (the system prompt is kept; the first other message
  loses its beginning, then the next), counted again, until it fits; the same warning as in
  process is given once per policy;
* a server that reports a limit but counts no tokens gets the prompt as it is, and a refusal
  it answers is explained by the limit (:meth:`ContextFit.explain`).

A server that reports no limit (``transformers serve``, llama.cpp, hosted APIs) gets every
prompt as it is: its own context rules apply.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import urllib.request
import warnings
from collections.abc import Callable
from typing import Any

from llm_marl_envs.policies.base import PolicyError

__all__ = ["ContextFit", "identity_at", "served_models"]

log = logging.getLogger(__name__)

#: Tokens allowed for a chat template's own text (role headers, a default system prompt) in
#: the byte bound under which a prompt is taken to fit without asking the server.
TEMPLATE_ALLOWANCE = 64
#: Tokens allowed per message for its role header and separators, in the same bound.
PER_MESSAGE = 16
#: A prompt whose byte bound is within this many tokens is sent without asking the server for
#: its context first (a smaller context is rare, and the server's refusal of a prompt over it
#: is answered by :meth:`ContextFit.refit`), so most prompts cost no extra request.
ASK_FROM = 2048
#: Times a prompt is counted and cut before it is refused.
MAX_CUTS = 12
#: Seconds a ``/models`` or ``/tokenize`` request may take.
ASK_TIMEOUT = 10.0


Ask = Callable[[str, "dict[str, Any] | None"], Any]
"""``ask(url, body)``: the JSON answer of a GET of ``url`` (a POST of ``body`` when given);
raises on any failure."""


def _ask_plainly(api_key: str | None) -> Ask:
    """An :data:`Ask` over ``urllib`` alone, each request bounded by :data:`ASK_TIMEOUT`."""

    def ask(url: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
        request.add_header("Content-Type", "application/json")
        if api_key:
            request.add_header("Authorization", f"Bearer {api_key}")
        with urllib.request.urlopen(request, timeout=ASK_TIMEOUT) as response:  # noqa: S310
            return json.loads(response.read(1 << 20))

    return ask


def served_models(
    base_url: str, api_key: str | None = None, ask: Ask | None = None
) -> dict[str, int | None] | None:
    """The models a server lists at ``{base_url}/models`` (id -> the context length it reports,
    vLLM's ``max_model_len``, or None), or None when it does not answer with such a list.
    ``ask`` makes the request (default: plain ``urllib``, with ``api_key``)."""
    try:
        listing = (ask or _ask_plainly(api_key))(base_url.rstrip("/") + "/models", None)
    except Exception:  # noqa: BLE001 - any failure: the server does not say
        return None
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    models: dict[str, int | None] = {}
    for entry in data:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            length = entry.get("max_model_len")
            ok = isinstance(length, int) and not isinstance(length, bool) and length > 0
            models[entry["id"]] = length if ok else None
    return models


def identity_at(base_url: str, model: str, api_key: str | None = None) -> str | None:
    """What a server seat is by what its server serves rather than by the URL's text: ``model``
    when the server lists it, the one model it lists when ``model`` is empty; None when the
    server cannot be asked or serves no such model."""
    listed = served_models(base_url, api_key)
    if not listed:
        return None
    if model:
        return model if model in listed else None
    return next(iter(listed)) if len(listed) == 1 else None


def _server_root(base_url: str) -> str:
    """The server's root, where vLLM mounts ``/tokenize``: the API root without its ``/v1``."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


class ContextFit:
    """Prompts fitted to the context a server reports for ``model`` (see the module's text).

    Shared by a policy and its :meth:`with_generation` copies (one warning for all); safe to
    call from the policy's worker threads.
    """

    def __init__(self, base_url: str, model: str, ask: Ask) -> None:
        self.base_url, self.model, self._ask = base_url, model, ask
        self._lock = threading.Lock()
        self._asked = False
        self._listed: dict[str, int | None] | None = None
        self._counts = True  # until the server fails to count once
        self._warned = False

    # ------------------------------------------------------------------ what the server says
    @property
    def listed(self) -> dict[str, int | None] | None:
        """The server's ``/models`` listing, asked once (None: it gave none)."""
        with self._lock:
            if not self._asked:
                self._listed = served_models(self.base_url, ask=self._ask)
                self._asked = True
            return self._listed

    @property
    def context(self) -> int | None:
        """The model's context length as the server reports it, or None."""
        listed = self.listed or {}
        if self.model in listed:
            return listed[self.model]
        values = list(listed.values())
        return values[0] if len(values) == 1 else None  # "default": the one model served

    def limit(self, max_tokens: int) -> int | None:
        """The longest prompt in tokens: the context minus the answer's budget (None: no limit
        reported). A budget that leaves no room is a :class:`PolicyError`."""
        context = self.context
        if context is None:
            return None
        if context - max_tokens < 1:
            raise PolicyError(
                f"max_tokens={max_tokens} leaves no room for a prompt in the model's context of "
                f"{context} tokens (the server's max_model_len): give a smaller budget"
            )
        return context - max_tokens

    # ------------------------------------------------------------------ fitting
    def fit(self, body: dict[str, Any], max_tokens: int, name: str) -> dict[str, Any]:
        """``body`` with its prompt cut from the left to fit (a copy; ``body`` when it fits)."""
        bound = _byte_bound(body)
        if bound <= ASK_FROM and not self._asked:
            return body
        limit = self.limit(max_tokens)
        if limit is None or bound <= limit:
            return body
        return self._cut_to(body, limit, max_tokens, name)

    def refit(self, body: dict[str, Any], max_tokens: int, name: str) -> dict[str, Any] | None:
        """After the server refused ``body`` (HTTP 400): ``body`` cut to the context the server
        reports, or None when that changes nothing (the refusal was about something else)."""
        limit = self.limit(max_tokens)  # asks the server's listing, once
        if limit is None:
            return None
        fitted = self._cut_to(body, limit, max_tokens, name)
        return fitted if fitted != body else None

    def _cut_to(
        self, body: dict[str, Any], limit: int, max_tokens: int, name: str
    ) -> dict[str, Any]:
        body = {**body}
        if "messages" in body:
            body["messages"] = [dict(message) for message in body["messages"]]
        for _ in range(MAX_CUTS):
            count = self._count(body)
            if count is None or count <= limit:
                return body
            self._warn(name, limit, max_tokens)
            if not _cut(body, math.ceil((count - limit) * _chars_per_token(body, count)) + 1):
                raise PolicyError(
                    f"{name}: the prompt's fixed part (system prompt and chat template) is over "
                    f"{limit} tokens (the model's context minus max_new_tokens={max_tokens}) "
                    "with all of its other text cut: give a smaller budget or a shorter system "
                    "prompt"
                )
        raise PolicyError(
            f"{name}: the prompt could not be cut to {limit} tokens in {MAX_CUTS} tries"
        )

    def explain(self, body: dict[str, Any], max_tokens: int) -> str:
        """Why the server may have refused ``body``: a note when the prompt may be over the
        reported limit and the server counted no tokens to cut it by, else ''."""
        if not self._asked:  # nothing reported: nothing to explain by
            return ""
        limit = self.context and self.context - max_tokens
        if not limit or self._counts or _byte_bound(body) <= limit:
            return ""
        return (
            f" (the prompt may be longer than {limit} tokens, the model's context of "
            f"{self.context} the server reports minus max_tokens={max_tokens}; the server "
            "counts no tokens at /tokenize, so it was not cut: shorten the prompts or give a "
            "smaller budget)"
        )

    def _count(self, body: dict[str, Any]) -> int | None:
        """The prompt's length in tokens as the server counts it (None: it does not count)."""
        if not self._counts:
            return None
        asked: dict[str, Any] = {"model": body.get("model", self.model)}
        if "messages" in body:
            asked.update(messages=body["messages"], add_generation_prompt=True)
        else:
            asked["prompt"] = body.get("prompt", "")
        try:
            answer = self._ask(_server_root(self.base_url) + "/tokenize", asked)
            count = answer.get("count") if isinstance(answer, dict) else None
            if not isinstance(count, int) and isinstance(answer.get("tokens"), list):
                count = len(answer["tokens"])
            if not isinstance(count, int) or isinstance(count, bool):
                raise ValueError(f"no token count in {str(answer)[:200]!r}")
        except Exception as error:  # noqa: BLE001 - any failure: the server does not count
            self._counts = False
            log.warning(
                "%s: the server reports a context of %s tokens but counts no tokens at /tokenize "
                "(%s): long prompts are sent as they are",
                self.base_url,
                self.context,
                error,
            )
            return None
        return count

    def _warn(self, name: str, limit: int, max_tokens: int) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(  # the in-process route's words (HFPolicy.encode)
            f"{name}: prompts longer than {limit} tokens (the model's context minus "
            f"max_new_tokens={max_tokens}) are cut from the left",
            stacklevel=4,
        )


def _byte_bound(body: dict[str, Any]) -> int:
    """More tokens than the prompt can have with a byte-level tokenizer: its UTF-8 bytes, plus
    an allowance per message and for the chat template."""
    if "messages" in body:
        messages = body["messages"]
        texts = [m.get("content") for m in messages if isinstance(m, dict)]
        size = sum(len(t.encode("utf-8")) for t in texts if isinstance(t, str))
        return size + PER_MESSAGE * len(messages) + TEMPLATE_ALLOWANCE
    prompt = body.get("prompt")
    return len(prompt.encode("utf-8")) + PER_MESSAGE if isinstance(prompt, str) else 0


def _cuttable(body: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Where the prompt's text may be cut, oldest first: every message's content but the
    system prompt's, or the completion prompt."""
    if "messages" in body:
        return [
            (message, "content")
            for message in body["messages"]
            if message.get("role") != "system" and isinstance(message.get("content"), str)
        ]
    return [(body, "prompt")] if isinstance(body.get("prompt"), str) else []


def _chars_per_token(body: dict[str, Any], count: int) -> float:
    chars = sum(len(holder[key]) for holder, key in _cuttable(body))
    return max(chars / max(count, 1), 1.0)


def _cut(body: dict[str, Any], chars: int) -> bool:
    """Cut ``chars`` characters from the left of the oldest text (False: nothing left to cut)."""
    cut_any = False
    for holder, key in _cuttable(body):
        if chars <= 0:
            break
        text = holder[key]
        if text:
            taken = min(chars, len(text))
            holder[key], chars, cut_any = text[taken:], chars - taken, True
    return cut_any
