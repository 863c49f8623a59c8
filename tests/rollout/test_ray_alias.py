"""``llm_marl_envs.rollout.ray_executor``, the Ray executor's old path, still imports (with a
warning) and is the module of ``llm_marl_envs.rollout.ray``, not a copy."""

from __future__ import annotations

import subprocess
import sys


def test_the_old_ray_executor_path_warns_and_is_the_new_module():
    code = (
        "import warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n"
        "    import llm_marl_envs.rollout.ray_executor\n"
        "except DeprecationWarning as warning:\n"
        "    print('warned:', warning)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "import llm_marl_envs.rollout.ray_executor as old\n"
        "from llm_marl_envs.rollout.ray_executor import RayExecutor, EnvShard, ClusterError\n"
        "import llm_marl_envs.rollout.ray.executor as new\n"
        "from llm_marl_envs.rollout import ray\n"
        "print(old is new, RayExecutor is ray.RayExecutor, EnvShard is ray.EnvShard,\n"
        "      ClusterError is ray.ClusterError, old._Episode is new._Episode)\n"
        "import sys; print('ray' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    said = out.stdout.strip().splitlines()
    assert said[0] == (
        "warned: llm_marl_envs.rollout.ray_executor is now llm_marl_envs.rollout.ray.executor: "
        "import that instead"
    )
    assert said[1] == "True True True True True"
    assert said[2] == "False"  # neither path imports Ray itself
