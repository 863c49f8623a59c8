"""Sandbox for model-written Python: the only place in the package where such code runs.

>>> from llm_marl_envs.sandbox import run_tests
>>> result = run_tests("def add(a, b):\\n    return a + b\\n",
...                    ["assert candidate(1, 2) == 3", "assert candidate(2, 2) == 5"], "add")
>>> result.tests_passed, result.tests_total
(1, 2)

Each program runs in its own process tree, forked from a pre-started fork server, with a
scrubbed environment, resource limits, a private working directory, no network, and (as root)
its own PID and mount namespaces and an unprivileged uid. The tests never run in that process:
they run in a trusted runner where ``candidate`` is a proxy that gets plain data back. See
``docs/sandbox.md`` for the design and the threat model, and :func:`capabilities` for what is
in force on this machine.
"""

from llm_marl_envs.sandbox.pool import (
    SandboxError,
    SandboxPool,
    capabilities,
    default_hidden_paths,
    default_uid_base,
    run_many,
    run_tests,
    shutdown,
)
from llm_marl_envs.sandbox.results import (
    ProgramResult,
    SandboxLimits,
    TestResult,
    clean_program_text,
)
from llm_marl_envs.sandbox.split import split_asserts

__all__ = [
    "ProgramResult",
    "SandboxError",
    "SandboxLimits",
    "SandboxPool",
    "TestResult",
    "capabilities",
    "clean_program_text",
    "default_hidden_paths",
    "default_uid_base",
    "run_many",
    "run_tests",
    "shutdown",
    "split_asserts",
]
