"""Build hook: ship the top-level envs_registry.yaml inside the package.

The repository keeps exactly one copy of the registry, at the top level. This hook copies it
into the built package so that an installed wheel finds it next to ``registry.py``.
Everything else about the package is declared in setup.cfg.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithRegistry(build_py):
    def run(self):
        super().run()
        if not self.dry_run:
            target = Path(self.build_lib) / "llm_marl_envs" / "envs_registry.yaml"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(__file__).parent / "envs_registry.yaml", target)


setup(cmdclass={"build_py": BuildPyWithRegistry})
