"""IMDBSentiment-v1 / -v0: positive movie-review continuation in CORY's pioneer -> observer protocol.

| | |
|---|---|
| Id | ``llm_marl_envs/IMDBSentiment-v1``; ``-v0`` kept |
| Agents | ``pioneer_0``, then ``observer_0`` (one turn each, AEC only) |
| Action | free text: a continuation of the query (CORY samples 4-15 tokens) |
| Observation | pioneer: the query; observer: ``I can make this sentence "<query + pioneer continuation>" more positive: <query>`` |
| Reward | sentiment of query + own continuation (r1, r2); ``reward_mode="collective"``: both get r1 + r2, ``"individual"``: own |
| Paper | Ma et al., "Coevolving with the Other You", NeurIPS 2024 |

**Query.** The first 2..7 words of a review (CORY uses 2..7 tokens). The length is drawn
from the episode RNG. Pass ``tokenizer=`` (any object with ``encode``/``decode``, e.g. a
Hugging Face tokenizer) to cut the query in tokens instead of words.

**Scorer** (``scorer=``): ``"vader"`` (default, offline: VADER compound score in [-1, 1]), a
Hugging Face classifier name or path such as ``"lvwerra/distilbert-imdb"`` (the paper's
reward: the raw POSITIVE logit; loaded lazily on first use), or any callable
``list[str] -> list[float]``.

**Reward components** per agent: ``sentiment`` (the scorer's value), ``task_reward`` (equal to
``sentiment``, or 0 on a format failure), ``format_failure``. Format errors: ``"empty"``,
``"too_long"`` and (v1) ``"echo"``. The chat form of each prompt is in
``infos[agent]["messages"]``: an instruction as the system message and the observation as the
user message.

**Worked examples** (``worked_example``; on in v1, off in v0). Each chat holds a short
instruction ("reply with the 3 to 12 words that come next") and two example exchanges in the
agent's own format before the real opening (``Opening: "<query>"``, for the observer also
``Other writer: "<pioneer continuation>"``). The observation strings stay CORY's.

**Echoes** (``reject_echo``; on in v1, off in v0). A continuation that repeats the whole
query (its words, in order, anywhere in the answer) is a format failure ``"echo"`` scoring 0:
in v0 repeating the opening, which the scorer reads as part of the review, could earn the
query's own sentiment.

**Data** (``data_source``): ``"auto"`` (Hub ``stanfordnlp/imdb`` or its cache, else the
bundled sample), ``"hub"``, ``"bundled"`` (220 review openings written for this project), or
a local file in the Hub schema (``text,label``) or the CSV schema ``review,sentiment``.
Reviews of at most ``min_review_chars`` (200, as in the paper) characters are skipped;
the bundled openings are used whole. ``infos`` give ``data_source`` and ``row_id``.

**Arguments.** ``split``, ``data_source``, ``scorer``, ``tokenizer``, ``query_length`` (inclusive
range, default ``(2, 7)``), ``min_review_chars``, ``reward_mode``, ``max_action_length``,
``max_cycles`` (accepted; an episode is one cycle), ``render_mode``, ``worked_example``,
``reject_echo``. ``reset(options={"row_index": i})`` plays row ``i``.

**Version history.** Versions are registry arguments (``envs_registry.yaml``): one class,
whose defaults are v0's; each version's entry states the arguments that define it. v0:
initial version. v1: ``worked_example=True`` and ``reject_echo=True`` (issue 18: the
embedded 135M model echoed the opening or ran on for the whole token budget; with the
examples it answers in a phrase and stops).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from llm_marl_envs.core.text_env import CleanAction
from llm_marl_envs.data.imdb import load_imdb
from llm_marl_envs.envs.base.pioneer_observer import PioneerObserverEnv
from llm_marl_envs.rewards.sentiment import is_echo, join_continuation, resolve_scorer

__all__ = ["IMDBSentimentEnv", "env"]

INSTRUCTION = (
    "You are writing a movie review. Continue the text you are given with a few words "
    "(one short phrase) that make the review positive. Reply with the continuation only."
)
MAX_QUOTED_CHARS = 1000

# v1's chat prompts: the format a 135M model follows once it has seen it twice.
EXAMPLE_INSTRUCTION = (
    "You finish movie-review sentences. The user gives the opening words of a review; reply "
    "with the words that come next (3 to 12 words), making the review positive. Do not repeat "
    "the opening."
)
EXAMPLE_OBSERVER_INSTRUCTION = (
    "You finish movie-review sentences. The user gives the opening words of a review and "
    "another writer's continuation; reply with your own continuation (3 to 12 words) that is "
    "more positive. Do not repeat the opening."
)
#: (opening, another writer's continuation, a positive continuation)
EXAMPLES = (
    ("The acting in this film", "was fine, I guess.", "is warm, funny and truly moving."),
    ("I did not expect", "much from it.", "to love every minute of this charming story."),
)


class IMDBSentimentEnv(PioneerObserverEnv):
    """IMDB positive-continuation task in the pioneer -> observer protocol."""

    metadata = {**PioneerObserverEnv.metadata, "name": "IMDBSentiment-v0"}

    def __init__(
        self,
        *,
        split: str = "train",
        data_source: str | os.PathLike[str] = "auto",
        scorer: str | Callable[[list[str]], list[float]] = "vader",
        tokenizer: Any = None,
        query_length: tuple[int, int] = (2, 7),
        min_review_chars: int = 200,
        reward_mode: str = "collective",
        max_cycles: int = 1,
        render_mode: str | None = None,
        max_action_length: int = 8192,
        worked_example: bool = False,
        reject_echo: bool = False,
    ) -> None:
        self.worked_example = bool(worked_example)
        self.reject_echo = bool(reject_echo)
        super().__init__(
            reward_mode=reward_mode,
            max_cycles=max_cycles,
            render_mode=render_mode,
            max_action_length=max_action_length,
        )
        low, high = query_length
        if not 1 <= low <= high:
            raise ValueError(
                f"query_length must be (low, high) with 1 <= low <= high, got {query_length}"
            )
        self.query_length = (int(low), int(high))
        self.tokenizer = tokenizer
        self.scorer = resolve_scorer(scorer)
        #: The scorer by name (``"vader"``, a classifier), None for a callable.
        self.scorer_name = scorer if isinstance(scorer, str) else None
        self.data = load_imdb(split, data_source, min_review_chars)
        self.query = ""

    def _draw_task(self, options: dict[str, Any]) -> None:
        index = self._pick_row(self.data, options)
        n = int(self.np_random.integers(self.query_length[0], self.query_length[1] + 1))
        text = self.data.rows[index]["text"]
        if self.tokenizer is None:
            self.query = " ".join(text.split()[:n])
        else:
            ids = self.tokenizer.encode(text, add_special_tokens=False)[:n]
            self.query = self.tokenizer.decode(ids)
        self._set_task_info(self.data.source, self.data.row_ids[index])

    def _pioneer_prompt(self) -> tuple[str, list[dict[str, str]]]:
        if self.worked_example:
            return self.query, _example_messages(self.query)
        return self.query, _messages(self.query)

    def _observer_prompt(self, pioneer_answer: str) -> tuple[str, list[dict[str, str]]]:
        quoted = join_continuation(self.query, pioneer_answer)[:MAX_QUOTED_CHARS]
        text = f'I can make this sentence "{quoted}" more positive: {self.query}'
        if self.worked_example:
            return text, _example_messages(self.query, pioneer_answer[:MAX_QUOTED_CHARS])
        return text, _messages(text)

    def _score(self, action: CleanAction) -> tuple[float, dict[str, float], str | None]:
        if action.failure is not None:
            return 0.0, {"sentiment": 0.0}, action.failure
        if self.reject_echo and is_echo(self.query, action.text):
            return 0.0, {"sentiment": 0.0}, "echo"
        sentiment = float(self.scorer([join_continuation(self.query, action.text)])[0])
        return sentiment, {"sentiment": sentiment}, None

    def _task_summary(self) -> str:
        return f"Query: {self.query!r}"


def _messages(user_text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": user_text}]


def _opening(query: str, other: str | None) -> str:
    text = f'Opening: "{query}"'
    return text if other is None else f'{text}\nOther writer: "{other}"'


def _example_messages(query: str, pioneer_answer: str | None = None) -> list[dict[str, str]]:
    """v1's chat: instruction, two example exchanges in this seat's format, the real opening."""
    observer = pioneer_answer is not None
    instruction = EXAMPLE_OBSERVER_INSTRUCTION if observer else EXAMPLE_INSTRUCTION
    messages = [{"role": "system", "content": instruction}]
    for opening, other, positive in EXAMPLES:
        messages += [
            {"role": "user", "content": _opening(opening, other if observer else None)},
            {"role": "assistant", "content": positive},
        ]
    messages.append({"role": "user", "content": _opening(query, pioneer_answer)})
    return messages


def env(**kwargs: Any) -> IMDBSentimentEnv:
    """PettingZoo-style constructor: ``imdb_sentiment.env(data_source="bundled")``."""
    return IMDBSentimentEnv(**kwargs)
