"""Base class for turn-based text environments (PettingZoo AEC API, strings in and out).

:class:`TextAECEnv` owns everything that is the same in every text game of this suite, so
that an environment module only describes its task:

* spaces: one cached :class:`~llm_marl_envs.core.spaces.FreeText` per agent for actions and
  observations (the same object on every call, as PettingZoo requires);
* seeding: a per-instance ``numpy.random.Generator`` built by ``reset(seed=...)``; ``reset()``
  without a seed continues that stream; the global ``random`` / ``np.random`` are never used;
* action hygiene: a non-``str`` action raises ``TypeError`` before any state changes; strings
  are cleaned (control characters removed, lone surrogates replaced) and classified as
  ``"empty"`` or ``"too_long"`` format failures, which the task turns into reward 0;
* AEC bookkeeping: reward clearing and accumulation, dead-agent steps, ``max_cycles``
  truncation;
* ``infos[agent]``: ``role``, ``turn``, ``data_source``, ``row_id``, ``messages`` (the agent's
  current prompt as chat messages), ``reward_components`` and ``format_error``; ``last()``
  hands out a snapshot, never the dict the env keeps updating;
* rendering: ``"ansi"`` returns the transcript, ``"human"`` prints it as it grows;
* one thread at a time: ``reset`` and ``step`` hold a lock taken without waiting; a call
  from a second thread while one is in progress raises ``RuntimeError`` (the two threads
  would otherwise mix their episodes silently), and the call in progress then raises it too,
  leaving the env needing a reset. Handing an env from one thread to another between calls
  (as the rollout engine's worker threads do) is fine; one env per thread is the rule;
* faults: a ``reset`` or ``step`` that raises part-way (a bad ``row_index``, a scorer or
  sandbox failure, Ctrl-C) leaves no playable half-episode: the env is in a "needs reset"
  state where ``step`` and ``last`` raise ``RuntimeError`` saying why and to call ``reset()``.
  Checks that happen before anything changes (a non-``str`` action, a bad seed) leave the
  episode exactly as it was. Misuse (``last()`` before ``reset`` or after the episode, an
  unknown agent) is one clear ``RuntimeError`` / ``ValueError``.

Subclasses implement :meth:`_new_episode` (pick the task, set the first prompt) and
:meth:`_play` (apply one cleaned action, set rewards and terminations).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from pettingzoo import AECEnv

from llm_marl_envs.core.spaces import FreeText, TextObservation
from llm_marl_envs.core.validation import check_int

__all__ = ["CleanAction", "TextAECEnv", "Turn", "clean_text"]

DEFAULT_MAX_ACTION_LENGTH = 8192
DEFAULT_MAX_OBSERVATION_LENGTH = 1 << 20

_TWO_THREADS = (
    "{cls}.{call} called from thread {thread!r} while another thread is inside a call of the "
    "same env object: one env used from two threads at once mixes their episodes; make one "
    "env per thread (e.g. a new llm_marl_envs.make(...) in each)"
)

# C0/C1 control characters except tab, newline and carriage return; lone UTF-16 surrogates.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Remove control characters and replace lone surrogates with U+FFFD.

    The result is always printable and encodable as UTF-8, so transcripts, JSON logs and
    terminals never choke on model output.
    """
    if text.isprintable():  # fast path: the common case has nothing to clean
        return text
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", text))


@dataclass(frozen=True)
class CleanAction:
    """An agent's action after the common checks.

    Attributes:
        text: The cleaned text (clipped to the action space's ``max_length``).
        failure: ``None`` if the text may be scored, otherwise why it is a format failure:
            ``"empty"`` (nothing but whitespace) or ``"too_long"`` (over ``max_length``).
    """

    text: str
    failure: str | None = None


@dataclass
class Turn:
    """One entry of an episode transcript."""

    agent: str
    role: str
    action: str
    reward_components: dict[str, float] = field(default_factory=dict)
    format_error: str | None = None


