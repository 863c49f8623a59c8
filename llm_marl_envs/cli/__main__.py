"""``python -m llm_marl_envs.cli``: the ``llm-marl`` command."""

import sys

from llm_marl_envs.cli.dispatch import main

sys.exit(main())
