"""Every registered environment in SkyRL-Gym (extra ``skyrl``): one seat learns, partners play.

`SkyRL <https://github.com/NovaSky-AI/SkyRL>`_'s generator makes one environment per
trajectory with ``skyrl_gym.make(env_class, env_config=..., extras=...)``, asks it for the
first chat with ``env.init(prompt)``, and then feeds it the model's text with ``env.step``
until ``done``, each step's reward placed at the end of that turn's tokens. One import puts
every id of :func:`llm_marl_envs.list_envs` in ``skyrl_gym``'s registry, with the
single-agent ids of the Gymnasium view beside them:

>>> import skyrl_gym
>>> import llm_marl_envs.integrations.skyrl  # the user's one line (in SkyRL's entrypoint)
>>> env = skyrl_gym.make("llm_marl_envs/GSM8K-observer_0-v0",
...                      env_config={"data_source": "bundled"}, extras={"seed": 3})
>>> chat, info = env.init([])  # the observer's prompt: the pioneer (scripted) answered
>>> [message["role"] for message in chat], info["episode_seed"]
(['system', 'user', 'assistant', 'user'], 3)
>>> out = env.step("Ahmed has 31 - 22 + 18 = 27 dollars. #### 27")
>>> out["reward"], out["done"], out["observations"]
(1.0, True, [])

The environment is :class:`~llm_marl_envs.integrations.gymnasium.SingleAgentEnv` underneath:
the learning seat acts, its *partners* are played inside the environment (``"scripted"`` by
default: the environment's built-in players; any policy spec, e.g. ``"openai:URL#model"``).

Where the settings come from (a dataset row's fields are SkyRL's ``extras``; ``env_config`` is
the trainer's ``environment.skyrl_gym[<env_class>]``); a row's value wins over the config's:

* ``seed``: the episode seed (SkyRL rows carry it; :func:`dataset_rows` writes it). Without
  one, a fresh seed is drawn.
* ``agent``: the learning seat (default: the id's seat, else the environment's first agent).
* ``partners``: a policy spec for every other seat, or a mapping ``{seat: spec}``.
* ``options``: the ``reset`` options (``row_index`` to pin a dataset row).
* ``env_kwargs`` (a mapping, or its JSON text): arguments of :func:`llm_marl_envs.make`;
  every other key of ``env_config`` is one too (``data_source``, ``size``, ...).
* ``max_turns``: SkyRL's generator sets it (its ``generator.max_turns``); after that many of
  the seat's turns the episode is cut (``done``, ``metadata["truncated"]``). Set it to the
  seat's turn count for multi-turn environments (the Donor game's seats act several times).

What the environment gives back:

* ``init(prompt)`` returns the seat's own prompt for the episode as chat messages (the
  dataset's prompt is replaced: :func:`dataset_rows` writes the same one, so the two agree).
* ``step(text)`` returns the seat's reward since its last turn (the partners' turns
  included; for the first step, plus anything it received before its first turn), so the
  step rewards add up to the seat's return in direct play. ``observations`` are the seat's
  next prompt as new chat messages (the system message, unchanged, is not repeated); empty
  at the end. ``metadata`` has the episode seed, the reward components and the format error.
* ``get_metrics()``: ``return``, ``turns`` and ``format_errors`` of the episode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import llm_marl_envs
from llm_marl_envs.core.optional import require
from llm_marl_envs.integrations.stack_settings import chat_messages, json_mapping, plain
from llm_marl_envs.integrations.gymnasium import SingleAgentEnv
from llm_marl_envs.registry import agent_names, gymnasium_id

_skyrl = require("skyrl_gym", "skyrl", "the SkyRL-Gym integration")
_base = require("skyrl_gym.envs.base_text_env", "skyrl", "the SkyRL-Gym integration")

__all__ = ["LLMMarlTextEnv", "dataset_rows", "register_envs", "write_dataset"]

#: Keys of ``env_config`` / ``extras`` that set the view, not the environment.
_VIEW_KEYS = ("agent", "partners", "partner_seed")


class LLMMarlTextEnv(_base.BaseTextEnv):
    """One seat of a registered environment as a SkyRL-Gym ``BaseTextEnv``.

    Args:
        env_id: The registered id (``llm_marl_envs/GSM8K-v0``).
        env_config: The trainer's config for this env class (a mapping or an OmegaConf
            ``DictConfig``): environment arguments, and ``agent`` / ``partners`` /
            ``partner_seed`` for the view.
        extras: The dataset row's other fields (``seed``, ``agent``, ``partners``,
            ``options``, ``env_kwargs``, ``max_turns``).
        agent: The id's seat (the per-seat ids pass it); ``extras`` and ``env_config`` win.
    """

    def __init__(
        self,
        env_id: str,
        env_config: Any = None,
        extras: Mapping[str, Any] | None = None,
        agent: str | None = None,
    ) -> None:
        super().__init__()
        config = plain(env_config)
        row = plain(extras)
        env_kwargs = {k: v for k, v in config.items() if k not in _VIEW_KEYS}
        env_kwargs.update(json_mapping(row.get("env_kwargs"), "env_kwargs"))
        # a row's empty cell (None: a parquet column other rows fill) leaves the config's value
        chosen = {k: row[k] if row.get(k) is not None else config.get(k) for k in _VIEW_KEYS}
        self.view = SingleAgentEnv(
            env_id,
            agent=chosen["agent"] if chosen["agent"] is not None else agent,
            partners=chosen["partners"],
            partner_seed=chosen["partner_seed"],
            **env_kwargs,
        )
        self.agent = self.view.agent
        self.seed = row.get("seed", _extra_info(row).get("seed"))
        self.options = row.get("options")
        turns = row.get("max_turns")
        self.max_turns = int(turns) if turns is not None else None
        self.turns = 0
        self._system: dict | None = None
        self._carried = 0.0  # what the seat received before its first turn
        self._return = 0.0
        self._format_errors = 0
        self._done = False

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Start the episode (its seed from the row); the seat's prompt as chat messages."""
        seed = None if self.seed is None else int(self.seed)
        observation, info = self.view.reset(seed=seed, options=plain(self.options) or None)
        self.turns, self._return, self._format_errors, self._done = 0, 0.0, 0, False
        self._carried = float(info.get("reward_before_first_turn", 0.0))
        messages = chat_messages(observation, info)
        self._system = messages[0] if messages and messages[0]["role"] == "system" else None
        return messages, {"episode_seed": info["episode_seed"], "agent": self.agent}

    def step(self, action: str) -> dict[str, Any]:
        """The seat's turn: its reward since its last turn, and its next prompt's messages."""
        if self._done:
            raise RuntimeError("the episode is over: make a new environment (or call init())")
        observation, reward, terminated, truncated, info = self.view.step(action)
        self.turns += 1
        reward += self._carried
        self._carried = 0.0
        self._return += reward
        self._format_errors += bool(info.get("format_error"))
        cut = not (terminated or truncated) and self.max_turns is not None
        cut = cut and self.turns >= self.max_turns
        self._done = bool(terminated or truncated or cut)
        observations = [] if self._done else self._new_messages(chat_messages(observation, info))
        metadata = {
            "agent": self.agent,
            "episode_seed": info.get("episode_seed"),
            "reward_components": info.get("reward_components", {}),
            "format_error": info.get("format_error"),
            "truncated": bool(truncated or cut),
        }
        return _base.BaseTextEnvStepOutput(
            observations=observations, reward=float(reward), done=self._done, metadata=metadata
        )

    def get_metrics(self) -> dict[str, Any]:
        return {
            "return": self._return,
            "turns": self.turns,
            "format_errors": self._format_errors,
        }

    def close(self) -> None:
        self.view.close()

    def _new_messages(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The next prompt, less its system message when that is the first prompt's."""
        if messages and self._system is not None and messages[0] == self._system:
            return messages[1:]
        return messages


def register_envs(env_ids: Iterable[str] | None = None) -> list[str]:
    """Put ids (default: every registered one) and their per-seat ids in ``skyrl_gym``'s
    registry; ids already there are left as they are. Returns the ids now registered."""
    registry = _skyrl.registry
    ids = llm_marl_envs.list_envs() if env_ids is None else list(env_ids)
    names = []
    for env_id in ids:
        env_id = llm_marl_envs.spec(env_id).id
        for agent in (None, *agent_names(env_id)):
            name = gymnasium_id(env_id, agent)
            names.append(name)
            if name not in registry:
                _skyrl.register(id=name, entry_point=_creator(env_id, agent))
    return names


def _creator(env_id: str, agent: str | None):
    def make(env_config: Any = None, extras: Mapping[str, Any] | None = None) -> LLMMarlTextEnv:
        return LLMMarlTextEnv(env_id, env_config=env_config, extras=extras, agent=agent)

    make.__qualname__ = make.__name__ = f"make_{gymnasium_id(env_id, agent)}"
    return make


def dataset_rows(
    env_id: str,
    seeds: Iterable[int],
    agent: str | None = None,
    **env_kwargs: Any,
) -> list[dict[str, Any]]:
    """SkyRL dataset rows for ``env_id``'s seat ``agent``: one per seed, each with the seat's
    prompt for that seed (``prompt``, chat messages), ``env_class`` (the per-seat id; the
    id's own for a seat the registry does not list, such as ``player_13`` of a 16-player Donor
    game: the row's ``agent`` picks the seat), the ``seed`` and the ``agent``. ``env_kwargs``
    build the environment the prompts come from; give the trainer the same ones (its
    ``environment.skyrl_gym`` config for the id)."""
    view = SingleAgentEnv(env_id, agent=agent, **env_kwargs)
    listed = view.agent in agent_names(view.env_id)
    env_class = gymnasium_id(view.env_id, view.agent if listed else None)
    try:
        rows = []
        for seed in seeds:
            observation, info = view.reset(seed=int(seed))
            rows.append(
                {
                    "prompt": chat_messages(observation, info),
                    "env_class": env_class,
                    "seed": int(seed),
                    "agent": view.agent,
                }
            )
        return rows
    finally:
        view.close()


def write_dataset(
    path: str | Path, env_id: str, seeds: Iterable[int], agent: str | None = None, **env_kwargs
) -> Path:
    """:func:`dataset_rows` as a parquet file (SkyRL's ``data.train_data``); returns its path."""
    pandas = require("pandas", "skyrl", "writing a SkyRL dataset")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pandas.DataFrame(dataset_rows(env_id, seeds, agent, **env_kwargs)).to_parquet(path)
    return path


def _extra_info(row: Mapping[str, Any]) -> dict[str, Any]:
    info = row.get("extra_info")
    return dict(info) if isinstance(info, Mapping) else {}


register_envs()
