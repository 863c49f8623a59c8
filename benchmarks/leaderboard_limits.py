"""What ``llm-marl leaderboard add`` costs, for an honest lite entry and for hostile submissions
within the stated limits (issue 38): peak memory (the process's maximum resident set) and wall
time, each ``add`` in a fresh process, side by side with the code of another git revision
(``--baseline REV``, default ``81d1051``: the board before issue 38) run on the same folders.

Cases (each built from one honest lite evaluation, the scripted players with a random GSM8K
pioneer):

* **honest**: the evaluation itself (accepted: every episode replayed);
* **long actions**: every action 16 KiB of text, records re-made by replaying those actions
  (accepted: the largest records an honest-looking run of the lite suite writes);
* **most values**: every record padded to just under :data:`MAX_RECORD_VALUES` JSON values
  (read whole, then refused: none replays);
* **largest records**: every record padded to just under :data:`MAX_RECORD_BYTES` (read
  whole, then refused);
* **[] bomb**, **repeated line**, **small repeated line**, **blank lines**: one task's file a
  gzip of 32 MiB of ``[]`` lines, of one valid episode line repeated (the first maze episode;
  the smallest line that parses as an episode), of newlines (34 KB to 1 MB packed);
* **big results.json**: ``results.json`` padded to just under :data:`MAX_RESULTS_BYTES` with
  :data:`MAX_RESULTS_VALUES` values (accepted: the padding is not a field the board reads);
* **deep results.json**: a 100,000-deep array in ``results.json``.

    PYTHONPATH=. python benchmarks/leaderboard_limits.py [--baseline REV] [--out docs/benchmarks]

About three minutes on 2 cores; writes ``leaderboard_limits.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import shutil
import tempfile
from pathlib import Path

from leaderboard_child import REPO, TEAM, baseline_tree, remove_baseline_tree, run_command

from llm_marl_envs.evaluation.evaluate import Team, evaluate, load_runs
from llm_marl_envs.evaluation.results import score
from llm_marl_envs.evaluation.suite import load_suite
from llm_marl_envs.leaderboard import entry as submission
from llm_marl_envs.leaderboard.replay import replay_episode
from llm_marl_envs.rollout.records import EpisodeRecord, TurnRecord

TARGET_MIB = 512


# --------------------------------------------------------------------------- the cases
def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _rescore(folder: Path) -> None:
    """results.json's scores made to agree with the (edited) episodes, as a forger would."""
    suite = load_suite("lite")
    results = json.loads((folder / "results.json").read_text())
    assignments = {name: block["team"] for name, block in results["tasks"].items()}
    fresh = score(suite, load_runs(suite, folder, assignments), entry=results["entry"], team=None)
    results.update({k: fresh[k] for k in ("tasks", "overall", "complete")})
    (folder / "results.json").write_text(json.dumps(results))


def long_actions(folder: Path) -> None:
    suite = load_suite("lite")
    words = ("cooperate ", "token ", "maze ", "review ", "answer ", "12 ", "+ ")
    text = "".join(words[i % len(words)] for i in range(4_000))[: 16 * 2**10]
    for task in suite.tasks:
        path = folder / "episodes" / f"{task.name}.jsonl"
        rows = _lines(path)
        items = {item.index: item for item in task.items}
        for row in rows:
            fake = EpisodeRecord("", 0, 0, 0, [TurnRecord("", None, "", [], text)] * 200)
            again = replay_episode(task, items[row["item"]], fake)
            again.episode = again.group = row["record"]["episode"]
            again.policies = row["record"]["policies"]
            row["record"] = again.to_dict()
        _write(path, rows)
    _rescore(folder)


def most_values(folder: Path) -> None:
    for path in (folder / "episodes").glob("*.jsonl"):
        rows = _lines(path)
        for row in rows:
            agent = next(iter(row["record"]["final_infos"]), "x")
            pad = [0] * (submission.MAX_RECORD_VALUES - 2_000)
            row["record"]["final_infos"].setdefault(agent, {})["pad"] = pad
        _write(path, rows)


def largest_records(folder: Path) -> None:
    for path in (folder / "episodes").glob("*.jsonl"):
        rows = _lines(path)
        for row in rows:
            agent = next(iter(row["record"]["final_infos"]), "x")
            size = len(json.dumps(row))
            pad = "x" * (submission.MAX_RECORD_BYTES - size - 4_096)
            row["record"]["final_infos"].setdefault(agent, {})["pad"] = pad
        _write(path, rows)


