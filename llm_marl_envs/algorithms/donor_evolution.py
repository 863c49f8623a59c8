"""Cultural evolution in the Donor game: the outer loop of Vallinder & Hughes (2024).

Each generation, a population of ``num_agents`` strategies (free text) plays two Donor games
(``llm_marl_envs/DonorGame-v0``) with the same seed, the second with reversed pairings, so
every pair meets in both directions. A strategy's score is its seat's final resources averaged
over the two games. The better half survives (ties: lower seat first); the other half is
replaced by new strategies, each written by ``write_strategy`` from the survivors' strategies
and scores. The paper runs 10 generations of 12 agents.

>>> from llm_marl_envs.algorithms.donor_evolution import evolve, scripted_strategy_writer
>>> from llm_marl_envs.policies.scripted.donor import policy_from_strategy
>>> result = evolve(scripted_strategy_writer(), policy_from_strategy, generations=3, seed=0)
>>> len(result.generations), len(result.generations[-1].strategies)
(3, 12)

**Players.** ``write_strategy(survivors, rng)`` returns a strategy text; ``survivors`` is a
list of ``(strategy, score)``, best first (empty in generation 0, where every agent writes
one unless ``initial_strategies`` are given) and ``rng`` the run's ``numpy`` Generator.
``make_policy(strategy)`` returns a policy ``(observation, info) -> str`` that plays with that
strategy; it is called once per seat and game, so it may hold per-game state. With an LLM,
``write_strategy`` prompts the model with the survivors' strategies and scores, and
``make_policy`` wraps the model with the strategy (the env also shows each agent its own
strategy in the system prompt).

**Batched rollouts.** Games are played by ``play_games(games) -> summaries``: it receives the
generation's :class:`GameSpec` list (env kwargs, seed, reset options, one policy per agent)
and returns, for each, the env's ``game_summary`` dict (``final_resources`` per agent,
``mean_final_resources``, ``mean_donation_fraction``, ``punishment_frequency``,
``total_donated``). The default, :func:`play_games_sequentially`, plays them one after the
other in the AEC loop; a batched engine can play all games (and all donors of a round) at once
and return the same dicts.

**Determinism.** All randomness comes from one ``numpy.random.default_rng(seed)``: the game
seeds and whatever ``write_strategy`` draws. The same seed and the same (deterministic) hooks
give the same :class:`EvolutionResult`.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from llm_marl_envs.core.validation import check_int, check_number
from llm_marl_envs.envs.donor_game import DonorGameEnv
from llm_marl_envs.policies.base import PolicyFn

__all__ = [
    "EvolutionResult",
    "GameSpec",
    "GenerationRecord",
    "MakePolicy",
    "PlayGames",
    "WriteStrategy",
    "evolve",
    "play_games_sequentially",
    "scripted_strategy_writer",
]

WriteStrategy = Callable[[list[tuple[str, float]], np.random.Generator], str]
MakePolicy = Callable[[str], PolicyFn]


@dataclass(frozen=True)
class GameSpec:
    """One game to play: build ``DonorGameEnv(**env_kwargs)``, ``reset(seed=seed,
    options=options)`` and let ``policies[agent]`` act for each agent."""

    env_kwargs: dict[str, Any]
    seed: int
    options: dict[str, Any]
    policies: dict[str, PolicyFn]


PlayGames = Callable[[Sequence[GameSpec]], list[dict[str, Any]]]


@dataclass
class GenerationRecord:
    """One generation: its population, scores and metrics.

    Attributes:
        generation: 0-based index.
        seed: The seed of both games.
        strategies: The strategy of each seat (``player_i`` played ``strategies[i]``).
        scores: Each seat's final resources, averaged over the two games.
        survivors: The surviving seats, best first (the top half by score).
        mean_final_resources: Mean over agents and both games.
        mean_donation_fraction: Mean of the two games' ``mean_donation_fraction``.
        punishment_frequency: Mean of the two games' ``punishment_frequency``.
        games: The two games' summaries (the second with reversed pairings).
    """

    generation: int
    seed: int
    strategies: list[str]
    scores: list[float]
    survivors: list[int]
    mean_final_resources: float
    mean_donation_fraction: float
    punishment_frequency: float
    games: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvolutionResult:
    """Every generation of an :func:`evolve` run, and the settings it ran with."""

    generations: list[GenerationRecord]
    config: dict[str, Any]

    @property
    def mean_final_resources(self) -> list[float]:
        """The paper's headline curve: mean final resources per generation."""
        return [g.mean_final_resources for g in self.generations]

    @property
    def best_strategy(self) -> tuple[str, float]:
        """The best strategy of the last generation and its score."""
        last = self.generations[-1]
        best = last.survivors[0]
        return last.strategies[best], last.scores[best]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data."""
        return {
            "config": dict(self.config),
            "mean_final_resources": self.mean_final_resources,
            "generations": [g.to_dict() for g in self.generations],
        }


def play_games_sequentially(games: Sequence[GameSpec]) -> list[dict[str, Any]]:
    """The default ``play_games``: each game in turn, in the plain AEC loop."""
    summaries = []
    for game in games:
        env = DonorGameEnv(**game.env_kwargs)
        env.reset(seed=game.seed, options=game.options)
        for agent in env.agent_iter():
            observation, _, terminated, truncated, info = env.last()
            env.step(None if terminated or truncated else game.policies[agent](observation, info))
        summaries.append(env.game_summary)
    return summaries


def _check_text(what: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return value


def evolve(
    write_strategy: WriteStrategy,
    make_policy: MakePolicy,
    *,
    generations: int = 10,
    num_agents: int = 12,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    initial_strategies: Sequence[str] | None = None,
    play_games: PlayGames | None = None,
    progress: bool = False,
) -> EvolutionResult:
    """Run cultural evolution in the Donor game (see the module docstring).

    Args:
        write_strategy: ``(survivors, rng) -> strategy text``; ``survivors`` is a list of
            ``(strategy, score)`` best first, empty in generation 0.
        make_policy: ``strategy -> policy``; called once per seat per game.
        generations: Number of generations (each plays two games), >= 1.
        num_agents: Population size (even, >= 2).
        seed: Seed of the run's one random generator.
        env_kwargs: Further ``DonorGameEnv`` arguments (``multiplier``, ``punishment``, ...).
        initial_strategies: ``num_agents`` strategies for generation 0 (else written).
        play_games: Plays a list of :class:`GameSpec` and returns their ``game_summary``
            dicts (default :func:`play_games_sequentially`).
        progress: Print one line per generation to stderr.

    Returns:
        An :class:`EvolutionResult`. No new strategies are written after the last generation.
    """
    check_int("generations", generations, 1)
    check_int("seed", seed, 0)
    env_kwargs = dict(env_kwargs or {})
    if env_kwargs.get("num_agents", num_agents) != num_agents:
        raise ValueError(
            f"env_kwargs['num_agents']={env_kwargs['num_agents']!r} disagrees with "
            f"num_agents={num_agents!r}; pass num_agents only"
        )
    env_kwargs["num_agents"] = num_agents
    agents = DonorGameEnv(**env_kwargs).possible_agents  # validates every env argument
    half = num_agents // 2
    play = play_games_sequentially if play_games is None else play_games
    rng = np.random.default_rng(seed)

    if initial_strategies is None:
        population = [_check_text("write_strategy()", write_strategy([], rng)) for _ in agents]
    else:
        population = [_check_text("initial_strategies[i]", s) for s in initial_strategies]
        if len(population) != num_agents:
            raise ValueError(
                f"initial_strategies must hold num_agents={num_agents} strategies, "
                f"got {len(population)}"
            )

    records: list[GenerationRecord] = []
    for generation in range(generations):
        game_seed = int(rng.integers(2**31 - 1))
        strategies = dict(zip(agents, population, strict=True))
        games = [
            GameSpec(
                env_kwargs=dict(env_kwargs),
                seed=game_seed,
                options={"strategies": dict(strategies), "reverse_pairings": reverse},
                policies={a: make_policy(strategies[a]) for a in agents},
            )
            for reverse in (False, True)
        ]
        summaries = list(play(games))
        if len(summaries) != len(games):
            raise ValueError(
                f"play_games returned {len(summaries)} summaries for {len(games)} games"
            )
        scores = [
            sum(float(s["final_resources"][a]) for s in summaries) / len(summaries) for a in agents
        ]
        ranking = sorted(range(num_agents), key=lambda i: (-scores[i], i))
        survivors = ranking[:half]
        record = GenerationRecord(
            generation=generation,
            seed=game_seed,
            strategies=list(population),
            scores=scores,
            survivors=survivors,
            mean_final_resources=sum(scores) / num_agents,
            mean_donation_fraction=_mean(s["mean_donation_fraction"] for s in summaries),
            punishment_frequency=_mean(s["punishment_frequency"] for s in summaries),
            games=summaries,
        )
        records.append(record)
        if progress:
            print(
                f"generation {generation}: mean final resources {record.mean_final_resources:.2f}, "
                f"donation fraction {record.mean_donation_fraction:.3f}, "
                f"punishment {record.punishment_frequency:.3f}, best {scores[survivors[0]]:.2f}",
                file=sys.stderr,
                flush=True,
            )
        if generation + 1 < generations:
            kept = [(population[i], scores[i]) for i in survivors]
            newcomers = [
                _check_text("write_strategy()", write_strategy(list(kept), rng))
                for _ in range(num_agents - half)
            ]
            population = [s for s, _ in kept] + newcomers

    config = {
        "generations": generations,
        "num_agents": num_agents,
        "seed": seed,
        "env_kwargs": env_kwargs,
        "initial_strategies": None if initial_strategies is None else list(initial_strategies),
    }
    return EvolutionResult(records, config)


def _mean(values: Any) -> float:
    values = [float(v) for v in values]
    return sum(values) / len(values) if values else math.nan


def scripted_strategy_writer(sigma: float = 0.1) -> WriteStrategy:
    """A model-free ``write_strategy`` for demos and tests: ``"give F"`` strategies.

    Generation 0 draws F uniformly from [0, 1]; later, a newcomer copies a survivor picked
    with probability proportional to its rank (best most likely) and adds Gaussian noise of
    standard deviation ``sigma`` to its F (clipped to [0, 1]). Use with
    ``llm_marl_envs.policies.scripted.donor.policy_from_strategy``.
    """
    check_number("sigma", sigma, 0)

    def write(survivors: list[tuple[str, float]], rng: np.random.Generator) -> str:
        if not survivors:
            return f"give {float(rng.uniform()):.3f}"
        weights = np.arange(len(survivors), 0, -1, dtype=float)
        parent = survivors[int(rng.choice(len(survivors), p=weights / weights.sum()))][0]
        fraction = _read_give(parent)
        fraction = min(1.0, max(0.0, fraction + float(rng.normal(0.0, sigma))))
        return f"give {fraction:.3f}"

    return write


def _read_give(strategy: str) -> float:
    """The F of a ``"give F"`` strategy (0.5 when there is none)."""
    words = strategy.lower().split()
    for word, following in itertools.pairwise(words):
        if word == "give":
            try:
                return float(following.rstrip("%")) / (100 if following.endswith("%") else 1)
            except ValueError:
                break
    return 0.5
