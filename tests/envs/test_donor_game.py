"""DonorGame-v0: known outcomes, roles, traces, punishment, infos, policies (the rules alone,
schedule and parsing: tests/games/test_donor_rules.py)."""

from __future__ import annotations

import math

import pytest

from llm_marl_envs.envs.donor_game import DonorGameEnv, parse_donation
from llm_marl_envs.envs.donor_game import env as make_env
from llm_marl_envs.policies.scripted.donor import (
    always_defect,
    fraction_giver,
    policy_from_strategy,
    punishing_reciprocator,
    reputation_reciprocator,
)


def _play(env, policies, seed=0, options=None):
    """Play one game; returns each agent's summed rewards (as ``last()`` reports them)."""
    env.reset(seed=seed, options=options)
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        totals[agent] += reward
        policy = policies if callable(policies) else policies[agent]
        env.step(None if term or trunc else policy(obs, info))
    return totals


def _mixed_policies(env):
    kinds = [
        fraction_giver(0.3),
        reputation_reciprocator(0.8),
        always_defect(),
        fraction_giver(1.0),
    ]
    return {a: kinds[i % len(kinds)] for i, a in enumerate(env.possible_agents)}


# ------------------------------------------------------------------ known outcomes
def test_all_defect_keeps_the_endowment():
    env = DonorGameEnv()
    totals = _play(env, always_defect())
    assert env.game_summary["final_resources"] == {a: 10.0 for a in env.possible_agents}
    assert env.game_summary["mean_final_resources"] == 10.0
    assert env.game_summary["mean_donation_fraction"] == 0.0
    assert env.game_summary["total_donated"] == 0.0
    assert totals == {a: 0.0 for a in env.possible_agents}
    assert len(env.history) == 72 and all(r["amount"] == 0.0 for r in env.history)


def test_giving_everything_reaches_the_maximum_30720():
    env = DonorGameEnv(num_agents=12, num_rounds=12, multiplier=2.0)
    totals = _play(env, fraction_giver(1.0))
    summary = env.game_summary
    assert summary["mean_final_resources"] == 30720.0
    assert summary["mean_donation_fraction"] == 1.0
    assert sum(summary["final_resources"].values()) == 12 * 30720.0
    for agent, total in totals.items():
        assert total == summary["final_resources"][agent] - 10.0
    assert not any(r for r in env.transcript if r.reward_components["clamped"])


@pytest.mark.parametrize("multiplier", [1.5, 2.0, 3.0])
def test_total_resources_grow_by_multiplier_minus_one_times_donations(multiplier):
    env = DonorGameEnv(multiplier=multiplier)
    policies = _mixed_policies(env)
    env.reset(seed=5)
    total_before, rounds_seen = 12 * 10.0, 0
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(policies[agent](obs, info))
        step = env.history[-1]
        assert env.rewards[step["donor"]] == -step["amount"]
        assert env.rewards[step["recipient"]] == pytest.approx(multiplier * step["amount"])
        if env.num_cycles > rounds_seen:  # a round just ended
            rounds_seen = env.num_cycles
            donated = sum(r["amount"] for r in env.history if r["round"] == rounds_seen)
            total = sum(env.resources.values())
            assert total == pytest.approx(total_before + (multiplier - 1) * donated, rel=1e-12)
            total_before = total
    assert rounds_seen == 12
    assert env.game_summary["total_donated"] == pytest.approx(sum(r["amount"] for r in env.history))


def test_rewards_sum_to_final_minus_endowment():
    env = DonorGameEnv(endowment=7.0)
    totals = _play(env, _mixed_policies(env), seed=3)
    for agent, total in totals.items():
        assert total == pytest.approx(env.resources[agent] - 7.0)


def test_default_rounds_and_roles_in_infos():
    assert DonorGameEnv(num_agents=4).num_rounds == 4
    assert DonorGameEnv(num_agents=20).num_rounds == 12
    env = DonorGameEnv(num_agents=6)
    env.reset(seed=2)
    policy = fraction_giver(0.5)
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        pairs = env.schedule[info["round"] - 1]
        assert (agent, info["recipient"]) in pairs
        for donor, recipient in pairs:
            assert env.infos[donor]["role"] == "donor"
            assert env.infos[recipient]["role"] == "recipient"
        env.step(policy(obs, info))


def test_reverse_pairings_swaps_every_pair():
    env = DonorGameEnv()
    env.reset(seed=11)
    forward = env.schedule
    env.reset(seed=11, options={"reverse_pairings": True})
    backward = env.schedule
    for f, b in zip(forward, backward, strict=True):
        assert sorted((rec, d) for d, rec in f) == sorted(b)
    assert env.agent_selection == backward[0][0][0]
    assert env.infos[forward[0][0][0]]["role"] == "recipient"


