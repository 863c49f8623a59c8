"""Build hook: ship the top-level envs_registry.yaml inside the package.

The repository keeps exactly one copy of the registry, at the top level. This hook copies it
into the built package so that an installed wheel finds it next to ``registry.py``.
It also maps the repository's ``baselines/`` folder (the reference trainers, kept readable
as scripts at the top level) to ``llm_marl_envs.baselines``, so an installed package runs
them with ``python -m llm_marl_envs.baselines.cory``, and ships the modules of
``verifiers_tasksets/`` as top-level modules (verifiers loads an environment by a taskset id
naming one: ``llm_marl_envs_gsm8k_v0``, ...). Everything else about the package is declared
in setup.cfg.
"""

import shutil
from pathlib import Path

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py


class BuildPyWithRegistry(build_py):
    def run(self):
        super().run()
        if not self.dry_run:
            target = Path(self.build_lib) / "llm_marl_envs" / "envs_registry.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(__file__).parent / "envs_registry.yaml", target)


TASKSETS = sorted(path.stem for path in Path(__file__).parent.glob("verifiers_tasksets/*.py"))

setup(
    cmdclass={"build_py": BuildPyWithRegistry},
    packages=[*find_namespace_packages(include=["llm_marl_envs*"]), "llm_marl_envs.baselines"],
    package_dir={
        "": "verifiers_tasksets",  # the top-level modules (py_modules)
        "llm_marl_envs": "llm_marl_envs",
        "llm_marl_envs.baselines": "baselines",
    },
    py_modules=TASKSETS,
)
