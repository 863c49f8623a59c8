"""How many requests an :class:`~llm_marl_envs.policies.openai.policy.OpenAIPolicy` keeps in
flight: a window that adapts to the server, and each attempt's deadline.

A fixed number of concurrent requests is right for one server and wrong for the next: vLLM
batches 64 requests as cheaply as one, while ``transformers serve`` without continuous batching,
or llama.cpp with one slot, answers one at a time and queues the rest, so with 8 in flight each
request's time includes seven others', and a deadline sized for one answer expires in the queue.
:class:`Window` is additive-increase, multiplicative-decrease (AIMD, as TCP's congestion
window; Jacobson, 1988):

* it **starts low** (:data:`START`) and never exceeds ``most`` (``--concurrency``);
* it **grows while latency holds**: an answer *holds* when its time per token is within
  :data:`HOLDS` of the fastest answer's, or grew less than :data:`BATCHES` times as fast as
  the load (the average number of requests in flight while it ran) grew since that answer: a
  server that batches (vLLM; ``transformers serve --continuous-batching``) answers more
  requests at once without a proportional delay, while one that queues (one request at a
  time) delays each answer in proportion to the load;
* it **starts fast**: until the first timeout, each holding answer adds one request (the
  window doubles per round of answers, TCP's slow start), after which each adds
  ``1 / window`` (one request per round); an answer that does not hold adds nothing, so a
  queueing server's window stops where its answers slow down. Measured with
  ``transformers serve --continuous-batching`` on 2 cores (``benchmarks/server_route.py``),
  the one-per-round ramp alone reached 5 of 8 in the 32 answers of 16 GSM8K episodes;
* it **halves on a timeout** (and on HTTP 429 / 503: the server says it is full).

:func:`deadline` is each attempt's total deadline when none is given: a fixed part for the
connection, queueing and the prompt, and a part per token of ``max_tokens``, so a 512-token
answer is allowed more time than a 16-token one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "BASE_SECONDS",
    "HOLDS",
    "BATCHES",
    "SECONDS_PER_TOKEN",
    "START",
    "Ticket",
    "Window",
    "deadline",
]

#: Requests in flight at the start (before the server has shown what it can take).
START = 2
#: An answer's time per token "holds" while it is at most this many times the fastest seen ...
HOLDS = 1.5
#: ... or while it grew at most this fraction as fast as the load did (the server batches).
BATCHES = 0.75
#: The default deadline of one attempt: this many seconds ...
BASE_SECONDS = 30.0
#: ... plus this many per token of the answer's budget (``max_tokens``).
SECONDS_PER_TOKEN = 0.25


def deadline(max_tokens: int) -> float:
    """The default total deadline of one attempt for an answer of ``max_tokens`` tokens:
    :data:`BASE_SECONDS` plus :data:`SECONDS_PER_TOKEN` per token (128 tokens: 62 s)."""
    return BASE_SECONDS + SECONDS_PER_TOKEN * max_tokens


@dataclass(frozen=True)
class Ticket:
    """One request's room in the window: when it was taken, and the window's load integral
    then (so its release knows the average load the request ran under)."""

    started: float
    area: float


class Window:
    """The requests a policy may have in flight (module docstring). Thread-safe: each attempt
    calls :meth:`acquire` before it is sent and :meth:`release` with its outcome."""

    def __init__(
        self, most: int, start: int = START, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.most = most
        self._clock = clock
        self.size = float(max(1, min(start, most)))
        self.in_flight = 0
        self.peak = 0  # the most requests that were ever in flight at once
        self._fast = float("inf")  # grow by one per holding answer below this size
        self._fastest: tuple[float, float] | None = None  # (seconds per token, load) then
        self._area = 0.0  # the integral of in_flight over time, for each request's load
        self._since = clock()
        self._changed = threading.Condition()

    def restart(self, start: int = START) -> None:
        """Forget what the window learnt (its size, the fastest answers, the peak): it starts
        again at ``start`` as a new one would. Refused while requests are in flight."""
        with self._changed:
            if self.in_flight:
                raise RuntimeError(
                    f"{self.in_flight} request(s) in flight: restart the window between batches"
                )
            self.__init__(self.most, start, self._clock)

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.size))

    def _tick(self) -> float:
        now = self._clock()
        self._area += self.in_flight * (now - self._since)
        self._since = now
        return now

    def acquire(self, stop: Callable[[], bool] = lambda: False) -> Ticket | None:
        """Wait for room in the window and take it (a :class:`Ticket` for :meth:`release`);
        None, without taking room, once ``stop()`` is true."""
        with self._changed:
            while self.in_flight >= self.limit:
                if stop():
                    return None
                self._changed.wait(0.2)
            now = self._tick()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return Ticket(now, self._area)

    def release(
        self,
        outcome: str,
        seconds: float = 0.0,
        tokens: int | None = None,
        ticket: Ticket | None = None,
    ) -> None:
        """Give the room back: ``"ok"`` (an answer, in ``seconds`` for ``tokens`` tokens),
        ``"full"`` (a timeout, HTTP 429 or 503: halve the window) or ``"other"`` (another
        failure: no change). ``ticket`` (from :meth:`acquire`) gives the load the request ran
        under; without it, the requests in flight now."""
        with self._changed:
            now = self._tick()
            load = float(self.in_flight)
            if ticket is not None and now > ticket.started:
                load = max(1.0, (self._area - ticket.area) / (now - ticket.started))
            self.in_flight -= 1
            if outcome == "full":
                self.size = max(1.0, self.size / 2)
                self._fast = self.size
            elif outcome == "ok":
                if self._holds(seconds / max(1, tokens or 1), load):
                    step = 1.0 if self.size < self._fast else 1 / self.size
                    self.size = min(float(self.most), self.size + step)
            self._changed.notify_all()

    def _holds(self, per_token: float, load: float) -> bool:
        if self._fastest is None or per_token < self._fastest[0]:
            self._fastest = (per_token, load)
        fastest, then = self._fastest
        slower, busier = per_token / fastest, load / max(then, 1.0)
        return slower <= HOLDS or slower <= BATCHES * busier
