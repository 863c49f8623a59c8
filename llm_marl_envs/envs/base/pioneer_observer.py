"""The pioneer -> observer chain of CORY (Ma et al., NeurIPS 2024), shared by its two tasks.

One episode is one task and one turn per agent:

1. ``pioneer_0`` sees the task prompt and answers;
2. ``observer_0`` sees the task prompt *and the pioneer's answer* and answers the same task.

Each answer gets its own task reward (r1, r2). With ``reward_mode="collective"`` (CORY's
training signal) both agents receive r1 + r2; with ``"individual"`` each receives its own.
Rewards are paid when the observer has acted, so ``last()`` shows them on each agent's final
(dead) step. Per-agent details are in ``infos[agent]["reward_components"]``, which always
holds ``task_reward`` and ``format_failure`` plus the task's own components.

In MARFT's terms this is a two-agent Flex-POMDP chain: the observer depends on the pioneer.
"""

from __future__ import annotations

from typing import Any

from llm_marl_envs.core.text_env import CleanAction, TextAECEnv
from llm_marl_envs.rewards.inputs import REWARD_MODES

__all__ = ["PioneerObserverEnv", "REWARD_MODES"]

PIONEER, OBSERVER = "pioneer_0", "observer_0"


class PioneerObserverEnv(TextAECEnv):
    """Base of the CORY environments; subclasses define the task, prompts and scoring.

    Args:
        reward_mode: ``"collective"`` (r1 + r2 for both) or ``"individual"``.
        max_cycles: Accepted for API compatibility (PettingZoo passes it); an episode is
            always one cycle, so any positive value gives the same episode.
        render_mode: ``None``, ``"human"`` or ``"ansi"``.
        max_action_length: Longest scored answer in characters.
    """

    def __init__(
        self,
        *,
        reward_mode: str = "collective",
        max_cycles: int = 1,
        render_mode: str | None = None,
        max_action_length: int = 8192,
    ) -> None:
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        super().__init__(
            [PIONEER, OBSERVER],
            {PIONEER: "pioneer", OBSERVER: "observer"},
            max_cycles=max_cycles,
            render_mode=render_mode,
            max_action_length=max_action_length,
        )
        self.reward_mode = reward_mode
        self._task_rewards: dict[str, float] = {}

    # --------------------------------------------------------------- subclass interface
    def _draw_task(self, options: dict[str, Any]) -> None:
        """Pick this episode's task with ``self.np_random``; call ``_set_task_info``."""
        raise NotImplementedError

    def _pioneer_prompt(self) -> tuple[str, list[dict[str, str]]]:
        """The pioneer's observation text and its chat-message form."""
        raise NotImplementedError

    def _observer_prompt(self, pioneer_answer: str) -> tuple[str, list[dict[str, str]]]:
        """The observer's prompt, which includes the pioneer's (cleaned) answer."""
        raise NotImplementedError

    def _score(self, action: CleanAction) -> tuple[float, dict[str, float], str | None]:
        """Task reward, task components and a format error (or None) for one answer."""
        raise NotImplementedError

    def _task_summary(self) -> str:
        """One or two lines describing the task, for transcripts."""
        raise NotImplementedError

    # --------------------------------------------------------------- the protocol
    def _new_episode(self, options: dict[str, Any]) -> None:
        self._task_rewards = {}
        self._draw_task(options)
        self._set_prompt(PIONEER, *self._pioneer_prompt())
        self.agent_selection = PIONEER

    def _play(self, agent: str, action: CleanAction) -> None:
        reward, components, failure = self._score(action)
        if action.failure is not None:
            failure = action.failure
        components = {
            **components,
            "task_reward": float(reward),
            "format_failure": float(failure is not None),
        }
        self._task_rewards[agent] = float(reward)
        self._record(agent, CleanAction(action.text, failure), components)
        if agent == PIONEER:
            self._set_prompt(OBSERVER, *self._observer_prompt(action.text))
            self.agent_selection = OBSERVER
            return
        r1, r2 = self._task_rewards[PIONEER], self._task_rewards[OBSERVER]
        if self.reward_mode == "collective":
            self.rewards = {PIONEER: r1 + r2, OBSERVER: r1 + r2}
        else:
            self.rewards = {PIONEER: r1, OBSERVER: r2}
        self.terminations = {PIONEER: True, OBSERVER: True}

    def _render_header(self) -> str:
        return (
            f"=== {self.metadata['name']} | seed {self.np_random_seed} | "
            f"{self.data_source} row {self.row_id} | reward_mode {self.reward_mode} ===\n"
            f"{self._task_summary()}"
        )
