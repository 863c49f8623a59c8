"""A policy server with injected faults and a request log, for the tests of its clients."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from llm_marl_envs.policies.base import Policy
from llm_marl_envs.policies.openai import OpenAIPolicy, ServerOptions
from llm_marl_envs.policies.server import PolicyServer
from llm_marl_envs.policies.server.answers import RequestError

#: The names of :class:`ServerOptions`' fields.
SERVER_FIELDS = {field.name for field in dataclasses.fields(ServerOptions)}


class FaultyPolicyServer(PolicyServer):
    """:class:`PolicyServer` that records every request and can slow or fail them.

    Args:
        delay: Seconds every request waits before it is handled (client timeouts); a close
            ends the wait with HTTP 503.
        fail_first: The first ``fail_first`` requests are answered ``fail_status``.
        fail_status: The HTTP status of those injected failures.

    Attributes:
        requests: One ``{"method", "path", "headers", "body"}`` dict per request.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        delay: float = 0.0,
        fail_first: int = 0,
        fail_status: int = 500,
        **options: Any,
    ) -> None:
        self.delay, self.fail_first, self.fail_status = delay, fail_first, fail_status
        self.requests: list[dict[str, Any]] = []
        self._closing = threading.Event()
        super().__init__(policy, **options)

    def _admit(self, number: int, method: str, path: str, headers: dict, body: Any) -> None:
        self.requests.append({"method": method, "path": path, "headers": headers, "body": body})
        if self.delay and self._closing.wait(self.delay):
            raise RequestError(503, "the server is shutting down", "server_error")
        if number <= self.fail_first:
            raise RequestError(
                self.fail_status, f"injected failure {number}/{self.fail_first}", "server_error"
            )

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping in an injected delay
        super().close()


def openai_client(url: str, *args: Any, **kwargs: Any) -> OpenAIPolicy:
    """An :class:`OpenAIPolicy` of ``url`` whose keyword arguments may mix the policy's own
    with :class:`ServerOptions` fields (``timeout=``, ``backoff=``, ...): those become its
    ``options``, as the tests wrote them before there was a class."""
    fields = {name: kwargs.pop(name) for name in list(kwargs) if name in SERVER_FIELDS}
    return OpenAIPolicy(url, *args, options=ServerOptions(**fields), **kwargs)
