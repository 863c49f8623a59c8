"""How requests travel to an OpenAI-compatible server: one frozen value, as
:class:`~llm_marl_envs.policies.GenerationConfig` is for how a model generates.

>>> from llm_marl_envs.policies.openai import ServerOptions
>>> options = ServerOptions(concurrency=4, timeout=120)
>>> options.replace(max_retries=0).max_retries
0
>>> ServerOptions(concurrency=0)
Traceback (most recent call last):
...
ValueError: concurrency must be an int >= 1, got 0

:class:`ServerOptions` holds the transport settings of an
:class:`~llm_marl_envs.policies.openai.OpenAIPolicy`: how many requests may be in flight, each
attempt's deadline, the retries and their back-off, the largest answer accepted, the API key
and whether answers are streamed. What is asked of the model (the token budget, sampling, the
seed, stop strings, log-probabilities) stays with the policy and its ``GenerationConfig``.
None of these settings is part of what is played: a resumed evaluation may change them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llm_marl_envs.core.moved import keywords_moved
from llm_marl_envs.core.validation import check_bool, check_int, check_number

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "ServerOptions"]

#: Default cap on an answer body, in bytes. A normal answer is a few KB; 4096 tokens with 20
#: top log-probabilities each come to about 5 MB.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 2**20


@dataclass(frozen=True)
class ServerOptions:
    """How an :class:`~llm_marl_envs.policies.openai.OpenAIPolicy`'s requests travel.

    Attributes:
        concurrency: Most requests in flight at once (across concurrent ``generate`` calls);
            how many are, below it, adapts to the server
            (:mod:`~llm_marl_envs.policies.openai.flow`).
        timeout: Total deadline of one attempt, in seconds: connect, send, and read the whole
            answer. Not a per-read timeout: a server that trickles bytes fails at the deadline.
            None (default): 30 s plus 0.25 s per token of the policy's ``max_tokens``.
        max_retries: Retries after the first attempt for retryable failures (0 = no retry).
        backoff: Base of the exponential wait between retries, in seconds.
        warn_after: Seconds after which a still-running attempt issues a
            :class:`~llm_marl_envs.policies.openai.SlowResponseWarning` (once per prompt);
            None (default): half the deadline; ``math.inf`` never warns.
        max_response_bytes: Largest answer body accepted; a larger one is refused while it is
            read (a :class:`~llm_marl_envs.policies.base.PolicyError`, not retried).
        stream: Stream each answer (default), so an abandoned request stops the server's work;
            False: whole-answer requests, for a server that does not stream.
        api_key: Sent as ``Authorization: Bearer <key>``; None (default): ``$OPENAI_API_KEY``
            if set, read when the policy is made. Never shown in the repr.
    """

    concurrency: int = 8
    timeout: float | None = None
    max_retries: int = 3
    backoff: float = 0.5
    warn_after: float | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    stream: bool = True
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        checked = {
            "concurrency": check_int("concurrency", self.concurrency, 1),
            "timeout": _timeout(self.timeout),
            "max_retries": check_int("max_retries", self.max_retries, 0),
            "backoff": check_number("backoff", self.backoff, 0),
            "warn_after": _warn_after(self.warn_after),
            "max_response_bytes": check_int("max_response_bytes", self.max_response_bytes, 1),
            "stream": check_bool("stream", self.stream),
        }
        if self.api_key is not None and not isinstance(self.api_key, str):
            raise TypeError(f"api_key must be a string or None, got {type(self.api_key).__name__}")
        for name, value in checked.items():  # plain Python types (a numpy int becomes an int)
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, value: ServerOptions | Mapping[str, Any] | None) -> ServerOptions:
        """``value`` as a :class:`ServerOptions`: itself, one made of a mapping of its fields
        (the dict callers passed before there was a class), or the defaults for None."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            _check_names(value, "ServerOptions")
            return cls(**value)
        raise TypeError(f"server options must be a ServerOptions, a mapping or None, got {value!r}")

    def replace(self, **changes: Any) -> ServerOptions:
        """A copy with ``changes`` (checked like the constructor's arguments)."""
        _check_names(changes, "ServerOptions")
        return dataclasses.replace(self, **changes)


#: The names of :class:`ServerOptions`' fields.
FIELDS = tuple(f.name for f in dataclasses.fields(ServerOptions))


def fold_legacy(
    options: ServerOptions | None, legacy: Mapping[str, Any], caller: str
) -> ServerOptions:
    """``options`` (default: the defaults) with the transport keyword arguments a caller was
    given the old way (``timeout=``, ``concurrency=``, ...) folded in, with a
    ``DeprecationWarning`` naming the replacement; a name that is no such argument is a
    ``TypeError`` naming it. (The old keywords work for one release.)"""
    if not legacy:
        return ServerOptions.of(options)
    _check_names(legacy, caller)
    into = "options=ServerOptions({}) (llm_marl_envs.policies.openai.ServerOptions)"
    keywords_moved(caller, legacy, into, stacklevel=3)
    return ServerOptions.of(options).replace(**legacy)


def _check_names(given: Mapping[str, Any], caller: str) -> None:
    unknown = sorted(set(given) - set(FIELDS))
    if unknown:
        raise TypeError(
            f"{caller}() got unexpected keyword argument(s) {', '.join(unknown)}; "
            f"the transport settings are {', '.join(FIELDS)}"
        )


def _timeout(value: Any) -> float | None:
    """``timeout`` checked: a positive, finite number of seconds or None (the default)."""
    return None if value is None else check_number("timeout", value, positive=True)


def _warn_after(value: Any) -> float | None:
    """``warn_after`` checked: a positive number of seconds (``math.inf``: never) or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"warn_after must be a positive number of seconds or None, got {value!r}")
    return float(value)
