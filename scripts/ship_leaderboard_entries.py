"""Make the leaderboard entries that ship with the package (maintainers' script).

Evaluates the baselines and models on the ``lite`` suite, adds each result to the package's
own board (``llm_marl_envs/leaderboard/entries/``) with ``llm_marl_envs.leaderboard.board.add_entry``
(the same checks as ``llm-marl leaderboard add``), verifies each one (its models loaded and
checked, a secret sample regenerated: :mod:`llm_marl_envs.leaderboard.verify`) into the
package's own record of it, ``verification.json`` (every add and verification kept, unsealed:
the package's files are trusted as such; this script is the one place that writes them), and
plays the cross-play of ``--pairings``
models on the lite suite's two-seat-sensitive games (maze and Donor). Existing entries are
kept; pass ``--only NAME ...`` to (re)make some.

Usage: ``python scripts/ship_leaderboard_entries.py [--only random scripted tiny default
cory-imdb] [--work /tmp/lite] [--pairings scripted random tiny default]`` (``--only`` with no
names plays the cross-play alone; finished evaluations in ``--work`` are reused).
``--reverify [--only ...] [--sample N]`` verifies the shipped entries again as they are, without
evaluating (an entry whose model cannot be loaded here, e.g. a checkpoint that does not ship,
is recorded as unverified, naming why).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.pairings import run_pairings
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard.board import add_entry, shipped_entries, verify_entry
from llm_marl_envs.policies import GenerationConfig

#: id -> (the policy of every seat, or a {seat: spec} team; display name; kind)
ENTRIES = {
    "random": ("random", "random text (floor)", "baseline"),
    "scripted": ("scripted", "scripted players (oracles where they exist)", "baseline"),
    "tiny": ("tiny", "tiny random-init GPT-2 (test model)", "model"),
    "default": ("default", "SmolLM2-135M-Instruct (embedded, greedy)", "model"),
    # CORY's two models after `python baselines/cory.py --seed 2 --out-dir runs/cory-imdb-s2`
    # (the default IMDB run; model A in seat 0, as in the trainer's own evaluation)
    "cory-imdb": (
        {"0": "ckpt:runs/cory-imdb-s2#A", "1": "ckpt:runs/cory-imdb-s2#B"},
        "SmolLM2-135M after CORY on IMDB (seed 2; model A leads)",
        "trained",
    ),
}
#: the training run each trained entry needs, and the command that makes it
TRAINING = {
    "cory-imdb": (
        "runs/cory-imdb-s2",
        "python baselines/cory.py --seed 2 --out-dir runs/cory-imdb-s2",
    )
}


def reverify(entry_id: str, sample: int | None) -> dict:
    """Verify a shipped entry as ``llm-marl leaderboard verify`` does (the same reader, rules,
    replay and score-sized secret sample) and append it to the entry's record in the package
    (``verification.json``, unsealed: the package's files are trusted as such)."""
    # the shipped entries were made on the CPU in float32: regenerate them there
    where = GenerationConfig(device="cpu", dtype="float32")
    board = shipped_entries().parent  # the package's own board
    verification = verify_entry(entry_id, board, sample=sample, generation=where)
    verdict = "verified" if verification["verified"] else "NOT verified"
    print(
        f"{entry_id}: {verdict}, {verification['regenerated']} of "
        f"{verification['sample']['size']} regenerated",
        *verification["problems"],
    )
    return verification


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(ENTRIES), choices=list(ENTRIES))
    parser.add_argument("--work", type=Path, default=Path("/tmp/llm-marl-lite"))
    parser.add_argument("--pairings", nargs="*", default=[])
    parser.add_argument("--pairing-tasks", nargs="*", default=["maze", "donor"])
    parser.add_argument("--reverify", action="store_true", help="verify the shipped entries again")
    parser.add_argument("--sample", type=int, default=None, help="episodes to regenerate")
    args = parser.parse_args()
    if args.reverify:
        for entry_id in args.only:
            reverify(entry_id, args.sample)
        return
    suite = load_suite("lite")
    board = shipped_entries().parent  # add_entry writes <board>/entries/<id>
    for entry_id in args.only:
        spec, name, kind = ENTRIES[entry_id]
        run, command = TRAINING.get(entry_id, (None, None))
        if run is not None and not Path(run, "checkpoint").is_dir():
            print(f"{entry_id}: skipped, it needs the training run {run}: {command}")
            continue
        team = Team.parse(None, spec) if isinstance(spec, dict) else Team.parse(spec)
        out = args.work / entry_id
        evaluate(suite, team, out)  # resumes when out holds a stopped run
        target = shipped_entries() / entry_id
        if target.exists():
            shutil.rmtree(target)
        add_entry(out, board, entry_id=entry_id, name=name, kind=kind)
        reverify(entry_id, args.sample)
    if args.pairings:
        table = run_pairings(
            suite, args.pairings, args.work / "crossplay", tasks=args.pairing_tasks
        )
        path = shipped_entries() / f"crossplay-{suite.label}.json"
        path.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
