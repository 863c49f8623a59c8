"""The TRL integration's third way in: :func:`env_rollout_func`, a ``GRPOTrainer``
``rollout_func`` that plays whole episodes through :func:`llm_marl_envs.rollout.rollout` with
the trainer's model as the learner, and :func:`episode_reward`, its reward function."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from llm_marl_envs.integrations.trl.replay import Partners, check_prompt, learner_view, prompt_key
from llm_marl_envs.policies.base import Completion, Policy, Prompt
from llm_marl_envs.rewards.inputs import per_row
from llm_marl_envs.rollout import EpisodePlan, LocalExecutor, rollout

__all__ = ["env_rollout_func", "episode_reward", "learner_episode_return", "trl_batch"]


class _TrainedModel(Policy):
    """Holds a partner's seat for the trained model (the ``"learner"`` partner: self-play);
    each call of the rollout function puts that call's model there."""

    name = "learner"

    def generate(self, prompts: list[Prompt]) -> list[Completion]:
        raise RuntimeError("the 'learner' partner plays only inside env_rollout_func")


_TRAINED_MODEL = _TrainedModel()


def _seat_for_the_model(partners: Partners) -> Partners:
    """``partners`` with each ``"learner"`` spec replaced by the trained model's seat."""
    if isinstance(partners, Mapping):
        return {a: _seat_for_the_model(spec) for a, spec in partners.items()}
    return _TRAINED_MODEL if isinstance(partners, str) and partners == "learner" else partners


def _seed_index(dataset: Any) -> dict[str, int]:
    if dataset is None or not hasattr(dataset, "column_names"):
        return {}
    if "seed" not in dataset.column_names or "prompt" not in dataset.column_names:
        return {}
    index: dict[str, int] = {}
    for prompt, seed in zip(dataset["prompt"], dataset["seed"], strict=True):
        index.setdefault(prompt_key(prompt), int(seed))
    return index


def _group_size(prompts: list[Any], trainer: Any) -> int:
    """TRL repeats each prompt ``num_generations`` times in a row; check it, else 1."""
    training = getattr(trainer.model, "training", True)
    size = int(trainer.num_generations if training else trainer.num_generations_eval)
    keys = [prompt_key(p) for p in prompts]
    if size > 1 and len(keys) % size == 0:
        if all(keys[i] == keys[i - i % size] for i in range(len(keys))):
            return size
    return 1


def env_rollout_func(
    env_id: str,
    agent: str,
    *,
    partners: Partners = "scripted",
    env_kwargs: Mapping[str, Any] | None = None,
    partner_seed: int = 0,
    env_workers: int | None = None,
) -> Callable[[list[Any], Any], dict[str, list]]:
    """A ``GRPOTrainer`` ``rollout_func`` that plays whole episodes with the trainer's model.

    TRL calls ``rollout_func(prompts, trainer)`` with this process's prompts, each repeated
    ``num_generations`` times in a row, and expects ``prompt_ids``, ``completion_ids`` and
    ``logprobs`` per prompt; other keys go to the reward functions. Each run of repeated
    prompts is one group: its episodes reset with the row's seed (looked up by prompt in the
    trainer's ``train_dataset``/``eval_dataset``, from :func:`env_dataset`), and are played
    through :func:`llm_marl_envs.rollout.rollout` with the model as the learner (sampling at
    the trainer's temperature and top-p, ``max_completion_length`` new tokens per turn).

    Returned per episode: the learner's first prompt; as completion, its turns with the
    prompt text the env added between them (``env_mask`` 0, no loss) as long as each turn's
    prompt extends the previous one token for token (later turns are left out otherwise;
    ``trained_turns`` says how many are in); ``episode_return`` (the learner's return from
    its first action on, read by :func:`episode_reward`) and ``learner_turns``.

    Args:
        env_id: As for :func:`env_dataset`.
        agent: As for :func:`env_dataset`.
        partners: As for :func:`env_dataset`; a partner may also be ``"learner"`` (the
            trained model plays it too: self-play).
        env_kwargs: As for :func:`env_dataset`.
        partner_seed: As for :func:`env_dataset`.
        env_workers: Threads for heavy env steps (see :func:`llm_marl_envs.rollout.rollout`).
    """
    state: dict[str, Any] = {"calls": 0, "index": {}}

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
        size = _group_size(prompts, trainer)
        seeds = [_seed_of(state["index"], p, trainer) for p in prompts[::size]]
        learner = _learner(trainer, state["calls"], conversational=not isinstance(prompts[0], str))
        state["calls"] += 1
        if "partners" not in state:
            state["partners"] = _partners(env_id, agent, partners, partner_seed, env_kwargs)
        policies = _seats(agent, learner, state["partners"])
        result = rollout(
            env_id,
            policies,
            batch_size=len(prompts),
            group_size=size,
            env_kwargs=env_kwargs,
            progress=False,
            plan=EpisodePlan(seeds=seeds),
            executor=LocalExecutor(env_workers),
        )
        return trl_batch(result.episodes, prompts, seeds, size, agent)

    return rollout_func


