"""``llm-marl rollout`` and ``llm-marl play`` with scripted policies (models: tests/rollout), and
``llm-marl rollout`` against a misbehaving OpenAI-compatible server (timeouts, caps, Ctrl-C)."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from llm_marl_envs.cli import main
from llm_marl_envs.cli.commands import run_play
from llm_marl_envs.registry import parse_assignments
from llm_marl_envs.rollout import read_jsonl


def test_rollout_writes_jsonl_and_prints_a_summary(tmp_path, capsys):
    out = tmp_path / "maze.jsonl"
    code = main(
        [
            "rollout",
            "llm_marl_envs/MazeCollab-v0",
            "--policy",
            "scripted",
            "--agent",
            "gnome_1=random",
            "--episodes",
            "5",
            "--batch-size",
            "2",
            "--seed",
            "4",
            "--out",
            str(out),
            "--show",
            "1",
            "--env-arg",
            "size=5",
            "--no-progress",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "=== llm_marl_envs/MazeCollab-v0 | episode 0 | seed 4" in text
    assert "MazeCollab-v0  gnome_0" in text and "episodes written to" in text
    records = read_jsonl(out)
    assert sorted(r.episode for r in records) == list(range(5))
    assert all(r.env_kwargs == {"size": 5} for r in records)
    assert records[0].policies == {"gnome_0": "scripted:gnome_0", "gnome_1": "random"}


def test_rollout_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "scripted", "--episodes", "0"])
    with pytest.raises(SystemExit):
        main(["rollout", "llm_marl_envs/MazeCollab-v0", "--agent", "gnome_0"])
    capsys.readouterr()
    assert main(["rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "gpt-17"]) == 2
    assert "llm-marl: error: unknown policy spec" in capsys.readouterr().err
    argv = ["rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "scripted"]
    assert main([*argv, "--agent", "gnome_7=random"]) == 2
    assert "no agent" in capsys.readouterr().err


def test_parse_assignments_reads_yaml_values():
    assert parse_assignments(
        ["size=7", "variant=full", "turn_weights=[1.2, 0.8]", "flag=true"], "x"
    ) == {
        "size": 7,
        "variant": "full",
        "turn_weights": [1.2, 0.8],
        "flag": True,
    }
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_assignments(["novalue"], "--env-arg")


def test_play_lets_a_person_move_a_gnome():
    typed = iter(["MOVE: stay\\", "SAY: waiting for you"] + ["stay"] * 200)
    shown = []
    returns = run_play(
        "llm_marl_envs/MazeCollab-v0",
        humans=["gnome_0"],
        policy="scripted",
        seed=2,
        env_kwargs={"size": 5},
        read=lambda prompt: next(typed),
        write=shown.append,
    )
    assert set(returns) == {"gnome_0", "gnome_1"}
    text = "\n".join(shown)
    assert "gnome_0 (" in text and "[gnome_1] MOVE:" in text and "Game over" in text


# ---------------------------------------------------------------------- a misbehaving server
# `llm-marl rollout --policy openai:URL` against a real server on 127.0.0.1 that answers the
# first requests well and then misbehaves. The maze with size=5, max_cycles=2 has 4 turns per
# episode whatever the answers, so with --batch-size 1 requests 1-4 are episode 0.
MAZE_ARGS = [
    "llm_marl_envs/MazeCollab-v0",
    "--env-arg",
    "size=5",
    "--env-arg",
    "max_cycles=2",
    "--batch-size",
    "1",
    "--no-progress",
]


def _chat_body(content) -> bytes:
    message = {"role": "assistant", "content": content}
    return json.dumps(
        {"choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
    ).encode()


@pytest.fixture
def fake_openai():
    """Start a server; ``behaviour(n)`` says how to answer request ``n`` (1-based):
    ``"ok"``, ``"null"`` (content null), ``"hang"``, ``"trickle"`` (a byte every 0.1 s) or an
    int (an answer of that many bytes). ``server.hung`` is set when a request starts hanging."""
    stop = threading.Event()
    servers = []

    def start(behaviour):
        counter = itertools.count(1)
        hung = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                kind = behaviour(next(counter))
                if kind == "hang":
                    hung.set()
                    stop.wait(30)
                    return
                if kind == "trickle":
                    self.send_response(200)
                    self.send_header("Content-Length", "10000")
                    self.end_headers()
                    for _ in range(100):
                        if stop.wait(0.1):
                            return
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    return
                body = _chat_body(None if kind == "null" else "MOVE: stay")
                if isinstance(kind, int):
                    body = _chat_body("MOVE: stay " + "x" * kind)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = False
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        servers.append((httpd, thread))
        httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        httpd.hung = hung
        return httpd

    yield start
    stop.set()
    for httpd, thread in servers:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.mark.parametrize("fault", ["hang", "trickle"])
@pytest.mark.slow
def test_rollout_timeout_and_retries_bound_a_stuck_server(tmp_path, capsys, fake_openai, fault):
    server = fake_openai(lambda n: "ok" if n <= 4 else fault)
    out = tmp_path / "stuck.jsonl"
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(
            [
                "rollout",
                *MAZE_ARGS,
                "--policy",
                f"openai:{server.url}",
                "--episodes",
                "3",
                "--timeout",
                "0.6",
                "--retries",
                "1",
                "--out",
                str(out),
            ]
        )
    elapsed = time.monotonic() - started
    text = capsys.readouterr().out
    assert code == 1
    assert 1.2 < elapsed < 5.0  # two attempts of 0.6 s (a trickle used to hang for ever)
    assert "timed out" in text and "2 attempt(s)" in text
    assert "1 finished episode(s) kept" in text and str(out) in text
    assert [r.episode for r in read_jsonl(out)] == [0]
    slow = [w for w in caught if w.category.__name__ == "SlowResponseWarning"]
    assert len(slow) == 1 and "0.3s" in str(
        slow[0].message
    )  # once per prompt, at half the deadline


def test_rollout_null_content_is_a_failure_not_an_empty_action(tmp_path, capsys, fake_openai):
    server = fake_openai(lambda n: "ok" if n <= 4 else "null")
    out = tmp_path / "null.jsonl"
    code = main(
        [
            "rollout",
            *MAZE_ARGS,
            "--policy",
            f"openai:{server.url}",
            "--episodes",
            "3",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 1
    assert "content is null" in text and "1 finished episode(s) kept" in text
    assert [r.episode for r in read_jsonl(out)] == [0]
    assert all(t.action for r in read_jsonl(out) for t in r.turns)


def test_rollout_refuses_an_answer_over_the_size_cap(tmp_path, capsys, fake_openai):
    server = fake_openai(lambda n: "ok" if n <= 4 else 2_000_000)
    out = tmp_path / "huge.jsonl"
    code = main(
        [
            "rollout",
            *MAZE_ARGS,
            "--policy",
            f"openai:{server.url}",
            "--episodes",
            "3",
            "--timeout",
            "5",
            "--max-response-bytes",
            "100K",
            "--out",
            str(out),
        ]
    )
    text = capsys.readouterr().out
    assert code == 1
    assert "max_response_bytes=102400" in text and "1 finished episode(s) kept" in text
    assert [r.episode for r in read_jsonl(out)] == [0]


def test_rollout_skips_records_over_the_record_cap(tmp_path, capsys):
    out = tmp_path / "maze.jsonl"
    with pytest.warns(UserWarning, match="not written"):
        code = main(
            [
                "rollout",
                "llm_marl_envs/MazeCollab-v0",
                "--policy",
                "scripted",
                "--episodes",
                "2",
                "--out",
                str(out),
                "--no-progress",
                "--max-record-bytes",
                "1K",
            ]
        )
    assert code == 0
    assert read_jsonl(out) == []  # every maze record is longer than 1 KiB: none is cut short
    text = capsys.readouterr().out
    assert "; 0 episodes written to" in text and "(2 over the record size cap, not written)" in text


def test_rollout_server_options_are_checked(capsys):
    for bad in (
        ["--timeout", "0"],
        ["--timeout", "inf"],
        ["--retries", "-1"],
        ["--max-response-bytes", "0"],
        ["--max-response-bytes", "lots"],
        ["--max-response-bytes", "infM"],
        ["--max-record-bytes", "0"],
    ):
        with pytest.raises(SystemExit):
            main(["rollout", *MAZE_ARGS, "--policy", "scripted", *bad])


CTRL_C_CHILD = textwrap.dedent("""
    import signal, sys
    # Python turns SIGINT into KeyboardInterrupt only if the parent left SIGINT at its default;
    # a test runner started in the background may not have.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from llm_marl_envs.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_ctrl_c_stops_with_the_kept_summary_and_exit_130(tmp_path, fake_openai):
    # requests 1-8: episodes 0 and 1; request 9 hangs until the child is interrupted
    server = fake_openai(lambda n: "ok" if n <= 8 else "hang")
    out = tmp_path / "interrupted.jsonl"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CTRL_C_CHILD,
            "rollout",
            *MAZE_ARGS,
            "--policy",
            f"openai:{server.url}",
            "--episodes",
            "5",
            "--out",
            str(out),
        ],  # the default 60 s deadline: only Ctrl-C ends the wait
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.hung.wait(30), "the child never reached the hanging request"
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=15)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert "rollout stopped: interrupted (Ctrl-C); 2 finished episode(s) kept" in stdout
    assert f"(written to {out})" in stdout and "MazeCollab-v0  gnome_0" in stdout  # the summary
    assert [r.episode for r in read_jsonl(out)] == [0, 1]


