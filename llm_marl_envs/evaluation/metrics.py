"""The metrics of an evaluation suite: one value per item (a frozen task instance).

A metric reads the episodes of one item (``samples`` episodes, same seed and row) and returns a
float, or None when it does not apply (``steps_ratio`` of a maze that was not solved). The
statistics (:mod:`llm_marl_envs.evaluation.stats`) then run over items, so a confidence interval
counts tasks, not correlated samples of one task.

``NAME`` is the team's metric; ``NAME/AGENT`` one agent's (e.g. ``pass@1/pioneer_0``,
``format_failure/observer_0``).

==========================  =========================================================  =========
metric                      value per item                                             range
==========================  =========================================================  =========
``pass@k``                  unbiased pass@k from n samples, c correct (Chen et al.,     [0, 1]
                            2021): ``1 - C(n-c, k) / C(n, k)``; the team's answer is
                            the last turn with a ``correct`` component (GSM8K: the
                            observer's, who saw the pioneer's)
``sentiment``               mean ``sentiment`` component over the agents' turns (CORY's  [-1, 1]
                            reward: the review's opening and the continuation)
``continuation_sentiment``  VADER score of each continuation alone; 0 for a format       [-1, 1]
                            failure or text that is not mostly English words
                            (:func:`readable`: VADER rates emoji and "!" highly, so
                            random characters would score ~0.96). Text that adds
                            nothing scores 0, where ``sentiment`` still pays for the
                            opening's own tone
``joint_reward``            mean return over the agents (the MAGRPO envs pay each      task's
                            agent the joint reward)                                    max
``reward_share``            ``joint_reward / max_reward`` (the task's maximum)         [0, 1]
``readable_reward_share``   ``reward_share``, 0 for an episode whose texts are not all  [0, 1]
                            mostly words (the MAGRPO writing rewards score form, so
                            random text earns 0.44 of TL;DR's maximum)
``sensible_reward_share``   ``reward_share``, 0 for an episode whose texts are not all  [0, 1]
                            English in form (:func:`sensible`: mostly words, function
                            words in English measure, words in an English order), so
                            word salad and shuffled text earn nothing
``all_tests_passed``        1 when the last round passed every test                    [0, 1]
``success``                 1 when the maze's treasure was reached                     [0, 1]
``steps_ratio``             steps / shortest possible steps, solved mazes only         >= 1
``final_resources``         the Donor game's mean final resources                      >= 0
``donation_fraction``       the Donor game's mean donated share of resources           [0, 1]
``format_failure``          share of turns the env could not read                      [0, 1]
``return``                  an agent's return (``return/AGENT`` only)                  any
==========================  =========================================================  =========
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "METRICS",
    "MetricInfo",
    "check_metric",
    "item_value",
    "metric_info",
    "normalise",
    "readable",
    "sensible",
]


@dataclass(frozen=True)
class MetricInfo:
    """How a metric reads an item, its range and its direction."""

    compute: Callable[[Sequence[Any], str | None, Any], float | None]
    low: float | None = 0.0
    high: float | None = 1.0
    higher_is_better: bool = True
    per_agent: bool = True  # NAME/AGENT is allowed
    team: bool = True  # NAME alone is allowed
    description: str = ""
    caveat: str = ""  # why the metric is not a measure of quality, where it is not


def _turns(episode: Any, agent: str | None) -> list[Any]:
    return [t for t in episode.turns if agent is None or t.agent == agent]


def _correct(episode: Any, agent: str | None) -> float:
    turns = [t for t in _turns(episode, agent) if "correct" in t.reward_components]
    if not turns:
        return 0.0  # no scored answer at all (the env could not read one)
    return float(turns[-1].reward_components["correct"] > 0)


def _pass_at(k: int) -> Callable:
    def compute(episodes, agent, task):
        n = len(episodes)
        c = sum(_correct(e, agent) for e in episodes)
        if n - c < k:
            return 1.0
        return 1.0 - math.comb(int(n - c), k) / math.comb(n, k)

    return compute


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _sentiment(episodes, agent, task):
    return _mean(
        [
            t.reward_components["sentiment"]
            for e in episodes
            for t in _turns(e, agent)
            if "sentiment" in t.reward_components
        ]
    )


_WORD = re.compile(r"^[\"'(]*[A-Za-z][A-Za-z'’-]*[.,!?;:)\"']*$")


def readable(text: str, share: float = 0.8) -> bool:
    """Whether ``text`` is mostly English words (at least ``share`` of its whitespace-separated
    tokens): VADER rates emoji and exclamation marks, so random characters can score as
    highly positive text."""
    tokens = text.split()
    return bool(tokens) and sum(bool(_WORD.match(t)) for t in tokens) >= share * len(tokens)


#: English function words: they make up about 40% of running English text (0.20-0.60 in
#: every shipped model's and baseline's writing), and under 0.07 of a random-weight model's
#: word salad.
FUNCTION_WORDS = frozenset(
    """a an the of to in for on with by from at into over under about between through during
    without within and or but nor so yet is are was were be been being has have had do does
    did will would can could may might should must shall that this these those it its as
    which who whom whose what when where why how not no we our they their them he she his
    her i you your my me us than then such also more most other some any each all both only
    very just there here if because while""".split()
)
#: The least share of function words English text has (:func:`sensible`).
FUNCTION_SHARE = 0.15
_ARTICLES = frozenset({"the", "a", "an"})
_PREPOSITIONS = frozenset(
    "of to in for on with by from at into over under about between through during without "
    "within".split()
)
_CONJUNCTIONS = frozenset({"and", "or", "but", "nor"})
_FINITE = frozenset(
    "is are was were has had does did will would can could may might should must shall".split()
)
#: What English never puts right after an article, or right after a preposition.
_AFTER_ARTICLE = (
    _ARTICLES
    | _PREPOSITIONS
    | _CONJUNCTIONS
    | _FINITE
    | {"be", "been", "have", "do", "it", "we", "they", "he", "she", "i", "you", "that", "which"}
    | {"who", "not", "than", "so", "as"}
)
_AFTER_PREPOSITION = _CONJUNCTIONS | _FINITE
#: The most word-order slips in :func:`sensible` per place where one can happen (1 in 20).
ORDER_SLIPS = 0.05
_EDGE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")


def order_slips(text: str) -> tuple[int, int]:
    """Where English word order can be checked in ``text``, and how often it is broken: a
    sentence's end (``.``, ``?``, ``!`` after a word) followed by a lower-case word, an article
    followed by a function word ("the of", "a is"), a preposition followed by a conjunction or
    a finite verb ("of and", "to was"). Real writing breaks none of them, or one in hundreds;
    the same words shuffled break a quarter to a half."""
    tokens = text.split()
    places = slips = 0
    for first, second in zip(tokens, tokens[1:], strict=False):
        word, after = _EDGE.sub("", first).lower(), _EDGE.sub("", second).lower()
        if first[-1] in ".?!" and len(word) > 1:
            places += 1
            slips += second[0].islower()
        elif first[-1].isalnum() and word in _ARTICLES:
            places += 1
            slips += after in _AFTER_ARTICLE
        elif first[-1].isalnum() and word in _PREPOSITIONS:
            places += 1
            slips += after in _AFTER_PREPOSITION
    return places, slips


def sensible(text: str) -> bool:
    """Whether ``text`` is English in form: :func:`readable` (mostly words), at least
    :data:`FUNCTION_SHARE` of its words function words, and at most :data:`ORDER_SLIPS` of
    its places broken by an order slip (:func:`order_slips`). A sense check of form, not of
    meaning or truth: a random-weight model's word salad fails the function words, the words of
    a good text shuffled fail the order; what it passes is text written as English."""
    if not readable(text):
        return False
    words = [_EDGE.sub("", token).lower() for token in text.split()]
    words = [word for word in words if word]
    if not words or sum(w in FUNCTION_WORDS for w in words) < FUNCTION_SHARE * len(words):
        return False
    places, slips = order_slips(text)
    return slips <= ORDER_SLIPS * places


def _continuation_sentiment(episodes, agent, task):
    from llm_marl_envs.rewards.sentiment import resolve_scorer

    turns = [t for e in episodes for t in _turns(e, agent) if "sentiment" in t.reward_components]
    scores = resolve_scorer("vader")([t.action for t in turns]) if turns else []
    return _mean(
        [
            v if t.format_error is None and readable(t.action) else 0.0
            for t, v in zip(turns, scores, strict=True)
        ]
    )


def _joint_reward(episodes, agent, task):
    return _mean(
        [
            e.returns[agent] if agent else sum(e.returns.values()) / max(len(e.returns), 1)
            for e in episodes
        ]
    )


def _reward_share(episodes, agent, task):
    value = _joint_reward(episodes, agent, task)
    return None if value is None else value / task.max_reward


def _share_when(check: Callable[[str], bool]) -> Callable:
    """``reward_share``, but 0 for an episode where any agent's text fails ``check``."""

    def compute(episodes, agent, task):
        return _mean(
            [
                (
                    sum(e.returns.values()) / max(len(e.returns), 1) / task.max_reward
                    if all(check(t.action) for t in e.turns)
                    else 0.0
                )
                for e in episodes
            ]
        )

    return compute