def _partners(
    env_id: str,
    agent: str,
    partners: Partners,
    partner_seed: int,
    env_kwargs: Mapping[str, Any] | None,
) -> dict[str, Policy]:
    """The partners' policies, built once (the trained model's seats hold
    :data:`_TRAINED_MODEL`)."""
    view = learner_view(env_id, agent, _seat_for_the_model(partners), partner_seed, env_kwargs)
    policies = view.partner_policies()
    view.aec_env.close()  # the partners' policies stay in use
    return policies


def _seats(agent: str, learner: Policy, partners: Mapping[str, Policy]) -> dict[str, Policy]:
    """A policy per agent: the learner's, and the partners' (the trained model where a
    partner is ``"learner"``)."""
    policies = {agent: learner}
    for other, policy in partners.items():
        policies[other] = learner if policy is _TRAINED_MODEL else policy
    return policies


def _seed_of(index: dict[str, int], prompt: Any, trainer: Any) -> int:
    """The seed of ``prompt``'s row in the trainer's datasets (``index``: those read so far)."""
    key = prompt_key(prompt)
    if key not in index:
        evaluation = trainer.eval_dataset
        sets = list(evaluation.values()) if isinstance(evaluation, dict) else [evaluation]
        for dataset in [trainer.train_dataset, *sets]:
            for k, v in _seed_index(dataset).items():
                index.setdefault(k, v)
    if key not in index:
        raise ValueError(
            "a prompt is not in the trainer's datasets with a 'seed' column: build the "
            "dataset with llm_marl_envs.integrations.trl.env_dataset"
        )
    return index[key]


def _learner(trainer: Any, call: int, conversational: bool) -> Policy:
    """The trainer's model as the learner's policy for the ``call``-th call: sampling at the
    trainer's temperature and top-p, seeded from the trainer's seed, step and ``call``."""
    from llm_marl_envs.policies import GenerationConfig
    from llm_marl_envs.policies.hf import HFPolicy

    digest = hashlib.sha256(f"{trainer.args.seed}:{trainer.state.global_step}:{call}".encode())
    return HFPolicy(
        trainer.accelerator.unwrap_model(trainer.model),
        trainer.processing_class,
        generation=GenerationConfig(
            do_sample=True,
            temperature=trainer.temperature,
            top_p=trainer.top_p if trainer.top_p else 1.0,
            seed=int.from_bytes(digest.digest()[:8], "little") >> 1,
        ),
        max_new_tokens=trainer.max_completion_length,
        use_chat_template=conversational,
        name="trl-learner",
    )


def trl_batch(
    episodes: list[Any], prompts: list[Any], seeds: list[int], size: int, agent: str
) -> dict[str, list]:
    """What TRL expects of a ``rollout_func`` from the rollout's ``episodes`` (one per prompt;
    ``seeds``: one per group of ``size``): the learner's first prompt ids, its turns as one
    completion (the env's text between them masked out), log-probabilities, the return."""
    out: dict[str, list] = {
        key: []
        for key in (
            "prompt_ids",
            "completion_ids",
            "logprobs",
            "env_mask",
            "episode_return",
            "learner_turns",
            "trained_turns",
        )
    }
    for index, (episode, prompt) in enumerate(zip(episodes, prompts, strict=True)):
        turns = [t for t in episode.turns if t.agent == agent]
        if not turns:
            raise ValueError(f"{agent} never acted in the episode of seed {seeds[index // size]}")
        first = turns[0]
        check_prompt(prompt, first.observation, {"messages": first.messages}, seeds[index // size])
        prompt_ids = list(first.prompt_ids)
        completion, logprobs = list(first.completion_ids), list(first.logprobs)
        mask = [1] * len(completion)
        trained = 1
        for turn in turns[1:]:
            context = prompt_ids + completion
            if turn.prompt_ids[: len(context)] != context:
                break
            added = turn.prompt_ids[len(context) :]
            completion += added + list(turn.completion_ids)
            logprobs += [0.0] * len(added) + list(turn.logprobs)
            mask += [0] * len(added) + [1] * len(turn.completion_ids)
            trained += 1
        out["prompt_ids"].append(prompt_ids)
        out["completion_ids"].append(completion)
        out["logprobs"].append(logprobs)
        out["env_mask"].append(mask)
        out["episode_return"].append(learner_episode_return(episode, agent))
        out["learner_turns"].append(len(turns))
        out["trained_turns"].append(trained)
    return out


def learner_episode_return(episode: Any, agent: str) -> float:
    """The learner's return in a rollout record: what its turns were paid, its first on."""
    return float(sum(turn.reward for turn in episode.turns if turn.agent == agent))


def episode_reward(
    completions: list[Any], episode_return: list[float] | None = None, **kwargs: Any
) -> list[float]:
    """The reward of :func:`env_rollout_func`'s episodes: the ``episode_return`` it returned."""
    if episode_return is None:
        raise TypeError("episode_reward reads episode_return, which env_rollout_func returns")
    return [float(r) for r in per_row(episode_return, len(completions), "episode_return")]
