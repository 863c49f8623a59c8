"""``transformers serve`` of a model folder on a loopback port, as a process of its own: the
real OpenAI-compatible server the tests and ``benchmarks/server_route.py`` play against.

Not part of the public API; it needs the ``fastapi`` and ``uvicorn`` of the ``dev`` extra.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
_CLI = "import sys; from transformers.cli.transformers import main; sys.exit(main())"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TransformersServe:
    """``transformers serve MODEL --device cpu`` on ``127.0.0.1:port`` (a free one by default),
    its output appended to ``log``. ``start`` waits for ``/health``; a context manager too.

    Args:
        model: The model folder (the served model's id is its path).
        log: The file the server writes to.
        port: The port; None: a free one, kept across restarts.
        flags: More ``transformers serve`` flags (``--continuous-batching``).
        start_seconds: How long loading transformers and the model may take.
    """

    def __init__(
        self,
        model: Path | str,
        log: Path,
        port: int | None = None,
        flags: list[str] | tuple[str, ...] = (),
        start_seconds: float = 180,
    ) -> None:
        self.model, self.log, self.flags = model, Path(log), list(flags)
        self.port = port if port is not None else free_port()
        self.start_seconds = start_seconds
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        """The ``openai:`` policy spec of the served model."""
        return f"openai:{self.url}#{self.model}"

    def start(self) -> TransformersServe:
        argv = [sys.executable, "-c", _CLI, "serve", str(self.model), "--device", "cpu"]
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
