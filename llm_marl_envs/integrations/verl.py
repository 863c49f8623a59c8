"""Every registered environment as a verl agent loop (extra ``verl``): one trained seat per row.

`verl <https://github.com/volcengine/verl>`_ runs multi-turn rollouts through *agent loops*:
for each dataset row its ``AgentLoopWorker`` instantiates the loop the row's ``agent_name``
names and awaits ``run(sampling_params, **row)``, which talks to the rollout servers through
a server manager and returns one trajectory. This module registers the loop
``llm_marl_envs`` (:class:`LLMMarlAgentLoop`), ships the YAML file verl's Ray workers load it
from (:data:`AGENT_LOOP_CONFIG`), and writes verl's parquet datasets (:func:`write_dataset`).
What a verl user adds to a GRPO/PPO run::

    python -c "import llm_marl_envs.integrations.verl as v; v.write_dataset('train.parquet', \\
        'llm_marl_envs/GSM8K-v0', range(1000), data_source='hf')"
    python -m verl.trainer.main_ppo data.train_files=train.parquet ... \\
        actor_rollout_ref.rollout.mode=async \\
        actor_rollout_ref.rollout.agent.agent_loop_config_path=$(python -c \\
        "import llm_marl_envs.integrations.verl as v; print(v.AGENT_LOOP_CONFIG)")

What a row says (its ``extra_info``; a top-level column of the same name wins):

* ``env_id`` and ``env_kwargs`` (a mapping, or its JSON text): :func:`llm_marl_envs.make`'s.
* ``seed``: the episode seed. ``options``: ``reset``'s (``row_index`` pins a data row).
* ``agent``: the trained seat. Training every seat is one row per seat
  (:func:`dataset_rows` with ``agents="all"``).
* ``partners``: how the other seats play: ``"self"`` (default: the served policy, as the
  trained seat, with its own prompt; its tokens are not part of the trajectory), or any
  policy spec (``"scripted"``, ``"random"``, ``"openai:URL#model"``, ``"hf:NAME"``), or a
  mapping ``{seat: spec}`` (seats it leaves out play ``"self"``; the trained seat's own
  entry is not used, so one mapping serves the rows of every seat), or its JSON text.
* ``max_tokens_per_turn``: a seat's budget for one turn (default: the environment's
  :func:`~llm_marl_envs.registry.token_budget`).

What the loop returns (``AgentLoopOutput``):

* ``prompt_ids``: the trained seat's first prompt (its chat messages through the model's chat
  template). ``response_ids``: everything after it in the seat's conversation: its answers,
  and between two of its turns its next prompt as new chat messages (the system message,
  unchanged, is not repeated). ``response_mask`` is 1 exactly on the tokens the server
  generated for the seat; the partners' text and the environment's prompts are 0. With
  ``rollout.calculate_log_probs`` the server's logprobs sit on the seat's tokens (0 elsewhere).
* ``reward_score``: the seat's return in the episode, what direct play pays it
  (:func:`llm_marl_envs.rollout.play_episode`): verl places it on the last response token.
* ``extra_fields``: ``agent_id``, ``role``, ``env_id``, ``episode_seed``, ``group_id`` (the id of
  the row's environment and seed: the rows of every seat of one seed share it, for
  per-agent advantage code), ``turn_indices`` (the episode's turn numbers, counted over all
  seats, at which the seat acted), ``turn_spans`` (each turn's ``[start, end)`` in
  ``response_ids``), ``turn_scores`` (the reward the seat received from each of its turns to its next, the
  first with what it received before it: they add up to the reward),
  ``truncated`` and ``reward_extra_info`` (``env_return``, ``format_errors``,
  ``truncated``: verl logs these in validation).

The seat's response budget is verl's ``rollout.response_length``: each turn asks the server
for at most what is left (``max_tokens``). When nothing is left before the episode ends the
episode is cut there (``truncated``), and its reward is what the seat received until then.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llm_marl_envs
from llm_marl_envs.core.optional import require
from llm_marl_envs.integrations.stack_settings import chat_messages, json_mapping, plain
from llm_marl_envs.registry import agents_of, token_budget

_agent_loop = require("verl.experimental.agent_loop.agent_loop", "verl", "the verl integration")

__all__ = [
    "AGENT_LOOP_CONFIG",
    "AGENT_NAME",
    "LLMMarlAgentLoop",
    "EpisodeSettings",
    "dataset_rows",
    "write_dataset",
]

#: The name rows give in ``agent_name``, and the one :class:`LLMMarlAgentLoop` registers.
AGENT_NAME = "llm_marl_envs"
#: The file for ``actor_rollout_ref.rollout.agent.agent_loop_config_path``: verl's Ray
#: workers find the loop through it (it ships with the package).
AGENT_LOOP_CONFIG = Path(__file__).with_name("verl_agent_loop.yaml")
#: A partner spec: the seat is played by the served policy the trained seat uses.
SELF = "self"

_SETTINGS = (
    "env_id",
    "env_kwargs",
    "seed",
    "options",
    "agent",
    "partners",
    "max_tokens_per_turn",
)


@functools.lru_cache(maxsize=256)
def _seats(env_id: str, env_kwargs: str) -> list[str]:
    """The seats of ``env_id`` built with ``env_kwargs`` (JSON), once per distinct game."""
    return agents_of(env_id, **json.loads(env_kwargs))


@dataclass
class EpisodeSettings:
    """What one dataset row asks for (module docstring); :meth:`from_row` checks it."""

    env_id: str
    seed: int
    agent: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] | None = None
    partners: dict[str, str] = field(default_factory=dict)
    max_tokens_per_turn: int | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EpisodeSettings:
        """The settings of a row as verl hands it to the loop (``extra_info`` and columns)."""
        given = plain(row.get("extra_info"), "extra_info")
        given.update({k: row[k] for k in _SETTINGS if row.get(k) is not None})
        missing = [k for k in ("env_id", "seed") if given.get(k) is None]
        if missing:
            raise ValueError(
                f"the row has no {' and no '.join(missing)}: rows for the llm_marl_envs agent "
                "loop name env_id, seed and agent in extra_info (write them with "
                "llm_marl_envs.integrations.verl.write_dataset)"
            )
        env_id = llm_marl_envs.spec(str(given["env_id"])).id  # unknown ids: the closest known
        env_kwargs = json_mapping(given.get("env_kwargs"), "env_kwargs")
        seats = list(_seats(env_id, json.dumps(env_kwargs, sort_keys=True, default=str)))
        agent = given.get("agent") or seats[0]
        if agent not in seats:
            raise ValueError(f"{env_id} has no seat {agent!r}; its seats are {seats}")
        partners = _partner_specs(given.get("partners"), agent, seats)
        budget = given.get("max_tokens_per_turn")
        if budget is not None and (not _is_int(budget) or int(budget) < 1):
            raise ValueError(f"max_tokens_per_turn must be a positive int, got {budget!r}")
        return cls(
            env_id=env_id,
            seed=_seed(given["seed"]),
            agent=str(agent),
            env_kwargs=env_kwargs,
            options=json_mapping(given.get("options"), "options") or None,
            partners=partners,
            max_tokens_per_turn=None if budget is None else int(budget),
        )

    @property
    def group(self) -> str:
        """The id of this environment and seed (the same for every seat's row)."""
        kwargs = json.dumps(self.env_kwargs, sort_keys=True, default=str)
        digest = hashlib.sha256(f"{self.env_id}\n{kwargs}".encode()).hexdigest()[:12]
        return f"{self.env_id}#{digest}#seed={self.seed}"


@_agent_loop.register(AGENT_NAME)  # in-process users; Ray workers load AGENT_LOOP_CONFIG
class LLMMarlAgentLoop(_agent_loop.AgentLoopBase):
    """One episode of a registered environment, from one seat's point of view (module
    docstring); verl instantiates it per row from :data:`AGENT_LOOP_CONFIG`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        settings = EpisodeSettings.from_row(kwargs)
        env = await _blocking(llm_marl_envs.make, settings.env_id, **settings.env_kwargs)
        try:
            return await _Episode(self, env, settings, sampling_params).play()
        finally:
            env.close()


class _Episode:
    """One run of :class:`LLMMarlAgentLoop`: the environment, the seat's token stream and the
    partners."""

    def __init__(self, owner: LLMMarlAgentLoop, env: Any, settings: EpisodeSettings, sampling):
        self.owner, self.env, self.settings = owner, env, settings
        self.sampling = dict(sampling)
        self.per_turn = settings.max_tokens_per_turn or token_budget(settings.env_id)
        self.request = uuid.uuid4().hex  # one sticky session per seat (prefix caching)
        self.partner_requests = {a: uuid.uuid4().hex for a in settings.partners}
        # the trained seat's conversation
        self.messages: list[dict[str, str]] = []
        self.system: dict[str, str] | None = None
        self.prompt_ids: list[int] = []
        self.tokens: list[int] = []  # prompt and response so far
        self.mask: list[int] = []
        # every row of a batch has logprobs, or none has: verl concatenates them
        self.logprobs: list[float] | None = [] if self.sampling.get("logprobs") else None
        self.spans: list[list[int]] = []
        self.turn_indices: list[int] = []
        self.turn_scores: list[float] = []

    async def play(self) -> Any:
        settings, env, seat = self.settings, self.env, self.settings.agent
        await _blocking(env.reset, seed=settings.seed, options=settings.options)
        acts = self._partners()
        total, early, turn, truncated = 0.0, 0.0, 0, False
        while env.agents:
            agent = env.agent_selection
            observation, reward, terminated, truncated_, info = env.last()
            if agent == seat:  # what it received since its last turn (direct play's sum)
                total += float(reward)
                if self.turn_scores:
                    self.turn_scores[-1] += float(reward)
                else:  # before its first turn: counted with its first turn
                    early += float(reward)
            if terminated or truncated_:
                await _blocking(env.step, None)
                continue
            if agent == seat:
                action = await self._seat_turn(str(observation), info)
                if action is None:  # no response budget left: the episode is cut here
                    truncated = True
                    break
                self.turn_indices.append(turn)
                self.turn_scores.append(0.0 if self.turn_scores else early)
            elif acts[agent] is None:
                action = await self._self_play_turn(agent, str(observation), info)
            else:
                action = await _blocking(acts[agent], observation, info)
            await _blocking(env.step, action)
            turn += 1
        return self._output(total, truncated)

    # ------------------------------------------------------------------ the trained seat
    async def _seat_turn(self, observation: str, info: Mapping[str, Any]) -> str | None:
        """The seat's turn: its prompt into its conversation, then its answer (None: no
        response budget is left for one)."""
        owner = self.owner
        if self.messages and len(self.mask) >= owner.response_length:
            return None
        messages = chat_messages(observation, info)
        if not self.messages:  # its first prompt
            self.system = messages[0] if messages[0]["role"] == "system" else None
            self.prompt_ids = await owner.ct_build_initial_tokens(messages)
            self.tokens = list(self.prompt_ids)
            self.messages = list(messages)
        else:  # its next prompt, appended to its conversation
            if self.system is not None and messages[0] == self.system:
                messages = messages[1:]
            updated = self.messages + messages
            merged, self.mask, self.logprobs = await owner.ct_merge_context_msg(
                self.messages, updated, self.tokens, self.mask, self.logprobs
            )
            self.tokens, self.messages = merged.token_ids, updated
        left = owner.response_length - len(self.mask)
        if left <= 0:  # its new prompt spent what was left
            return None
        output = await owner.server_manager.generate(
            request_id=self.request,
            prompt_ids=self.tokens,
            sampling_params={**self.sampling, "max_tokens": min(left, self.per_turn)},
        )
        generated = list(output.token_ids)[:left]
        logprobs = None
        if self.logprobs is not None:  # asked for (rollout.calculate_log_probs)
            if output.log_probs is None or len(output.log_probs) < len(generated):
                raise RuntimeError(
                    "the rollout server gave no logprob for every generated token, though "
                    "rollout.calculate_log_probs asks for them"
                )
            logprobs = [float(x) for x in output.log_probs[: len(generated)]]
        start = len(self.mask)
        merged, self.mask, self.logprobs = await owner.ct_merge_assistant_token(
            self.tokens, generated, self.mask, self.logprobs, assistant_logprobs=logprobs
        )
        self.tokens = merged.token_ids
        self.spans.append([start, len(self.mask)])
        text = owner.tokenizer.decode(generated, skip_special_tokens=True)
        self.messages.append({"role": "assistant", "content": text})
        return text

    # ------------------------------------------------------------------ the partners
    def _partners(self) -> dict[str, Callable[[Any, dict], str] | None]:
        """Each partner's action function for this episode (None: self-play)."""
        settings = self.settings
        acts: dict[str, Callable[[Any, dict], str] | None] = {}
        factory = None
        for agent, spec in settings.partners.items():
            if spec == SELF:
                acts[agent] = None
                continue
            if factory is None:
                from llm_marl_envs.policies.specs import PolicyFactory

                factory = PolicyFactory(settings.env_id, seed=settings.seed, models=_models())
            policy = factory(spec, agent, self.env.action_space(agent))
            acts[agent] = _acting(agent, policy, spec)
        return acts

    async def _self_play_turn(self, agent: str, observation: str, info: Mapping) -> str:
        owner = self.owner
        prompt = await owner.ct_build_initial_tokens(chat_messages(observation, info))
        output = await owner.server_manager.generate(
            request_id=self.partner_requests[agent],
            prompt_ids=prompt,
            sampling_params={**self.sampling, "max_tokens": self.per_turn},
        )
        return owner.tokenizer.decode(list(output.token_ids), skip_special_tokens=True)

    # ------------------------------------------------------------------ the output
    def _output(self, total: float, truncated: bool) -> Any:
        settings, env = self.settings, self.env
        mine = [t for t in getattr(env, "transcript", ()) if t.agent == settings.agent]
        format_errors = sum(1 for t in mine if t.format_error)
        length = self.owner.response_length
        response = self.tokens[len(self.prompt_ids) :]
        reward_info = {
            "env_return": total,
            "format_errors": format_errors,
            "truncated": truncated,
        }
        return _agent_loop.AgentLoopOutput(
            prompt_ids=self.prompt_ids,
            response_ids=response[:length],
            response_mask=self.mask[:length],
            response_logprobs=self.logprobs[:length] if self.logprobs is not None else None,
            reward_score=total,
            num_turns=2 * len(self.spans),
            metrics=_agent_loop.AgentLoopMetrics(),
            extra_fields={
                "agent_id": settings.agent,
                "role": _role(env, settings.agent),
                "env_id": settings.env_id,
                "episode_seed": settings.seed,
                "group_id": settings.group,
                "turn_indices": self.turn_indices,
                "turn_spans": self.spans,
                "turn_scores": self.turn_scores,
                "tool_rewards": [],
                "truncated": truncated,
                "reward_extra_info": reward_info,
            },
        )


