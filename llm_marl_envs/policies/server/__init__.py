"""Serve any :class:`Policy` over the OpenAI-compatible HTTP API, with micro-batching.

>>> from llm_marl_envs.policies import CallablePolicy, Prompt
>>> from llm_marl_envs.policies.openai import OpenAIPolicy
>>> with serve_policy(CallablePolicy(lambda observation, info: "left")) as server:
...     client = OpenAIPolicy(server.url)
...     print(client.generate([Prompt("gnome_0", "left or right?", [], {})])[0].text)
...     client.close()
left

Endpoints (under ``/v1``):

- ``POST /v1/chat/completions``: ``messages`` become ``Prompt(agent="remote",
  observation=<the last user message, or all messages rendered as "role: content" lines>,
  messages=messages, info={})``.
- ``POST /v1/completions``: ``prompt`` (a string or a list of strings) becomes
  ``Prompt(agent="remote", observation=prompt, messages=[], info={})``.
- ``GET /v1/models``: lists ``model_name`` (with ``max_model_len`` when one is given).
- ``POST /tokenize`` (at the root, as vLLM has it): ``{"count": <prompt tokens>}`` for a chat
  (``messages``, rendered with the chat template) or completion (``prompt``) request, when the
  policy has a tokenizer (an :class:`~llm_marl_envs.policies.hf.HFPolicy`); else HTTP 404.

With ``max_model_len`` (and a policy that counts tokens), a request whose prompt tokens plus
``max_tokens`` exceed it is refused with HTTP 400 in vLLM's words, as vLLM refuses it.

Answers follow the OpenAI JSON shape; ``usage`` carries the token counts the policy reports
(``prompt_ids`` / ``completion_ids``), and ``logprobs`` is filled when the request asks for it
and the completion has them (token strings are ``"token_id:<id>"`` when the ids are known, as
vLLM's ``--return-tokens-as-token-ids`` writes them). A request with ``return_token_ids: true``
gets the ids the policy reports as vLLM (>= 0.10.2) answers them: ``prompt_token_ids`` at the
top of a chat answer and ``token_ids`` in its choice; both in each choice of a completion
answer. Sampling fields of a request (``max_tokens``, ``temperature``, ``stop``, ``seed``, ...)
are ignored: the policy's own settings apply. ``n > 1`` is refused with HTTP 400.

Streaming (``"stream": true``, on both endpoints) answers with server-sent events in OpenAI's
chunk format, as ``vllm serve`` does: ``data: {...}`` lines of ``chat.completion.chunk``
objects (first the assistant ``role``, then the ``content``, then an empty ``delta`` with the
``finish_reason``) or of ``text_completion`` chunks (each choice's ``text``, then its
``finish_reason``), a last chunk with ``usage`` and no choices when
``stream_options.include_usage`` is true, and ``data: [DONE]``. ``logprobs`` and the token
ids ride on the content chunk (``prompt_token_ids`` on a chat stream's first chunk). The
policy writes whole completions, so each one arrives as a single content chunk once it is
generated; a request the server refuses, or a policy failure, is answered before the stream
starts, with its HTTP status and JSON error body as without streaming.

Micro-batching: one worker thread owns the policy. Requests that arrive within ``batch_wait``
seconds of the first waiting one (up to ``max_batch`` prompts) are answered by a single
``policy.generate`` call, so a model that is efficient on batches stays efficient when served,
and a policy that is not thread-safe is only ever called from that one thread.

**The HTTP stack** is uvicorn (the ``serve`` extra: ``pip install 'llm-marl-envs[serve]'``),
as under vLLM's OpenAI server; the app (:mod:`~llm_marl_envs.policies.server.http`) sits behind
:class:`~llm_marl_envs.core.asgi_guard.Guard`, which checks each request's authority, size and
JSON bounds before the API sees it.

Bad requests get HTTP 400 naming the field (``param``), unknown paths 404, a policy exception
HTTP 500, each with an OpenAI style ``{"error": {"message", "type", "param", "code"}}`` body.
A failure the server did not expect (a policy's exception included) is logged with an id, and
the client gets that id and the exception's type, never its text, a traceback, a path or an
upstream URL. The server does not close the policy.

**Limits** (:class:`ServerLimits`; each a flag of the command line), checked before any work:

* ``max_body_bytes`` (``--max-body-bytes``, default 8 MiB): a larger ``Content-Length`` is
  answered 413 before one byte of the body is read; a chunked body is refused (411);
* the body is parsed within bounds (:mod:`~llm_marl_envs.core.bounded_json`): at most
  ``max_json_values`` values (1,000,000) nested at most ``max_json_depth`` deep (32), no
  integer beyond 64 bits, no ``NaN`` / ``Infinity`` / ``1e400``, no lone surrogate (each a
  400 naming the place, as ``messages[0].content``);
* ``max_prompts`` (``--max-prompts``, default 256): prompts of a completion request, messages
  of a chat request;
* ``max_tokens`` (``--max-tokens``, default 32,768): the largest ``max_tokens`` a request
  may ask for;
* ``max_queued`` (``--max-queued``, default 4,096): prompts waiting for the worker; a request
  that would pass it is answered 503 with ``Retry-After``;
* ``max_in_progress`` (``--max-in-progress``, default 64): requests being answered at once; one
  more is answered 503 with ``Retry-After`` (uvicorn's own cap, twice that, is a backstop);
* ``header_timeout`` (10 s): a connection whose request line and headers have not arrived is
  closed; ``body_timeout`` (30 s): a body that has not arrived is answered 408;
  ``idle_timeout`` (5 s): an idle keep-alive connection is closed;
* ``shutdown_timeout`` (5 s): ``close()`` returns within it whatever the clients do (a request
  still waiting is answered 503 as the server stops; a policy call in progress is left to
  finish on its own thread).

A client that disconnects has its queued prompts dropped, never played.

**Isolation.** Every request is checked on its own before its prompts join a batch; a batch
whose ``policy.generate`` fails is played again one prompt at a time, so only the prompt that
fails gets the 500 and its batch neighbours their answers.

**Authority.** With ``api_key`` (``--api-key``, or the ``LLM_MARL_API_KEY`` environment
variable), a request must send ``Authorization: Bearer <key>``, compared in constant time,
before its body is read (401). A server bound beyond loopback without a key logs a warning.
``Host`` must name the server (a loopback name, the address it is bound to, or one of
``allowed_hosts``; ``--allowed-host``), and a request with an ``Origin`` header must come
from such a host, so a web page cannot drive a server on loopback through DNS rebinding or a
cross-origin request (403). A server bound to every interface (``0.0.0.0``) takes any
``Host`` unless ``allowed_hosts`` is given: its key is its guard.

Run a model from the command line (needs the ``hf`` extra)::

    python -m llm_marl_envs.policies.server --model tiny --port 8000

or relay another OpenAI-compatible server (``--model openai:http://127.0.0.1:8001/v1#NAME``):
its answers, in this server's shape (a ``transformers serve`` stream never sends
``data: [DONE]``, which some clients, verifiers among them, wait for).

The package's parts: :mod:`~llm_marl_envs.policies.server.serve` (the server, its batching
worker and limits), :mod:`~llm_marl_envs.policies.server.answers` (the API's shape),
:mod:`~llm_marl_envs.policies.server.http` (the ASGI app under uvicorn) and
:mod:`~llm_marl_envs.policies.server.command` (the command line).
"""

from llm_marl_envs.policies.server.command import main
from llm_marl_envs.policies.server.serve import (
    API_KEY_ENV,
    PolicyServer,
    ServerLimits,
    serve_policy,
)

__all__ = ["API_KEY_ENV", "PolicyServer", "ServerLimits", "main", "serve_policy"]