class TextAECEnv(AECEnv):
    """A PettingZoo AEC environment whose agents observe and act with text.

    Args:
        possible_agents: Agent names in their usual order, e.g. ``["pioneer_0", "observer_0"]``.
        roles: The role of each agent (put into ``infos[agent]["role"]``).
        max_cycles: Truncate the episode after this many cycles (one cycle = every live agent
            has acted once). Must be a positive int.
        render_mode: ``None``, ``"human"`` (print the transcript as it grows) or ``"ansi"``
            (``render()`` returns it).
        max_action_length: Longest action, in characters, that is scored; longer actions are
            a ``"too_long"`` format failure.
    """

    metadata: dict[str, Any] = {
        "name": "text_env",
        "render_modes": ["human", "ansi"],
        "render_fps": 1,
        "is_parallelizable": False,
    }
    #: The reward implementation this env pays (:mod:`llm_marl_envs.rewards.impls`), set by
    #: envs that offer more than one; episode records read it here.
    reward_impl: str | None = None

    def __init__(
        self,
        possible_agents: list[str],
        roles: dict[str, str],
        *,
        max_cycles: int,
        render_mode: str | None = None,
        max_action_length: int = DEFAULT_MAX_ACTION_LENGTH,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, "
                f"got {render_mode!r}"
            )
        check_int("max_cycles", max_cycles, 1)
        check_int("max_action_length", max_action_length, 1)
        self.possible_agents = list(possible_agents)
        self.roles = dict(roles)
        self.max_cycles = max_cycles
        self.render_mode = render_mode
        self.action_spaces = {a: FreeText(max_action_length) for a in self.possible_agents}
        self.observation_spaces = {
            a: FreeText(DEFAULT_MAX_OBSERVATION_LENGTH, sample_max_length=1024)
            for a in self.possible_agents
        }
        self.np_random: np.random.Generator | None = None
        self.np_random_seed: int | None = None
        self.agents: list[str] = []
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.transcript: list[Turn] = []
        self.data_source: str | None = None
        self.row_id: str | int | None = None
        self.num_moves = 0
        self._prompts: dict[str, str] = {a: "" for a in self.possible_agents}
        self._printed_turns = 0
        self._header_printed = False
        self._needs_reset: str | None = "no episode yet"  # why step/last refuse, or None
        # held by reset and step (reentrant: the Parallel form holds it around its calls)
        self._guard = threading.RLock()
        self._clash: str | None = None  # set by a second thread that found it held

    # ------------------------------------------------------------------ one thread at a time
    def _refuse(self, call: str) -> None:
        """A second thread found the call lock held: tell the call in progress, and raise."""
        message = _TWO_THREADS.format(
            cls=type(self).__name__, call=call, thread=threading.current_thread().name
        )
        self._clash = message  # the call in progress raises it too, on its way out
        raise RuntimeError(message)

    def _release(self, failed: bool) -> None:
        """Release the call lock; if another thread clashed with this call, void the
        episode and raise (unless the call is already raising)."""
        self._guard.release()
        if self._clash is not None:
            self._after_clash(failed)

    def _after_clash(self, failed: bool) -> None:
        clash, self._clash = self._clash, None
        if clash is None:
            return
        self._void("another thread called this env during its last call (use one env per thread)")
        if not failed:
            raise RuntimeError(clash)

    def __getstate__(self) -> dict[str, Any]:  # a lock does not pickle or deep-copy
        state = dict(self.__dict__)
        for key in ("_guard", "_clash"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._guard, self._clash = threading.RLock(), None

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> FreeText:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> FreeText:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ episode
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start an episode; ``seed`` re-seeds the environment's RNG, ``None`` continues it.

        If the new episode cannot be set up (e.g. ``options["row_index"]`` out of range), the
        error propagates and the env is left needing another ``reset``: the previous episode
        is gone, not playable against a task it no longer shows.
        """
        check_int("seed", seed, 0, none_ok=True)
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        if not self._guard.acquire(False):
            self._refuse("reset()")
        try:
            self._start_episode(seed, options or {})
        except BaseException as error:
            self._void(f"the last reset() failed ({_describe(error)})")
            self._release(failed=True)
            raise
        self._needs_reset = None
        self._release(failed=False)

    def _start_episode(self, seed: int | None, options: dict) -> None:
        if seed is not None or self.np_random is None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: self._blank_info(a) for a in self.agents}
        self._prompts = {a: "" for a in self.agents}
        self.num_moves = 0
        self.transcript = []
        self._printed_turns = 0
        self._header_printed = False
        self.agent_selection = self.possible_agents[0]
        self._new_episode(options)

    def _void(self, why: str) -> None:
        """Enter the "needs reset" state: no live agents, no prompts, ``why`` in the errors."""
        self.agents = []
        self._prompts = {a: "" for a in self.possible_agents}
        self._needs_reset = why

    def _check_playable(self, call: str) -> None:
        if self._needs_reset is not None:
            raise RuntimeError(f"{self._needs_reset}: call reset() before {call}")

    def step(self, action: str | None) -> None:
        """Apply the current agent's text action (``None`` only for finished agents)."""
        guard = self._guard
        if not guard.acquire(False):  # one thread at a time: a lock, never waited for
            self._refuse("step()")
        try:
            self._step(action)
        except BaseException:
            self._release(failed=True)
            raise
        guard.release()
        if self._clash is not None:  # another thread came in meanwhile
            self._after_clash(failed=False)

    def _step(self, action: str | None) -> None:
        self._check_playable("step()")
        if not self.agents:
            raise RuntimeError(
                "No live agents: call reset() to start an episode (before the first step and "
                "after every episode)"
            )
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        cleaned = self._clean_action(agent, action)  # raises before any state changes
        try:
            self._clear_rewards()
            self._cumulative_rewards[agent] = 0.0
            self.num_moves += 1
            self._play(agent, cleaned)
            live = [a for a in self.agents if not (self.terminations[a] or self.truncations[a])]
            if live and self.num_cycles >= self.max_cycles:
                for a in live:
                    self.truncations[a] = True
            if len(live) < len(self.agents) or (live and self.truncations[live[0]]):
                self._deads_step_first()
            self._accumulate_rewards()
        except BaseException as error:  # the turn is half-applied: never let it be played on
            self._void(f"step() failed during {agent}'s turn ({_describe(error)})")
            raise
        if self.render_mode == "human":
            self.render()

    def last(self, observe: bool = True) -> tuple:
        """``(observation, reward, terminated, truncated, info)`` of the agent to act.

        ``info`` is a snapshot (a copy of ``env.infos[agent]``): the environment goes on
        updating its own dict, never the one it handed out, so a replay buffer or a logger
        that keeps it sees what the agent saw.
        """
        self._check_playable("last()")
        if not self.agents:
            raise RuntimeError(
                "the episode is over (no live agents): call reset() to start "
                "another; env.agent_iter() stops by itself at the end"
            )
        observation, reward, terminated, truncated, info = super().last(observe)
        return observation, reward, terminated, truncated, dict(info)

    def observe(self, agent: str) -> TextObservation:
        """The agent's current prompt ('' before it has been given one)."""
        if not isinstance(agent, str) or agent not in self._prompts:
            raise ValueError(
                f"unknown agent {agent!r}: this environment's agents are {self.possible_agents}"
            )
        return TextObservation(self._prompts[agent])

    @property
    def num_cycles(self) -> int:
        """Cycles completed in this episode; ``max_cycles`` truncates when it is reached.

        A cycle is one action per agent here; games whose rounds are shaped differently (the
        Donor game: half the agents act per round) count their rounds instead.
        """
        return self.num_moves // len(self.possible_agents)

    # ------------------------------------------------------------------ helpers for subclasses
    def _set_prompt(self, agent: str, text: str, messages: list[dict[str, str]]) -> None:
        """Give ``agent`` its prompt: the observation text and its chat-message form."""
        self._prompts[agent] = text
        self.infos[agent]["messages"] = messages
        self.infos[agent]["turn"] = self.num_moves

    def _set_task_info(self, data_source: str, row_id: str | int | None) -> None:
        """Record where this episode's task came from (in ``infos`` and on the env)."""
        self.data_source, self.row_id = data_source, row_id
        for agent in self.agents:
            self.infos[agent]["data_source"] = data_source
            self.infos[agent]["row_id"] = row_id

    def _pick_row(self, data: Any, options: dict[str, Any]) -> int:
        """This episode's row of ``data`` (a ``TaskData``): drawn from the episode RNG, or
        ``options["row_index"]`` when given (evaluation sweeps). The RNG draws either way, so
        the stream stays the same."""
        drawn = int(self.np_random.integers(len(data)))
        index = options.get("row_index")
        if index is None:
            return drawn
        return check_int(
            "options['row_index']",
            index,
            0,
            len(data) - 1,
            why=f" (rows of {data.name}/{data.split} from {data.source})",
        )

    def _record(self, agent: str, action: CleanAction, components: dict[str, float]) -> None:
        """Put the scored turn into ``infos`` and the transcript."""
        info = self.infos[agent]
        info["reward_components"] = components
        info["format_error"] = action.failure
        self.transcript.append(
            Turn(agent, self.roles[agent], action.text, dict(components), action.failure)
        )

    def _clean_action(self, agent: str, action: Any) -> CleanAction:
        if not isinstance(action, str):
            what = "None" if action is None else type(action).__name__
            raise TypeError(
                f"{agent} must act with a str (its action space is {self.action_spaces[agent]!r}), "
                f"got {what}; None is only accepted for agents that are already done"
            )
        max_length = self.action_spaces[agent].max_length
        if len(action) > max_length:
            return CleanAction(clean_text(action[:max_length]), "too_long")
        text = clean_text(action)
        if not text.strip():
            return CleanAction(text, "empty")
        return CleanAction(text)

    def _blank_info(self, agent: str) -> dict[str, Any]:
        return {
            "role": self.roles[agent],
            "turn": 0,
            "data_source": None,
            "row_id": None,
            "messages": [],
            "reward_components": {},
            "format_error": None,
        }

    # ------------------------------------------------------------------ rendering
    def render(self) -> str | None:
        """``"ansi"``: return the transcript; ``"human"``: print what was not printed yet."""
        if self.render_mode is None:
            return None
        if self.render_mode == "ansi":
            return self.render_transcript()
        if not self._header_printed:
            print(self._render_header())
            self._header_printed = True
        for turn in self.transcript[self._printed_turns :]:
            print(_format_turn(turn))
        self._printed_turns = len(self.transcript)
        return None

    def render_transcript(self) -> str:
        """The whole episode so far as readable text."""
        parts = [self._render_header()]
        parts.extend(_format_turn(t) for t in self.transcript)
        return "\n".join(parts)

    def close(self) -> None:
        """Nothing to release; present because ``render`` is defined (PettingZoo's rule)."""

    # ------------------------------------------------------------------ for subclasses
    def _new_episode(self, options: dict) -> None:
        """Pick the task with ``self.np_random`` and give the first agent its prompt."""
        raise NotImplementedError

    def _play(self, agent: str, action: CleanAction) -> None:
        """Apply ``agent``'s cleaned action: set rewards, terminations, infos, next agent."""
        raise NotImplementedError

    def _render_header(self) -> str:
        name = self.metadata.get("name", type(self).__name__)
        return f"=== {name} (seed {self.np_random_seed}) ==="

    def __str__(self) -> str:
        return self.metadata.get("name", type(self).__name__)


def _format_turn(turn: Turn) -> str:
    action = turn.action if len(turn.action) <= 2000 else turn.action[:2000] + " [...]"
    lines = [f"[{turn.agent} | {turn.role}]", _indent(action or "(empty)")]
    if turn.format_error:
        lines.append(f"  ! format failure: {turn.format_error}")
    if turn.reward_components:
        comps = ", ".join(f"{k}={_fmt(v)}" for k, v in turn.reward_components.items())
        lines.append(f"  reward components: {comps}")
    return "\n".join(lines)


def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _indent(text: str) -> str:
    return "\n".join("  > " + line for line in text.splitlines() or [""])


def _describe(error: BaseException) -> str:
    text = str(error).splitlines()[0][:200] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
