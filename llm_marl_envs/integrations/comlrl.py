"""CoMLRL's ``MAGRPOTrainer`` (the MAGRPO authors' trainer library) on the package's environments.

CoMLRL (``pip install comlrl``) trains one model per seat of a cooperative task: at each turn
every agent answers its own prompt at the same time, one reward function scores the joint
answer, and, with ``num_turns > 1``, an ``external_transition`` gives each agent its next
prompt. :class:`MAGRPOTask` makes all of them from one of our simultaneous environments
(TLDRSummarization, ArxivExpansion, CoopCoding: the ids with a Parallel form):

* :meth:`MAGRPOTask.dataset`: a ``datasets.Dataset`` of episodes; a row holds its episode
  ``seed``, every seat's first prompt (``prompts``, in the env's ``possible_agents`` order;
  ``prompt`` is the first seat's, for CoMLRL's logs) and ``branch`` (bookkeeping, below);
* :attr:`MAGRPOTask.formatters`: one per seat (CoMLRL's ``formatters``), each returning its
  seat's prompt of the row, or at later turns the prompt the transition made;
* :meth:`MAGRPOTask.reward`: the env's own reward for a joint answer: reset the env with the
  row's seed, replay the earlier turns of the branch, play the joint answer as one round
  (``{seat: answer}``) and read the round's rewards (their mean over the seats: our
  simultaneous envs pay every seat the same shared reward). Its extra arguments are
  keyword-only, as CoMLRL's argument inspection needs (``reward(*completions, batch_items)``);
* :meth:`MAGRPOTask.transition`: CoMLRL's ``external_transition``: replays the branch's turns
  in the env and returns each seat's next observation (CoopCoding with ``num_turns=2``: the
  authors' ``level_feedback`` prompt in v1 and v2, the execution feedback in v0).

:func:`trainer_kwargs` bundles them as ``MAGRPOTrainer``'s keyword arguments: the one line of
ours in ``docs/integrations.md`` (section CoMLRL). Prompts are the env's text observations
(CoMLRL tokenizes the prompt text as it is; no chat template).

**How a later turn's reward finds its branch.** CoMLRL calls the reward with the turn's
answers and the row, not with the answers of the earlier turns, and the transition with the
histories of the branch, not with the row. The formatters tie them: at turn 0 a formatter
records which episode the row's prompts belong to; at a later turn CoMLRL hands each
formatter the prompt the transition made, and the formatter writes that branch's history into
the row's ``branch`` list, which CoMLRL's per-turn copies of the row share with the row the
reward receives. This holds in CoMLRL 1.4.3's training (``joint_mode`` aligned or cross) and
its evaluation (tested); ``MAGRPOConfig(external_prompt_passthrough=True)`` bypasses the
formatters, so the reward refuses it. Rows of the same task object replay
exactly; a replay that does not give the row's prompts raises ``ValueError``.

>>> from comlrl.trainers.reinforce import MAGRPOConfig, MAGRPOTrainer          # doctest: +SKIP
>>> from llm_marl_envs.integrations.comlrl import trainer_kwargs               # doctest: +SKIP
>>> MAGRPOTrainer(agents=[model_a, model_b], tokenizer=tokenizer, args=MAGRPOConfig(),
...     **trainer_kwargs("llm_marl_envs/TLDRSummarization-v1", 64))            # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.core.validation import check_int
from llm_marl_envs.registry import latest_envs, list_envs, make_parallel, spec

datasets = require("datasets", "integrations", "the CoMLRL integration")
require("comlrl", "integrations", "the CoMLRL integration")

__all__ = ["MAGRPOTask", "simultaneous_envs", "trainer_kwargs"]

#: Outcomes of replays kept (each one reset plus one step per turn of its branch).
_CACHE_SIZE = 512

History = tuple[tuple[str, ...], ...]  # one joint answer (seat order) per played turn


@dataclass(frozen=True)
class _Outcome:
    """The env after a replay: each seat's observation, the last round's rewards (empty
    after a reset), and whether the episode is over."""

    observations: tuple[str, ...]
    rewards: tuple[float, ...]
    done: bool


def simultaneous_envs() -> list[str]:
    """The registered ids CoMLRL can train: those whose agents act at the same time."""
    return [env_id for env_id in list_envs() if spec(env_id).parallel_entry_point is not None]


class MAGRPOTask:
    """One environment as CoMLRL's dataset, formatters, reward and transition.

    Args:
        env_id: A registered id of a simultaneous environment (see :func:`simultaneous_envs`).
        env_kwargs: Constructor arguments of the env (e.g. ``{"num_turns": 2}`` for
            CoopCoding's second round, ``{"data_source": "bundled"}``).

    Raises:
        ValueError: For a turn-based env (CoMLRL's agents answer at the same time: train one
            seat of it with :mod:`llm_marl_envs.integrations.trl`).
    """

    def __init__(self, env_id: str, *, env_kwargs: Mapping[str, Any] | None = None) -> None:
        entry = spec(env_id)
        if entry.parallel_entry_point is None:
            usable = ", ".join(e for e in latest_envs() if e in simultaneous_envs())
            raise ValueError(
                f"{env_id} is turn-based ({entry.turns}) and CoMLRL's agents answer at the same "
                f"time: use a simultaneous env ({usable}), or train one seat of {env_id} with "
                "llm_marl_envs.integrations.trl"
            )
        if env_kwargs is not None and not isinstance(env_kwargs, Mapping):
            raise TypeError(f"env_kwargs must be a dict, got {type(env_kwargs).__name__}")
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self._env = make_parallel(env_id, **self.env_kwargs)
        #: The seats, in the order of CoMLRL's agents (the env's ``possible_agents``).
        self.agents: list[str] = list(self._env.possible_agents)
        self.num_agents = len(self.agents)
        #: One formatter per seat, CoMLRL's ``formatters``.
        self.formatters: list[Callable[..., str]] = [
            self._formatter(seat) for seat in range(self.num_agents)
        ]
        self._episodes: dict[tuple[str, ...], int] = {}  # first prompts -> seed (turn 0 rows)
        self._branches: OrderedDict[tuple[int, str], str] = OrderedDict()  # (seat, prompt)
        self._outcomes: OrderedDict[tuple[int, History], _Outcome] = OrderedDict()
        self._unformatted: str | None = None  # the last transition's branch, until formatted

    # ----------------------------------------------------------------------- dataset
    def dataset(self, n: int, *, seed: int = 0) -> Any:
        """A ``datasets.Dataset`` of ``n`` episodes: row ``i`` is the episode of seed
        ``seed + i``, with columns ``seed``, ``prompt`` (the first seat's first prompt),
        ``prompts`` (every seat's, in :attr:`agents` order) and ``branch`` (the formatters'
        bookkeeping: leave it as it is)."""
        n = check_int("n", n, 1)
        seed = check_int("seed", seed, 0)
        rows = []
        for episode_seed in range(seed, seed + n):
            prompts = list(self._play(episode_seed, ()).observations)
            rows.append(
                {"seed": episode_seed, "prompt": prompts[0], "prompts": prompts, "branch": [""]}
            )
        return datasets.Dataset.from_list(rows)

    # ----------------------------------------------------------------------- formatters
    def _formatter(self, seat: int) -> Callable[..., str]:
        def formatter(item: Mapping[str, Any], external_prompts: Any = None) -> str:
            prompts, branch = _row(item, self.num_agents)
            if external_prompts is None:
                if seat == 0:
                    # Turn 0, or CoMLRL's evaluation formatting the row again before it
                    # scores a later turn: the branch stays as the transition left it.
                    self._episodes[tuple(prompts)] = int(item["seed"])
                else:  # turn 0 of a rollout: no earlier turns
                    branch[:] = [""]
                return prompts[seat]
            text = external_prompts if isinstance(external_prompts, str) else None
            key = self._branches.get((seat, text)) if text is not None else None
            if key is None:
                raise ValueError(
                    f"seat {seat}'s prompt at a later turn is not one MAGRPOTask.transition "
                    "made: pass the same task's transition as external_transition"
                )
            branch[:] = [key]
            if key == self._unformatted:
                self._unformatted = None
            return text

        formatter.__name__ = f"format_{self.agents[seat]}"
        formatter.__qualname__ = f"MAGRPOTask.{formatter.__name__}"
        return formatter

    # ----------------------------------------------------------------------- reward
    def reward(
        self,
        *completions: Sequence[str],
        batch_items: Sequence[Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        """The env's reward for each joint answer: ``completions[k][j]`` is seat ``k``'s
        ``j``-th answer; CoMLRL passes one answer per seat and the row as ``batch_items``.

        Returns one float per joint answer: the mean over the seats of the round's reward
        after replaying the branch's earlier turns (the shared reward, in these envs).
        """
        if batch_items is None:
            raise TypeError(
                "MAGRPOTask.reward needs batch_items (the dataset rows): pass it to "
                "MAGRPOTrainer as reward_func, which hands them over"
            )
        if len(completions) != self.num_agents:
            raise ValueError(
                f"{self.env_id} has {self.num_agents} seats ({', '.join(self.agents)}), got "
                f"answers for {len(completions)}: MAGRPOTrainer needs num_agents="
                f"{self.num_agents}"
            )
        answers = [_texts(c) for c in completions]
        size = len(answers[0])
        if any(len(a) != size for a in answers):
            raise ValueError("every seat needs the same number of answers")
        items = list(batch_items)
        if len(items) not in (1, size):
            raise ValueError(f"batch_items holds {len(items)} rows for {size} joint answers")
        rewards = []
        for j in range(size):
            item = items[j if len(items) == size else 0]
            episode_seed, history = self._branch_of(item)
            joint = tuple(a[j] for a in answers)
            outcome = self._play(episode_seed, (*history, joint))
            rewards.append(sum(outcome.rewards) / len(outcome.rewards))
        return rewards

    def _branch_of(self, item: Mapping[str, Any]) -> tuple[int, History]:
        """The row's episode seed and the earlier turns of the branch being scored."""
        row_prompts, branch = _row(item, self.num_agents)
        episode_seed = _seed(item)
        first = self._play(episode_seed, ())
        if list(first.observations) != row_prompts:
            raise ValueError(
                f"replaying seed {episode_seed} of {self.env_id} does not give the row's prompts: "
                "build the dataset with this task (the same env_id and env_kwargs)"
            )
        if self._unformatted is not None:
            raise ValueError(
                "the reward was called for a later turn whose prompts the task's formatters did "
                "not see: keep MAGRPOConfig(external_prompt_passthrough=False) and pass "
                "formatters=task.formatters"
            )
        if not branch[0]:
            return episode_seed, ()
        recorded_seed, history = _decode(branch[0])
        if any(len(joint) != self.num_agents for joint in history):
            raise ValueError(
                "a row's branch column is not the formatters' record: rebuild the dataset"
            )
        if recorded_seed != episode_seed:
            raise ValueError("the row's branch belongs to another episode: rebuild the dataset")
        return episode_seed, history

    # ----------------------------------------------------------------------- transition
    def transition(
        self,
        *,
        agent_completions: Sequence[str],
        prompt_history_per_agent: Sequence[Sequence[str]],
        response_history_per_agent: Sequence[Sequence[str]],
        **kwargs: Any,
    ) -> list[str]:
        """CoMLRL's ``external_transition``: each seat's next prompt, the env's observation
        after the branch's turns (``response_history_per_agent``, this turn's answers
        last)."""
        if len(prompt_history_per_agent) != self.num_agents or not all(prompt_history_per_agent):
            raise ValueError(
                f"the transition needs every seat's prompt history ({self.num_agents} seats)"
            )
        firsts = tuple(str(h[0]) for h in prompt_history_per_agent)
        episode_seed = self._episodes.get(firsts)
        if episode_seed is None:
            raise ValueError(
                "the first prompts of this branch are not a row the task's formatters saw: "
                "pass formatters=task.formatters and a dataset of task.dataset(...)"
            )
        responses = [[_text(r) for r in h] for h in response_history_per_agent]
        if len(responses) != self.num_agents or len({len(h) for h in responses}) != 1:
            raise ValueError("every seat needs one answer per turn played")
        history: History = tuple(zip(*responses, strict=True))
        if not history or tuple(_text(c) for c in agent_completions) != history[-1]:
            raise ValueError("agent_completions must be the last turn of the response histories")
        outcome = self._play(episode_seed, history)
        if outcome.done:
            raise ValueError(
                f"{self.env_id}'s episode ends after {len(history)} round(s): set "
                f"MAGRPOConfig(num_turns={len(history)}), or give the env more rounds "
                "(CoopCoding: env_kwargs={'num_turns': 2})"
            )
        key = _encode(episode_seed, history)
        for seat, text in enumerate(outcome.observations):
            self._branches[(seat, text)] = key
            self._branches.move_to_end((seat, text))
        while len(self._branches) > _CACHE_SIZE:
            self._branches.popitem(last=False)
        self._unformatted = key
        return list(outcome.observations)

    # ----------------------------------------------------------------------- the env
    def _play(self, episode_seed: int, history: History) -> _Outcome:
        """Reset with ``episode_seed`` and play ``history`` (one joint answer per round)."""
        key = (episode_seed, history)
        if key in self._outcomes:
            self._outcomes.move_to_end(key)
            return self._outcomes[key]
        env = self._env
        observations, _ = env.reset(seed=episode_seed)
        outcome = _Outcome(tuple(str(observations[a]) for a in self.agents), (), False)
        for turn, joint in enumerate(history):
            if outcome.done:
                raise ValueError(
                    f"{self.env_id}'s episode of seed {episode_seed} ended after {turn} "
                    f"round(s); the branch has {len(history)}: set MAGRPOConfig(num_turns="
                    f"{turn}) or give the env more rounds (CoopCoding: env_kwargs="
                    "{'num_turns': 2})"
                )
            observations, rewards, terminations, truncations, _ = env.step(
                dict(zip(self.agents, joint, strict=True))
            )
            outcome = _Outcome(
                tuple(str(observations[a]) for a in self.agents),
                tuple(float(rewards[a]) for a in self.agents),
                not env.agents or any(terminations[a] or truncations[a] for a in self.agents),
            )
        self._outcomes[key] = outcome
        while len(self._outcomes) > _CACHE_SIZE:
            self._outcomes.popitem(last=False)
        return outcome

    # ----------------------------------------------------------------------- bundle
    def trainer_kwargs(self, n: int, *, seed: int = 0) -> dict[str, Any]:
        """``MAGRPOTrainer``'s task arguments: ``num_agents``, ``train_dataset`` (``n`` rows
        from ``seed``), ``formatters``, ``reward_func`` and ``external_transition``."""
        return {
            "num_agents": self.num_agents,
            "train_dataset": self.dataset(n, seed=seed),
            "formatters": self.formatters,
            "reward_func": self.reward,
            "external_transition": self.transition,
        }

    def close(self) -> None:
        """Close the env the task replays episodes in."""
        self._env.close()

    def __repr__(self) -> str:
        return f"MAGRPOTask({self.env_id!r}, env_kwargs={self.env_kwargs!r})"


def trainer_kwargs(
    env_id: str, n: int, *, seed: int = 0, env_kwargs: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``MAGRPOTrainer(**trainer_kwargs(env_id, n), agents=..., tokenizer=..., args=...)``:
    the task arguments of :meth:`MAGRPOTask.trainer_kwargs`, for a new :class:`MAGRPOTask`.

    Args:
        env_id: A simultaneous env's id (see :func:`simultaneous_envs`).
        n: Rows (episodes) of the training dataset.
        seed: Seed of the first episode.
        env_kwargs: Constructor arguments of the env.
    """
    return MAGRPOTask(env_id, env_kwargs=env_kwargs).trainer_kwargs(n, seed=seed)


# --------------------------------------------------------------------------- helpers
def _row(item: Any, num_agents: int) -> tuple[list[str], list[str]]:
    """A row's prompts and its ``branch`` list (checked)."""
    if not isinstance(item, Mapping):
        raise TypeError(f"a dataset row must be a dict, got {type(item).__name__}")
    prompts, branch = item.get("prompts"), item.get("branch")
    if (
        not isinstance(prompts, list)
        or len(prompts) != num_agents
        or not all(isinstance(p, str) for p in prompts)
        or not isinstance(branch, list)
        or len(branch) != 1
        or not isinstance(branch[0], str)
        or "seed" not in item
    ):
        raise ValueError(
            "a row needs the columns seed, prompts (one per seat) and branch: build the "
            "dataset with MAGRPOTask.dataset"
        )
    return prompts, branch


def _seed(item: Mapping[str, Any]) -> int:
    value = item["seed"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a row's seed must be an int >= 0, got {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"an answer must be a str, got {type(value).__name__}")
    return value


def _texts(value: Any) -> list[str]:
    """One seat's answers: CoMLRL passes a list (of one)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise TypeError("each seat's answers must be a non-empty list of str")
    return [_text(v) for v in value]


def _encode(episode_seed: int, history: History) -> str:
    return json.dumps([episode_seed, [list(joint) for joint in history]], ensure_ascii=False)


def _decode(key: str) -> tuple[int, History]:
    try:
        episode_seed, turns = json.loads(key)
        history = tuple(tuple(_text(a) for a in joint) for joint in turns)
    except (ValueError, TypeError) as error:
        raise ValueError(
            "a row's branch column is not the formatters' record: build the dataset with "
            "MAGRPOTask.dataset and leave the column as it is"
        ) from error
    if isinstance(episode_seed, bool) or not isinstance(episode_seed, int):
        raise ValueError("a row's branch column does not name an episode seed")
    return episode_seed, history
