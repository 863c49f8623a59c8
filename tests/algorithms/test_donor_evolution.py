"""Cultural evolution helper for the Donor game: determinism, selection, the two games."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llm_marl_envs.algorithms.donor_evolution import (
    EvolutionResult,
    GameSpec,
    evolve,
    play_games_sequentially,
    scripted_strategy_writer,
)
from llm_marl_envs.policies.scripted.donor import policy_from_strategy


def _give_or_keep(survivors, rng):
    """Writes "give 1.0" or "give 0.0" at random."""
    return "give 1.0" if rng.uniform() < 0.5 else "give 0.0"


class _Recorder:
    """A play_games hook that records what it is asked to play and delegates."""

    def __init__(self):
        self.calls: list[list[GameSpec]] = []

    def __call__(self, games):
        self.calls.append(list(games))
        return play_games_sequentially(games)


def test_deterministic_for_a_seed():
    def run(seed):
        return evolve(scripted_strategy_writer(), policy_from_strategy, generations=4, seed=seed)

    a, b, c = run(1), run(1), run(2)
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != c.to_dict()
    json.dumps(a.to_dict())  # plain data


def test_population_size_and_survivors_are_the_top_half():
    result = evolve(_give_or_keep, policy_from_strategy, generations=5, num_agents=8, seed=3)
    assert isinstance(result, EvolutionResult) and len(result.generations) == 5
    for record, following in zip(result.generations, [*result.generations[1:], None], strict=True):
        assert len(record.strategies) == len(record.scores) == 8
        assert len(record.survivors) == 4 == len(set(record.survivors))
        survivor_scores = [record.scores[i] for i in record.survivors]
        others = [s for i, s in enumerate(record.scores) if i not in record.survivors]
        assert survivor_scores == sorted(survivor_scores, reverse=True)
        assert min(survivor_scores) >= max(others)
        ranking = sorted(range(8), key=lambda i: (-record.scores[i], i))
        assert record.survivors == ranking[:4]  # ties: lower seat first
        if following is not None:
            assert following.strategies[:4] == [record.strategies[i] for i in record.survivors]


def test_two_games_per_generation_with_reversed_pairings():
    recorder = _Recorder()
    result = evolve(
        _give_or_keep,
        policy_from_strategy,
        generations=3,
        num_agents=6,
        seed=0,
        env_kwargs={"multiplier": 1.5},
        play_games=recorder,
    )
    assert len(recorder.calls) == 3
    for games, record in zip(recorder.calls, result.generations, strict=True):
        assert len(games) == 2
        first, second = games
        assert first.seed == second.seed == record.seed
        assert first.options["reverse_pairings"] is False
        assert second.options["reverse_pairings"] is True
        assert first.env_kwargs == {"multiplier": 1.5, "num_agents": 6}
        strategies = {f"player_{i}": s for i, s in enumerate(record.strategies)}
        assert first.options["strategies"] == strategies
        assert set(first.policies) == {f"player_{i}" for i in range(6)}
        assert len(record.games) == 2
        # scores are the per-seat means over the two games
        for i, score in enumerate(record.scores):
            finals = [g["final_resources"][f"player_{i}"] for g in record.games]
            assert score == pytest.approx(sum(finals) / 2)
        assert record.mean_final_resources == pytest.approx(np.mean(record.scores))
        assert record.mean_donation_fraction == pytest.approx(
            np.mean([g["mean_donation_fraction"] for g in record.games])
        )
        assert record.punishment_frequency == 0.0
    # the second game's schedule is the first one's, reversed
    from llm_marl_envs.envs.donor_game import DonorGameEnv

    env = DonorGameEnv(num_agents=6, multiplier=1.5)
    env.reset(seed=result.generations[0].seed)
    forward = env.schedule
    env.reset(seed=result.generations[0].seed, options={"reverse_pairings": True})
    reversed_forward = [sorted((r, d) for d, r in pairs) for pairs in forward]
    assert reversed_forward == [sorted(pairs) for pairs in env.schedule]


def test_givers_lose_to_keepers_and_full_cooperation_reaches_the_maximum():
    result = evolve(
        _give_or_keep,
        policy_from_strategy,
        generations=1,
        seed=0,
        initial_strategies=["give 1.0"] * 6 + ["give 0.0"] * 6,
    )
    record = result.generations[0]
    assert {record.strategies[i] for i in record.survivors} == {"give 0.0"}
    cooperative = evolve(
        _give_or_keep,
        policy_from_strategy,
        generations=2,
        seed=0,
        initial_strategies=["give 1.0"] * 12,
    )
    assert cooperative.mean_final_resources[0] == 30720.0
    assert cooperative.generations[0].mean_donation_fraction == 1.0


def test_write_strategy_sees_ranked_survivors():
    seen = []

    def writer(survivors, rng):
        seen.append(list(survivors))
        assert isinstance(rng, np.random.Generator)
        return f"give {rng.uniform():.2f}"

    result = evolve(writer, policy_from_strategy, generations=3, num_agents=4, seed=5)
    assert seen[:4] == [[]] * 4  # generation 0: everyone writes from nothing
    later = seen[4:]
    assert len(later) == 2 * 2  # two newcomers after generations 0 and 1, none after the last
    first = result.generations[0]
    expected = [(first.strategies[i], first.scores[i]) for i in first.survivors]
    assert later[0] == later[1] == expected
    assert result.best_strategy == (
        result.generations[-1].strategies[result.generations[-1].survivors[0]],
        max(result.generations[-1].scores),
    )


def test_progress_lines(capsys):
    evolve(_give_or_keep, policy_from_strategy, generations=2, num_agents=2, progress=True)
    err = capsys.readouterr().err
    assert err.count("generation ") == 2 and "mean final resources" in err


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"generations": 0}, ValueError, "generations"),
        ({"num_agents": 3}, ValueError, "num_agents"),
        ({"env_kwargs": {"num_agents": 4}}, ValueError, "num_agents"),
        ({"env_kwargs": {"multiplier": -1}}, ValueError, "multiplier"),
        ({"initial_strategies": ["give 1"] * 3}, ValueError, "initial_strategies"),
        ({"initial_strategies": [1] * 12}, TypeError, "initial_strategies"),
        ({"seed": -1}, ValueError, "seed"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        evolve(_give_or_keep, policy_from_strategy, **kwargs)


def test_write_strategy_must_return_text():
    with pytest.raises(TypeError, match="write_strategy"):
        evolve(lambda survivors, rng: 0.5, policy_from_strategy, generations=1)


def test_play_games_must_return_one_summary_per_game():
    with pytest.raises(ValueError, match="play_games"):
        evolve(_give_or_keep, policy_from_strategy, generations=1, play_games=lambda games: [])


def test_scripted_writer_mutates_survivors():
    writer = scripted_strategy_writer(sigma=0.0)
    rng = np.random.default_rng(0)
    assert writer([("give 0.700", 5.0)], rng) == "give 0.700"
    first = writer([], rng)
    assert first.startswith("give ") and 0.0 <= float(first.split()[1]) <= 1.0
    with pytest.raises(ValueError, match="sigma"):
        scripted_strategy_writer(sigma=-1)
