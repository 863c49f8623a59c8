"""How an evaluation runs, as one frozen object: :class:`EvalConfig`.

``llm-marl eval`` builds one from its options and passes it whole to
:func:`~llm_marl_envs.evaluation.evaluate.evaluate` or
:func:`~llm_marl_envs.evaluation.pairings.run_pairings`; in Python the same settings may be
given as those functions' keywords instead (they build the config from them once).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_marl_envs.policies import GenerationConfig
from llm_marl_envs.policies.openai.options import ServerOptions
from llm_marl_envs.rollout.executors import EnvExecutor

__all__ = ["EvalConfig"]


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class EvalConfig:
    """The settings of an evaluation, besides what is played (the suite and the team) and
    where it is written (the output folder).

    Attributes:
        tasks: Task names to play (None: every task of the suite).
        batch_size: Episodes played in lockstep per task.
        progress: A progress bar per task (None: on a terminal).
        entry: The entry's name in the results (None: the team's label).
        generation: Where model policies run (``GenerationConfig(dtype="bfloat16")``); each
            task's settings from the suite (sampling, token budget) and its seed replace the
            other fields.
        write: Where status lines go (None: stderr); :meth:`say` writes one.
        executor: Where the environments step: ``"local"`` (None), ``"ray"`` (shards on
            ``num_workers`` Ray actors; the records, and so the scores, are the same) or an
            executor (a configured ``RayExecutor``: the CLI's ``--ray-*`` options).
        num_workers: Ray actors per task with ``executor="ray"``.
        server_options: How requests travel to ``openai:`` seats (a
            :class:`~llm_marl_envs.policies.openai.ServerOptions`, or a mapping of its fields):
            transport, not part of what is
            played, so a resumed evaluation may change them (and, when every seat is a server
            or a model-free player, ``batch_size`` too).
    """

    tasks: Sequence[str] | None = None
    batch_size: int = 8
    progress: bool | None = None
    entry: str | None = None
    generation: GenerationConfig | None = None
    write: Callable[[str], Any] | None = None
    executor: str | EnvExecutor | None = None
    num_workers: int | None = None
    server_options: ServerOptions | Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.tasks is not None:
            object.__setattr__(self, "tasks", tuple(self.tasks))

    def say(self, line: str) -> None:
        """Write one status line (to ``write``, else stderr)."""
        (self.write or _to_stderr)(line)

    def replace(self, **changes: Any) -> EvalConfig:
        """A copy with ``changes`` (field names and values)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def given(cls, config: EvalConfig | None, **keywords: Any) -> EvalConfig:
        """``config``, or one built from ``keywords`` (an API's settings given one by one, at
        their defaults when not given). Both at once is a TypeError naming the keywords."""
        if config is None:
            return cls(**keywords)
        if not isinstance(config, cls):
            raise TypeError(f"config must be an EvalConfig, got {config!r}")
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        both = sorted(name for name, value in keywords.items() if value != defaults[name])
        if both:
            raise TypeError(
                f"give the settings in config or as keywords, not both (keywords: "
                f"{', '.join(both)})"
            )
        return config
