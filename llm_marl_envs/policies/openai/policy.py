"""A policy served over the OpenAI-compatible HTTP API (vLLM, llama.cpp, SGLang, hosted providers).

>>> policy = OpenAIPolicy("http://127.0.0.1:8000/v1", model="qwen")  # doctest: +SKIP
>>> policy.generate([Prompt("gnome_0", "left or right?", [], {})])[0].text  # doctest: +SKIP
'left'

Each prompt becomes one request, sent concurrently by a thread pool; answers come back in
prompt order. A prompt with chat ``messages`` goes to ``{base_url}/chat/completions``; one
without (or every prompt when ``use_chat=False``) goes to ``{base_url}/completions`` with the
observation as the prompt.

**How requests travel** is one frozen :class:`~llm_marl_envs.policies.openai.ServerOptions`
(``options=``): ``concurrency``, ``timeout``, ``max_retries``, ``backoff``, ``warn_after``,
``max_response_bytes``, ``stream`` and ``api_key``, the names used below. What is asked of the
model (``max_tokens``, sampling, ``seed``, ``stop``, log-probabilities) stays with the policy.

**Requests in flight adapt to the server** (:mod:`~llm_marl_envs.policies.openai.flow`): the
window starts at 2, grows while each answer's time per token holds (or grows slower than the
load: the server batches), doubling per round at first, then by one per round, and halves on a
timeout or HTTP 429/503, never above ``concurrency``. vLLM gets ``concurrency`` within a few
rounds; a server that answers one request at a time stops growing once its answers slow down
with the queue (its throughput is the same at any window; the deadline, which grows with the
budget, bounds the wait, and a timeout halves the window).

**Streamed, so a cancelled request is cancelled.** Requests are streamed (``stream: true``,
with ``stream_options.include_usage``; ``stream=False`` sends whole-answer requests instead): a
request abandoned at its deadline, or on ``close()``, drops its connection, which stops the
generation on servers that stream (measured with ``transformers serve``: a non-streamed
request abandoned after 1 s kept the server busy for 90 s, a streamed one for none). The
chunks are put together into one answer
(:func:`~llm_marl_envs.policies.openai.answers.read_stream`).

**Honest records.** The answer's text is stripped of leading and trailing whitespace, as the
in-process policy does (one model's records are the same by either route); ``usage`` fills
``Completion.completion_tokens`` and ``prompt_tokens``, so a manifest counts the tokens a server
generated. ``logprobs=True`` or ``return_token_ids=True`` against a server whose answer lacks
them is a :class:`PolicyError` at the first answer, naming the missing field, never a silent
``None``.

**What the server says of itself** (:mod:`~llm_marl_envs.policies.openai.context`):
:meth:`OpenAIPolicy.describe` adds, under ``server_``-prefixed keys apart from anything about
the client's machine, the models ``/v1/models`` lists, the context length it reports (vLLM's
``max_model_len``) and the model its answers named; an evaluation identifies a server seat by
the model its server serves, so one server reached by another URL resumes an evaluation and a
server serving another model is refused. Where the server reports a context length, a prompt
longer than it minus ``max_tokens`` is counted by the server (vLLM's ``/tokenize``) and cut
from the left of its oldest text, with the in-process route's warning; the listing is asked
once, at the first prompt long enough to matter (over 2048 tokens by a byte bound) or when the
server refuses a prompt as over its context (HTTP 400), which is then fitted and sent once
more; other prompts cost no extra request.

``base_url`` is used as given, apart from a trailing slash: pass the API root including its
version segment (``http://host:8000/v1``), as the OpenAI clients do. A URL without ``/v1`` is
not completed, because some servers mount the API elsewhere.

**Deadline.** ``timeout`` is a total deadline per attempt: connecting, sending the request and
reading the whole answer (headers and body) must all end within it, however the server paces
its bytes. By default it grows with the answer's budget: 30 s plus 0.25 s per token of
``max_tokens`` (62 s for 128 tokens). A watchdog thread per attempt shuts the attempt's socket down when the deadline
passes, so a server that trickles one byte every few seconds fails like one that hangs. (A DNS
lookup cannot be interrupted; it is bounded by the system resolver only.) When an attempt has
run for ``warn_after`` seconds (default: half of ``timeout``) a :class:`SlowResponseWarning` is
issued, at most once per prompt.

**Retries.** Timeouts, connection errors, truncated answers, HTTP 429 and HTTP 5xx are retried
``max_retries`` times with exponential back-off (``backoff * 2**k`` seconds, or the server's
``Retry-After`` if longer, capped at 60 s), after the window has halved; other HTTP errors and
unusable answers fail at once. The worst case for one prompt is ``(max_retries + 1) * timeout``
plus the back-off waits. Every failure surfaces as
:class:`~llm_marl_envs.policies.base.PolicyError` naming the URL, the cause and the attempts
made (a timeout also names the ``concurrency`` and ``timeout`` it ran with, and which way to
change them); the API key is never logged nor put in a message.

**Unusable answers are errors, never empty actions.** An answer without a usable text (no
``choices``, a choice without ``message``/``text``, ``content: null`` as in tool-call-only or
refusal answers or a reasoning model that ran out of tokens, a non-string ``content``) raises
:class:`PolicyError` saying what was missing (with ``finish_reason`` and whether the message had
``tool_calls``, ``refusal`` or ``reasoning_content``); it is not retried. An empty string is a
real (if useless) answer and is returned as is; the environment judges it.

**Token ids (vLLM).** ``return_token_ids=True`` asks the server for the token ids a trainer
needs, the way vLLM's OpenAI server gives them: ``return_token_ids: true`` (vLLM >= 0.10.2
answers ``prompt_token_ids`` and ``token_ids``) plus log-probabilities with
``return_tokens_as_token_ids: true`` (each logprob token reads ``token_id:<id>``, which older
vLLM versions give too). ``Completion.prompt_ids``, ``completion_ids`` and ``logprobs`` are
filled from the answer; an answer without completion token ids is a :class:`PolicyError`
(the server does not give them). Other servers may refuse or ignore the extra request fields,
so the option is off by default.

**Size cap.** An answer body longer than ``max_response_bytes`` (default 32 MiB; a 4096-token
answer with 20 top log-probabilities per token is about 5 MB) is refused while it is read: a
``Content-Length`` over the cap is refused before reading, otherwise the body is read in 64 KiB
pieces and the attempt stops as soon as the cap is passed, so at most the cap is ever held in
memory. The refusal is a :class:`PolicyError` (not retried). Error bodies are read up to 64 KiB.

:meth:`OpenAIPolicy.close` aborts the requests in flight (their sockets are shut down), so a
rollout stopped with Ctrl-C does not wait for a slow server.

A :class:`~llm_marl_envs.policies.GenerationConfig` maps onto the request fields here alone
(:meth:`OpenAIPolicy.from_config`, :meth:`OpenAIPolicy.with_generation`): ``max_new_tokens`` is
``max_tokens``, greedy decoding is ``temperature: 0``, and ``seed`` is sent; where the model
runs (``device``, ``dtype``) is the server's business.

Only the standard library is used (``urllib.request``, with proxies from the environment);
there is no connection pooling, so each request opens its own connection.
"""

