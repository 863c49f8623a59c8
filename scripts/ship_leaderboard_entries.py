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

A trained entry whose training run is not here (``cory-imdb``: a CORY run takes about 40
minutes) is **carried over** to a new suite version that plays every one of its tasks as the
version it was evaluated on (the same env spec, items and samples: only the scoring changed,
as from lite-v2 to lite-v3): its recorded episodes are replayed through the environments and
scored by the new version, and its name says so. Greedy decoding of the same prompts gives the
same actions, so this is what a re-run gives; the entry stays unverified, as its model cannot
be loaded here.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from llm_marl_envs.evaluation.evaluate import Team, evaluate
from llm_marl_envs.evaluation.pairings import run_pairings
from llm_marl_envs.evaluation.suite import Suite, load_suite, packaged_version
from llm_marl_envs.leaderboard.board import add_entry, replay_entry, shipped_entries, verify_entry
from llm_marl_envs.leaderboard.entry import open_entry
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
#: the name of an entry carried over from an older suite version (within 80 characters)
CARRIED_NAMES = {
    "cory-imdb": "SmolLM2-135M after CORY on IMDB (seed 2, A leads; {played_on} episodes, rescored)"
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


def carry_over(entry_id: str, suite: Suite, work: Path) -> tuple[Path, str] | None:
    """The shipped entry ``entry_id`` as an evaluation of ``suite`` (module docstring), in
    ``work``, and the label of the version it was played on; None when ``suite`` plays one
    of its tasks otherwise than that version."""
    source = shipped_entries() / entry_id
    results = json.loads((source / "results.json").read_text(encoding="utf-8"))
    old = packaged_version(results["suite"]["name"], results["suite"]["version"])
    if old is None or old.label == suite.label:
        return None
    for name in results["tasks"]:
        a, b = old.task(name), suite.task(name)
        if (a.spec_hash(), a.samples, [i.key for i in a.items]) != (
            b.spec_hash(),
            b.samples,
            [i.key for i in b.items],
        ):
            return None
    out = work / f"{entry_id}-carried"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out, ignore=shutil.ignore_patterns("verification.json"))
    block = {"name": suite.name, "version": suite.version, "hash": suite.hash()}
    results["suite"] = results["manifest"]["suite"] = block
    results.pop("board", None)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    with open_entry(out) as entry:
        rescored, _, differ = replay_entry(entry)
    if differ:
        raise SystemExit(f"{entry_id}: its episodes do not replay on {suite.label}: {differ[:2]}")
    results.update({key: rescored[key] for key in ("tasks", "overall", "complete")})
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"{entry_id}: its {old.label} episodes replayed and scored by {suite.label}")
    return out, old.label


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
            carried = carry_over(entry_id, suite, args.work)
            if carried is None:
                print(f"{entry_id}: skipped, it needs the training run {run}: {command}")
                continue
            out, played_on = carried
            name = CARRIED_NAMES[entry_id].format(played_on=played_on)
        else:
            team = Team.parse(None, spec) if isinstance(spec, dict) else Team.parse(spec)
            out = args.work / entry_id
            evaluate(suite, team, out)  # resumes when out holds a stopped run
        target, aside = shipped_entries() / entry_id, args.work / f"{entry_id}.replaced"
        shutil.rmtree(aside, ignore_errors=True)
        if target.exists():  # kept aside until the new one is in: a refused add loses nothing
            shutil.move(target, aside)
        try:
            add_entry(out, board, entry_id=entry_id, name=name, kind=kind)
        except BaseException:
            if aside.exists():
                shutil.move(aside, target)
            raise
        reverify(entry_id, args.sample)
    if args.pairings:
        table = run_pairings(
            suite, args.pairings, args.work / "crossplay", tasks=args.pairing_tasks
        )
        path = shipped_entries() / f"crossplay-{suite.label}.json"
        path.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
