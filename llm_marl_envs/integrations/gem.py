"""Any registered environment as a GEM multi-agent environment (extra ``integrations``).

`GEM <https://github.com/axon-rl/gem>`_ (``gem-llm``) gives LLM agents a Gym-like API;
``gem.multiagent.MultiAgentEnv`` is its PettingZoo-like multi-agent form: ``reset(seed)``
returns ``({agent: text}, {agent: info})``, ``step({agent: text})`` returns the five dicts of
a Parallel env, ``agent_selector.get_active_agents()`` says who must act, and
``get_active_states()`` hands each active agent its ``(observation, return, terminated,
truncated, info)``. :class:`GEMMultiAgentEnv` is one of those around a registered
environment:

* ``parallel=False`` (default): the AEC form. One agent is active at a time, the one whose
  turn it is in the environment (its own order: seeded first movers, the Donor game's pairs),
  not GEM's round-robin; each step's dicts cover the agents that were live.
* ``parallel=True``: the native Parallel form (simultaneous-move environments only): every
  live agent is active, through GEM's own ``AgentSelector(mode="parallel")``.

Finished agents leave ``agents`` as GEM does; their AEC "dead steps" are taken for them.
:func:`register_envs` puts the ids in GEM's registry, so ``gem.make(env_id, **kwargs)`` builds
one:

>>> from llm_marl_envs.integrations.gem import register_envs  # doctest: +SKIP
>>> register_envs()                                            # doctest: +SKIP
>>> env = gem.make("llm_marl_envs/MazeCollab-v0", size=5)      # doctest: +SKIP

Importing GEM configures the root logger (``logging.basicConfig(level=INFO)`` in
``gem/__init__.py``); this module undoes that, leaving the root logger as it found it.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import llm_marl_envs
from llm_marl_envs.core.optional import require


def _import_gem_quietly() -> Any:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return require("gem.multiagent", "integrations", "the GEM integration")
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


_multiagent = _import_gem_quietly()
_registration = require("gem.envs.registration", "integrations", "the GEM integration")

__all__ = ["GEMMultiAgentEnv", "register_envs"]


class _TurnSelector(_multiagent.AgentSelector):
    """GEM's agent selector, following the AEC environment's own ``agent_selection``."""

    def __init__(self, aec_env: Any) -> None:
        super().__init__(list(aec_env.possible_agents), mode="sequential")
        self._aec = aec_env

    @property  # type: ignore[override]
    def selected(self) -> str | None:
        env = self._aec
        return env.agent_selection if env.agents else None

    @selected.setter
    def selected(self, value: str | None) -> None:
        pass  # the environment decides whose turn it is

    def get_active_agents(self) -> list[str]:
        agent = self.selected
        return [agent] if agent is not None else []

    def next(self) -> None:
        pass  # the environment moved on when it was stepped


class GEMMultiAgentEnv(_multiagent.MultiAgentEnv):
    """A registered environment as a ``gem.multiagent.MultiAgentEnv``.

    Args:
        env_id: A registered id.
        parallel: Use the native Parallel form (all live agents act at once); a turn-based
            environment has none (``ValueError``).
        seed: Seed of the first ``reset()`` if that call gives none (``gem.make_vec`` passes
            one); later resets without a seed continue the environment's RNG.
        **env_kwargs: Passed to :func:`llm_marl_envs.make` / :func:`llm_marl_envs.make_parallel`.
    """

    def __init__(
        self, env_id: str, *, parallel: bool = False, seed: int | None = None, **env_kwargs: Any
    ) -> None:
        super().__init__()
        self.env_id = llm_marl_envs.spec(env_id).id
        self.parallel = bool(parallel)
        if self.parallel:
            self.env = llm_marl_envs.make_parallel(self.env_id, **env_kwargs)
            self.agent_selector = _multiagent.AgentSelector(
                list(self.env.possible_agents), mode="parallel"
            )
        else:
            self.env = llm_marl_envs.make(self.env_id, **env_kwargs)
            self.agent_selector = _TurnSelector(self.env)
        self.possible_agents = list(self.env.possible_agents)
        self._first_seed = seed
        self._observations: dict[str, str] = {}

    @property
    def current_agent(self) -> str | None:
        """Whose turn it is (AEC form); None in the Parallel form and once the episode is over."""
        active = self.agent_selector.get_active_agents()
        return active[0] if not self.parallel and active else None

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, str], dict[str, dict]]:
        """Start an episode; ``options`` go to the environment's ``reset`` (e.g. ``row_index``)."""
        first, self._first_seed = self._first_seed, None
        seed = first if seed is None else seed
        if self.parallel:
            observations, infos = self.env.reset(seed=seed, options=options)
            self._observations = {a: str(o) for a, o in observations.items()}
        else:
            self.env.reset(seed=seed, options=options)
            infos = self.env.infos
        super().reset()  # GEM's bookkeeping (no seed: the environment has its own RNG)
        self.infos = {a: dict(infos[a]) for a in self.agents}
        observations = {a: self.observe(a) for a in self.agents}
        return observations, {a: dict(info) for a, info in self.infos.items()}

    def observe(self, agent: str) -> str:
        if self.parallel:
            if agent not in self.possible_agents:
                raise ValueError(f"unknown agent {agent!r}: the agents are {self.possible_agents}")
            return self._observations.get(agent, "")
        return str(self.env.observe(agent))

    def _process_actions(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.env.agents:
            raise RuntimeError("the episode is over: call reset() to start another")
        if self.parallel:
            observations, rewards, terminations, truncations, infos = self.env.step(actions)
            self._observations.update({a: str(o) for a, o in observations.items()})
            observations = {a: self._observations[a] for a in observations}
        else:
            ((agent, text),) = actions.items()  # GEM checked: exactly the active agent
            env = self.env
            env.step(text)
            acted = list(env.agents)
            rewards = {a: float(env.rewards[a]) for a in acted}
            terminations = {a: bool(env.terminations[a]) for a in acted}
            truncations = {a: bool(env.truncations[a]) for a in acted}
            infos = {a: dict(env.infos[a]) for a in acted}
            while env.agents and (
                env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
            ):
                env.step(None)  # the AEC dead step of a finished agent
            for live in env.agents:  # the next agents' info is their current one
                infos[live] = dict(env.infos[live])
            observations = {a: self.observe(a) for a in acted}
        self.rewards.update(rewards)
        self.terminations.update(terminations)
        self.truncations.update(truncations)
        self.infos.update(infos)
        return observations, rewards, terminations, truncations, infos

    def add_agent(self, agent_id: str) -> None:
        raise NotImplementedError(
            f"{self.env_id} has a fixed set of agents: {self.possible_agents}"
        )

    def render(self) -> str | None:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        form = "parallel" if self.parallel else "aec"
        return f"{type(self).__name__}({self.env_id!r}, {form})"


def register_envs(env_ids: list[str] | None = None) -> list[str]:
    """Register ids (default: all) in GEM's registry, for ``gem.make(env_id, **kwargs)``.

    Ids already registered are left as they are, so calling this twice is harmless.
    ``gem.make`` passes its keyword arguments to :class:`GEMMultiAgentEnv`.

    Returns:
        The ids now registered.
    """
    ids = (
        llm_marl_envs.list_envs()
        if env_ids is None
        else [llm_marl_envs.spec(e).id for e in env_ids]
    )
    for env_id in ids:
        if env_id not in _registration.ENV_REGISTRY:
            _registration.register(env_id, functools.partial(GEMMultiAgentEnv, env_id))
    return ids