from __future__ import annotations

import copy
import http.client
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, wait
from typing import Any

from llm_marl_envs.core.validation import check_int, check_number
from llm_marl_envs.policies.base import Completion, Policy, PolicyError, Prompt
from llm_marl_envs.policies.generation import GenerationConfig
from llm_marl_envs.policies.openai.answers import (
    ERROR_BODY_CHARS,
    parse_completion,
    read_stream,
    token_ids,
)
from llm_marl_envs.policies.openai.context import ContextFit, identity_at, served_models
from llm_marl_envs.policies.openai.flow import START, Window, deadline
from llm_marl_envs.policies.openai.http import (
    Attempt,
    Retryable,
    WatchedHTTPHandler,
    WatchedHTTPSHandler,
    classify,
    current,
    http_failure,
    read_capped,
)
from llm_marl_envs.policies.openai.options import (
    DEFAULT_MAX_RESPONSE_BYTES,
    FIELDS,
    ServerOptions,
    fold_legacy,
)

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "SPEC_OPTIONS",
    "OpenAIPolicy",
    "ServerOptions",
    "SlowResponseWarning",
    "served_identity",
    "served_models",
    "split_spec",
]

log = logging.getLogger(__name__)

_MAX_RETRY_AFTER = 60.0  # seconds: the longest server-requested wait we honour
_WAKE_EVERY = 0.2  # seconds: how often a thread waiting for answers checks for Ctrl-C
_ASK_SECONDS = 10.0  # seconds: the deadline of a side request (model list, token count)
#: How servers word a refusal of a prompt over the context (vLLM and OpenAI "maximum context
#: length", SGLang "longer than the model's context length", llama.cpp "exceeds the available
#: context size", TGI "must have less than N tokens").
_TOO_LONG = re.compile(r"context (length|size|window)|must have less than \d+ .*tokens", re.I)


