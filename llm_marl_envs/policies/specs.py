"""Policies from short specs, as the ``llm-marl`` command and the trainers take them.

============================  ===============================================================
spec                          policy
============================  ===============================================================
``default``                   the embedded SmolLM2-135M-Instruct (``llm-marl fetch-model``), offline
``tiny``                      a tiny random-init GPT-2 built in-process (tests, smoke runs)
``hf:NAME_OR_PATH[@REV]``     any transformers causal LM: a Hub id (online) or a local folder;
                              ``@REV`` pins a Hub id to a branch, tag or commit sha
                              (:func:`parse_hf_spec`)
``openai:URL[#MODEL]``        an OpenAI-compatible server, e.g. ``openai:http://127.0.0.1:8000/v1#qwen``
``ckpt:RUN_DIR[#LEARNER]``    a model trained by ``baselines/cory.py`` or ``magrpo.py`` (its newest
                              verified checkpoint; :mod:`llm_marl_envs.policies.checkpoint`)
``scripted``                  the environment's built-in scripted policy for that agent
``random``                    random printable text from the agent's action space (a floor)
``human``                     a person at the terminal
============================  ===============================================================

A Hub id alone means whatever the Hub serves today; ``hf:org/model@<commit sha>`` is one set
of weights for good (what a leaderboard submission should name). The text after ``hf:`` is a
path when it exists on disk, ``@`` and all (``hf:runs/exp@2``); otherwise it splits at its last
``@`` into the id and the revision.

Model policies are shared: a :class:`ModelCache` loads each model once (per spec and resolved
device, dtype and compile) and hands out policies over it, each with its own
:class:`~llm_marl_envs.policies.GenerationConfig`; a :class:`PolicyFactory` builds the
policies of one environment with one config and gives the same policy object to every agent
that names the same model, so the rollout engine batches their turns together.
:func:`build_policies` builds a policy for every agent of an environment.

>>> import llm_marl_envs
>>> from llm_marl_envs.policies import PolicyFactory, build_policies
>>> maze = "llm_marl_envs/MazeCollab-v1"
>>> factory = PolicyFactory(maze, seed=3)
>>> policies = build_policies(factory, llm_marl_envs.make(maze), {"gnome_1": "random"}, "scripted")
>>> {agent: policy.name for agent, policy in policies.items()}
{'gnome_0': 'scripted:gnome_0', 'gnome_1': 'random'}
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from llm_marl_envs.core.validation import check_bool
from llm_marl_envs.policies.base import CallablePolicy, Completion, Policy, Prompt
from llm_marl_envs.policies.generation import GenerationConfig

if TYPE_CHECKING:  # the openai package loads the HTTP client: only when a spec needs it
    from llm_marl_envs.policies.openai import ServerOptions

__all__ = [
    "POLICY_SPECS",
    "not_replayable",
    "parse_hf_spec",
    "HumanPolicy",
    "ModelCache",
    "PolicyFactory",
    "RandomTextPolicy",
    "build_policies",
]

POLICY_SPECS = (
    "default",
    "tiny",
    "hf:NAME_OR_PATH[@REV]",
    "openai:URL[#MODEL]",
    "ckpt:RUN_DIR[#LEARNER]",
    "scripted",
    "random",
    "human",
)


def parse_hf_spec(text: str) -> tuple[str, str | None]:
    """``(name, revision)`` of the text after ``hf:``: an existing local path as it is, ``@``
    included, with no revision; else the text split at its last ``@`` into a Hub id and a
    revision (None without ``@``). A bad revision (empty, or not made of a branch's, tag's or
    sha's characters), an empty name, or a revision on an existing local path is a one-line
    ``ValueError`` naming the fix."""
    from llm_marl_envs.models.loading import check_revision

    if text and os.path.exists(text):
        return text, None
    name, at, revision = text.rpartition("@")
    if not at:
        name, revision = text, None
    if not name:
        raise ValueError(f"hf:{text} names no model: give hf:NAME_OR_PATH[@REV]")
    if revision is None:
        return name, None
    check_revision(revision, name)
    if os.path.exists(name):
        raise ValueError(
            f"hf:{text}: {name!r} is a local folder, which has no revisions: drop @{revision} "
            "or give a Hub id"
        )
    return name, revision


class RandomTextPolicy(Policy):
    """Random printable text from the agent's action space (``FreeText.sample``).

    Each answer is drawn with a generator seeded from ``seed`` and the prompt it answers, so
    replaying an episode's seed replays its answers, whatever the policy answered before.
    """

    def __init__(self, action_space, seed: int = 0) -> None:
        self.space = copy.deepcopy(action_space)  # its RNG is ours, not the environment's
        self.seed = seed
        self.name = "random"

    def generate(self, prompts):
        from llm_marl_envs.policies.scripted import turn_draw

        answers = []
        for prompt in prompts:
            self.space.seed(turn_draw(self.seed, prompt.observation, 2**63))
            answers.append(Completion(str(self.space.sample())))
        return answers


class HumanPolicy(Policy):
    """A person types the action; the prompt is printed first.

    One line is one action; end a line with a backslash to continue on the next line.
    """

    name = "human"

    def __init__(self, read=input, write=print) -> None:
        self.read, self.write = read, write

    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        answers = []
        for prompt in prompts:
            self.write(
                f"\n----- {prompt.agent} ({prompt.info.get('role', '')}) sees -----\n{prompt.observation}"
            )
            lines = [self.read(f"{prompt.agent}> ")]
            while lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1]
                lines.append(self.read("... "))
            answers.append(Completion("\n".join(lines)))
        return answers


class ModelCache:
    """Model policies loaded once per (spec, device, dtype, compile) and shared.

    :meth:`policy` gives a policy with the asked :class:`GenerationConfig` over the loaded
    model (``with_generation``: the weights are shared, the settings and sampling stream are
    the policy's own), so an evaluation loads each model once and plays every task with that
    task's settings.

    Args:
        server_options: How requests travel to ``openai:`` policies: a
            :class:`~llm_marl_envs.policies.openai.ServerOptions`, or a mapping of its fields
            (``{"timeout": 60, "max_retries": 1}``; kept as a ``ServerOptions``), or None for
            its defaults.
        return_token_ids: ``openai:`` policies ask their servers for token ids
            (:class:`~llm_marl_envs.policies.openai.OpenAIPolicy`'s ``return_token_ids``). A
            ``server_options`` mapping may carry it too, as the dict form did.
    """

    def __init__(
        self,
        server_options: ServerOptions | Mapping[str, Any] | None = None,
        *,
        return_token_ids: bool = False,
    ) -> None:
        if isinstance(server_options, Mapping) and "return_token_ids" in server_options:
            server_options = dict(server_options)  # the dict form carried it: take it out
            return_token_ids = server_options.pop("return_token_ids")
        if server_options is not None:  # checked now; None (the defaults) loads no HTTP client
            from llm_marl_envs.policies.openai.options import ServerOptions

            server_options = ServerOptions.of(server_options)
        self.server_options = server_options
        self.return_token_ids = check_bool("return_token_ids", return_token_ids)
        self._loaded: dict[tuple, Policy] = {}

    def policy(self, spec: str, config: GenerationConfig) -> Policy:
        """A policy of model ``spec`` that generates as ``config`` says; a local model loads
        where ``config.placement`` says (an ``openai:`` server places its model itself)."""
        key = (spec,) if spec.startswith("openai:") else (spec, *config.placement)
        if key not in self._loaded:
            self._loaded[key] = self._load(spec, config)
        return self._loaded[key].with_generation(config)

    def describe(self) -> dict[str, dict[str, Any]]:
        """Spec -> what a results manifest records about its model (``policy.describe()``), in
        spec order (an evaluation loads each spec in one placement)."""
        keys = sorted(self._loaded, key=lambda key: key[0])
        return {key[0]: self._loaded[key].describe() for key in keys}

    def close(self) -> None:
        for policy in self._loaded.values():
            policy.close()

    def _load(self, spec: str, config: GenerationConfig) -> Policy:
        if spec.startswith("openai:"):
            from llm_marl_envs.policies.openai import OpenAIPolicy

            tokens = {"return_token_ids": True} if self.return_token_ids else {}
            return OpenAIPolicy.from_config(
                spec[len("openai:") :], config, options=self.server_options, **tokens
            )
        if spec.startswith("ckpt:"):
            from llm_marl_envs.policies.checkpoint import checkpoint_policy

            return checkpoint_policy(spec[len("ckpt:") :], config)
        if spec in ("default", "tiny") or spec.startswith("hf:"):
            from llm_marl_envs.policies.hf import HFPolicy

            if not spec.startswith("hf:"):
                return HFPolicy.from_config(spec, config)
            name, revision = parse_hf_spec(spec[len("hf:") :])
            return HFPolicy.from_config(name, config, revision=revision)
        raise ValueError(f"unknown policy spec {spec!r}; use one of {', '.join(POLICY_SPECS)}")


def not_replayable(spec: str) -> str | None:
    """Why the answers of a policy spec cannot be replayed exactly (None: with the same seed
    and greedy settings they can): a server's answers or a person's are not ours to repeat."""
    if spec.startswith("openai:"):
        return "an openai seat (a server's answers)"
    if spec == "human":
        return "a human seat (a person's answers)"
    return None


class PolicyFactory:
    """Builds the policies of one environment from specs; each model spec gives one policy,
    shared by every agent that names it (so the rollout engine batches their turns).

    Args:
        env_id: The environment (for ``scripted``).
        seed: Seed of the scripted and random policies and of sampling; None:
            ``generation.seed``.
        generation: How model policies generate (default: :class:`GenerationConfig`'s).
        models: Where models are loaded (shared across factories, e.g. the tasks of an
            evaluation); default: a cache of this factory's own, closed by :meth:`close`.
        agent_streams: Random players draw from a stream of their own per agent (``seed *
            1000`` plus an offset from the agent's name); False: every random player draws
            from ``seed`` itself, as the evaluation harness seeds each seat with its task's
            seed (the records of every ``llm-marl eval`` result are made so, and replay so).
        server_options: How requests travel to ``openai:`` policies (as :class:`ModelCache`
            takes them), for the factory's own cache; with ``models``, give them to that cache.
    """

    def __init__(
        self,
        env_id: str,
        seed: int | None = None,
        *,
        generation: GenerationConfig | None = None,
        models: ModelCache | None = None,
        agent_streams: bool = True,
        server_options: ServerOptions | Mapping[str, Any] | None = None,
    ) -> None:
        if models is not None and server_options is not None:
            raise ValueError(
                "give server_options to the ModelCache passed as models, not to the factory"
            )
        generation = generation or GenerationConfig()
        self._generation = generation if seed is None else generation.replace(seed=seed)
        self.env_id, self.seed = env_id, self._generation.seed
        self.models = models or ModelCache(server_options)
        self._own_models = models is None
        self.agent_streams = check_bool("agent_streams", agent_streams)
        self._policies: dict[str, Policy] = {}

    def __call__(self, spec: str, agent: str, action_space=None) -> Policy:
        if not isinstance(spec, str) or not spec:
            raise ValueError(
                f"a policy spec must be a non-empty str, one of {POLICY_SPECS}; got {spec!r}"
            )
        if spec == "scripted":
            from llm_marl_envs.policies.scripted import scripted_policy

            return CallablePolicy(
                scripted_policy(self.env_id, agent, self.seed), name=f"scripted:{agent}"
            )
        if spec == "random":
            if action_space is None:
                raise ValueError("the random policy needs the agent's action space")
            if not self.agent_streams:
                return RandomTextPolicy(action_space, self.seed)
            offset = sum(map(ord, agent))  # a different stream per agent, same for a seed
            return RandomTextPolicy(action_space, self.seed * 1000 + offset)
        if spec == "human":
            return HumanPolicy()
        if spec not in self._policies:
            self._policies[spec] = self.models.policy(spec, self.generation)
        return self._policies[spec]

    @property
    def generation(self) -> GenerationConfig:
        """The settings of this factory's model policies: a ``max_new_tokens`` of None is the
        environment's token budget (:func:`~llm_marl_envs.registry.token_budget`; the
        backend's default for a factory without an ``env_id``)."""
        if self._generation.max_new_tokens is None and self.env_id:
            from llm_marl_envs.registry import token_budget

            self._generation = self._generation.replace(max_new_tokens=token_budget(self.env_id))
        return self._generation

    def close(self) -> None:
        """Close the models, unless they are a cache handed in (its owner closes it)."""
        if self._own_models:
            self.models.close()


def build_policies(
    factory: PolicyFactory,
    env: Any,
    per_agent: Mapping[str, str] | None = None,
    default: str | None = None,
) -> dict[str, Policy]:
    """A policy for every agent of ``env`` (an environment of ``factory.env_id``, made by the
    caller): the spec ``per_agent`` gives it, else ``default``.

    Raises ``ValueError`` naming the environment's agents when ``per_agent`` names another
    agent, or when an agent has no spec.
    """
    per_agent = dict(per_agent or {})
    agents = list(env.possible_agents)
    unknown = sorted(set(per_agent) - set(agents))
    if unknown:
        raise ValueError(f"{factory.env_id} has no agent(s) {unknown}; its agents are {agents}")
    missing = [agent for agent in agents if agent not in per_agent and default is None]
    if missing:
        raise ValueError(f"no policy spec for {missing} of {factory.env_id}; give a default")
    return {
        agent: factory(per_agent.get(agent, default), agent, env.action_space(agent))
        for agent in agents
    }
