"""``llm_marl_envs.testing.TransformersServe`` without a model: its launcher swapped for a tiny
HTTP server that answers ``/health`` (or for one that dies), so what the class itself does,
starting, waiting, the URL and spec, stopping the process group, restarting on the same port
and reporting a failed start, is checked in a second each. The real ``transformers serve``
is played against in tests/policies/test_transformers_serve.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from llm_marl_envs.testing import OFFLINE, TransformersServe, free_port

#: A stand-in for ``transformers serve MODEL ... --port P``: answers GET /health with the argv
#: it was started with and the offline flags it sees, and starts a child of its own (a
#: server's worker) that must end with it.
FAKE_SERVER = r"""
import http.server, json, os, subprocess, sys
argv = sys.argv[1:]
port = int(argv[argv.index("--port") + 1])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("child", child.pid, flush=True)
offline = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"argv": argv, "offline": offline}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


class FakeServe(TransformersServe):
    launcher = (sys.executable, "-c", FAKE_SERVER)


class DyingServe(TransformersServe):
    launcher = (sys.executable, "-c", "import sys; print('no such model folder'); sys.exit(3)")


def _health(server: TransformersServe) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=5) as answer:
        return json.load(answer)


def _child(log: Path) -> int:
    return int(
        next(line for line in log.read_text().splitlines() if line.startswith("child")).split()[1]
    )


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie of ours is gone too (reaped by init otherwise)
            if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


def test_start_waits_for_health_and_stop_ends_the_process_group(tmp_path):
    log = tmp_path / "serve.log"
    server = FakeServe(tmp_path / "model", log, flags=["--continuous-batching"], start_seconds=30)
    assert server.url == f"http://127.0.0.1:{server.port}/v1"
    assert server.spec == f"openai:{server.url}#{tmp_path / 'model'}"
    assert server.start() is server and server.process.poll() is None
    said = _health(server)
    assert said["argv"] == [
        "serve",
        str(tmp_path / "model"),
        "--device",
        "cpu",
        "--host",
        "127.0.0.1",
        "--port",
        str(server.port),
        "--continuous-batching",
    ]
    assert said["offline"] == {k: OFFLINE[k] for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    child = _child(log)
    server.stop()
    assert server.process is None and _gone(child)  # the whole group, the worker included
    server.stop()  # again: nothing


def test_a_stopped_server_starts_again_on_its_port_and_the_context_manager_stops_it(tmp_path):
    port = free_port()
    with FakeServe(tmp_path, tmp_path / "serve.log", port=port, start_seconds=30) as server:
        assert _health(server)["argv"][-1] == str(port)
        server.stop(signal.SIGTERM)
        with pytest.raises(OSError):
            _health(server)
        server.start()
        assert server.port == port and _health(server)["argv"][-1] == str(port)
        process = server.process
    assert server.process is None and process.poll() is not None


def test_a_server_that_exits_is_one_error_with_its_log(tmp_path):
    log = tmp_path / "serve.log"
    with pytest.raises(RuntimeError, match="transformers serve exited: .*no such model folder"):
        DyingServe(tmp_path / "missing", log, start_seconds=30).start()
    assert "no such model folder" in log.read_text()


def test_without_a_log_the_server_writes_to_a_temp_file_kept_after_it_stops(tmp_path):
    server = DyingServe(tmp_path)
    try:
        assert server.log.is_file() and server.log.name.startswith("transformers-serve-")
        with pytest.raises(RuntimeError):
            server.start()
        assert "no such model folder" in server.log.read_text()
    finally:
        server.log.unlink()


def test_free_port_is_free_to_bind():
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # raises if it were taken


def test_importing_the_package_starts_and_imports_nothing_heavy():
    code = (
        "import sys, llm_marl_envs.testing as t\n"
        "print(sorted(m for m in ('pytest', 'ray', 'transformers', 'torch') if m in sys.modules))\n"
        "print(sorted(t.__all__))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "[]"
    assert lines[1] == str(
        sorted(["OFFLINE", "LocalRayCluster", "TransformersServe", "free_port", "ray_command"])
    )