class SlowResponseWarning(UserWarning):
    """A request has been running for more than ``warn_after`` seconds (once per prompt)."""


class OpenAIPolicy(Policy):
    """A :class:`Policy` backed by an OpenAI-compatible completions server.

    Args:
        base_url: API root, e.g. ``http://127.0.0.1:8000/v1`` (used as given; trailing ``/`` ok).
        model: The ``model`` field of each request (vLLM wants its served model name).
        max_tokens: Most tokens to generate per answer.
        temperature: Sampling temperature (0 = greedy).
        top_p: Nucleus sampling mass, in (0, 1].
        stop: Stop string(s), or None.
        seed: Sent as ``seed`` when given (servers that support it sample reproducibly).
        use_chat: Use ``/chat/completions`` for prompts with messages; False: always
            ``/completions`` with the observation text.
        logprobs: Ask for the sampled tokens' log-probabilities and return them in
            ``Completion.logprobs`` (``logprobs: true`` for chat, ``logprobs: 0`` otherwise).
        return_token_ids: Also ask for token ids as vLLM gives them and fill
            ``Completion.prompt_ids`` / ``completion_ids`` (implies ``logprobs``; see above).
        extra_body: More JSON fields merged into every request body (they override ours).
        name: Name for records (default ``openai:<model>``).
        options: How requests travel (:class:`ServerOptions`: concurrency, deadline, retries,
            back-off, slow-answer warning, size cap, streaming, API key); default its defaults.
        **legacy: The transport settings as keyword arguments (``timeout=``,
            ``concurrency=``, ...), as before :class:`ServerOptions`: folded into ``options``
            with a ``DeprecationWarning`` (for one release); any other name is a TypeError.

    Raises:
        ValueError: An argument is out of range (bad URL scheme, non-positive timeout, ...).
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        stop: str | Sequence[str] | None = None,
        seed: int | None = None,
        use_chat: bool = True,
        logprobs: bool = False,
        return_token_ids: bool = False,
        extra_body: dict[str, Any] | None = None,
        name: str | None = None,
        options: ServerOptions | None = None,
        **legacy: Any,
    ) -> None:
        if legacy:
            options = fold_legacy(options, legacy, type(self).__name__)
        self.options = ServerOptions.of(options)
        self.base_url = _checked_url(base_url)
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        self.model = model
        self.max_tokens = check_int("max_tokens", max_tokens, 1)
        self.temperature = check_number("temperature", temperature, 0)
        self.top_p = check_number("top_p", top_p, high=1, positive=True)
        self.stop = _checked_stop(stop)
        self.seed = check_int("seed", seed, none_ok=True)
        self.use_chat = use_chat
        self.return_token_ids = bool(return_token_ids)
        self.logprobs = logprobs or self.return_token_ids
        self.extra_body = _checked_extra_body(extra_body)
        self.name = name or f"openai:{model}"
        self._api_key = self.options.api_key
        if self._api_key is None:
            self._api_key = os.environ.get("OPENAI_API_KEY")
        # Our own opener (proxies read from the environment now), not urllib's global one; its
        # connections hand their sockets to the current attempt's watchdog (see Attempt).
        self._opener = urllib.request.build_opener(WatchedHTTPHandler(), WatchedHTTPSHandler())
        concurrency = self.options.concurrency
        self._executor = ThreadPoolExecutor(concurrency, thread_name_prefix="openai-policy")
        self._window = Window(concurrency)  # shared by with_generation copies, as the threads
        self._warned_no_prompt_ids = False
        self._answered_model: str | None = None  # the model the latest answer named
        # The server's reported context, prompts cut to fit it (shared by with_generation copies)
        self._context = ContextFit(self.base_url, model, self._ask)
        self._closed = False
        self._closing = threading.Event()  # wakes retry back-off waits on close()
        self._lock = threading.Lock()
        self._attempts: set[Attempt] = set()  # in flight, so close() can abort them

    # The transport settings, as attributes of their own (read-only: they are ``options``').
    concurrency = property(lambda self: self.options.concurrency)
    max_retries = property(lambda self: self.options.max_retries)
    backoff = property(lambda self: self.options.backoff)
    warn_after = property(lambda self: self.options.warn_after)
    max_response_bytes = property(lambda self: self.options.max_response_bytes)
    stream = property(lambda self: self.options.stream)
    fixed_timeout = property(lambda self: self.options.timeout)

    @property
    def timeout(self) -> float:
        """The total deadline of one attempt: the one given, else 30 s plus 0.25 s per token of
        ``max_tokens`` (:func:`~llm_marl_envs.policies.openai.flow.deadline`)."""
        return self.fixed_timeout if self.fixed_timeout is not None else deadline(self.max_tokens)

    @classmethod
    def from_spec(
        cls, spec: str, *, options: ServerOptions | None = None, **kwargs: Any
    ) -> OpenAIPolicy:
        """A policy from ``"http://host:port/v1#model-name"`` (the ``#model`` part is optional),
        with transport options after a ``?``: ``#model?concurrency=4&timeout=120&retries=2``
        (:func:`split_spec`; they override ``options``).

        Keyword arguments go to the constructor (the transport ones the old way, deprecated:
        folded into ``options``).

        >>> OpenAIPolicy.from_spec("http://127.0.0.1:8000/v1#tiny?concurrency=4").concurrency
        4
        """
        legacy = {name: kwargs.pop(name) for name in list(kwargs) if name in FIELDS}
        if legacy:
            options = fold_legacy(options, legacy, f"{cls.__name__}.from_spec")
        address, spec_options = split_spec(spec)
        if spec_options:
            options = ServerOptions.of(options).replace(**spec_options)
        base_url, _, model = address.partition("#")
        if model:
            kwargs["model"] = model
        return cls(base_url, options=options, **kwargs)

    @classmethod
    def from_config(
        cls,
        spec: str,
        config: GenerationConfig,
        *,
        options: ServerOptions | None = None,
        **kwargs: Any,
    ) -> OpenAIPolicy:
        """:meth:`from_spec` generating as ``config`` says (:meth:`with_generation`); the
        server decides where its model runs. Keyword arguments go to the constructor (the
        transport ones the old way, deprecated: folded into ``options``)."""
        legacy = {name: kwargs.pop(name) for name in list(kwargs) if name in FIELDS}
        if legacy:
            options = fold_legacy(options, legacy, f"{cls.__name__}.from_config")
        return cls.from_spec(spec, options=options, **kwargs, **_options(config))

    def with_generation(self, config: GenerationConfig) -> OpenAIPolicy:
        """A policy on this one's connection (its worker threads too: closing either closes
        both) that asks for ``config``'s budget, sampling and seed: ``max_tokens`` is
        ``max_new_tokens``, and greedy decoding is ``temperature: 0``."""
        policy = copy.copy(self)
        for name, value in _options(config).items():  # checked by GenerationConfig
            setattr(policy, name, value)
        return policy

    def describe(self) -> dict[str, Any]:
        """What a results manifest records about this policy: the server and the model asked
        for, and, marked ``server_``, what the server itself reported (the models
        ``/v1/models`` lists, the model its answers named, the context length it gave), apart
        from anything about the client's machine."""
        described: dict[str, Any] = {
            "kind": "openai-compatible",
            "base_url": self.base_url,
            "model_id": self.model,
        }
        listed = self._context.listed
        if listed is not None:
            described["server_models"] = ", ".join(sorted(listed))[:1000]
            length = self._context.context
            if length:
                described["server_max_model_len"] = length
        if self._answered_model:
            described["server_answer_model"] = str(self._answered_model)[:1000]
        return described

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r}, model={self.model!r})"

    # ------------------------------------------------------------------ generate
    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        """One completion per prompt, in order; requests run concurrently.

        Raises:
            PolicyError: A request failed after its retries (the first failing prompt in order
                is reported; requests not yet started are cancelled), or the policy is closed.
        """
        if self._closed:
            raise PolicyError(f"{self!r} is closed")
        try:
            futures: list[Future[Completion]] = [
                self._executor.submit(self._complete, prompt) for prompt in prompts
            ]
        except RuntimeError as error:  # submitted after close() from another thread
            raise PolicyError(f"{self!r} is closed") from error
        try:
            completions = []
            for future in futures:
                # Wait in short slices: a Ctrl-C whose signal the OS handed to another thread
                # only raises KeyboardInterrupt here when this thread wakes up.
                while not wait([future], timeout=_WAKE_EVERY).done:
                    pass
                completions.append(future.result())
            return completions
        except CancelledError as error:
            raise PolicyError(f"{self!r} was closed while generating") from error
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        """Cancel queued requests, abort those in flight, and stop the worker threads.

        Aborted requests fail with :class:`PolicyError` at once (their sockets are shut down)
        rather than running to their deadline, so Ctrl-C does not wait for a slow server.
        """
        self._closed = True
        self._closing.set()
        with self._lock:
            in_flight = list(self._attempts)
        for attempt in in_flight:
            attempt.abort("closed")
        self._executor.shutdown(wait=True, cancel_futures=True)

    def restart_window(self, start: int | None = None) -> None:
        """Forget what the window of requests in flight learnt of the server (a restarted or
        another server): the next batch starts as a new policy's would, at ``start`` requests
        (default: the window's own start, 2; ``concurrency``: at the most from the first
        request on). Shared with the :meth:`with_generation` copies, as the window is."""
        self._window.restart(START if start is None else min(int(start), self.concurrency))

    @property
    def peak_in_flight(self) -> int:
        """The most requests that were in flight at once since the window (re)started."""
        return self._window.peak

    @property
    def slow_after(self) -> float:
        """Seconds after which a running attempt warns (``warn_after``, or half the deadline)."""
        return self.warn_after if self.warn_after is not None else self.timeout / 2

    # ------------------------------------------------------------------ one request
    def _request_body(self, prompt: Prompt) -> tuple[str, dict[str, Any]]:
        """The endpoint URL and JSON body for one prompt."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
        }
        if self.use_chat and prompt.messages:
            url = f"{self.base_url}/chat/completions"
            body["messages"] = [dict(message) for message in prompt.messages]
            if self.logprobs:
                body["logprobs"] = True
        else:
            url = f"{self.base_url}/completions"
            body["prompt"] = prompt.observation
            if self.logprobs:
                body["logprobs"] = 0
        if self.return_token_ids:  # vLLM's extra request fields
            body["return_token_ids"] = True
            body["return_tokens_as_token_ids"] = True
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if self.stop:
            body["stop"] = list(self.stop)
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        return url, body

    def _complete(self, prompt: Prompt) -> Completion:
        """Send one prompt, retrying what is worth retrying; parse the answer."""
        url, body = self._request_body(prompt)
        body = self._context.fit(body, self.max_tokens, self.name)
        data = json.dumps(body).encode("utf-8")
        warn_slow = self._slow_warning(url)
        refitted = False  # a prompt the server refused is fitted to its context once
        attempt = 0
        while True:
            attempt += 1
            ticket = self._window.acquire(lambda: self._closed)
            if ticket is None:
                raise PolicyError(f"{self!r} was closed while the request waited to be sent")
            started, outcome, tokens = time.monotonic(), "other", None
            try:
                payload = self._post(url, data, lambda attempt=attempt: warn_slow(attempt))
                completion = self._completion(payload, url)
                outcome, tokens = "ok", completion.completion_tokens
                return completion
            except Retryable as failure:  # the room in the window is held through the back-off
                outcome = "full" if failure.full else "other"
                self._back_off(url, failure, attempt)
            except PolicyError as error:  # not retryable: say how far we got
                said = self._redact(str(error))
                fitted = None if refitted else self._refit(said, body)
                if fitted is None:
                    said += self._explain(said, body)
                    raise PolicyError(
                        f"POST {url} failed after {attempt} attempt(s): {said}"
                    ) from None
                refitted, attempt = True, attempt - 1  # over the server's context: cut, resend
                body, data = fitted, json.dumps(fitted).encode("utf-8")
            finally:
                self._window.release(outcome, time.monotonic() - started, tokens, ticket)

    def _slow_warning(self, url: str) -> Callable[[int], None]:
        """What an attempt calls when its answer is slow: one :class:`SlowResponseWarning` per
        prompt, whatever the retries."""
        warned = threading.Event()

        def warn_slow(attempt: int) -> None:
            if not warned.is_set():
                warned.set()
                warnings.warn(
                    f"POST {url}: no complete answer after {self.slow_after:g}s (attempt {attempt} "
                    f"of {self.max_retries + 1}; deadline {self.timeout:g}s per attempt)",
                    SlowResponseWarning,
                    stacklevel=2,
                )

        return warn_slow

    def _back_off(self, url: str, failure: Retryable, attempt: int) -> None:
        """Wait before retrying after ``failure`` (exponential, or the server's ``Retry-After``
        if longer); a PolicyError when no retry is left or the policy is closed."""
        message = self._redact(str(failure))
        if attempt > self.max_retries or self._closed:
            hint = self._hint() if failure.full else ""
            raise PolicyError(
                f"POST {url} failed after {attempt} attempt(s): {message}{hint}"
            ) from None
        wait = self.backoff * 2 ** (attempt - 1)
        if failure.retry_after is not None:
            wait = max(wait, min(failure.retry_after, _MAX_RETRY_AFTER))
        log.warning(
            "POST %s: %s; retry %d/%d in %.2fs (requests in flight now at most %d)",
            url,
            message,
            attempt,
            self.max_retries,
            wait,
            self._window.limit,
        )
        if self._closing.wait(wait):  # close() during the back-off: stop now
            raise PolicyError(
                f"POST {url}: {self!r} was closed after {attempt} attempt(s): {message}"
            ) from None

    def _refit(self, said: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The request cut to the server's context when the server refused it as too long
        (HTTP 400 in its words) and reports a context it is over; else None."""
        if said.startswith("HTTP 400") and _TOO_LONG.search(said):
            return self._context.refit(body, self.max_tokens, self.name)
        return None

    def _explain(self, said: str, body: dict[str, Any]) -> str:
        """What to add to a refusal's message: the token ids this server does not know, or the
        context limit the request was over."""
        if self.return_token_ids and said.startswith(("HTTP 400", "HTTP 422")):
            return (
                " (the request asked for token ids, return_token_ids, which this server "
                "does not know: leave --include-tokens out for it)"
            )
        if said.startswith("HTTP 400"):
            return self._context.explain(body, self.max_tokens)
        return ""

    def _completion(self, payload: Any, url: str) -> Completion:
        """The answer as a Completion; a PolicyError when it lacks what was asked for
        (log-probabilities, token ids): never a silent None."""
        completion = parse_completion(payload, url)
        if isinstance(payload, dict) and isinstance(payload.get("model"), str):
            self._answered_model = payload["model"]
        if self.return_token_ids:
            completion.prompt_ids, completion.completion_ids = token_ids(payload)
            if completion.completion_ids is None:
                raise PolicyError(
                    "the answer has no completion token ids (return_token_ids=True, as "
                    "--include-tokens asks; vLLM >= 0.10.2 gives them): this server does not "
                    "give them; leave --include-tokens out for it"
                )
            if completion.completion_tokens is None:
                completion.completion_tokens = len(completion.completion_ids)
            if completion.prompt_ids is None and not self._warned_no_prompt_ids:
                self._warned_no_prompt_ids = True  # once per policy: older vLLM, say
                log.warning(
                    "POST %s: return_token_ids=True but the answer lacks prompt token ids (vLLM "
                    ">= 0.10.2 gives them); they stay None in the records",
                    url,
                )
        if self.logprobs and completion.logprobs is None:
            raise PolicyError(
                "the answer has no log-probabilities (logprobs=True asked for them): this server "
                "does not give them; ask without logprobs"
            )
        return completion

    def _hint(self) -> str:
        """Which transport settings a timeout ran with, and which way to change them."""
        return (
            f" (it ran with concurrency {self.concurrency}, {self._window.limit} in flight when "
            f"it gave up, and a {self.timeout:g}s deadline per attempt: for a slower server, "
            f"give a larger --timeout (timeout=), or a smaller --concurrency (concurrency=))"
        )

    def _ask(self, url: str, body: dict[str, Any] | None = None) -> Any:
        """A side request to the server (its model list; with ``body``, a token count): one
        whole-answer attempt under a short deadline that ``close()`` aborts; raises on any
        failure."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        return self._post(url, data, lambda: None, stream=False, timeout=_ASK_SECONDS)

    def _post(
        self,
        url: str,
        data: bytes | None,
        on_slow: Callable[[], None],
        *,
        stream: bool | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One HTTP attempt under the deadline (a POST of ``data``, a GET without): the decoded
        JSON answer, or Retryable / PolicyError."""
        stream = self.stream if stream is None else stream
        timeout = self.timeout if timeout is None else min(timeout, self.timeout)
        accept = "text/event-stream" if stream else "application/json"
        headers = {"Content-Type": "application/json", "Accept": accept}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        method = "GET" if data is None else "POST"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        attempt = Attempt(timeout, min(self.slow_after, timeout), on_slow)
        with self._lock:
            self._attempts.add(attempt)
        if self._closed:  # close() took its snapshot before we registered
            attempt.abort("closed")
        failure: BaseException | None = None
        raw, streamed = b"", None
        current.attempt = attempt
        try:
            # The socket timeout bounds connect (which happens before the watchdog has a
            # socket to shut down); the watchdog bounds everything after it.
            with self._opener.open(request, timeout=max(attempt.remaining(), 0.001)) as response:
                if stream and "event-stream" in (response.headers.get("Content-Type") or ""):
                    streamed = read_stream(response, self.max_response_bytes)
                else:  # a whole answer (or a server that answered a stream request whole)
                    raw = read_capped(response, self.max_response_bytes)
        except urllib.error.HTTPError as error:
            failure = http_failure(error)  # reads the error body, still under the deadline
        except (OSError, http.client.HTTPException, PolicyError) as error:
            failure = error
        finally:
            current.attempt = None
            attempt.finish()  # after this the watchdog can no longer touch the attempt
            with self._lock:
                self._attempts.discard(attempt)
        if attempt.reason == "closed":
            raise PolicyError(f"{self!r} was closed while the request was in flight")
        if attempt.reason == "deadline":
            failure = TimeoutError()  # whatever the shut-down socket made the read raise
        if failure is not None:
            raise classify(failure, timeout) from None
        if streamed is not None:
            return streamed
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            snippet = raw[:ERROR_BODY_CHARS].decode("utf-8", "replace")
            raise PolicyError(f"the server answered invalid JSON ({error}): {snippet!r}") from None

    def _redact(self, text: str) -> str:
        """The text with the API key, should a server echo it, blanked out."""
        return text.replace(self._api_key, "***") if self._api_key else text