#: 0 for an episode whose texts are not all mostly words (:func:`readable`), or not all English
#: in form (:func:`sensible`).
_readable_reward_share = _share_when(readable)
_sensible_reward_share = _share_when(sensible)


def _final(episode: Any) -> dict:
    """One agent's final info (they share the game-level keys)."""
    return next(iter(episode.final_infos.values()), {}) if episode.final_infos else {}


def _all_tests_passed(episodes, agent, task):
    values = []
    for e in episodes:
        components = _final(e).get("reward_components", {})
        total = components.get("tests_total", 0)
        values.append(float(total > 0 and components.get("tests_passed", 0) == total))
    return _mean(values)


def _success(episodes, agent, task):
    return _mean([float(any(i.get("success") for i in e.final_infos.values())) for e in episodes])


def _steps_ratio(episodes, agent, task):
    return _mean([_final(e)["steps_ratio"] for e in episodes if _final(e).get("success")])


def _game(key: str) -> Callable:
    def compute(episodes, agent, task):
        if agent is not None:
            field = {"mean_final_resources": "final_resources"}.get(key, "donation_fraction")
            return _mean([e.final_infos[agent][field] for e in episodes])
        return _mean([_final(e)["game"][key] for e in episodes])

    return compute


def _format_failure(episodes, agent, task):
    return _mean(
        [
            float(t.format_error is not None or t.reward_components.get("format_failure", 0) > 0)
            for e in episodes
            for t in _turns(e, agent)
        ]
    )


