"""Sentiment scorers and the sentiment reward of IMDB continuation (CORY: Ma et al., NeurIPS 2024, arXiv:2410.06101).

A *scorer* is any callable ``list[str] -> list[float]`` (higher = more positive). Two real
ones are provided and both load lazily:

* :class:`VaderScorer` (default, offline): VADER's compound score in [-1, 1]; needs the
  ``sentiment`` extra.
* :class:`TransformersSentimentScorer`: a Hugging Face sequence classifier, scored by its raw
  POSITIVE logit, as CORY does with ``lvwerra/distilbert-imdb``; needs the ``train`` extra
  (torch + transformers) and the model on the Hub, in the local cache, or at a local path.

:func:`resolve_scorer` turns the env's ``scorer=`` argument into a callable, and
:func:`sentiment_reward` is the TRL-style reward function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from llm_marl_envs.core.optional import require
from llm_marl_envs.core.text_env import DEFAULT_MAX_ACTION_LENGTH
from llm_marl_envs.rewards.inputs import answer_text, per_row, prompt_text, team_rewards

__all__ = [
    "Scorer",
    "TransformersSentimentScorer",
    "VaderScorer",
    "is_echo",
    "resolve_scorer",
    "sentiment_reward",
]

Scorer = Callable[[list[str]], list[float]]


class VaderScorer:
    """VADER compound sentiment in [-1, 1] (lexicon-based, offline, ~75 µs per sentence)."""

    name = "vader"

    def __init__(self) -> None:
        vader = require("vaderSentiment.vaderSentiment", "sentiment", "The VADER sentiment scorer")
        self._analyzer = vader.SentimentIntensityAnalyzer()

    def __call__(self, texts: Sequence[str]) -> list[float]:
        return [self._analyzer.polarity_scores(t)["compound"] for t in texts]


class TransformersSentimentScorer:
    """Raw POSITIVE logit of a transformers sequence classifier (the paper's reward).

    Args:
        model_name: Hub id (e.g. ``"lvwerra/distilbert-imdb"``) or local directory.
        device: Torch device string; default CPU.
        batch_size: Texts per forward pass.
        positive_label: Name of the positive class in ``config.id2label`` (case-insensitive).
            If no label has that name and there are two classes, class 1 is used.
    """

    def __init__(
        self,
        model_name: str,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        positive_label: str = "POSITIVE",
    ) -> None:
        purpose = f"The transformers sentiment scorer ({model_name})"
        self._torch = require("torch", "train", purpose)
        transformers = require("transformers", "train", purpose)
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(model_name)
            self.model = transformers.AutoModelForSequenceClassification.from_pretrained(model_name)
        except OSError as error:
            raise OSError(
                f"Could not load the sentiment classifier {model_name!r}: it is neither a local "
                "directory nor available from the Hugging Face Hub or its cache (offline?). "
                "Use scorer='vader' for the offline default."
            ) from error
        self.model.to(device).eval()
        self.device = device
        self.batch_size = batch_size
        self.name = model_name
        labels = {str(v).upper(): int(k) for k, v in self.model.config.id2label.items()}
        if positive_label.upper() in labels:
            self.positive_index = labels[positive_label.upper()]
        elif self.model.config.num_labels == 2:
            self.positive_index = 1
        else:
            raise ValueError(
                f"{model_name!r} has labels {sorted(labels)} and none is {positive_label!r}"
            )

    def __call__(self, texts: Sequence[str]) -> list[float]:
        scores: list[float] = []
        torch = self._torch
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            enc = self.tokenizer(batch, padding=True, truncation=True, return_tensors="pt")
            with torch.no_grad():
                logits = self.model(**enc.to(self.device)).logits
            scores.extend(logits[:, self.positive_index].float().cpu().tolist())
        return scores


@lru_cache(maxsize=8)
def _cached_scorer(name: str) -> Scorer:
    if name == "vader":
        return VaderScorer()
    return TransformersSentimentScorer(name)


def resolve_scorer(scorer: str | Scorer = "vader") -> Scorer:
    """Turn ``"vader"``, a classifier name/path, or a callable into a scorer.

    Named scorers are built once per process and shared (they are stateless at inference).
    """
    if callable(scorer):
        return scorer
    if isinstance(scorer, str) and scorer:
        return _cached_scorer(scorer)
    raise TypeError(
        "scorer must be 'vader', a Hugging Face classifier name or path, or a callable "
        f"list[str] -> list[float]; got {scorer!r}"
    )


def sentiment_reward(
    completions: list[Any],
    prompts: list[Any] | None = None,
    scorer: str | Scorer = "vader",
    *,
    query: list[str] | str | None = None,
    reject_echo: list[bool] | bool = False,
    reward_mode: list[str] | str = "individual",
    partner_reward: list[float] | float | None = None,
    max_action_length: list[int] | int = DEFAULT_MAX_ACTION_LENGTH,
    **kwargs: Any,
) -> list[float]:
    """Sentiment of ``query + completion`` for each completion (the TRL reward signature).

    ``GRPOTrainer`` passes ``prompts``, ``completions`` and every dataset column; both may be
    strings or chat messages (the last user message of a prompt, the last assistant message
    of a completion is the text). On the columns of
    ``llm_marl_envs.integrations.trl.env_dataset`` it pays what IMDBSentiment pays.

    Args:
        completions: Continuations written by the model.
        prompts: The review openings they continue, scored together with the completion as in
            CORY (a conversation's last user message). ``None`` (and no ``query``) scores the
            completions alone.
        scorer: See :func:`resolve_scorer` (a column: the env's ``scorer`` by name).
        query: The review opening itself (the ``query`` column of
            ``llm_marl_envs.integrations.trl.env_dataset``); used instead of the prompts when
            given. IMDBSentiment's observer needs it: its prompt quotes the pioneer, but its
            reward scores the query + its own continuation.
        reject_echo: A continuation that repeats the whole query scores 0 (:func:`is_echo`;
            IMDBSentiment-v1), per row or for all.
        reward_mode: ``"individual"`` (default: the completion's own score) or
            ``"collective"`` (plus ``partner_reward``, as the env pays in CORY's mode).
        partner_reward: The partner's task reward (the observer's rows: the pioneer's r1).
        max_action_length: Longer completions are format failures scoring 0, as in the env;
            so are empty ones.
        **kwargs: Other dataset columns and TRL's own keywords, ignored.
    """
    n = len(completions)
    scorers = [scorer] * n if callable(scorer) else per_row(scorer, n, "scorer")
    if query is not None:
        openings = [str(q) for q in per_row(query, n, "query")]
    elif prompts is not None:
        openings = [prompt_text(p) for p in prompts]
    else:
        openings = [""] * n
    rows = zip(
        completions,
        openings,
        scorers,
        per_row(reject_echo, n, "reject_echo"),
        per_row(max_action_length, n, "max_action_length"),
        strict=True,
    )
    own = []
    for completion, opening, name, echo, limit in rows:
        text = answer_text(completion, limit)
        if text is None or (echo and is_echo(opening, text)):
            own.append(0.0)
        else:
            own.append(float(resolve_scorer(name)([join_continuation(opening, text)])[0]))
    return team_rewards(own, reward_mode, partner_reward, "sentiment_reward")


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def is_echo(query: str, continuation: str) -> bool:
    """True when ``continuation`` repeats the whole ``query`` (its words in order, anywhere).

    >>> is_echo("Teachers everywhere should show this", "The teachers everywhere should show this.")
    True
    >>> is_echo("This is the worst", "the worst.")
    False
    """
    query_words, words = _words(query), _words(continuation)
    n = len(query_words)
    return n > 0 and any(words[i : i + n] == query_words for i in range(len(words) - n + 1))


def join_continuation(query: str, continuation: str) -> str:
    """Join a query and its continuation with exactly one space where one is needed."""
    if not continuation or not query or query[-1].isspace() or continuation[0].isspace():
        return query + continuation
    return query + " " + continuation
