"""A policy served over the OpenAI-compatible HTTP API (vLLM, llama.cpp, SGLang, hosted providers).

>>> policy = OpenAIPolicy("http://127.0.0.1:8000/v1", model="qwen")  # doctest: +SKIP
>>> policy.generate([Prompt("gnome_0", "left or right?", [], {})])[0].text  # doctest: +SKIP
'left'

Each prompt becomes one request, sent concurrently (at most ``concurrency`` in flight) by a
thread pool; answers come back in prompt order. A prompt with chat ``messages`` goes to
``{base_url}/chat/completions``; one without (or every prompt when ``use_chat=False``) goes to
``{base_url}/completions`` with the observation as the prompt.

``base_url`` is used as given, apart from a trailing slash: pass the API root including its
version segment (``http://host:8000/v1``), as the OpenAI clients do. A URL without ``/v1`` is
not completed, because some servers mount the API elsewhere.

Connection errors, timeouts, HTTP 429 and HTTP 5xx are retried ``max_retries`` times with
exponential back-off (``backoff * 2**k`` seconds, or the server's ``Retry-After`` if longer,
capped at 60 s); other HTTP errors and malformed answers fail at once. Every failure surfaces as
:class:`~llm_marl_envs.policies.base.PolicyError` naming the URL, the cause and the attempts
made; the API key is never logged nor put in a message.

Only the standard library is used (``urllib.request``); there is no connection pooling, so each
request opens its own connection.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any

from llm_marl_envs.policies.base import Completion, Policy, PolicyError, Prompt

__all__ = ["OpenAIPolicy"]

log = logging.getLogger(__name__)

_MAX_RETRY_AFTER = 60.0  # seconds: the longest server-requested wait we honour
_ERROR_BODY_CHARS = 300  # how much of an error response goes into a PolicyError


class _Retryable(Exception):
    """One attempt failed in a way worth retrying (the message says how)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class OpenAIPolicy(Policy):
    """A :class:`Policy` backed by an OpenAI-compatible completions server.

    Args:
        base_url: API root, e.g. ``http://127.0.0.1:8000/v1`` (used as given; trailing ``/`` ok).
        model: The ``model`` field of each request (vLLM wants its served model name).
        api_key: Sent as ``Authorization: Bearer <key>``; default: ``$OPENAI_API_KEY`` if set.
        max_tokens: Most tokens to generate per answer.
        temperature: Sampling temperature (0 = greedy).
        top_p: Nucleus sampling mass, in (0, 1].
        stop: Stop string(s), or None.
        timeout: Seconds allowed per request (connect, and each wait for data).
        max_retries: Retries after the first attempt for retryable failures (0 = no retry).
        backoff: Base of the exponential wait between retries, in seconds.
        concurrency: Most requests in flight at once (across concurrent ``generate`` calls).
        seed: Sent as ``seed`` when given (servers that support it sample reproducibly).
        use_chat: Use ``/chat/completions`` for prompts with messages; False: always
            ``/completions`` with the observation text.
        logprobs: Ask for the sampled tokens' log-probabilities and return them in
            ``Completion.logprobs`` (``logprobs: true`` for chat, ``logprobs: 0`` otherwise).
        extra_body: More JSON fields merged into every request body (they override ours).
        name: Name for records (default ``openai:<model>``).

    Raises:
        ValueError: An argument is out of range (bad URL scheme, non-positive timeout, ...).
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        *,
        api_key: str | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        stop: str | Sequence[str] | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        concurrency: int = 8,
        seed: int | None = None,
        use_chat: bool = True,
        logprobs: bool = False,
        extra_body: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be a string, got {base_url!r}")
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http:// or https:// URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        if api_key is not None and not isinstance(api_key, str):
            raise TypeError("api_key must be a string or None")
        _check_int("max_tokens", max_tokens, minimum=1)
        _check_int("max_retries", max_retries, minimum=0)
        _check_int("concurrency", concurrency, minimum=1)
        if seed is not None:
            _check_int("seed", seed)
        if not _is_number(temperature) or temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        if not _is_number(top_p) or not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
        if not _is_number(timeout) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if not _is_number(backoff) or backoff < 0:
            raise ValueError(f"backoff must be >= 0 seconds, got {backoff!r}")
        if isinstance(stop, str):
            stop = [stop]
        elif stop is not None:
            stop = list(stop)
            if not all(isinstance(s, str) and s for s in stop):
                raise ValueError(f"stop must be a string or non-empty strings, got {stop!r}")
        if extra_body is not None and not isinstance(extra_body, dict):
            raise TypeError(f"extra_body must be a dict or None, got {type(extra_body).__name__}")
        json.dumps(extra_body)  # TypeError now rather than in a worker thread

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.stop = stop or None
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.concurrency = concurrency
        self.seed = seed
        self.use_chat = use_chat
        self.logprobs = logprobs
        self.extra_body = dict(extra_body or {})
        self.name = name or f"openai:{model}"
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        # Our own opener (proxies read from the environment now), not urllib's global one.
        self._opener = urllib.request.build_opener()
        self._executor = ThreadPoolExecutor(concurrency, thread_name_prefix="openai-policy")
        self._closed = False

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> OpenAIPolicy:
        """A policy from ``"http://host:port/v1#model-name"`` (the ``#model`` part is optional).

        Keyword arguments go to the constructor.

        >>> OpenAIPolicy.from_spec("http://127.0.0.1:8000/v1#tiny").model
        'tiny'
        """
        base_url, _, model = spec.partition("#")
        if model:
            kwargs["model"] = model
        return cls(base_url, **kwargs)

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
            return [future.result() for future in futures]
        except CancelledError as error:
            raise PolicyError(f"{self!r} was closed while generating") from error
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        """Cancel queued requests, wait for those in flight, and stop the worker threads."""
        self._closed = True
        self._executor.shutdown(wait=True, cancel_futures=True)

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
        if self.stop:
            body["stop"] = list(self.stop)
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        return url, body

    def _complete(self, prompt: Prompt) -> Completion:
        """Send one prompt, retrying what is worth retrying; parse the answer."""
        url, body = self._request_body(prompt)
        data = json.dumps(body).encode("utf-8")
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                payload = self._post(url, data)
            except _Retryable as failure:
                message = self._redact(str(failure))
                if attempt == attempts or self._closed:
                    raise PolicyError(
                        f"POST {url} failed after {attempt} attempt(s): {message}"
                    ) from None
                wait = self.backoff * 2 ** (attempt - 1)
                if failure.retry_after is not None:
                    wait = max(wait, min(failure.retry_after, _MAX_RETRY_AFTER))
                log.warning("POST %s: %s; retry %d/%d in %.2fs",
                            url, message, attempt, self.max_retries, wait)
                time.sleep(wait)
                continue
            except PolicyError as error:  # not retryable: say how far we got
                raise PolicyError(
                    f"POST {url} failed after {attempt} attempt(s): {self._redact(str(error))}"
                ) from None
            return _parse_completion(payload, url)
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, url: str, data: bytes) -> Any:
        """One HTTP attempt: the decoded JSON answer, or _Retryable / PolicyError."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = _error_detail(error)
            status = f"HTTP {error.code} {error.reason}".rstrip()
            message = f"{status}: {detail}" if detail else status
            if error.code == 429 or error.code >= 500:
                raise _Retryable(message, _retry_after(error)) from None
            raise PolicyError(message) from None
        except urllib.error.URLError as error:  # connection refused, DNS, connect timeout
            reason = error.reason
            if isinstance(reason, TimeoutError):
                raise _Retryable(f"timed out after {self.timeout:g}s (connect)") from None
            raise _Retryable(f"connection error: {reason}") from None
        except TimeoutError:  # socket.timeout is TimeoutError since Python 3.10
            raise _Retryable(f"timed out after {self.timeout:g}s waiting for the server") from None
        except OSError as error:  # reset, broken pipe, incomplete read, remote disconnect
            raise _Retryable(f"connection error: {type(error).__name__}: {error}") from None
        except http.client.HTTPException as error:  # IncompleteRead, BadStatusLine, ...
            raise _Retryable(f"bad HTTP answer: {type(error).__name__}: {error}") from None
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            snippet = raw[:_ERROR_BODY_CHARS].decode("utf-8", "replace")
            raise PolicyError(f"the server answered invalid JSON ({error}): {snippet!r}") from None

    def _redact(self, text: str) -> str:
        """The text with the API key, should a server echo it, blanked out."""
        return text.replace(self._api_key, "***") if self._api_key else text


# ---------------------------------------------------------------------- helpers
def _parse_completion(payload: Any, url: str) -> Completion:
    """A Completion from a chat or text completion answer; PolicyError if fields are missing."""
    try:
        choice = payload["choices"][0]
        if "message" in choice:
            text = choice["message"]["content"]
        else:
            text = choice["text"]
        if text is None:  # e.g. the model answered with a tool call
            text = ""
        if not isinstance(text, str):
            raise TypeError(f"content is {type(text).__name__}, not a string")
        return Completion(text=text, logprobs=_parse_logprobs(choice.get("logprobs")))
    except (KeyError, IndexError, TypeError, AttributeError) as error:
        snippet = json.dumps(payload)[:_ERROR_BODY_CHARS]
        raise PolicyError(
            f"POST {url}: unexpected answer shape ({type(error).__name__}: {error}): {snippet}"
        ) from None


def _parse_logprobs(logprobs: Any) -> list[float] | None:
    """Per-token log-probs from chat (``content[i].logprob``) or legacy (``token_logprobs``)."""
    if not isinstance(logprobs, dict):
        return None
    if isinstance(logprobs.get("content"), list):
        values = [entry.get("logprob") if isinstance(entry, dict) else None
                  for entry in logprobs["content"]]
    elif isinstance(logprobs.get("token_logprobs"), list):
        values = logprobs["token_logprobs"]
    else:
        return None
    if not all(_is_number(value) for value in values):
        return None
    return [float(value) for value in values]


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The server's error message (OpenAI ``{"error": {"message": ...}}`` or raw text), short."""
    try:
        raw = error.read()
    except Exception:  # noqa: BLE001 - the body is only decoration for the message
        return ""
    finally:
        error.close()
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
        message = parsed["error"]["message"] if isinstance(parsed.get("error"), dict) else None
        text = message or parsed.get("error") or parsed.get("detail") or text
    except (json.JSONDecodeError, AttributeError, TypeError, KeyError):
        pass
    return str(text).strip()[:_ERROR_BODY_CHARS]


def _retry_after(error: urllib.error.HTTPError) -> float | None:
    """The ``Retry-After`` header in seconds, if it is a number."""
    value = error.headers.get("Retry-After") if error.headers else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_int(name: str, value: Any, minimum: int | None = None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