def _return(episodes, agent, task):
    return _mean([e.returns[agent] for e in episodes])


METRICS: dict[str, MetricInfo] = {
    "sentiment": MetricInfo(
        _sentiment,
        -1.0,
        1.0,
        description="mean sentiment score",
        caveat="includes the review's own opening, not only the model's text",
    ),
    "continuation_sentiment": MetricInfo(
        _continuation_sentiment, -1.0, 1.0, description="sentiment of the continuation alone"
    ),
    "joint_reward": MetricInfo(
        _joint_reward,
        None,
        None,
        description="mean joint reward",
        caveat="the raw reward on the task's own scale, unreadable text included",
    ),
    "reward_share": MetricInfo(
        _reward_share,
        description="joint reward / its maximum",
        caveat="on the writing tasks it pays for form: random text earns some of it",
    ),
    "readable_reward_share": MetricInfo(
        _readable_reward_share,
        per_agent=False,
        description="reward share of readable text",
        caveat="word salad made of real words passes it: a random-weight model earns some",
    ),
    "sensible_reward_share": MetricInfo(
        _sensible_reward_share,
        per_agent=False,
        description="reward share of text written as English",
        caveat="a check of form (function words, word order), not of meaning or truth",
    ),
    "all_tests_passed": MetricInfo(
        _all_tests_passed, per_agent=False, description="problems with every test passing"
    ),
    "success": MetricInfo(_success, per_agent=False, description="mazes solved"),
    "steps_ratio": MetricInfo(
        _steps_ratio,
        1.0,
        None,
        higher_is_better=False,
        per_agent=False,
        description="steps / shortest path, solved mazes",
        caveat="over solved mazes only: an entry that solves fewer is judged on fewer",
    ),
    "final_resources": MetricInfo(
        _game("mean_final_resources"),
        0.0,
        None,
        description="mean final resources",
        caveat="what the players kept, not how well they cooperated",
    ),
    "donation_fraction": MetricInfo(
        _game("mean_donation_fraction"), description="mean share of resources donated"
    ),
    "format_failure": MetricInfo(
        _format_failure,
        higher_is_better=False,
        description="turns the env could not read",
        caveat="a format check, not quality: 0 only says the env could read every turn",
    ),
    "return": MetricInfo(_return, None, None, team=False, description="an agent's return"),
}

_PASS = re.compile(r"^pass@(\d+)$")


def metric_info(metric: str) -> tuple[MetricInfo, str | None]:
    """The :class:`MetricInfo` of ``NAME`` or ``NAME/AGENT``, and the agent (or None)."""
    name, _, agent = metric.partition("/")
    match = _PASS.match(name)
    if match:
        info = MetricInfo(_pass_at(int(match.group(1))), description=f"pass@{match.group(1)}")
    elif name in METRICS:
        info = METRICS[name]
    else:
        raise KeyError(metric)
    return info, agent or None


def check_metric(metric: str, samples: int) -> str | None:
    """Why ``metric`` cannot be used with ``samples`` episodes per item (None: it can)."""
    if not isinstance(metric, str):
        return "a metric is a string"
    try:
        info, agent = metric_info(metric)
    except KeyError:
        known = ["pass@K", *METRICS]
        return f"unknown metric; known: {', '.join(known)} (NAME or NAME/AGENT)"
    match = _PASS.match(metric.partition("/")[0])
    if match and not 1 <= int(match.group(1)) <= samples:
        return f"pass@k needs 1 <= k <= samples ({samples})"
    if agent and not info.per_agent:
        return "has no per-agent form"
    if not agent and not info.team:
        return "needs an agent: NAME/AGENT"
    return None


def item_value(metric: str, episodes: Sequence[Any], task: Any) -> float | None:
    """``metric`` of one item from its episodes (EpisodeRecords); None when it does not apply."""
    info, agent = metric_info(metric)
    if metric.partition("/")[0].endswith("reward_share") and not task.max_reward:
        raise ValueError(f"task {task.name}: reward_share needs max_reward in the suite")
    return info.compute(episodes, agent, task)


def normalise(metric: str, value: float) -> float:
    """``value`` on a 0..1 scale where 1 is best (for the overall score); metrics without a
    bounded range cannot be a primary metric of the overall score."""
    info, _ = metric_info(metric)
    if info.low is None or info.high is None:
        raise ValueError(f"{metric} has no bounded range; choose another primary metric")
    share = (value - info.low) / (info.high - info.low)
    return share if info.higher_is_better else 1.0 - share
