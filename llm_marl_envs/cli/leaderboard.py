"""``llm-marl leaderboard add DIR | verify ENTRY | override ENTRY --reason TEXT | build``.

Adds an evaluation to a board (``./leaderboard``) after checking its hashes and replaying every
episode's actions, verifies an entry (its models checked, a secret sample of its episodes
regenerated, kept on the entry's record), records a maintainer's override of an entry's failed
verifications, or builds the static site of the shipped and added entries
(:mod:`llm_marl_envs.leaderboard.board`).
"""

from __future__ import annotations

import argparse

from llm_marl_envs.cli.eval import os_error
from llm_marl_envs.cli.options import (
    add_placement_options,
    add_server_options,
    placement,
    server_options,
)

__all__ = ["add_leaderboard_parser", "run_leaderboard"]


def add_leaderboard_parser(sub) -> None:
    """The ``leaderboard`` subcommand's parser and its own subcommands, added to ``sub``."""
    p_board = sub.add_parser(
        "leaderboard",
        help="add, verify and publish benchmark entries",
        description="A board of llm-marl eval results: add one, verify one by replay, or "
        "build the static site.",
    )
    board_sub = p_board.add_subparsers(dest="board_command", required=True)
    p_add = board_sub.add_parser("add", help="check an evaluation and add it as an entry")
    p_add.add_argument("result_dir", help="an llm-marl eval output folder")
    p_add.add_argument("--id", default=None, help="the entry's id (default: from its name)")
    p_add.add_argument("--name", default=None, help="the entry's display name")
    p_add.add_argument(
        "--kind",
        default=None,
        choices=["model", "baseline", "trained"],
        help="entry kind (default: model when a seat plays a model, else baseline; model and "
        "trained need a model in some seat)",
    )
    p_verify = board_sub.add_parser(
        "verify", help="check an entry's models and regenerate a secret sample of its episodes"
    )
    p_verify.add_argument("entry", help="an entry id (llm-marl leaderboard build lists them)")
    p_verify.add_argument(
        "--sample",
        type=int,
        default=None,
        help="episodes to regenerate (default: enough to catch any forgery that raises the "
        "overall score by --gain with probability >= 0.95; the power of another size is printed)",
    )
    p_verify.add_argument(
        "--gain",
        type=float,
        default=None,
        help="the smallest rise of the overall score (0..1) the sample is sized to catch "
        "(default 0.02)",
    )
    add_placement_options(p_verify)
    add_server_options(p_verify)
    p_override = board_sub.add_parser(
        "override",
        help="record a maintainer's override of an entry's failed verifications, with a reason",
    )
    p_override.add_argument("entry", help="an entry id")
    p_override.add_argument("--reason", required=True, help="why (kept on the record and the site)")
    p_build = board_sub.add_parser("build", help="write the static leaderboard site")
    p_build.add_argument(
        "--suite",
        default="lite",
        help="the suite whose entries to show (lite, or an older version by its label: lite-v1)",
    )
    p_build.add_argument("--out", default="leaderboard-site", help="output folder")
    p_build.add_argument(
        "--no-shipped", action="store_true", help="leave out the entries shipped with the package"
    )
    for parser in (p_add, p_verify, p_override, p_build):
        parser.add_argument(
            "--board", default="leaderboard", help="the board folder (added entries)"
        )


def run_leaderboard(args: argparse.Namespace) -> int:
    """``llm-marl leaderboard add|verify|build``; refusals are one line (exit status 2), a
    write that fails too (disk full, a read-only folder: the board and the site are left as
    they were)."""
    try:
        return _run_leaderboard(args)
    except OSError as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ValueError(
            f"leaderboard {args.board_command}: {os_error(error)}; nothing was changed"
        ) from None


def _run_leaderboard(args: argparse.Namespace) -> int:
    from llm_marl_envs.leaderboard import board as leaderboard  # (heavy: only when run)

    if args.board_command == "add":
        target = leaderboard.add_entry(
            args.result_dir, args.board, entry_id=args.id, name=args.name, kind=args.kind
        )
        print(f"added entry {target.name} to {args.board} ({target})")
        return 0
    if args.board_command == "verify":
        return _verify(args, leaderboard)
    if args.board_command == "override":
        event = leaderboard.override_entry(args.entry, args.board, reason=args.reason)
        print(f"{args.entry}: override recorded at {event['at']}: {event['reason']}")
        return 0
    return _build(args, leaderboard)


def _verify(args: argparse.Namespace, leaderboard) -> int:
    """``leaderboard verify``: 0 when the entry is verified, 1 when not (with its problems)."""
    if args.sample is not None and args.sample < 1:
        raise ValueError("--sample must be at least 1")
    if args.gain is not None and not 0 < args.gain <= 1:
        raise ValueError("--gain must be a share of the overall score, in (0, 1]")
    from llm_marl_envs.policies import GenerationConfig

    result = leaderboard.verify_entry(
        args.entry,
        args.board,
        sample=args.sample,
        generation=GenerationConfig(**placement(args)),
        server_options=server_options(args),
        **({"gain": args.gain} if args.gain is not None else {}),
    )
    sample = result["sample"]
    print(
        f"{args.entry}: {'verified' if result['verified'] else 'NOT verified'}: "
        f"{result['regenerated']} of {sample['size']} regenerated episodes (of "
        f"{sample['episodes']}, drawn from secret seed {result['secret_seed']}) reproduced "
        f"their actions and scores; a sample this size catches any forgery that raises the "
        f"overall score by {sample['gain']:.2f} or more with probability "
        f"{sample['power']:.3f}" + "".join(f"\n  {problem}" for problem in result["problems"])
    )
    return 0 if result["verified"] else 1


def _build(args: argparse.Namespace, leaderboard) -> int:
    """``leaderboard build``: the site written; a board folder left out warns on stderr."""
    import sys
    import warnings

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = leaderboard.build(
            args.out,
            suite_name=args.suite,
            board=args.board,
            shipped=not args.no_shipped,
            write=notes.append,
        )
    for warning in caught:  # a folder left out of the board: one line each, naming it
        print(f"llm-marl: warning: {warning.message}", file=sys.stderr)
    print(f"wrote the leaderboard site: {index} (open it in a browser; no server needed)")
    for note in notes:
        print(note)
    return 0
