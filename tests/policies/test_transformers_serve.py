"""The ``openai:`` route against a server someone else wrote (issue 39): ``transformers serve``
(part of transformers; it needs fastapi and uvicorn, in the ``dev`` and ``integrations``
extras) serving the embedded SmolLM2-135M folder on a free loopback port, on the CPU, offline.

``llm-marl rollout`` and ``llm-marl eval`` run through it at default settings; its answers
equal the in-process route's turn for turn; a server killed mid-evaluation stops it in one line
and the same command resumes, nothing played twice; token usage reaches the records and the
manifest; what the server cannot give (token ids, log-probabilities) is refused in one line.
The fast unit tests keep the package's own stand-in server (``test_openai_policy.py``).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="transformers serve needs fastapi (the dev extra)")
pytest.importorskip("uvicorn", reason="transformers serve needs uvicorn (the dev extra)")

from llm_marl_envs.cli import main
from llm_marl_envs.leaderboard.board import shipped_entries
from llm_marl_envs.policies.base import PolicyError, Prompt
from llm_marl_envs.policies.openai import OpenAIPolicy

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("transformers_serve")]


@pytest.fixture
def server(transformers_serve):
    """The run's one server (tests/conftest.py), started again if a test left it stopped."""
    if transformers_serve.process is None or transformers_serve.process.poll() is not None:
        transformers_serve.start()
    return transformers_serve


def _turns(path: Path) -> list[tuple[str, int, list[str]]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    return [(r["key"], r["sample"], [t["action"] for t in r["record"]["turns"]]) for r in rows]


def test_a_rollout_at_default_settings_completes_and_counts_tokens(server, tmp_path, capsys):
    """The issue's collapse: 8 requests at once against a server that answers one at a time,
    a 60 s deadline that the queue ate, each timed-out request retried behind its own ghost.
    Now: the window starts at 2 and adapts, requests stream (an abandoned one stops), and the
    deadline grows with the budget (GSM8K: 128 tokens)."""
    out = tmp_path / "gsm8k.jsonl"
    argv = ["rollout", "llm_marl_envs/GSM8K-v0", "--policy", server.spec, "--episodes", "8"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 8
    tokens = [t.get("completion_tokens") for r in records for t in r["turns"]]
    assert all(isinstance(n, int) and 0 < n <= 128 for n in tokens)  # the server's usage
    assert all(t["action"] == t["action"].strip() for r in records for t in r["turns"])


def test_an_eval_through_the_server_equals_the_in_process_route(server, tmp_path, capsys):
    """``eval lite --tasks imdb`` through the server: every turn is the shipped in-process
    entry's (the embedded model, greedy), and the manifest counts the tokens it generated."""
    out = tmp_path / "eval"
    argv = ["eval", "lite", "--policy", server.spec, "--tasks", "imdb", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    served = _turns(out / "episodes" / "imdb.jsonl")
    in_process = _turns(shipped_entries() / "default" / "episodes" / "imdb.jsonl.gz")
    assert served == in_process
    manifest = json.loads((out / "results.json").read_text())["manifest"]
    assert manifest["tokens_generated"] > 0
    assert manifest["tasks"]["imdb"]["tokens_generated"] == manifest["tokens_generated"]


def test_a_killed_server_stops_the_eval_in_one_line_and_the_same_command_resumes(
    server, tmp_path, capsys
):
    out = tmp_path / "eval"
    argv = ["eval", "lite", "--policy", server.spec, "--tasks", "imdb", "--out", str(out)]
    argv += ["--no-progress", "--retries", "1", "--timeout", "20"]
    killer = subprocess.Popen(  # kill the server a few seconds into the evaluation
        [
            sys.executable,
            "-c",
            f"import os, time, signal; time.sleep(6); os.killpg({server.process.pid}, 9)",
        ]
    )
    try:
        assert main(argv) == 1
    finally:
        killer.wait(timeout=60)
    said = capsys.readouterr().out
    assert "eval stopped:" in said and "run the same command to resume" in said
    kept = sum(
        len(path.read_text().splitlines()) for path in (out / "progress").glob("imdb.*.jsonl")
    )
    server.start()  # restarted on the same port, and reached by another name: the seat is
    # the model the server serves, not the URL's text
    again = [a.replace("127.0.0.1", "localhost") if a.startswith("openai:") else a for a in argv]
    assert again != argv and main(again) == 0
    turns = _turns(out / "episodes" / "imdb.jsonl")
    assert len(turns) == 32 and len({(key, sample) for key, sample, _ in turns}) == 32
    assert kept < 32  # the kill landed mid-evaluation: the resume played the rest only
    in_process = _turns(shipped_entries() / "default" / "episodes" / "imdb.jsonl.gz")
    assert turns == in_process


def test_what_the_server_cannot_give_is_refused_in_one_line(server, tmp_path, capsys):
    """``--include-tokens`` and ``logprobs`` against a server that gives neither: a one-line
    refusal at the first answer, never records with silent nulls."""
    out = tmp_path / "tokens.jsonl"
    argv = ["rollout", "llm_marl_envs/IMDBSentiment-v1", "--policy", server.spec]
    argv += ["--episodes", "2", "--include-tokens", "--out", str(out), "--no-progress"]
    assert main(argv) == 1
    said = capsys.readouterr().out
    assert "leave --include-tokens out" in said and said.count("\n") == 1
    assert not out.exists() or out.read_text() == ""
    policy = OpenAIPolicy(server.url, server.spec.partition("#")[2], logprobs=True, max_tokens=4)
    try:
        with pytest.raises(PolicyError, match="no log-probabilities"):
            policy.generate([Prompt("a", "Hi", [{"role": "user", "content": "Hi"}], {})])
    finally:
        policy.close()