def _bomb(folder: Path, line: bytes) -> None:
    plain = folder / "episodes" / "maze.jsonl"
    plain.unlink()
    packed = gzip.compress(line * (32 * 2**20 // len(line)), compresslevel=9)
    (folder / "episodes" / "maze.jsonl.gz").write_bytes(packed)


def list_bomb(folder: Path) -> None:
    _bomb(folder, b"[]\n")


def repeated_line(folder: Path) -> None:
    _bomb(folder, (folder / "episodes" / "maze.jsonl").read_bytes().splitlines(True)[0])


def small_repeated_line(folder: Path) -> None:
    record = {"env_id": "llm_marl_envs/MazeCollab-v1", "seed": 0, "episode": 0, "group": 0}
    line = {"task": "maze", "key": "seed-0", "item": 0, "sample": 0, "seed": 0, "options": None}
    _bomb(folder, (json.dumps({**line, "record": record}) + "\n").encode())


def blank_lines(folder: Path) -> None:
    _bomb(folder, b"\n")


def big_results(folder: Path) -> None:
    path = folder / "results.json"
    text = path.read_text()
    room = submission.MAX_RESULTS_VALUES - 10_000
    pad = "[" + ",".join(["0"] * room) + "]"
    path.write_text(text.replace("{", '{"padding": ' + pad + ", ", 1))


def deep_results(folder: Path) -> None:
    path = folder / "results.json"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(path.read_text().replace("{", '{"padding": ' + deep + ", ", 1))


CASES = {
    "honest": None,
    "long actions": long_actions,
    "most values": most_values,
    "largest records": largest_records,
    "[] bomb": list_bomb,
    "repeated line": repeated_line,
    "small repeated line": small_repeated_line,
    "blank lines": blank_lines,
    "big results.json": big_results,
    "deep results.json": deep_results,
}


# --------------------------------------------------------------------------- running
def _size(folder: Path) -> tuple[int, int]:
    """(bytes on disk, bytes unpacked) of a submission's files."""
    packed = unpacked = 0
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            packed += len(data)
            unpacked += len(gzip.decompress(data)) if path.suffix == ".gz" else len(data)
    return packed, unpacked


def run_add(code: Path, folder: Path, board: Path) -> dict:
    argv = ["leaderboard", "add", str(folder), "--board", str(board), "--id", "x"]
    outcome, stderr = run_command(code, argv)
    said = stderr.strip().splitlines()
    outcome["said"] = (said[-1] if said else "")[:160]
    outcome["peak_mib"] = round(outcome.pop("peak_kib") / 1024, 1)
    outcome["seconds"] = round(outcome["seconds"], 2)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline",
        default="81d1051",
        help="a git revision to compare with (default: before issue 38)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="leaderboard-limits-"))
    try:
        honest = scratch / "honest"
        team = Team.parse(None, TEAM)
        evaluate(load_suite("lite"), team, honest, progress=False, write=lambda line: None)
        old = baseline_tree(args.baseline, scratch) if args.baseline else None
        rows = []
        for name, build in CASES.items():
            folder = scratch / "cases" / name.replace(" ", "-").replace("[]", "list")
            shutil.copytree(honest, folder)
            if build is not None:
                build(folder)
            packed, unpacked = _size(folder)
            row = {"case": name, "packed_bytes": packed, "unpacked_bytes": unpacked}
            for label, code in (("now", REPO), ("baseline", old)):
                if code is None:
                    continue
                board = scratch / "boards" / f"{label}-{folder.name}"
                row[label] = run_add(code, folder, board)
                print(name, label, row[label], flush=True)
            rows.append(row)
    finally:
        if args.baseline:
            remove_baseline_tree(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
    report = {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "baseline": args.baseline,
        "target_mib": TARGET_MIB,
        "limits": {
            name: getattr(submission, name)
            for name in (
                "MAX_ACTION_BYTES",
                "MAX_RECORD_BYTES",
                "MAX_RECORD_VALUES",
                "MAX_DEPTH",
                "MAX_BLANK_LINES",
                "MAX_EPISODE_FILE_BYTES",
                "MAX_ENTRY_BYTES",
                "MAX_RESULTS_BYTES",
                "MAX_RESULTS_VALUES",
            )
        },
        "cases": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "leaderboard_limits.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "leaderboard_limits.md").write_text(markdown(report))
    print(markdown(report))


def _cell(outcome: dict | None) -> str:
    if outcome is None:
        return "—"
    verdict = "added" if outcome["status"] == 0 else "refused"
    return f"{outcome['peak_mib']:.0f} MiB, {outcome['seconds']:.1f} s, {verdict}"


def markdown(report: dict) -> str:
    lines = [
        "# `leaderboard add` against hostile submissions: memory and time",
        "",
        "Written by `benchmarks/leaderboard_limits.py` (issue 38). Each `llm-marl leaderboard "
        "add` runs in a fresh process on the same folder; *peak* is its maximum resident set "
        f"(`VmHWM`, imports included), against the target of {report['target_mib']} MiB for "
        "any submission within the stated limits. *now* is this tree, *baseline* the code of "
        f"`{report['baseline']}`, on the same folders ({report['machine']}, 2 cores shared "
        "with other work: times vary with the load).",
        "",
        "| case | packed | unpacked | now: peak, wall, outcome | baseline: peak, wall, outcome |",
        "|---|---:|---:|---|---|",
    ]
    for row in report["cases"]:
        lines.append(
            f"| {row['case']} | {row['packed_bytes'] / 2**20:.2f} MiB | "
            f"{row['unpacked_bytes'] / 2**20:.1f} MiB | {_cell(row.get('now'))} | "
            f"{_cell(row.get('baseline'))} |"
        )
    lines += ["", "What each refusal said (this tree):", ""]
    for row in report["cases"]:
        said = row["now"]["said"] or "(added)"
        lines.append(f"* {row['case']}: `{said}`")
    lines += ["", "The limits (`llm_marl_envs.leaderboard.entry`):", ""]
    lines += [f"* `{k}` = {v:,}" for k, v in report["limits"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
