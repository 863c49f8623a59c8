"""Simultaneous-move text games: an AEC base class and the matching Parallel environment.

In a simultaneous game every live agent acts in a round without seeing the others' actions
of that round. :class:`SimultaneousTextEnv` is the AEC form: agents act one after the other
in ``possible_agents`` order, actions are held back until the round is complete, then
:meth:`SimultaneousTextEnv._resolve` scores the joint action. Its ``metadata`` says
``is_parallelizable``.

:class:`TextParallelEnv` is the Parallel form of the same game: ``step(actions)`` takes the
whole joint action at once. It checks every action first (each must be a ``str``, and every
live agent must have one) and only then applies them, so a bad joint action raises and leaves
the game untouched. The game logic, infos, transcript and rendering are those of the AEC env
it owns, so the two forms always agree (a test plays both side by side).
"""

from __future__ import annotations

from typing import Any

from pettingzoo import ParallelEnv

from llm_marl_envs.core.spaces import FreeText, TextObservation
from llm_marl_envs.core.text_env import CleanAction, TextAECEnv

__all__ = ["SimultaneousTextEnv", "TextParallelEnv"]


class SimultaneousTextEnv(TextAECEnv):
    """AEC form of a game whose agents act simultaneously in rounds.

    Subclasses implement ``_new_episode`` (give every agent its prompt) and ``_resolve``
    (score one round's joint action: set rewards, record turns, terminate or give new
    prompts for the next round).
    """

    metadata: dict[str, Any] = {**TextAECEnv.metadata, "is_parallelizable": True}

    def _start_episode(self, seed: int | None, options: dict) -> None:
        self._pending: dict[str, CleanAction] = {}  # inside reset's one-thread lock
        super()._start_episode(seed, options)

    def _play(self, agent: str, action: CleanAction) -> None:
        self._pending[agent] = action
        waiting = [
            a
            for a in self.agents
            if a not in self._pending and not (self.terminations[a] or self.truncations[a])
        ]
        if waiting:
            self.agent_selection = waiting[0]
            return
        actions, self._pending = self._pending, {}
        self._resolve(actions)
        live = [a for a in self.agents if not (self.terminations[a] or self.truncations[a])]
        if live:
            self.agent_selection = live[0]

    def _resolve(self, actions: dict[str, CleanAction]) -> None:
        """Score one round (``actions`` holds every live agent's cleaned action)."""
        raise NotImplementedError


class TextParallelEnv(ParallelEnv):
    """Parallel form of a :class:`SimultaneousTextEnv` (see the module docstring).

    Args:
        aec_env: The game, in AEC form; the Parallel env owns it.
    """

    def __init__(self, aec_env: SimultaneousTextEnv) -> None:
        self.aec_env = aec_env
        self.metadata = dict(aec_env.metadata)
        self.possible_agents = list(aec_env.possible_agents)
        self.render_mode = aec_env.render_mode
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> FreeText:
        return self.aec_env.observation_space(agent)

    def action_space(self, agent: str) -> FreeText:
        return self.aec_env.action_space(agent)

    @property
    def max_cycles(self) -> int:
        return self.aec_env.max_cycles

    @max_cycles.setter
    def max_cycles(self, value: int) -> None:
        self.aec_env.max_cycles = value

    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, TextObservation], dict[str, dict]]:
        env = self.aec_env
        if not env._guard.acquire(False):  # one thread at a time, for the whole call
            env._refuse("reset()")
        try:
            try:
                env.reset(seed=seed, options=options)
            finally:  # a failed reset leaves the AEC env as it was or needing a reset: mirror it
                self.agents = list(env.agents)
            result = (
                {a: env.observe(a) for a in self.agents},
                {a: dict(env.infos[a]) for a in self.agents},  # snapshots
            )
        except BaseException:
            env._release(failed=True)
            raise
        env._release(failed=False)
        self.agents = list(env.agents)
        return result

    def step(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        """Apply one joint action ``{agent: text}`` for every live agent."""
        env = self.aec_env
        if not env._guard.acquire(False):  # one thread at a time, for the whole call
            env._refuse("step()")
        try:
            result = self._step(actions)
        except BaseException:
            env._release(failed=True)
            self.agents = list(env.agents)
            raise
        try:
            env._release(failed=False)
        finally:
            self.agents = list(env.agents)
        return result

    def _step(self, actions: dict[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        env = self.aec_env
        env._check_playable("step()")
        if not self.agents:
            raise RuntimeError("No live agents: call reset() to start an episode")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict {{agent: str}}, got {type(actions).__name__}")
        missing = [a for a in self.agents if a not in actions]
        unknown = [a for a in actions if a not in self.agents]
        if missing or unknown:
            raise ValueError(
                f"actions must hold exactly the live agents {self.agents}; "
                f"missing {missing}, not live {unknown}"
            )
        for agent in self.agents:
            env._clean_action(agent, actions[agent])  # raises before anything is applied
        acting = list(self.agents)
        try:
            for _ in acting:
                env.step(actions[env.agent_selection])
        finally:  # after a failure the AEC env needs a reset, and shows no live agents
            self.agents = list(env.agents)
        observations = {a: env.observe(a) for a in acting}
        rewards = {a: float(env._cumulative_rewards[a]) for a in acting}
        terminations = {a: env.terminations[a] for a in acting}
        truncations = {a: env.truncations[a] for a in acting}
        infos = {a: dict(env.infos[a]) for a in acting}  # snapshots: the env keeps its own
        while env.agents and (
            env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        ):
            env.step(None)  # remove finished agents, as AEC does
        self.agents = list(env.agents)
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        return self.aec_env.render()

    def close(self) -> None:
        self.aec_env.close()

    def state(self) -> str:
        """The transcript so far (a text game's global state)."""
        return self.aec_env.render_transcript()

    def __str__(self) -> str:
        return str(self.aec_env)
