"""Gymnasium's single-agent view of a multi-agent environment: one agent learns, policies play the rest.

:class:`SingleAgentEnv` is a :class:`gymnasium.Env` around any registered environment. One
agent is the *learner*: ``reset`` and ``step`` return what it sees, and the other agents, the
*partners*, are played by policies inside the view (``"scripted"`` by default: the
environment's built-in players, deterministic for a seed):

>>> import gymnasium
>>> import llm_marl_envs  # registers the ids below with Gymnasium
>>> env = gymnasium.make("llm_marl_envs/GSM8K-observer_0-v0", data_source="bundled")
>>> observation, info = env.reset(seed=0)  # the pioneer (scripted) has answered already
>>> observation, reward, terminated, truncated, info = env.step("The answer is 42.")
>>> terminated, info["episode_seed"]
(True, 0)

Ids. ``import llm_marl_envs`` registers (names and a string entry point only; this module is
imported when such an env is made), in Gymnasium's registry, for every environment id
``llm_marl_envs/<Name>-v<N>`` of :func:`llm_marl_envs.list_envs`:

* ``llm_marl_envs/<Name>-<agent>-v<N>`` for each of its agents (the Donor game's twelve
  players included: ``llm_marl_envs/DonorGame-player_0-v0`` ... ``-player_11-v0``);
* ``llm_marl_envs/<Name>-v<N>``, the same id as the multi-agent environment's, whose learner
  is the first agent unless ``agent=`` says otherwise.

``gymnasium.make(id, **kwargs)`` passes ``partners=`` and ``agent=`` to the view and any other
keyword (``data_source``, ``size``, ``render_mode``, ...) to the environment. The registration
lives in :mod:`llm_marl_envs.registry` alone (``gymnasium_id(env_id, agent)`` names the ids);
importing this module imports the package, so
``gymnasium.make("llm_marl_envs.integrations.gymnasium:llm_marl_envs/GSM8K-pioneer_0-v0")``
registers the ids itself, which helps in worker processes that never imported the package.

Seeds. Every episode has an *episode seed*, returned in ``info["episode_seed"]``:
``reset(seed=s)`` uses ``s``; ``reset()`` draws the next one from the environment's generator
(so a seeded sequence of resets is reproducible, as Gymnasium's vector envs expect). The
environment is reset with that seed and the partners are rebuilt or reseeded from it (or from
``partner_seed``, when given: one seed for the partners of every episode), so
``reset(seed=info["episode_seed"])`` followed by the same learner actions replays the episode.
The view's ``np_random`` is the wrapped environment's generator.

Partners. ``partner_actions`` lists the ``(agent, action)`` of every partner turn of the
episode so far, and :meth:`SingleAgentEnv.partner_policies` the policies that play them (the
TRL adapter, :mod:`llm_marl_envs.integrations.trl`, builds its datasets, rewards and rollouts
on this view).

Rewards. ``step`` returns what ``env.last()`` reports for the learner at its next turn (or at
the end): its rewards accumulated since its action, partners' turns included. Rewards the
learner receives before its first turn (a Donor-game recipient of an earlier donor) are in
``info["reward_before_first_turn"]`` of ``reset``. Every ``info`` is a snapshot: a copy of the
learner's info dict and of the dicts and lists in it (the chat messages and records inside
those are never changed by the environments), so nothing the view returned changes later.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium

import llm_marl_envs
from llm_marl_envs.core.spaces import FreeText
from llm_marl_envs.policies.base import CallablePolicy, Policy, Prompt, as_policy
from llm_marl_envs.policies.specs import PolicyFactory

__all__ = ["PartnerSpec", "SingleAgentEnv"]

#: A partner: a policy spec (``"scripted"``, ``"random"``, ``"tiny"``, ``"hf:..."``,
#: ``"openai:..."``, ``"human"``), a :class:`~llm_marl_envs.policies.Policy`, or a function
#: ``(observation, info) -> str``.
PartnerSpec = str | Policy | Callable[[str, dict], str]

_SEED_BOUND = 2**31  # episode seeds drawn by reset(): what every player's seed arithmetic fits


class SingleAgentEnv(gymnasium.Env):
    """One agent of a multi-agent text environment as a Gymnasium environment.

    Args:
        env_id: A registered id (``"llm_marl_envs/GSM8K-v0"``) or an AEC environment instance
            (its id is looked up by class, for ``"scripted"`` partners).
        agent: The learner; the environment's first agent by default.
        partners: How the other agents play: one :data:`PartnerSpec` for all of them, or a
            mapping ``{agent: PartnerSpec}`` (agents it leaves out are ``"scripted"``).
            Default: ``"scripted"``. Specs and policies with a ``reseed(seed)`` method are
            rebuilt or reseeded from the episode seed at every reset; a plain function is
            called as it is.
        partner_seed: The seed of the partners' policies in every episode (None: each
            episode's seed).
        render_mode: ``None``, ``"human"`` or ``"ansi"`` (the environment's transcript).
        **env_kwargs: Passed to :func:`llm_marl_envs.make` (only with an id).

    Observation and action spaces are the learner's :class:`~llm_marl_envs.FreeText` spaces.
    In a simultaneous game (the AEC form holds a round until every agent has acted) each
    partner answers its own prompt, never the learner's action of the same round.
    """

    metadata: dict[str, Any] = {"render_modes": ["human", "ansi"], "render_fps": 1}

    def __init__(
        self,
        env_id: str | Any,
        agent: str | None = None,
        partners: PartnerSpec | Mapping[str, PartnerSpec] | None = None,
        *,
        partner_seed: int | None = None,
        render_mode: str | None = None,
        **env_kwargs: Any,
    ) -> None:
        if isinstance(env_id, str):
            if render_mode is not None:
                env_kwargs["render_mode"] = render_mode
            self.env_id = env_id
            self.aec_env = llm_marl_envs.make(env_id, **env_kwargs)
        else:
            if env_kwargs or render_mode is not None:
                raise TypeError(
                    "environment keyword arguments (and render_mode) go with an env id; "
                    f"an environment instance is used as it is, got {sorted(env_kwargs)}"
                )
            self.aec_env = env_id
            self.env_id = _id_of(env_id)
        env = self.aec_env
        self.possible_agents = list(env.possible_agents)
        if agent is None:
            agent = self.possible_agents[0]
        if agent not in self.possible_agents:
            raise ValueError(
                f"unknown learner {agent!r}: this environment has no agent of that name; "
                f"its agents are {self.possible_agents}"
            )
        self.agent = agent
        self.render_mode = getattr(env, "render_mode", None)
        self.observation_space: FreeText = env.observation_space(agent)
        self.action_space: FreeText = env.action_space(agent)
        self.metadata = {**type(self).metadata, "name": str(env)}
        self.partner_seed = partner_seed
        self._factory = PolicyFactory(self.env_id or "", seed=partner_seed or 0)
        self._partners = [
            _Partner(a, spec, self) for a, spec in _partner_specs(partners, agent, env).items()
        ]
        self._act: dict[str, Callable[[str, dict], str]] = {}
        self._policies: dict[str, Policy] = {}
        self.partner_actions: list[tuple[str, str]] = []
        if partner_seed is not None:
            self._start_partners(partner_seed)
        self._over = "no episode yet"  # why step() refuses, or None while the learner plays
        self._episode_seed: int | None = None

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode and play the partners' turns until the learner must act."""
        env = self.aec_env
        if seed is None:
            rng = getattr(env, "np_random", None)
            seed = (
                int(rng.integers(_SEED_BOUND))
                if rng is not None
                else secrets.randbelow(_SEED_BOUND)
            )
        self._over = "the last reset() failed"
        env.reset(seed=seed, options=options)
        self._np_random = getattr(env, "np_random", None)
        self._np_random_seed = seed
        self._episode_seed = seed
        self._start_partners(seed if self.partner_seed is None else self.partner_seed)
        self.partner_actions = []
        observation, reward, terminated, truncated, info = self._advance()
        if terminated or truncated:
            raise RuntimeError(
                f"the episode (seed {seed}) ended before the learner {self.agent} acted"
            )
        self._over = None
        info["episode_seed"] = seed
        info["reward_before_first_turn"] = float(reward)
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply the learner's action, then play partners until it acts again or the end."""
        if self._over is not None:
            raise RuntimeError(f"{self._over}: call reset() before step()")
        env = self.aec_env
        env.step(action)  # a non-str action raises here, before anything changes
        try:
            observation, reward, terminated, truncated, info = self._advance()
        except BaseException:
            self._over = "a partner's turn failed"
            raise
        if terminated or truncated:
            self._over = "the episode is over"
        info["episode_seed"] = self._episode_seed
        return observation, float(reward), bool(terminated), bool(truncated), info

    def render(self) -> str | None:
        """The environment's rendering (``"ansi"``: the transcript so far)."""
        return self.aec_env.render()

    def partner_policies(self) -> dict[str, Policy]:
        """Each partner's policy for the current episode (with ``partner_seed``: for every
        episode, from construction on)."""
        if not self._policies:
            raise RuntimeError("the partners have no policies before reset(): call reset() first")
        return dict(self._policies)

    def close(self) -> None:
        """Close the environment and the model policies the view loaded."""
        self._factory.close()
        self.aec_env.close()

    # ------------------------------------------------------------------ internals
    def _start_partners(self, seed: int) -> None:
        for partner in self._partners:
            partner.start(seed)

    def _advance(self) -> tuple:
        """Play partner turns (and finished agents' None steps) until the learner's turn.

        Returns what ``env.last()`` would for the learner, its info already a snapshot.
        """
        env = self.aec_env
        learner = self.agent
        act = self._act
        while env.agent_selection != learner:
            if not env.agents:
                raise RuntimeError(f"the episode ended without {learner} in it")
            agent = env.agent_selection
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
            else:
                action = act[agent](observation, info)
                self.partner_actions.append((agent, action))
                env.step(action)
        return (
            env.observe(learner),
            env._cumulative_rewards[learner],
            env.terminations[learner],
            env.truncations[learner],
            _snapshot(env.infos[learner]),
        )

    def __str__(self) -> str:
        return f"<SingleAgentEnv {self.env_id or self.metadata['name']} learner={self.agent}>"


class _Partner:
    """One partner agent: its policy, rebuilt or reseeded at every reset."""

    def __init__(self, agent: str, spec: PartnerSpec, view: SingleAgentEnv) -> None:
        self.agent, self.spec, self.view = agent, spec, view
        self.seed: int | None = None
        self.policy: Any = None
        if isinstance(spec, str):
            if spec in ("scripted", "random") and not view.env_id:
                raise ValueError(
                    f"{agent}: the {spec!r} partner needs a registered env id; this "
                    "environment instance is not one of llm_marl_envs.list_envs()"
                )
            if spec not in ("scripted", "random"):  # models are loaded once, shared
                self.policy = view._factory(spec, agent, view.aec_env.action_space(agent))
        elif isinstance(spec, Policy) or callable(spec):
            self.policy = spec
        else:
            raise TypeError(
                f"partner {agent}: expected a policy spec (str), a Policy or a callable "
                f"(observation, info) -> str, got {spec!r}"
            )

    def start(self, seed: int) -> None:
        """Make the partner's policy the one of episode ``seed`` and hand it to the view."""
        view = self.view
        if seed == self.seed and self.agent in view._act:
            if isinstance(self.spec, str) and self.spec in ("scripted", "random"):
                return  # a pure function of (seed, observation): the same one again
        self.seed = seed
        policy = self._policy(seed)
        view._policies[self.agent] = as_policy(policy)
        view._act[self.agent] = _as_function(self.agent, policy)

    def _policy(self, seed: int) -> Any:
        view = self.view
        if self.spec in ("scripted", "random"):
            space = view.aec_env.action_space(self.agent)
            return PolicyFactory(view.env_id, seed=seed)(self.spec, self.agent, space)
        reseed = getattr(self.policy, "reseed", None)
        if callable(reseed):
            reseed(seed)
        return self.policy


def _as_function(agent: str, policy: Any) -> Callable[[str, dict], str]:
    if isinstance(policy, CallablePolicy):
        return policy.fn
    if not isinstance(policy, Policy):
        return policy

    def act(observation: str, info: dict) -> str:
        prompt = Prompt(agent, observation, info.get("messages", []), info)
        return policy.generate([prompt])[0].text

    return act


def _partner_specs(
    partners: PartnerSpec | Mapping[str, PartnerSpec] | None, learner: str, env: Any
) -> dict[str, PartnerSpec]:
    others = [a for a in env.possible_agents if a != learner]
    if partners is None:
        return dict.fromkeys(others, "scripted")
    if not isinstance(partners, Mapping):
        return dict.fromkeys(others, partners)
    unknown = [a for a in partners if a not in others]
    if unknown:
        raise ValueError(
            f"partners names {unknown}, which are not partners of the learner {learner} "
            f"(partners: {others})"
        )
    return {a: partners.get(a, "scripted") for a in others}


def _id_of(env: Any) -> str | None:
    """The registered id whose entry point builds ``env``'s class, if any."""
    entry = f"{type(env).__module__}:{type(env).__qualname__}"
    for env_id in llm_marl_envs.list_envs():
        if llm_marl_envs.spec(env_id).entry_point == entry:
            return env_id
    return None


def _snapshot(info: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``info`` and of every dict or list in it (``messages``, ``reward_components``).

    What those hold (chat-message dicts, trace records) are records the environments create
    once and never change (a test checks it on every environment), so they are shared: a
    deep copy of a maze's chat would cost the view 1.4x the raw env's step.
    """
    copy = info.copy()
    for key, value in info.items():
        if type(value) is dict or type(value) is list:
            copy[key] = value.copy()
    return copy