# ------------------------------------------------------------------ observation and trace
@pytest.mark.parametrize("depth", [0, 1, 3, 5])
def test_trace_depth_and_contents(depth):
    env = DonorGameEnv(trace_depth=depth, num_rounds=7)
    policies = _mixed_policies(env)
    env.reset(seed=4)
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        r, trace = info["round"], info["trace"]
        assert len(trace) == min(depth, r - 1)
        who, before = info["recipient"], r
        for record in trace:
            assert record["donor"] == who and record["round"] == before - 1
            assert record in env.history
            assert f"In round {record['round']}, {record['donor']} gave" in obs
            who, before = record["recipient"], record["round"]
        assert obs.count("- In round ") == len(trace)
        if depth and r == 1:
            assert "no history yet" in obs
        if depth == 0:
            assert "did recently" not in obs
        assert f"{info['recipient']} has " in obs
        assert "7 rounds" not in obs and "of 7" not in obs  # the number of rounds is secret
        assert obs.endswith('"Answer: <amount>".')
        env.step(policies[agent](obs, info))


def test_first_observation_and_messages():
    env = DonorGameEnv(multiplier=3.0)
    env.reset(seed=0, options={"strategies": {"player_3": "Always give half.", "player_5": ""}})
    donor = env.agent_selection
    obs = str(env.observe(donor))
    info = env.infos[donor]
    assert obs.startswith(f"You are {donor}, one of 12 players")
    assert "receives 3 times" in obs
    assert f"Round 1. You are the donor; your recipient is {info['recipient']}." in obs
    assert f"You have 10 units; {info['recipient']} has 10 units." in obs
    assert obs.endswith('End your reply with "Answer: <amount>".')
    messages = info["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert obs == messages[0]["content"] + "\n\n" + messages[1]["content"]
    assert info["own_resources"] == 10.0 and info["trace"] == []
    assert (info["data_source"], info["row_id"]) == ("procedural", 0)
    # the strategy text goes to its agent only
    for agent in env.possible_agents:
        system = env._system[agent]
        assert ("Your strategy:\nAlways give half." in system) == (agent == "player_3")
    assert "Your strategy" not in env._system["player_5"]


def test_strategy_reaches_the_prompt():
    env = DonorGameEnv(num_agents=2)
    env.reset(seed=0, options={"strategies": {"player_0": "S0", "player_1": "S1"}})
    donor = env.agent_selection
    assert f"Your strategy:\nS{donor[-1]}" in env.infos[donor]["messages"][0]["content"]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"reverse_pairings": 1}, TypeError),
        ({"strategies": ["x"]}, TypeError),
        ({"strategies": {"player_99": "x"}}, ValueError),
        ({"strategies": {"player_0": 3}}, TypeError),
    ],
)
def test_bad_options(options, error):
    with pytest.raises(error, match="options"):
        DonorGameEnv().reset(seed=0, options=options)


def _first_step(env, text, **reset):
    env.reset(seed=0, **reset)
    donor = env.agent_selection
    recipient = env.infos[donor]["recipient"]
    env.step(text)
    return donor, recipient, env.infos[donor]


@pytest.mark.parametrize(
    ("text", "amount", "clamped", "error"),
    [
        ("Answer: 3", 3.0, 0.0, None),
        ("Answer: -4", 0.0, 1.0, None),
        ("Answer: 1e9", 10.0, 1.0, None),
        ("Answer: " + "9" * 400, 10.0, 1.0, None),
        ("junk", 0.0, 0.0, "no_amount"),
        ("   ", 0.0, 0.0, "empty"),
        ("Answer: 3" + "!" * 600, 0.0, 0.0, "too_long"),
        ("Answer: nan", 0.0, 0.0, "non_finite"),
        ("Punish, 3", 0.0, 0.0, "punish_not_allowed"),
    ],
)
def test_clamping_and_format_failures(text, amount, clamped, error):
    env = DonorGameEnv(max_action_length=500)
    donor, recipient, info = _first_step(env, text)
    components = info["reward_components"]
    assert components["amount"] == amount
    assert components["clamped"] == clamped
    assert components["format_failure"] == float(error is not None)
    assert info["format_error"] == error
    assert env.resources[donor] == 10.0 - amount
    assert env.resources[recipient] == 10.0 + 2 * amount
    assert components["donor_reward"] == -amount and components["recipient_reward"] == 2 * amount
    assert components["task_reward"] == components["donor_reward"]
    assert set(components) == {
        "amount",
        "fraction",
        "punished",
        "clamped",
        "format_failure",
        "donor_reward",
        "recipient_reward",
        "task_reward",
    }
    assert all(isinstance(v, float) and math.isfinite(v) for v in components.values())
    assert env.history[-1]["amount"] == amount and env.history[-1]["kind"] == "donate"
    if error:
        assert env.transcript[-1].format_error == error
        assert f"format failure: {error}" in env.render_transcript()


