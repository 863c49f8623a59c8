"""The reference trainers, readable as scripts here and installed with the package.

In the repository: ``python baselines/cory.py`` / ``python baselines/magrpo.py``. From an
installed package (the wheel maps this folder to ``llm_marl_envs.baselines``):
``python -m llm_marl_envs.baselines.cory`` / ``...magrpo`` / ``...compare``.
"""
