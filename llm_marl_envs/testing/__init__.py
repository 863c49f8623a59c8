"""Real servers to test your own set-up against: ``transformers serve`` and a local Ray cluster.

As ``pettingzoo.test`` checks a user's environment with the tests PettingZoo runs on its own,
this package hands users the real processes our own tests play against:

* :class:`TransformersServe`: a real ``transformers serve`` of a model folder on a loopback
  port (Hugging Face's OpenAI-compatible server, a process of its own), for ``openai:``
  policies, ``llm-marl eval --policy openai:...`` or a policy server relaying it;
* :class:`LocalRayCluster`: a real Ray cluster of separate ``ray start`` processes on this
  machine (a head and more nodes, joined by address), for ``RayExecutor`` and node losses.

Both are context managers, and pytest fixtures in :mod:`llm_marl_envs.testing.fixtures`
(list it in your top-level ``conftest.py``: ``pytest_plugins = ["llm_marl_envs.testing.fixtures"]``).
Importing this package starts nothing and imports neither pytest, transformers nor Ray. Guide:
``docs/testing.md``.
"""

from llm_marl_envs.testing.ray_cluster import LocalRayCluster, ray_command
from llm_marl_envs.testing.serve import OFFLINE, TransformersServe, free_port

__all__ = ["OFFLINE", "LocalRayCluster", "TransformersServe", "free_port", "ray_command"]
