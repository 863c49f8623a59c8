"""The policy interface: a batch of prompts for one agent in, a batch of completions out.

Every way of playing an environment (a transformers model, an OpenAI-compatible server, a
script, a person at the terminal) is a :class:`Policy`. The rollout engine gathers the pending
turns of many episodes, groups them by agent, and calls that agent's policy once per group:

>>> from llm_marl_envs.policies import CallablePolicy, Prompt
>>> echo = CallablePolicy(lambda observation, info: observation.upper())
>>> [c.text for c in echo.generate([Prompt("gnome_0", "left", [], {})])]
['LEFT']

A :class:`Completion` carries the text and, when the policy can give them (the transformers
policy does), the prompt and completion token ids and the completion's per-token
log-probabilities, which trainers need.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CallablePolicy",
    "Completion",
    "Policy",
    "PolicyError",
    "PolicyFn",
    "Prompt",
    "as_policy",
]

#: A per-turn policy function: ``(observation, info) -> action text`` (the scripted players).
PolicyFn = Callable[[str, dict[str, Any]], str]


@dataclass(frozen=True)
class Prompt:
    """One pending turn: what the agent sees.

    Attributes:
        agent: The acting agent's name.
        observation: The observation text (``env.last()[0]``).
        messages: The same prompt as chat messages (``info["messages"]``).
        info: The agent's ``info`` dict at its turn (read-only by convention).
    """

    agent: str
    observation: str
    messages: list[dict[str, str]]
    info: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class Completion:
    """A policy's answer to one prompt.

    Attributes:
        text: The action.
        prompt_ids: Token ids of the prompt as the model saw it (None if unknown).
        completion_ids: Token ids of the generated text (None if unknown).
        logprobs: Log-probability of each completion token under the sampling policy.
        completion_tokens: Tokens generated, when known without the ids (a server's
            ``usage``); None: ``len(completion_ids)`` where there are ids.
        prompt_tokens: Tokens of the prompt, when the policy knows (a server's ``usage``).
    """

    text: str
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None


class PolicyError(RuntimeError):
    """A policy could not answer (a server error, a timeout after retries, ...)."""


class Policy(ABC):
    """Answers batches of prompts for one agent (or several agents, if it is shared)."""

    #: A short name for logs and episode records.
    name: str = "policy"

    @abstractmethod
    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        """One completion per prompt, in order."""

    def close(self) -> None:  # noqa: B027 - optional to override: most policies hold nothing
        """Release resources (connections, worker threads); the default does nothing."""


class CallablePolicy(Policy):
    """Wraps a per-turn function ``(observation, info) -> str`` (the scripted policies).

    Args:
        fn: The function; called once per prompt, in order.
        name: Name for records (default: the function's name).
    """

    def __init__(self, fn: PolicyFn, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(
                f"CallablePolicy needs a callable (observation, info) -> str, got {fn!r}"
            )
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "callable")

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return [Completion(self.fn(p.observation, p.info)) for p in prompts]


def as_policy(policy: Policy | PolicyFn) -> Policy:
    """A :class:`Policy` as is; a plain ``(observation, info) -> str`` function wrapped."""
    if isinstance(policy, Policy):
        return policy
    if callable(policy):
        return CallablePolicy(policy)
    raise TypeError(f"expected a Policy or a callable (observation, info) -> str, got {policy!r}")
