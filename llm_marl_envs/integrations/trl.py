"""TRL's ``GRPOTrainer`` on the package's environments: datasets, rewards, rollouts, tools.

One agent of a multi-agent environment is the *learner* (the model TRL trains); the other
agents are *partners*, played by policies (``"scripted"`` by default: the environment's
built-in players, deterministic for a seed), with ``partner_seed`` in every episode. Every
episode here is seen through the Gymnasium view,
:class:`~llm_marl_envs.integrations.gymnasium.SingleAgentEnv`: reset with a seed, the partners
play until the learner's turn, the learner acts, the partners play again, and so on; the
learner's return is what the view's steps pay it. Four ways in, from the simplest:

* **reward_funcs**: :func:`env_dataset` builds a ``datasets.Dataset`` of the learner's first
  prompts (text or chat messages), each with its episode ``seed`` and the columns its reward
  needs; the reward functions of :mod:`llm_marl_envs.rewards` read those columns
  (``coop_coding_reward``, the coding one, is importable from here too).
* **env_reward**: :func:`env_reward` scores each completion by replaying its episode in the
  real environment: reset with the row's seed, partners play their turns, the completion is
  the learner's action (its later turns, in multi-turn games, are played by
  ``continuation``); the reward is the learner's return from that action on.
* **rollout_func**: :func:`env_rollout_func` plays whole episodes through
  :func:`llm_marl_envs.rollout.rollout` with the trainer's model as the learner (a
  :class:`~llm_marl_envs.policies.hf.HFPolicy` around it) and hands TRL the learner's tokens;
  :func:`episode_reward` is the matching reward function.
* **environment_factory**: :func:`tool_environment` wraps a multi-turn game (MazeCollab:
  ``move``; DonorGame: ``donate``, plus ``punish`` in the punishment variant; any other env:
  ``act``) as a TRL environment whose methods are the model's tools.

The dataset and the rewards must be built with the same ``env_kwargs``, ``partners`` and
``partner_seed``: a replay that does not reproduce the row's prompt raises ``ValueError``.

>>> from llm_marl_envs.integrations.trl import env_dataset       # doctest: +SKIP
>>> from llm_marl_envs.rewards import gsm8k_reward                # doctest: +SKIP
>>> dataset = env_dataset("llm_marl_envs/GSM8K-v0", "observer_0", 64)       # doctest: +SKIP
>>> GRPOTrainer(model, reward_funcs=gsm8k_reward, train_dataset=dataset)   # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.integrations._trl_replay import (  # the pieces every way in shares
    Partners,
    PartnerSpec,
    _ask as _ask,  # re-exported: defined here before the split, as are the others
    _check_prompt,
    _continuation,
    _learner_return,
    _messages,
    _partner_column,
    _prompt_key,
    _self_play as _self_play,
    _task_columns,
    _team_columns as _team_columns,
    _view,
)
from llm_marl_envs.integrations._trl_tools import (  # tool_environment's classes
    _DonorPunishTools,
    _DonorTools,
    _MazeTools,
    _TextTools,
    _ToolEnvironment as _ToolEnvironment,
)
from llm_marl_envs.integrations.gymnasium import SingleAgentEnv
from llm_marl_envs.policies.base import Completion, Policy, Prompt
from llm_marl_envs.rewards.coding_sandbox import coop_coding_reward
from llm_marl_envs.rewards.inputs import completion_text, per_row
from llm_marl_envs.rollout import rollout

datasets = require("datasets", "integrations", "the TRL integration")
require("trl", "integrations", "the TRL integration")

__all__ = [
    "coop_coding_reward",
    "env_dataset",
    "env_reward",
    "env_rollout_func",
    "episode_reward",
    "tool_environment",
]


# --------------------------------------------------------------------------- 1. datasets
def env_dataset(
    env_id: str,
    agent: str,
    n: int,
    *,
    seed: int = 0,
    partners: Partners = "scripted",
    conversational: bool = True,
    env_kwargs: Mapping[str, Any] | None = None,
    partner_seed: int = 0,
) -> Any:
    """A ``datasets.Dataset`` of ``n`` episodes, each at the learner's first turn.

    Row ``i`` plays the episode of seed ``seed + i`` until ``agent`` must act (partners play
    the turns before). Columns:

    * ``prompt``: the learner's prompt, chat messages (``conversational=True``: the env's
      ``infos[agent]["messages"]``) or text (its observation);
    * ``seed``, ``agent``;
    * what the matching reward reads to pay what the env pays: ``max_action_length`` (longer
      answers are format failures); ``reward_impl`` where the env offers more than one
      (writing, coding); GSM8K ``question``, ``answer`` (the gold number); IMDB ``query``,
      ``reject_echo``, ``scorer`` (when the env's is named); GSM8K and IMDB ``reward_mode``
      and, on the observer's rows, ``partner_reward`` (the pioneer's task reward: the
      collective reward is r1 + r2; on the pioneer's rows the reward functions refuse it, as
      the observer has not answered yet: use :func:`env_reward`); writing ``source``,
      ``task``, ``learner`` (``"first"``/``"second"``); coding ``problem_prompt``, ``test``,
      ``entry_point``, ``authors_harness``; and, in two-agent games, ``partner_completion``
      (the partner's text of the round, ``""`` if it has none yet).

    Args:
        env_id: A registered id.
        agent: The learner.
        n: Number of rows.
        seed: Seed of the first episode.
        partners: One spec for every partner or ``{agent: spec}`` (see :data:`PartnerSpec`).
        conversational: Chat-message prompts (True) or text prompts.
        env_kwargs: Constructor arguments of the env.
        partner_seed: Seed of the partner policies.
    """
    view = _view(env_id, agent, partners, partner_seed, env_kwargs)
    rows = []
    for episode_seed in range(seed, seed + n):
        observation, info = view.reset(seed=episode_seed)
        prompt = _messages(observation, info) if conversational else str(observation)
        rows.append(
            {
                "prompt": prompt,
                "seed": episode_seed,
                "agent": agent,
                **_task_columns(view.aec_env, agent),
                **_partner_column(view),
            }
        )
    view.close()
    return datasets.Dataset.from_list(rows)


# --------------------------------------------------------------------------- 2. rewards
def env_reward(
    env_id: str,
    agent: str,
    *,
    partners: Partners = "scripted",
    continuation: PartnerSpec | None = "scripted",
    env_kwargs: Mapping[str, Any] | None = None,
    partner_seed: int = 0,
) -> Callable[..., list[float]]:
    """A reward function (TRL's signature) that replays each completion's episode.

    For each completion: reset the env with the row's ``seed`` column, let the partners play
    until the learner's first turn, play the completion as its action, then the rest of the
    episode (the learner's later turns by ``continuation``); the reward is the learner's
    return from its action to the end (in GSM8K's collective mode: r1 + r2, the partner's
    answer included). The row's prompt is checked against the replay.

    Args:
        env_id: As for :func:`env_dataset`.
        agent: As for :func:`env_dataset` (the same value).
        partners: As for :func:`env_dataset` (the same value).
        env_kwargs: As for :func:`env_dataset` (the same value).
        partner_seed: As for :func:`env_dataset` (the same value).
        continuation: The learner's later turns in multi-turn games: a spec or policy, or
            None for empty replies (format failures).
    """
    state: dict[str, Any] = {}

    def setup() -> SingleAgentEnv:
        if "view" not in state:
            view = _view(env_id, agent, partners, partner_seed, env_kwargs)
            state["view"] = view
            state["continuation"] = _continuation(view, continuation, partner_seed)
        return state["view"]

    def env_reward(completions: list[Any], seed: Any = None, **kwargs: Any) -> list[float]:
        if seed is None:
            raise TypeError("env_reward needs the dataset's 'seed' column (see env_dataset)")
        view = setup()
        seeds = per_row(seed, len(completions), "seed")
        prompts = kwargs.get("prompts")
        prompts = [None] * len(completions) if prompts is None else list(prompts)
        rewards = []
        for completion, episode_seed, prompt in zip(completions, seeds, prompts, strict=True):
            observation, info = view.reset(seed=int(episode_seed))
            if prompt is not None:
                _check_prompt(prompt, observation, info, int(episode_seed))
            action = completion_text(completion)
            rewards.append(_learner_return(view, action, state["continuation"]))
        return rewards

    return env_reward


# --------------------------------------------------------------------------- 3. rollout_func
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
        index.setdefault(_prompt_key(prompt), int(seed))
    return index


def _group_size(prompts: list[Any], trainer: Any) -> int:
    """TRL repeats each prompt ``num_generations`` times in a row; check it, else 1."""
    training = getattr(trainer.model, "training", True)
    size = int(trainer.num_generations if training else trainer.num_generations_eval)
    keys = [_prompt_key(p) for p in prompts]
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
    from llm_marl_envs.policies.hf import HFPolicy

    state: dict[str, Any] = {"calls": 0, "index": {}}

    def seed_of(prompt: Any, trainer: Any) -> int:
        key = _prompt_key(prompt)
        if key not in state["index"]:
            evaluation = trainer.eval_dataset
            sets = list(evaluation.values()) if isinstance(evaluation, dict) else [evaluation]
            for dataset in [trainer.train_dataset, *sets]:
                for k, v in _seed_index(dataset).items():
                    state["index"].setdefault(k, v)
        if key not in state["index"]:
            raise ValueError(
                "a prompt is not in the trainer's datasets with a 'seed' column: build the "
                "dataset with llm_marl_envs.integrations.trl.env_dataset"
            )
        return state["index"][key]

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
        size = _group_size(prompts, trainer)
        seeds = [seed_of(p, trainer) for p in prompts[::size]]
        conversational = not isinstance(prompts[0], str)
        digest = hashlib.sha256(
            f"{trainer.args.seed}:{trainer.state.global_step}:{state['calls']}".encode()
        ).digest()
        state["calls"] += 1
        learner = HFPolicy(
            trainer.accelerator.unwrap_model(trainer.model),
            trainer.processing_class,
            max_new_tokens=trainer.max_completion_length,
            do_sample=True,
            temperature=trainer.temperature,
            top_p=trainer.top_p if trainer.top_p else 1.0,
            seed=int.from_bytes(digest[:8], "little") >> 1,
            use_chat_template=conversational,
            name="trl-learner",
        )
        if "partners" not in state:
            view = _view(env_id, agent, _seat_for_the_model(partners), partner_seed, env_kwargs)
            state["partners"] = view.partner_policies()
            view.aec_env.close()  # the partners' policies stay in use
        policies = {agent: learner}
        for other, policy in state["partners"].items():
            policies[other] = learner if policy is _TRAINED_MODEL else policy
        result = rollout(
            env_id,
            policies,
            batch_size=len(prompts),
            group_size=size,
            env_kwargs=env_kwargs,
            progress=False,
            seeds=seeds,
            env_workers=env_workers,
        )
        return _trl_batch(result.episodes, prompts, seeds, size, agent)

    return rollout_func


def _trl_batch(
    episodes: list[Any], prompts: list[Any], seeds: list[int], size: int, agent: str
) -> dict[str, list]:
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
        _check_prompt(prompt, first.observation, {"messages": first.messages}, seeds[index // size])
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
        out["episode_return"].append(_episode_return(episode, agent))
        out["learner_turns"].append(len(turns))
        out["trained_turns"].append(trained)
    return out


def _episode_return(episode: Any, agent: str) -> float:
    """The learner's return in a rollout record: what its turns were paid, its first on."""
    return float(sum(turn.reward for turn in episode.turns if turn.agent == agent))


def episode_reward(
    completions: list[Any], episode_return: list[float] | None = None, **kwargs: Any
) -> list[float]:
    """The reward of :func:`env_rollout_func`'s episodes: the ``episode_return`` it returned."""
    if episode_return is None:
        raise TypeError("episode_reward reads episode_return, which env_rollout_func returns")
    return [float(r) for r in per_row(episode_return, len(completions), "episode_return")]


# --------------------------------------------------------------------------- 4. tool envs
def tool_environment(
    env_id: str,
    agent: str,
    *,
    partners: Partners = "scripted",
    env_kwargs: Mapping[str, Any] | None = None,
    partner_seed: int = 0,
    continuation: PartnerSpec | None = None,
    seed: int = 0,
) -> type:
    """A class to pass as ``GRPOTrainer(environment_factory=...)``: ``agent`` of ``env_id``.

    TRL makes one instance per rollout, calls ``reset(**row)`` (the row's ``seed`` picks the
    episode; without a dataset, seeds ``seed, seed + 1, ...`` in turn), exposes the public
    methods as tools, executes the model's tool calls (each plays one turn of the learner;
    partners then play until its next turn, whose new observation is the tool's result), and
    logs ``get_reward()`` (the learner's return) under the class's name. MazeCollab:
    ``move(direction, message)``; DonorGame: ``donate(amount)`` (and ``punish(amount)``
    with ``punishment=True``); other envs: ``act(action)``.

    TRL needs a chat template that renders tool calls (``user -> assistant with tool_calls ->
    tool``; checked by ``trl.chat_template_utils.supports_tool_calling``) and a response
    parser for the model's tool calls (``add_response_schema`` sets one for the templates TRL
    knows, e.g. Qwen3's, shipped in ``trl/chat_templates/``).

    Args:
        env_id: As for :func:`env_dataset`.
        agent: As for :func:`env_dataset`.
        partners: As for :func:`env_dataset`.
        env_kwargs: As for :func:`env_dataset`.
        partner_seed: As for :func:`env_dataset`.
        continuation: Turns the model did not play when ``get_reward`` is called (it stopped
            calling tools): a spec or policy, or None for empty replies (format failures).
        seed: First episode seed when rows carry none.
    """
    probe = _view(env_id, agent, partners, partner_seed, env_kwargs)
    game = probe.aec_env.unwrapped
    name = str(probe.aec_env.metadata.get("name", "Env")).split("-v")[0].replace("-", "")
    policies, then = probe.partner_policies(), _continuation(probe, continuation, partner_seed)
    probe.aec_env.close()  # the partners' policies stay in use
    if name == "MazeCollab":
        base: type = _MazeTools
    elif name == "DonorGame":
        base = _DonorPunishTools if getattr(game, "punishment", False) else _DonorTools
    else:
        base = _TextTools
    return type(
        f"{name}Environment",
        (base,),
        {
            "__module__": __name__,
            "__doc__": f"{env_id} as a TRL environment: the learner is {agent}.",
            "_env_id": env_id,
            "_agent": agent,
            "_env_kwargs": dict(env_kwargs or {}),
            "_partners": policies,
            "_partner_seed": partner_seed,
            "_continuation": then,
            "_seeds": itertools.count(seed),
        },
    )
