"""The policy server's command line: ``python -m llm_marl_envs.policies.server``.

It serves a transformers model (``--model tiny|default|PATH``; the ``hf`` extra) or relays
another OpenAI-compatible server (``--model openai:URL#MODEL``), with the limits of
:class:`~llm_marl_envs.policies.server.serve.ServerLimits` as flags.
"""

from __future__ import annotations

import argparse
import logging
import os

from llm_marl_envs.policies.base import Policy
from llm_marl_envs.policies.server.serve import API_KEY_ENV, ServerLimits, serve_policy

__all__ = ["main"]

log = logging.getLogger("llm_marl_envs.policies.server")  # the package's

#: The limits the command line sets, each as ``--max-...`` (the others keep their defaults).
LIMIT_FLAGS = ("max_body_bytes", "max_prompts", "max_tokens", "max_queued", "max_in_progress")


def main(argv: list[str] | None = None) -> None:
    """``python -m llm_marl_envs.policies.server --model tiny|default|PATH|openai:URL#MODEL``.

    An ``openai:`` model relays another server's answers (its requests' messages go on
    upstream; the answers come back in this server's OpenAI shape, streams ending with
    ``data: [DONE]``), served under the upstream's model name.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        limits = ServerLimits(**{name: getattr(args, name) for name in LIMIT_FLAGS})
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    logging.basicConfig(level=logging.INFO)
    policy, name = _policy(args.model)
    server = serve_policy(
        policy,
        args.host,
        args.port,
        model_name=name,
        max_batch=args.max_batch,
        batch_wait=args.batch_wait,
        max_model_len=args.max_model_len,
        api_key=args.api_key,
        limits=limits,
        allowed_hosts=args.allowed_host,
    )
    log.info("serving %s at %s (Ctrl-C stops)", args.model, server.url)
    try:
        server.serve_forever()
    finally:
        policy.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Serve a transformers policy over the OpenAI API.")
    parser.add_argument(
        "--model",
        default="default",
        help="tiny, default, a model path/id, or openai:URL#MODEL (relay another server)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument(
        "--max-model-len", type=int, default=None, help="the context length to report and keep"
    )
    parser.add_argument("--batch-wait", type=float, default=0.01)
    parser.add_argument(
        "--api-key",
        default=os.environ.get(API_KEY_ENV) or None,
        help=f"the key clients must send as 'Authorization: Bearer KEY' (default: ${API_KEY_ENV})",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="NAME",
        help="a host name clients may reach the server by, besides loopback's (repeatable)",
    )
    defaults = ServerLimits()
    for name in LIMIT_FLAGS:
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            type=int,
            default=getattr(defaults, name),
            help=f"limit: {name.replace('_', ' ')} (default {getattr(defaults, name):,})",
        )
    return parser


def _policy(model: str) -> tuple[Policy, str]:
    """The policy a ``--model`` names and the model name the server reports for it."""
    if model.startswith("openai:"):
        from llm_marl_envs.policies.openai import OpenAIPolicy

        policy = OpenAIPolicy.from_spec(model[len("openai:") :])
        return policy, policy.model
    from llm_marl_envs.policies.hf import HFPolicy  # heavy: only here

    return HFPolicy.from_spec(model), model