# ---------------------------------------------------------------------- datasets
def dataset_rows(
    env_id: str,
    seeds: Iterable[int],
    agents: str | Iterable[str] | None = None,
    partners: str | Mapping[str, str] = SELF,
    *,
    agent: str | None = None,
    max_tokens_per_turn: int | None = None,
    **env_kwargs: Any,
) -> list[dict[str, Any]]:
    """verl dataset rows for ``env_id``: one per seed and trained seat.

    Args:
        env_id: A registered id.
        seeds: The episode seeds.
        agents: The trained seat(s): one name, a list, ``"all"`` (one row per seat and seed),
            or None (the first seat). ``agent=`` names one, as in the other adapters.
        partners: How the other seats play (module docstring): ``"self"`` by default.
        max_tokens_per_turn: A seat's budget for one turn (default: the environment's).
        **env_kwargs: :func:`llm_marl_envs.make`'s arguments.

    Each row has verl's columns: ``prompt`` (the seat's first prompt as chat messages, with
    scripted partners: verl filters over-long prompts by it; the loop builds the real one
    from the environment), ``data_source`` (the id), ``agent_name`` (``llm_marl_envs``),
    ``reward_model`` (``{"style": "env"}``: the loop pays the reward) and ``extra_info``
    (the settings, ``index`` and ``group``).
    """
    env_id = llm_marl_envs.spec(env_id).id
    seats = agents_of(env_id, **env_kwargs)  # the seats of the game these arguments build
    seeds = [_seed(seed) for seed in seeds]
    if agent is not None:
        if agents is not None:
            raise ValueError("give the trained seats as agents= or one as agent=, not both")
        agents = agent
    if agents is None:
        chosen = [seats[0]]
    elif agents == "all":
        chosen = list(seats)
    else:
        chosen = [agents] if isinstance(agents, str) else list(agents)
    for seat in chosen:
        if seat not in seats:
            raise ValueError(f"{env_id} has no seat {seat!r}; its seats are {seats}")
    from llm_marl_envs.integrations.gymnasium import SingleAgentEnv

    rows = []
    for seat in chosen:
        _partner_specs(partners, seat, seats)  # a bad one fails here, not in training
        view = SingleAgentEnv(env_id, agent=seat, **env_kwargs)
        try:
            for seed in seeds:
                observation, info = view.reset(seed=int(seed))
                settings = EpisodeSettings(
                    env_id, int(seed), seat, dict(env_kwargs), None, {}, max_tokens_per_turn
                )
                extra = {
                    "index": len(rows),
                    "env_id": env_id,
                    "env_kwargs": json.dumps(env_kwargs, sort_keys=True),
                    "seed": int(seed),
                    "agent": seat,
                    "partners": partners if isinstance(partners, str) else json.dumps(partners),
                    "group_id": settings.group,
                }
                if max_tokens_per_turn is not None:
                    extra["max_tokens_per_turn"] = int(max_tokens_per_turn)
                rows.append(
                    {
                        "prompt": chat_messages(observation, info),
                        "data_source": env_id,
                        "agent_name": AGENT_NAME,
                        "reward_model": {"style": "env", "ground_truth": ""},
                        "extra_info": extra,
                    }
                )
        finally:
            view.close()
    return rows