# ------------------------------------------------------------------ punishment
def test_punishment_arithmetic_and_floor():
    env = DonorGameEnv(num_agents=2, punishment=True, punishment_multiplier=2.0)
    donor, recipient, info = _first_step(env, "Answer: Punish, 3")
    assert env.resources == {donor: 7.0, recipient: 4.0}
    assert info["reward_components"]["punished"] == 1.0
    assert info["reward_components"]["fraction"] == pytest.approx(0.3)
    assert env.rewards == {donor: -3.0, recipient: -6.0}
    # round 2: the punished player (4 units) punishes back with 3 -> 7 - min(7, 6) = 1
    env.step("Punish, 3")
    assert env.resources == {donor: 1.0, recipient: 1.0}
    assert env.history[-1]["kind"] == "punish"


def test_punishment_floors_at_zero():
    env = DonorGameEnv(num_agents=2, punishment=True, punishment_multiplier=3.0)
    donor, recipient, info = _first_step(env, "Punish, 8")
    assert env.resources == {donor: 2.0, recipient: 0.0}
    assert info["reward_components"]["recipient_reward"] == -10.0


def test_punishment_metrics_and_observation():
    env = DonorGameEnv(punishment=True)
    punisher = punishing_reciprocator(threshold=0.6, punish_fraction=0.2, default_fraction=0.5)
    _play(env, punisher, seed=1)
    summary = env.game_summary
    punished = sum(r["kind"] == "punish" for r in env.history)
    assert punished > 0
    assert summary["punishment_frequency"] == pytest.approx(punished / len(env.history))
    env.reset(seed=1)
    assert "Answer: Punish, <amount>" in env.observe(env.agent_selection)
    plain = DonorGameEnv()
    plain.reset(seed=1)
    assert "unish" not in plain.observe(plain.agent_selection)


# ------------------------------------------------------------------ episode mechanics
def test_same_seed_same_transcript_and_new_seed_new_schedule():
    a, b = DonorGameEnv(render_mode="ansi"), DonorGameEnv(render_mode="ansi")
    _play(a, _mixed_policies(a), seed=9)
    _play(b, _mixed_policies(b), seed=9)
    assert a.render() == b.render() and a.history == b.history
    assert "--- final resources: player_0=" in a.render()
    b.reset(seed=10)
    assert a.schedule != b.schedule
    assert b.row_id == 10


def test_reset_without_seed_continues_the_stream():
    env = DonorGameEnv()
    env.reset(seed=3)
    first = env.schedule
    env.reset()
    assert env.schedule != first
    env.reset(seed=3)
    assert env.schedule == first


@pytest.mark.parametrize("k", [1, 4, 11])
def test_max_cycles_truncates_after_k_rounds(k):
    env = DonorGameEnv(max_cycles=k)
    env.reset(seed=0)
    ends = {}
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            ends[agent] = (term, trunc, info)
            env.step(None)
            continue
        env.step(fraction_giver(0.5)(obs, info))
    assert env.num_cycles == k
    assert len(env.history) == 6 * k
    assert all(term is False and trunc is True for term, trunc, _ in ends.values())
    assert all("final_resources" in info for _, _, info in ends.values())


def test_natural_end_is_termination_with_end_infos():
    env = DonorGameEnv(max_cycles=1000)
    env.reset(seed=0)
    ends = {}
    policy = reputation_reciprocator()
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            ends[agent] = (term, trunc, dict(info))
            env.step(None)
            continue
        env.step(policy(obs, info))
    assert env.num_cycles == 12 and len(ends) == 12
    summary = env.game_summary
    assert set(summary) == {
        "final_resources",
        "mean_final_resources",
        "mean_donation_fraction",
        "punishment_frequency",
        "total_donated",
    }
    for agent, (term, trunc, info) in ends.items():
        assert term and not trunc
        assert info["final_resources"] == summary["final_resources"][agent] == env.resources[agent]
        own = [r["fraction"] for r in env.history if r["donor"] == agent]
        assert len(own) == 6
        assert info["donation_fraction"] == pytest.approx(sum(own) / 6)
        assert info["punishments"] == 0
        assert info["game"] == summary
    all_fractions = [r["fraction"] for r in env.history]
    assert summary["mean_donation_fraction"] == pytest.approx(sum(all_fractions) / 72)
    assert summary["mean_final_resources"] == pytest.approx(sum(env.resources.values()) / 12)
    assert not env.agents


def test_non_str_action_raises_and_changes_nothing():
    env = DonorGameEnv()
    env.reset(seed=0)
    before = (env.agent_selection, dict(env.resources), len(env.history), env.num_moves)
    for bad in (None, 3, b"Answer: 3", ["Answer: 3"]):
        with pytest.raises(TypeError, match="must act with a str"):
            env.step(bad)
    assert (env.agent_selection, dict(env.resources), len(env.history), env.num_moves) == before


