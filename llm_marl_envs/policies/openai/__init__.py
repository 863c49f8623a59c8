"""A policy served over the OpenAI-compatible HTTP API (vLLM, llama.cpp, SGLang, hosted
providers): :class:`OpenAIPolicy`, how its requests travel (:class:`ServerOptions`), and what
a server says of itself.

The package's parts: :mod:`~llm_marl_envs.policies.openai.policy` (the policy: requests,
retries, records; its docstring tells the behaviour), :mod:`~llm_marl_envs.policies.openai.http`
(each attempt's deadline and how a failure is classified),
:mod:`~llm_marl_envs.policies.openai.answers` (reading an answer, streamed or whole),
:mod:`~llm_marl_envs.policies.openai.flow` (the window of requests in flight),
:mod:`~llm_marl_envs.policies.openai.context` (the server's models and context length) and
:mod:`~llm_marl_envs.policies.openai.options` (the transport settings).
"""

from llm_marl_envs.policies.openai.policy import (
    DEFAULT_MAX_RESPONSE_BYTES,
    SPEC_OPTIONS,
    OpenAIPolicy,
    ServerOptions,
    SlowResponseWarning,
    served_identity,
    served_models,
    split_spec,
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
