"""``llm_marl_envs.testing.fixtures`` as a user's project meets it: a conftest.py that lists the
plugin, tests that ask for its fixtures, run by pytest in a process of its own. The server's
launcher and the Ray command are swapped in the user's conftest, so no model and no Ray node
is started: what is checked is that the fixtures are found, start and stop what they hold,
take a user's model folder, and skip cleanly when what they need is absent."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import llm_marl_envs

REPO = Path(llm_marl_envs.__file__).resolve().parents[1]

CONFTEST = """
import sys

import pytest

import llm_marl_envs.testing.fixtures as fixtures

pytest_plugins = ["llm_marl_envs.testing.fixtures"]

FAKE = (
    "import http.server, sys\\n"
    "argv = sys.argv[1:]\\n"
    "class H(http.server.BaseHTTPRequestHandler):\\n"
    "    def do_GET(self):\\n"
    "        body = argv[1].encode()\\n"
    "        self.send_response(200)\\n"
    "        self.send_header('Content-Length', str(len(body)))\\n"
    "        self.end_headers()\\n"
    "        self.wfile.write(body)\\n"
    "http.server.HTTPServer(('127.0.0.1', int(argv[argv.index('--port') + 1])), H).serve_forever()\\n"
)
fixtures.TransformersServe.launcher = (sys.executable, "-c", FAKE)
fixtures.ray_command = lambda: None  # as on a machine without Ray


@pytest.fixture(scope="session")
def transformers_serve_model(tmp_path_factory):
    return tmp_path_factory.mktemp("my-model")
"""

TESTS = """
import urllib.request


def test_the_server_serves_my_model(transformers_serve):
    with urllib.request.urlopen(transformers_serve.url.replace("/v1", "/health")) as answer:
        served = answer.read().decode()
    assert served.endswith("my-model0")
    assert transformers_serve.spec.endswith("#" + served)
    print("PROCESS", transformers_serve.process.pid)


def test_the_same_server_for_the_session(transformers_serve):
    print("PROCESS", transformers_serve.process.pid)


def test_a_cluster(ray_cluster):
    raise AssertionError("unreachable: the Ray fixtures skip without Ray")


def test_a_factory(ray_cluster_factory):
    raise AssertionError("unreachable: the Ray fixtures skip without Ray")
"""


def _run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-rs",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            *args,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_users_project_gets_a_served_model_and_skips_ray_cleanly(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_mine.py").write_text(textwrap.dedent(TESTS))
    run = _run_pytest(tmp_path)
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-3000:]
    assert "2 passed, 2 skipped" in said, said[-3000:]
    assert said.count("a local Ray cluster needs Ray (the ray extra)") == 2, said[-3000:]
    pids = {line.split()[-1] for line in said.splitlines() if "PROCESS" in line}
    assert len(pids) == 1  # one server for the session
    pid = int(pids.pop())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_the_server_fixture_skips_without_its_web_server(tmp_path):
    conftest = textwrap.dedent(CONFTEST) + '\nsys.modules["uvicorn"] = None  # not installed\n'
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_mine.py").write_text(textwrap.dedent(TESTS))
    run = _run_pytest(tmp_path, "-k", "server")
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-3000:]
    assert "2 skipped" in said and "transformers serve needs uvicorn" in said, said[-3000:]
