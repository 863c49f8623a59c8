"""Shared engine of MAGRPO's two-agent writing tasks (TL;DR summarisation, arXiv expansion).

Two agents read the same source text and write at the same time, each its own part; both
receive the same joint reward (:mod:`llm_marl_envs.rewards.writing`). An episode is one
round. Subclasses provide the agents, their instructions, the reward table and the data.
"""

from __future__ import annotations

import os
from typing import Any

from llm_marl_envs.core.simultaneous import SimultaneousTextEnv
from llm_marl_envs.core.text_env import CleanAction
from llm_marl_envs.data.loading import TaskData
from llm_marl_envs.rewards.impls import DEFAULT_REWARD_IMPL
from llm_marl_envs.rewards.writing import writing_scorer

__all__ = ["WritingEnv"]

_LEVELS = ("structure", "length_ratio", "vocabulary", "coherence", "consistency", "total")


class WritingEnv(SimultaneousTextEnv):
    """Two writers, one source text, one joint reward (see the subclasses' doc pages).

    Class attributes set by subclasses: ``ROLES`` (``{agent: role}``, agent 1 first),
    ``INSTRUCTIONS`` (``{agent: system instruction}``), ``TASK`` (``"tldr"`` or ``"arxiv"``:
    names the reward's tables), ``SOURCE_LABEL`` (how the source text is introduced in the
    prompt) and ``load_data`` (the dataset loader).

    Args:
        split: Dataset split, optionally sliced (``"train[:1000]"``).
        data_source: ``"auto"``, ``"hub"``, ``"bundled"`` or a local path.
        max_cycles: Accepted for API compatibility; an episode is one round.
        render_mode: ``None``, ``"human"`` or ``"ansi"``.
        max_action_length: Longest scored text in characters.
        reward_impl: ``"paper"`` (v0's), ``"authors"`` or ``"authors-2025"``
            (:mod:`llm_marl_envs.rewards.impls`); each version's registry entry names its
            own. Given in ``infos[agent]["reward_impl"]`` and in episode records.
    """

    ROLES: dict[str, str] = {}
    INSTRUCTIONS: dict[str, str] = {}
    TASK = ""
    SOURCE_LABEL = "Text"

    @staticmethod
    def load_data(split: str, data_source: str | os.PathLike[str]) -> TaskData:
        """Load the task's source texts (each subclass names its loader)."""
        raise NotImplementedError

    def __init__(
        self,
        *,
        split: str = "train",
        data_source: str | os.PathLike[str] = "auto",
        max_cycles: int = 1,
        render_mode: str | None = None,
        max_action_length: int = 8192,
        reward_impl: str = DEFAULT_REWARD_IMPL,
    ) -> None:
        self._scorer = writing_scorer(self.TASK, reward_impl)  # refuses an unknown name
        self.reward_impl = reward_impl
        super().__init__(
            list(self.ROLES),
            self.ROLES,
            max_cycles=max_cycles,
            render_mode=render_mode,
            max_action_length=max_action_length,
        )
        self.data = self.load_data(split, data_source)
        self.source_text = ""

    def _source(self, row: dict[str, Any]) -> str:
        """The text both agents write about, from one data row."""
        raise NotImplementedError

    def _new_episode(self, options: dict[str, Any]) -> None:
        index = self._pick_row(self.data, options)
        self.source_text = self._source(self.data.rows[index])
        self._set_task_info(self.data.source, self.data.row_ids[index])
        for agent in self.agents:
            self.infos[agent]["reward_impl"] = self.reward_impl
        for agent, instruction in self.INSTRUCTIONS.items():
            user = f"{self.SOURCE_LABEL}:\n{self.source_text}"
            self._set_prompt(
                agent,
                f"{instruction}\n\n{user}\n\nYour text:",
                [{"role": "system", "content": instruction}, {"role": "user", "content": user}],
            )
        self.agent_selection = self.possible_agents[0]

    def _resolve(self, actions: dict[str, CleanAction]) -> None:
        first, second = self.possible_agents
        if any(a.failure for a in actions.values()):
            levels = dict.fromkeys(_LEVELS, 0.0)  # an empty or oversized text scores nothing
        else:
            levels = self._scorer(actions[first].text, actions[second].text)
        total = levels["total"]
        for agent, action in actions.items():
            components = {
                **levels,
                "task_reward": total,
                "format_failure": float(action.failure is not None),
            }
            self._record(agent, action, components)
            self.rewards[agent] = total
            self.terminations[agent] = True

    def _render_header(self) -> str:
        preview = (
            self.source_text if len(self.source_text) <= 600 else self.source_text[:600] + " [...]"
        )
        return (
            f"=== {self.metadata['name']} | seed {self.np_random_seed} | "
            f"{self.data_source} row {self.row_id} ===\n{preview}"
        )
