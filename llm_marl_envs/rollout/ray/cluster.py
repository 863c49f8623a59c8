"""Reaching a Ray cluster, and its failures as one line each.

``ray.init`` waits without end for a head that does not answer (a wrong ``RAY_ADDRESS``, or
``auto`` after the head died: the address file it left behind still names it), printing only
Ray's own warnings. Before joining, :func:`cluster_address` therefore finds the address as Ray
would (``address``, else ``RAY_ADDRESS``; ``auto``, or nothing when a cluster was started on
this machine, is the address ``ray start`` wrote to ``<ray temp dir>/ray_current_cluster``) and
opens one TCP connection to it within :data:`CONNECT_SECONDS`; a head that does not accept it
is a :class:`ClusterError` naming the address and where it was found.

:class:`HeadWatch` probes the head while a rollout runs, so a cluster stopped mid-run ends
the rollout within seconds (Ray's own client waits a minute).

:func:`start_failure` turns what a worker's start raised into one line: a node without the
package ("install llm-marl-envs[ray] ... or pass a runtime_env"), a worker that died while
starting.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

from llm_marl_envs.rollout.executors import ExecutorLostError

__all__ = ["CONNECT_SECONDS", "ClusterError", "HeadWatch", "cluster_address", "start_failure"]

#: Seconds the head of a cluster has to accept a TCP connection before it counts as unreachable.
CONNECT_SECONDS = 10.0


class ClusterError(ExecutorLostError):
    """The Ray cluster cannot be reached or cannot start the workers; the message says why
    and what to change. Nothing was played when it is raised at the start of a rollout."""


def _address_file() -> Path:
    """Where ``ray start`` writes the address of the cluster it started (Ray's own rule)."""
    try:
        from ray._common.utils import get_ray_address_file

        return Path(get_ray_address_file(None))
    except Exception:  # noqa: BLE001 - another Ray version: its documented default
        base = os.environ.get("RAY_TMPDIR") or (
            os.environ.get("TMPDIR") if sys.platform.startswith("linux") else None
        )
        return Path(base or "/tmp") / "ray" / "ray_current_cluster"


def cluster_address(address: str | None) -> tuple[str | None, str]:
    """The cluster to join (None: start a local Ray) and where its address came from; a
    :class:`ClusterError` when ``auto`` finds none, or when the head does not accept a
    connection within :data:`CONNECT_SECONDS`."""
    source = "--ray-address / address="
    if not address:
        address, source = os.environ.get("RAY_ADDRESS") or None, "RAY_ADDRESS"
    if address in (None, "auto"):
        file = _address_file()
        found = file.read_text().strip() if file.is_file() else ""
        if not found:
            if address is None:
                return None, "a new local Ray"
            raise ClusterError(
                f"{source} is 'auto' but no Ray cluster was started on this machine (no address "
                f"in {file}): start one with `ray start --head`, or give the head's HOST:PORT"
            )
        how = "auto" if address == "auto" else "no address given"
        address, source = found, f"{file}, where `ray start` left it ({how})"
    _check_reachable(address, source)
    return address, source


def _check_reachable(address: str, source: str) -> None:
    """One TCP connection to the head, within :data:`CONNECT_SECONDS`."""
    target = address.removeprefix("ray://").removeprefix("http://").removeprefix("https://")
    host, _, port = target.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(
            f"the Ray address {address!r} (from {source}) is not HOST:PORT: give the head's "
            "address as `ray start --head` printed it, e.g. 10.0.0.5:6379"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
            pass
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else (error.strerror or error)
        raise ClusterError(
            f"cannot reach the Ray cluster at {address} (from {source}) within "
            f"{CONNECT_SECONDS:g} s: {reason}; is its head running? Start it (`ray start "
            "--head`), or give the right address with --ray-address or RAY_ADDRESS"
        ) from None


def start_failure(error: BaseException, count: int) -> ClusterError:
    """What a failed start of ``count`` workers means, as one line."""
    text = str(error)
    if "No module named 'llm_marl_envs'" in text or "No module named 'llm_marl_envs." in text:
        return ClusterError(
            "a Ray node cannot import llm_marl_envs: install llm-marl-envs[ray] (the same "
            "version as here) on every node of the cluster, or pass a runtime_env that brings "
            'it (--ray-runtime-env FILE with {"pip": ["llm-marl-envs[ray]"]} or a working_dir)'
        )
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return ClusterError(
        f"a Ray worker died while {count} were starting ({type(error).__name__}: "
        f"{first[:300]}); its node may have left the cluster: run the same command again"
    )


#: Seconds between two probes of a running cluster's head.
PROBE_SECONDS = 1.0
#: Probes in a row the head must fail before the cluster counts as stopped.
LOST_AFTER = 3


def head_answers(address: str, tries: int = 3) -> bool:
    """Whether the head at ``address`` (``HOST:PORT``) accepts a connection: up to ``tries``
    probes of at most :data:`PROBE_SECONDS` each, a second apart; the first that connects
    answers. Ray's own client, asked anything of a stopped head, waits a minute and then
    ends the process."""
    host, _, port = address.rpartition(":")
    for attempt in range(tries):
        if attempt:
            time.sleep(PROBE_SECONDS)
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS):
                return True
        except OSError:
            continue
    return False


class HeadWatch:
    """Probes the head of the cluster a rollout runs on (one TCP connection a second, from a
    daemon thread): Ray's own client waits a minute for a stopped head before it gives up, and
    a rollout waiting on its workers meanwhile hears nothing. ``lost`` says, once
    :data:`LOST_AFTER` probes in a row failed, since when the head has not answered."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._failed_since: float | None = None
        self._failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._probe, name="ray-head-watch", daemon=True)
        self._thread.start()

    @property
    def lost(self) -> float | None:
        """Seconds since the head stopped answering, once it counts as stopped; else None."""
        if self._failures < LOST_AFTER or self._failed_since is None:
            return None
        return time.monotonic() - self._failed_since

    def answers(self) -> bool:
        """Whether the head accepts a connection now (one probe, at most a second)."""
        return head_answers(self.address, tries=1)

    def stop(self) -> None:
        self._stop.set()

    def _probe(self) -> None:
        while not self._stop.wait(PROBE_SECONDS):
            if self.answers():
                self._failures, self._failed_since = 0, None
            else:
                if self._failures == 0:
                    self._failed_since = time.monotonic()
                self._failures += 1