def _checked_url(base_url: Any) -> str:
    """``base_url`` without its trailing ``/``; an error unless it is an http(s) URL."""
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be a string, got {base_url!r}")
    parsed = urllib.parse.urlsplit(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"base_url must be an http:// or https:// URL, got {base_url!r}")
    return base_url.rstrip("/")


def _checked_stop(stop: str | Sequence[str] | None) -> list[str] | None:
    """``stop`` as a list of non-empty strings, or None."""
    if isinstance(stop, str):
        stop = [stop]
    elif stop is not None:
        stop = list(stop)
        if not all(isinstance(s, str) and s for s in stop):
            raise ValueError(f"stop must be a string or non-empty strings, got {stop!r}")
    return stop or None


def _checked_extra_body(extra_body: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``extra_body`` (a JSON-able dict without ``stream``), ``{}`` for None."""
    if extra_body is not None and not isinstance(extra_body, dict):
        raise TypeError(f"extra_body must be a dict or None, got {type(extra_body).__name__}")
    json.dumps(extra_body)  # TypeError now rather than in a worker thread
    if "stream" in (extra_body or {}):
        raise ValueError(
            "extra_body={'stream': ...} is not supported: give ServerOptions(stream=True) or "
            "ServerOptions(stream=False)"
        )
    return dict(extra_body or {})


def _options(config: GenerationConfig) -> dict[str, Any]:
    """The request settings of a :class:`GenerationConfig`, as this API names them (a
    ``max_new_tokens`` of None leaves ``max_tokens`` as it is)."""
    options = {
        "temperature": config.temperature if config.do_sample else 0.0,
        "top_p": config.top_p,
        "seed": config.seed,
    }
    if config.max_new_tokens is not None:
        options["max_tokens"] = config.max_new_tokens
    return options


#: Transport options an ``openai:`` spec may carry after ``?`` (spec name -> constructor
#: argument and type): how requests travel, not what is played.
SPEC_OPTIONS = {
    "concurrency": ("concurrency", int),
    "timeout": ("timeout", float),
    "retries": ("max_retries", int),
}


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``(address, options)`` of a spec ``URL[#MODEL][?concurrency=N&timeout=S&retries=N]``:
    the address without its transport options, and the options as constructor arguments. A
    key or value that is not one of these is a ValueError naming the ones there are."""
    address, _, query = spec.partition("?")
    options: dict[str, Any] = {}
    for pair in filter(None, query.split("&")):
        key, _, value = pair.partition("=")
        if key not in SPEC_OPTIONS:
            raise ValueError(
                f"unknown option {key!r} in {spec!r}: an openai: spec takes "
                f"{', '.join(f'{name}=' for name in SPEC_OPTIONS)} after '?'"
            )
        name, kind = SPEC_OPTIONS[key]
        try:
            options[name] = kind(value)
        except ValueError:
            raise ValueError(
                f"{key} in {spec!r} must be a {kind.__name__}, got {value!r}"
            ) from None
    return address, options


def served_identity(spec: str) -> str | None:
    """What an ``openai:`` seat is, by what its server serves rather than the URL's text: the
    model asked for when the server lists it, the one model it lists when none was asked for;
    None when the server cannot be asked (or serves no such model)."""
    address, _ = split_spec(spec.removeprefix("openai:"))
    base_url, _, model = address.partition("#")
    return identity_at(base_url, model, os.environ.get("OPENAI_API_KEY"))