def test_rollout_with_out_keeps_no_record_and_prints_the_same_summary(tmp_path):
    """``llm-marl rollout --out`` kept every record in memory (issue 33); now it keeps none,
    and its summary (from running totals) and ``--show`` (read back) are what they were."""
    from llm_marl_envs.cli.commands import RolloutOutput, run_rollout

    printed = {}
    results = {}
    for keep in ("all", None):
        lines: list[str] = []
        results[keep] = run_rollout(
            "llm_marl_envs/DonorGame-v0",
            policy="scripted",
            episodes=7,
            batch_size=3,
            seed=1,
            env_kwargs={"num_agents": 4},
            output=RolloutOutput(
                out=str(tmp_path / f"{keep}.jsonl"), show=2, progress=False, keep=keep
            ),
            write=lines.append,
        )
        printed[keep] = [line for line in lines if " turns in " not in line]  # timings differ
    assert results[None].episodes == [] and results[None].finished == 7
    assert len(results["all"].episodes) == 7
    assert printed[None] == printed["all"]
    assert "| episode 0 |" in printed[None][0] and "| episode 1 |" in printed[None][1]


def test_rollout_output_keeps_no_record_in_memory_only_with_a_file():
    """``RolloutOutput.keep`` unset: ``"none"`` with ``out`` (the records are in the file),
    else ``"all"``; a ``keep`` given is passed on as it is."""
    from llm_marl_envs.cli.commands import RolloutOutput

    assert RolloutOutput().rollout_kwargs()["keep"] == "all"
    assert RolloutOutput(out="r.jsonl").rollout_kwargs()["keep"] == "none"
    assert RolloutOutput(out="r.jsonl", keep="all").rollout_kwargs() == {
        "out": "r.jsonl",
        "include_tokens": False,
        "progress": None,
        "max_record_bytes": 64 * 2**20,
        "keep": "all",
    }