def test_human_render_prints_header_and_final_resources(capsys):
    env = DonorGameEnv(num_agents=2, num_rounds=2, render_mode="human")
    _play(env, fraction_giver(0.5))
    out = capsys.readouterr().out
    assert out.startswith("=== DonorGame-v0 | seed 0 | N=2 | 2 rounds | multiplier 2 ===")
    assert out.count("--- final resources:") == 1
    assert "donor to player_" in out


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"num_agents": 3}, ValueError, "num_agents must be even"),
        ({"num_agents": 0}, ValueError, "num_agents"),
        ({"num_agents": 2.0}, TypeError, "num_agents"),
        ({"num_agents": True}, TypeError, "num_agents"),
        ({"num_rounds": 13}, ValueError, "num_rounds.*alternate"),
        ({"num_agents": 4, "num_rounds": 5}, ValueError, "num_rounds"),
        ({"num_rounds": 0}, ValueError, "num_rounds"),
        ({"endowment": 0}, ValueError, "endowment"),
        ({"endowment": float("inf")}, ValueError, "endowment"),
        ({"multiplier": -1.0}, ValueError, "multiplier"),
        ({"multiplier": "2"}, TypeError, "multiplier"),
        ({"trace_depth": -1}, ValueError, "trace_depth"),
        ({"trace_depth": 1.5}, TypeError, "trace_depth"),
        ({"punishment": 1}, TypeError, "punishment"),
        ({"punishment_multiplier": 0.0}, ValueError, "punishment_multiplier"),
        ({"max_cycles": 0}, ValueError, "max_cycles"),
        ({"render_mode": "rgb_array"}, ValueError, "render_mode"),
        ({"max_action_length": 0}, ValueError, "max_action_length"),
    ],
)
def test_bad_constructor_args(kwargs, error, match):
    with pytest.raises(error, match=match):
        DonorGameEnv(**kwargs)


def test_module_env_constructor():
    env = make_env(num_agents=4, punishment=True)
    assert isinstance(env, DonorGameEnv)
    assert env.possible_agents == [f"player_{i}" for i in range(4)]
    assert env.max_cycles == env.num_rounds == 4


# ------------------------------------------------------------------ scripted policies
def test_policies_answer_from_info_and_from_text():
    env = DonorGameEnv()
    env.reset(seed=0)
    for _ in range(6):  # play round 1 with different fractions
        env.step("Answer: 4")
    donor = env.agent_selection
    obs, info = str(env.observe(donor)), env.infos[donor]
    own = info["own_resources"]
    stripped = {"trace": None}  # force the observation-text fallback
    for inf in (info, stripped):
        assert fraction_giver(0.25)(obs, inf) == f"Answer: {0.25 * own:g}"
        assert reputation_reciprocator()(obs, inf) == f"Answer: {0.4 * own:g}"
    assert always_defect()(obs, info) == "Answer: 0"
    assert parse_donation(fraction_giver(1 / 3)(obs, info)) == ("donate", own / 3, None)


def test_reciprocator_default_and_punisher():
    first = {"own_resources": 10.0, "trace": []}
    assert reputation_reciprocator(0.7)("", first) == "Answer: 7"
    stingy = {"own_resources": 10.0, "trace": [{"kind": "donate", "fraction": 0.1}]}
    generous = {"own_resources": 10.0, "trace": [{"kind": "donate", "fraction": 0.9}]}
    punisher = {"own_resources": 10.0, "trace": [{"kind": "punish", "fraction": 0.9}]}
    policy = punishing_reciprocator(threshold=0.25, punish_fraction=0.2)
    assert policy("", stingy) == "Answer: Punish, 2"
    assert policy("", punisher) == "Answer: Punish, 2"
    assert policy("", generous) == "Answer: Donate, 9"
    assert policy("", first) == "Answer: Donate, 5"
    assert reputation_reciprocator()("", punisher) == "Answer: 0"


@pytest.mark.parametrize(
    ("strategy", "answer"),
    [
        ("give 1.0", "Answer: 10"),
        ("Give 40%", "Answer: 4"),
        ("give 0", "Answer: 0"),
        ("I reciprocate, default 0.3", "Answer: 3"),
        ("Always defect.", "Answer: 0"),
        ("punish below 0.2, default 0.6", "Answer: Donate, 6"),
    ],
)
def test_policy_from_strategy(strategy, answer):
    assert policy_from_strategy(strategy)("", {"own_resources": 10.0, "trace": []}) == answer


def test_policy_from_strategy_rejects_unknown_text():
    with pytest.raises(ValueError, match="strategy"):
        policy_from_strategy("be nice")
    with pytest.raises(ValueError, match="fraction"):
        fraction_giver(1.5)
