"""A real ``transformers serve`` of a model folder on a loopback port, as a process of its own.

:class:`TransformersServe` starts Hugging Face's own OpenAI-compatible server (a server someone
else wrote, as vLLM or SGLang would be) on ``127.0.0.1``, on the CPU and offline, and waits
until it answers ``/health``; ``openai:`` policies then play against it
(:attr:`~TransformersServe.spec`, :attr:`~TransformersServe.url`). It is a context manager,
and the ``transformers_serve`` fixture of :mod:`llm_marl_envs.testing.fixtures`. It needs
``transformers`` with the ``fastapi`` and ``uvicorn`` its server runs on.

>>> from llm_marl_envs.policies.openai import OpenAIPolicy  # doctest: +SKIP
>>> with TransformersServe("path/to/model-folder") as server:  # doctest: +SKIP
...     policy = OpenAIPolicy(server.url, str(server.model))
...     result = rollout("llm_marl_envs/GSM8K-v0", policy, episodes=4)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

__all__ = ["OFFLINE", "TransformersServe", "free_port"]

#: The environment the server runs with: Hugging Face offline (the model is a local folder).
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
#: Python code that runs ``transformers``'s command line (its ``transformers serve``).
TRANSFORMERS_CLI = "import sys; from transformers.cli.transformers import main; sys.exit(main())"


def free_port() -> int:
    """A TCP port free on ``127.0.0.1`` now (the system's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TransformersServe:
    """``transformers serve MODEL --device cpu`` on ``127.0.0.1:port`` (a free one by default),
    its output appended to ``log``. :meth:`start` waits for ``/health``; :meth:`stop` ends the
    server's whole process group. As a context manager it starts on entry and stops (``SIGTERM``,
    then ``SIGKILL`` after 30 s) on exit.

    Args:
        model: The model folder (the served model's id is its path).
        log: The file the server writes to (appended); None: a new file in the system's temp
            folder, kept for reading after a failure. Its last lines are in every start error.
        port: The port; None: a free one, kept across restarts.
        flags: More ``transformers serve`` flags (``--continuous-batching``).
        start_seconds: How long loading transformers and the model may take.

    A stopped server can be started again (:meth:`start`), on the same port.
    """

    #: The command that runs ``transformers``'s command line: this interpreter's copy.
    launcher: tuple[str, ...] = (sys.executable, "-c", TRANSFORMERS_CLI)

    def __init__(
        self,
        model: Path | str,
        log: Path | str | None = None,
        port: int | None = None,
        flags: list[str] | tuple[str, ...] = (),
        start_seconds: float = 180,
    ) -> None:
        if log is None:
            handle, log = tempfile.mkstemp(prefix="transformers-serve-", suffix=".log")
            os.close(handle)
        self.model, self.log, self.flags = model, Path(log), list(flags)
        self.port = port if port is not None else free_port()
        self.start_seconds = start_seconds
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """The OpenAI API's base URL (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        """The ``openai:`` policy spec of the served model."""
        return f"openai:{self.url}#{self.model}"

    def start(self) -> TransformersServe:
        """Start the server and wait until it answers ``/health`` (a ``RuntimeError`` with the
        log's tail when it exits or does not answer within ``start_seconds``)."""
        argv = [*self.launcher, "serve", str(self.model), "--device", "cpu"]
        argv += ["--host", "127.0.0.1", "--port", str(self.port), *self.flags]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **OFFLINE},
                start_new_session=True,
            )
        deadline = time.monotonic() + self.start_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"transformers serve did not start: {self.log.read_text()[-2000:]}")

    def stop(self, how: signal.Signals = signal.SIGKILL) -> None:
        """End the server's process group: ``SIGKILL`` (default) as a crash would, or
        ``SIGTERM`` and then, after 30 s, ``SIGKILL``."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, how)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> TransformersServe:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop(signal.SIGTERM)