def write_dataset(path: str | Path, env_id: str, seeds: Iterable[int], **kwargs: Any) -> Path:
    """:func:`dataset_rows` as a parquet file (verl's ``data.train_files``); returns its path."""
    pandas = require("pandas", "verl", "writing a verl dataset")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pandas.DataFrame(dataset_rows(env_id, seeds, **kwargs)).to_parquet(path)
    return path


# ---------------------------------------------------------------------- helpers
async def _blocking(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run a blocking call (an environment's step, a scripted or model partner) off the
    event loop, so the other rows' rollouts go on meanwhile."""
    return await asyncio.get_running_loop().run_in_executor(None, lambda: fn(*args, **kwargs))


_MODELS: Any = None
_MODELS_LOCK = threading.Lock()
_MODEL_LOCKS: dict[str, threading.Lock] = {}


def _models() -> Any:
    """The model partners of this process, loaded once and shared by every row."""
    global _MODELS
    with _MODELS_LOCK:
        if _MODELS is None:
            from llm_marl_envs.policies.specs import ModelCache

            _MODELS = ModelCache()
        return _MODELS


def _acting(agent: str, policy: Any, spec: str) -> Callable[[Any, dict], str]:
    """``(observation, info) -> text`` for a partner policy; a model's calls take turns (the
    rows of a batch run on threads, and a local model is one object)."""
    from llm_marl_envs.policies.base import CallablePolicy, Prompt

    if isinstance(policy, CallablePolicy):
        return policy.fn
    with _MODELS_LOCK:
        lock = _MODEL_LOCKS.setdefault(spec, threading.Lock())

    def act(observation: Any, info: dict) -> str:
        prompt = Prompt(agent, str(observation), info.get("messages", []), info)
        with lock:
            return policy.generate([prompt])[0].text

    return act


def _role(env: Any, agent: str) -> str | None:
    roles = getattr(env, "roles", None)
    return roles.get(agent) if isinstance(roles, Mapping) else None


def _partner_specs(value: Any, agent: str, seats: list[str]) -> dict[str, str]:
    others = [a for a in seats if a != agent]
    if value is None or value == "":
        return dict.fromkeys(others, SELF)
    if isinstance(value, str) and value.lstrip().startswith("{"):
        value = json_mapping(value, "partners")
    if isinstance(value, str):
        return dict.fromkeys(others, value)
    given = plain(value, "partners")  # the trained seat's own entry is not used
    unknown = [a for a in given if a not in seats]
    if unknown:
        raise ValueError(f"partners names {unknown}, which are not seats here (seats: {seats})")
    return {a: str(given.get(a) or SELF) for a in others}


def _is_int(value: Any) -> bool:
    try:
        return int(value) == value and not isinstance(value, bool)
    except (TypeError, ValueError):
        return False


def _seed(value: Any) -> int:
    if not _is_int(value) or int(value) < 0:
        raise ValueError(f"seed must be a non-negative int, got {value!r}")
    return int(value)
