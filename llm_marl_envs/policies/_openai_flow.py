"""How many requests an :class:`~llm_marl_envs.policies.openai_compat.OpenAIPolicy` keeps in
flight: a window that adapts to the server, and each attempt's deadline.

A fixed number of concurrent requests is right for one server and wrong for the next: vLLM
batches 64 requests as cheaply as one, while ``transformers serve`` without continuous batching,
or llama.cpp with one slot, answers one at a time and queues the rest, so with 8 in flight each
request's time includes seven others', and a deadline sized for one answer expires in the queue.
:class:`Window` is additive-increase, multiplicative-decrease (AIMD, as TCP's congestion
window; Jacobson, 1988):

* it **starts low** (:data:`START`) and never exceeds ``most`` (``--concurrency``);
* it **grows while latency holds**: after an answer whose time per token is within
  :data:`HOLDS` of the best seen, the window grows by ``1 / window`` (one request per round of
  answers); an answer that took longer (the server is queueing) does not grow it;
* it **halves on a timeout** (and on HTTP 429 / 503: the server says it is full).

:func:`deadline` is each attempt's total deadline when none is given: a fixed part for the
connection, queueing and the prompt, and a part per token of ``max_tokens``, so a 512-token
answer is allowed more time than a 16-token one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = [
    "BASE_SECONDS",
    "HOLDS",
    "SECONDS_PER_TOKEN",
    "START",
    "Window",
    "deadline",
]

#: Requests in flight at the start (before the server has shown what it can take).
START = 2
#: An answer's time per token "holds" while it is at most this many times the best seen.
HOLDS = 1.5
#: The default deadline of one attempt: this many seconds ...
BASE_SECONDS = 30.0
#: ... plus this many per token of the answer's budget (``max_tokens``).
SECONDS_PER_TOKEN = 0.25


def deadline(max_tokens: int) -> float:
    """The default total deadline of one attempt for an answer of ``max_tokens`` tokens:
    :data:`BASE_SECONDS` plus :data:`SECONDS_PER_TOKEN` per token (128 tokens: 62 s)."""
    return BASE_SECONDS + SECONDS_PER_TOKEN * max_tokens


class Window:
    """The requests a policy may have in flight (module docstring). Thread-safe: each attempt
    calls :meth:`acquire` before it is sent and :meth:`release` with its outcome."""

    def __init__(self, most: int, start: int = START) -> None:
        self.most = most
        self.size = float(max(1, min(start, most)))
        self.in_flight = 0
        self._best: float | None = None  # the fewest seconds per token of any answer
        self._changed = threading.Condition()

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.size))

    def acquire(self, stop: Callable[[], bool] = lambda: False) -> bool:
        """Wait for room in the window; False (without taking room) once ``stop()`` is true."""
        with self._changed:
            while self.in_flight >= self.limit:
                if stop():
                    return False
                self._changed.wait(0.2)
            self.in_flight += 1
            return True

    def release(self, outcome: str, seconds: float = 0.0, tokens: int | None = None) -> None:
        """Give the room back: ``"ok"`` (an answer, in ``seconds`` for ``tokens`` tokens),
        ``"full"`` (a timeout, HTTP 429 or 503: halve the window) or ``"other"`` (another
        failure: no change)."""
        with self._changed:
            self.in_flight -= 1
            if outcome == "full":
                self.size = max(1.0, self.size / 2)
            elif outcome == "ok":
                per_token = seconds / max(1, tokens or 1)
                if self._best is None or per_token < self._best:
                    self._best = per_token
                if per_token <= HOLDS * self._best:
                    self.size = min(float(self.most), self.size + 1 / self.size)
            self._changed.notify_all()
