"""Every registered environment as a ``verifiers.v1`` environment (extra ``verifiers``).

`verifiers <https://github.com/PrimeIntellect-ai/verifiers>`_ 0.4 (prime-rl and ``vf-eval``
run on it) loads an environment by a *taskset id*: the name of an importable top-level
module that exports, in ``__all__``, its ``Taskset`` subclass and, for several agents, its
``Env`` subclass, whose config declares each role as an ``AgentConfig`` field. Each
registered id has such a module, shipped with the package (:func:`taskset_id` names it):

===================================  ===================================
environment id                       taskset id (module)
===================================  ===================================
``llm_marl_envs/GSM8K-v0``           ``llm_marl_envs_gsm8k_v0``
``llm_marl_envs/DonorGame-v1``       ``llm_marl_envs_donorgame_v1``
===================================  ===================================

so ``vf-eval llm_marl_envs_gsm8k_v0 --no-push -m MODEL`` evaluates it, and Python users
get the ``Env`` from :func:`load_environment`::

    env = load_environment("llm_marl_envs/GSM8K-v0", data_source="bundled")

The taskset's tasks are episode seeds (``--env.taskset.first-seed``, ``num-tasks``; the
environment's arguments in ``--env.taskset.env-kwargs`` as JSON). The roles are the
environment's seats, one config field each (``--env.pioneer-0.model ...``); all of them are
the run's model unless a seat names its own (one shared agent by default). A taskset module
declares the seats of the registry's arguments (twelve for the Donor game);
:func:`load_environment` declares those of the game its arguments build (four for
``num_agents=4``), and a taskset whose ``env-kwargs`` build a seat its ``Env`` does not declare
is refused in one line, before an episode runs. Every seat pins
verifiers' tool-less ``null`` harness and the local ``subprocess`` runtime (verifiers'
defaults are a code-executing agent in a remote sandbox; the seats only chat).

One episode: the environment is reset with the task's seed and played in its own turn
order. Each seat holds one verifiers interaction (so each seat's trace is its whole
conversation): its first turn sends its prompt's messages (the system message as the
task's system prompt), later turns its next prompt's new messages (the system message not
repeated), and its reply is its action. A seat whose run ends (a verifiers limit) plays on
with empty text, the environment's format penalty. Each seat's trace gets its return in the
episode as the reward ``return`` (what direct play pays it), and the environment's reward
components, summed over its turns, as metrics (not added to the reward), with
``format_errors`` and ``turns``.

Offline, verifiers runs each agent's chat program with ``uv`` (``uv sync --script``, which
wants the program's dependencies: ``openai``, ``mcp``, ``httpx``, ...): put ``uv`` on
``PATH`` (the extra installs it) and either let it reach PyPI once to fill its cache, or
point it at a folder of wheels: ``python -m llm_marl_envs.integrations.verifiers
--wheelhouse DIR`` fills one (:func:`fill_wheelhouse`, with the network once) and prints
the variables that make uv use it alone (:func:`offline_environment`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import llm_marl_envs
from llm_marl_envs.core.optional import require
from llm_marl_envs.integrations.stack_settings import chat_messages
from llm_marl_envs.integrations.tasksets import (
    MODULES_DIR,
    module_source,
    taskset_id,
    taskset_ids,
)
from llm_marl_envs.registry import agent_names, agents_of

vf = require("verifiers.v1", "verifiers", "the verifiers integration")
pydantic = require("pydantic", "verifiers", "the verifiers integration")

__all__ = [
    "MODULES_DIR",
    "chat_program_requirements",
    "exports",
    "fill_wheelhouse",
    "load_environment",
    "offline_environment",
    "module_source",
    "taskset_id",
    "taskset_ids",
]

#: What each seat's AgentConfig pins: a chat-only program on this machine.
SEAT_HARNESS = {"id": "null"}


class EpisodeData(vf.TaskData):
    """One task: an episode of an environment with a seed."""

    env_id: str
    seed: int
    env_kwargs: dict[str, Any] = {}


class EpisodeTask(vf.Task[EpisodeData]):
    """A task of the taskset; it is scored by the environment (the ``Env`` records each
    seat's return), so it has no reward functions of its own."""


_cache: dict[tuple[str, tuple[str, ...]], tuple] = {}


def exports(env_id: str, seats: tuple[str, ...] | None = None) -> tuple:
    """``(Taskset, TasksetConfig, Env, EnvConfig)`` classes of ``env_id``, made once per
    seats (the ``Env``'s roles; the registry's by default)."""
    env_id = llm_marl_envs.spec(env_id).id
    key = (env_id, tuple(seats or agent_names(env_id)))
    if key not in _cache:
        _cache[key] = _make_classes(*key)
    return _cache[key]


def load_environment(env_id: str, **env_kwargs: Any) -> Any:
    """The ``verifiers.v1`` ``Env`` of ``env_id``, its taskset built with ``env_kwargs``
    (:func:`llm_marl_envs.make`'s arguments) and its roles the seats of the game they build."""
    try:
        seats = tuple(agents_of(env_id, **env_kwargs))
    except Exception as error:  # noqa: BLE001 - any reason, named in the one line
        raise ValueError(f"{env_id}: bad env_kwargs {env_kwargs}: {error}") from None
    _, taskset_config, env_class, env_config = exports(env_id, seats)
    config = env_config(taskset=taskset_config(id=taskset_id(env_id), env_kwargs=dict(env_kwargs)))
    return env_class(config)  # not vf.load_environment: that takes the module's (default) seats


def _make_classes(env_id: str, seats: tuple[str, ...]) -> tuple:
    name = taskset_id(env_id)

    class TasksetConfig(vf.TasksetConfig):
        env_kwargs: dict[str, Any] = {}
        """Arguments of llm_marl_envs.make (JSON on the command line)."""
        first_seed: int = pydantic.Field(0, ge=0)
        """The first task's episode seed; task i plays seed first_seed + i."""
        num_tasks: int = pydantic.Field(1000, ge=1)
        """How many seeds the taskset holds."""

    TasksetConfig.__name__ = TasksetConfig.__qualname__ = "LLMMarlTasksetConfig"

    class Taskset(vf.Taskset[EpisodeTask, TasksetConfig]):
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            try:  # bad environment arguments fail here, in one line, not in every episode
                llm_marl_envs.make(env_id, **config.env_kwargs).close()
            except Exception as error:  # noqa: BLE001 - any reason, named in the one line
                raise ValueError(f"{env_id}: bad env_kwargs {config.env_kwargs}: {error}") from None

        def load(self):
            config = self.config
            for number in range(config.num_tasks):
                seed = config.first_seed + number
                data = EpisodeData(
                    id=f"{env_id}#seed={seed}",
                    name=f"{env_id} seed {seed}",
                    env_id=env_id,
                    seed=seed,
                    env_kwargs=dict(config.env_kwargs),
                )
                yield EpisodeTask(data, config.task)

    Taskset.__name__ = Taskset.__qualname__ = "LLMMarlTaskset"

    def seat() -> Any:  # a role is declared by its default instance
        return vf.AgentConfig(harness=SEAT_HARNESS, runtime=vf.SubprocessConfig())

    fields = {s: (vf.AgentConfig, seat()) for s in seats}
    EnvConfig = pydantic.create_model(  # noqa: N806 - a class
        "LLMMarlEnvConfig", __base__=vf.EnvConfig, __module__=name, **fields
    )

    class Env(vf.Env[EnvConfig]):
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            _check_roles(env_id, config)

        async def run(self, task: Any, agents: Any) -> None:
            await _play(task.data, agents)

    Env.__name__ = Env.__qualname__ = "LLMMarlEnv"
    for cls in (TasksetConfig, Taskset, Env):
        cls.__module__ = name
    return Taskset, TasksetConfig, Env, EnvConfig


def _check_roles(env_id: str, config: Any) -> None:
    """Refuse, in one line and before an episode runs, a config whose taskset's arguments
    build a seat that it declares no role for (``num_agents=16`` beside the registry's 12)."""
    env_kwargs = config.taskset.env_kwargs
    roles = {name for name, value in config if isinstance(value, vf.AgentConfig)}
    undeclared = [s for s in agents_of(env_id, **env_kwargs) if s not in roles]
    if undeclared:
        raise ValueError(
            f"{env_id}: env_kwargs {env_kwargs} build seats {undeclared} that this Env declares "
            f"no role for (it declares {len(roles)}); build it with "
            "llm_marl_envs.integrations.verifiers.load_environment(env_id, **env_kwargs)"
        )


async def _play(data: EpisodeData, agents: Any) -> None:
    """One episode (module docstring): the environment's turn order, one interaction per
    seat, each seat's return and components recorded on its trace."""
    env = await asyncio.to_thread(llm_marl_envs.make, data.env_id, **data.env_kwargs)
    try:
        await asyncio.to_thread(env.reset, seed=data.seed)
        returns = dict.fromkeys(env.possible_agents, 0.0)
        async with contextlib.AsyncExitStack() as stack:
            seats: dict[str, _Seat] = {}
            while env.agents:
                agent = env.agent_selection
                observation, reward, terminated, truncated, info = env.last()
                returns[agent] += float(reward)
                if terminated or truncated:
                    await asyncio.to_thread(env.step, None)
                    continue
                if agent not in seats:
                    seats[agent] = _Seat(agent, data)
                action = await seats[agent].turn(stack, agents, observation, info)
                await asyncio.to_thread(env.step, action)
            for agent, held in seats.items():
                held.record(returns[agent], env)
    finally:
        env.close()


class _Seat:
    """One seat's verifiers interaction and what it has been sent."""

    def __init__(self, agent: str, data: EpisodeData) -> None:
        self.agent, self.data = agent, data
        self.interaction: Any = None
        self.system: dict[str, str] | None = None
        self.over = False

    async def turn(self, stack: Any, agents: Any, observation: Any, info: Mapping) -> str:
        messages = chat_messages(observation, info)
        if self.interaction is None:
            self.system = messages[0] if messages[0]["role"] == "system" else None
            task = EpisodeTask(
                self.data.model_copy(
                    update={
                        "prompt": None,  # the environment speaks first, turn by turn
                        "system_prompt": self.system["content"] if self.system else None,
                    }
                )
            )
            self.interaction = await stack.enter_async_context(
                getattr(agents, self.agent).interaction(task)
            )
        if self.system is not None and messages[0] == self.system:
            messages = messages[1:]
        if self.over:
            return ""
        segment = await self.interaction.turn(messages)
        if segment.terminated:
            self.over = True
            return ""
        return segment.last_reply

    def record(self, total: float, env: Any) -> None:
        trace = self.interaction.trace
        trace.record_reward("return", total)
        mine = [t for t in getattr(env, "transcript", ()) if t.agent == self.agent]
        components: dict[str, float] = {}
        for turn in mine:
            for key, value in turn.reward_components.items():
                if isinstance(value, int | float):
                    components[key] = components.get(key, 0.0) + float(value)
        trace.record_metrics(components)
        trace.record_metric("format_errors", sum(1 for t in mine if t.format_error))
        trace.record_metric("turns", len(mine))
        trace.info["llm_marl_envs"] = {
            "agent": self.agent,
            "env_id": self.data.env_id,
            "seed": self.data.seed,
        }


# ---------------------------------------------------------------------- offline use
def chat_program_requirements() -> list[str]:
    """The packages verifiers' chat program (the ``null`` harness) declares, which
    ``uv sync --script`` installs before a seat's first turn."""
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM

    metadata = CHAT_PROGRAM.split("# ///", 2)[1]
    match = re.search(r"^# dependencies = (\[.*\])$", metadata, re.M)
    if match is None:
        raise RuntimeError("verifiers' chat program declares no dependencies line")
    return list(json.loads(match.group(1)))


def offline_environment(wheelhouse: str | Path) -> dict[str, str]:
    """The environment variables under which verifiers' ``uv`` installs the chat program
    from ``wheelhouse`` (a folder :func:`fill_wheelhouse` filled) without a network."""
    return {
        "UV_FIND_LINKS": str(Path(wheelhouse).resolve()),
        "UV_NO_INDEX": "1",
        "UV_PYTHON_DOWNLOADS": "never",
    }


def fill_wheelhouse(wheelhouse: str | Path) -> list[str]:
    """Download the chat program's packages (and theirs) into ``wheelhouse`` with pip (this
    needs the network once); returns the requirements."""
    requirements = chat_program_requirements()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
        + ["--only-binary=:all:", "-d", str(wheelhouse), *requirements],
        check=True,
    )
    return requirements


def main(argv: list[str] | None = None) -> None:
    """``python -m llm_marl_envs.integrations.verifiers --wheelhouse DIR``: fill DIR with
    the chat program's wheels and print the environment that makes verifiers use them."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.splitlines()[0])
    parser.add_argument("--wheelhouse", type=Path, required=True)
    args = parser.parse_args(argv)
    args.wheelhouse.mkdir(parents=True, exist_ok=True)
    fill_wheelhouse(args.wheelhouse)
    for name, value in offline_environment(args.wheelhouse).items():
        print(f"export {name}={value}")


if __name__ == "__main__":
    main()
