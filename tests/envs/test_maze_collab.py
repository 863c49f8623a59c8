"""MazeCollab-v0: the reference policies, moves, parsing, rewards, observations, renders (the
layouts themselves: tests/games/test_maze_layout.py)."""

from __future__ import annotations

import numpy as np
import pytest

import llm_marl_envs
from llm_marl_envs.envs.maze_collab import GNOMES, MazeCollabEnv, parse_move
from llm_marl_envs.games.maze_layout import DIRECTIONS, MazeLayout
from llm_marl_envs.policies.scripted.maze import oracle_pair, random_pair

# A corridor along row 0: each gnome may only enter every other cell, so the token needs
# both gnomes, one move each, alternately; the rest of the grid is walled for both.
CORRIDOR_0 = ["S.#.#G", "######", "######", "######", "######", "######"]
CORRIDOR_1 = ["S#.#.G", "######", "######", "######", "######", "######"]


def _play(env, policies, seed=None, options=None):
    """Play one episode; return the final info of the agent that ended it and every reward."""
    env.reset(seed=seed, options=options)
    rewards = {g: 0.0 for g in GNOMES}
    final = {}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        rewards[agent] += reward
        if terminated or truncated:
            final[agent] = info
            env.step(None)
        else:
            env.step(policies[agent](observation, info))
    return final, rewards


# ---------------------------------------------------------------------- the reference policies
@pytest.mark.parametrize("variant", ["partial", "full"])
@pytest.mark.parametrize("size", [5, 9, 15])
def test_oracle_pair_wins_in_optimal_steps(size, variant):
    env = MazeCollabEnv(size=size, variant=variant)
    oracle = oracle_pair()
    for seed in range(25):
        final, rewards = _play(env, oracle, seed=seed)
        info = final["gnome_0"]
        assert info["success"] is True
        assert info["steps"] == info["optimal_steps"] == env.layout.optimal_steps
        assert info["steps_ratio"] == 1.0 and info["invalid_moves"] == 0
        expected = (-0.1 * info["steps"] + 20.0) / 20.0
        assert rewards["gnome_0"] == pytest.approx(expected) and rewards[
            "gnome_1"
        ] == pytest.approx(expected)


def test_random_pair_plays_to_the_turn_budget_or_wins():
    env = MazeCollabEnv()
    outcomes = []
    for seed in range(20):
        final, rewards = _play(env, random_pair(seed), seed=seed)
        info = final["gnome_0"]
        outcomes.append(info["success"])
        assert info["steps"] <= 2 * env.max_cycles == 54
        if not info["success"]:
            assert info["steps"] == 54 and info["steps_ratio"] is None
        raw = -0.1 * info["steps"] - 0.5 * info["invalid_moves"] + 20.0 * info["success"]
        assert rewards["gnome_0"] == pytest.approx(raw / 20) == pytest.approx(rewards["gnome_1"])
    assert not all(outcomes)  # random play is not the oracle


# ---------------------------------------------------------------------- rules
def _corridor_env(**kwargs):
    env = MazeCollabEnv(size=6, **kwargs)
    env.reset(
        seed=0, options={"layout": MazeLayout.from_grids((CORRIDOR_0, CORRIDOR_1), first_mover=0)}
    )
    return env


def test_moves_are_checked_against_the_movers_walls_only():
    env = _corridor_env(reward_scale="raw")
    assert env.agent_selection == "gnome_0" and env.token == 0
    env.step("MOVE: right")  # cell 1 is open for gnome_0
    assert env.token == 1
    env.step("MOVE: right")  # cell 2 is open for gnome_1
    assert env.token == 2
    env.step("MOVE: down")  # a wall for gnome_0
    assert env.token == 2
    components = env.infos["gnome_0"]["reward_components"]
    assert components["blocked"] == 1.0 and components["invalid"] == -0.5
    assert components["task_reward"] == pytest.approx(-0.6)
    assert env.infos["gnome_0"]["move_error"] == "blocked"
    env.step("MOVE: up")  # off the grid for gnome_1
    assert env.token == 2 and env.infos["gnome_1"]["move_error"] == "off_grid"
    env.step("no idea")  # unreadable: a stay with the penalty
    assert env.token == 2
    info = env.infos["gnome_0"]
    assert info["format_error"] == "no_move" and info["reward_components"]["format_failure"] == 1.0


def test_success_ends_the_episode_with_the_summary():
    env = _corridor_env(reward_scale="raw")
    for _ in range(5):
        env.step("right")
    assert env.success and all(env.terminations.values())
    assert env.infos["gnome_0"]["success"] and env.infos["gnome_1"]["steps"] == 5
    assert env.infos["gnome_0"]["optimal_steps"] == 5
    assert env.rewards == {"gnome_0": pytest.approx(19.9), "gnome_1": pytest.approx(19.9)}


def test_truncation_after_max_cycles_reports_failure():
    env = _corridor_env(max_cycles=2)
    for _ in range(4):
        env.step("stay")
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert env.infos["gnome_1"]["success"] is False and env.infos["gnome_1"]["steps"] == 4
    assert env.num_cycles == 2


# ---------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    "text, move, message",
    [
        ("MOVE: left\nSAY: go around the wall", "left", "go around the wall"),
        ("move right", "right", ""),
        ("Move: North", "up", ""),
        ("**MOVE**: `down`", "down", ""),
        ("SAY: head for row 3 MOVE: left", "left", "head for row 3"),
        ("MOVE: up ... on second thought MOVE: down", "down", ""),
        ('{"move": "Right", "say": "treasure  at (4, 0)"}', "right", "treasure at (4, 0)"),
        ('Sure! {"Direction": "wait", "Message": "hold"}', "stay", "hold"),
        ("left", "left", ""),
        ("  Stay. ", "stay", ""),
        ("{not json} MOVE: east", "right", ""),
    ],
)
def test_parse_move_accepts_lenient_forms(text, move, message):
    assert parse_move(text) == (move, message, None)


@pytest.mark.parametrize(
    "text",
    ["I think left is good", "MOVE: diagonal", "SAY: hello", '{"move": 3}', "removed", "[1, 2]"],
)
def test_parse_move_without_a_move(text):
    direction, _, error = parse_move(text)
    assert direction is None and error == "no_move"


# ---------------------------------------------------------------------- observations
def test_observations_show_only_own_walls_and_what_the_agent_knows():
    env = MazeCollabEnv(treasure_holder="gnome_1")
    env.reset(seed=3)
    layout = env.layout
    for index, gnome in enumerate(GNOMES):
        text = str(env.observe(gnome))
        rows = text.split("\n\n", 1)[1].splitlines()[1 : 1 + layout.size]
        for r, row in enumerate(rows):
            for c, ch in enumerate(row[4::2]):
                i = layout.cell(r, c)
                if ch in "#.":
                    assert (ch == "#") == layout.walls[index][i]
        guide = gnome == "gnome_1"
        assert ("The treasure is at row" in text) == guide
        assert env.infos[gnome]["role"] == ("guide" if guide else "seeker")
        assert any("G" in row for row in rows) == guide
        assert "@" in "".join(rows)


def test_partner_messages_and_append_only_chat():
    env = MazeCollabEnv(max_message_length=12)
    env.reset(seed=1)
    first = env.agent_selection
    second = GNOMES[1 - GNOMES.index(first)]
    before = list(env.infos[first]["messages"])
    env.step("MOVE: stay\nSAY: the treasure is far to the left")
    assert 'said: "the treasure"' in str(env.observe(second))
    assert env.last_messages[first] == "the treasure"
    env.step("MOVE: stay")
    after = env.infos[first]["messages"]
    assert after[: len(before)] == before  # prefix-stable
    assert after[len(before)] == {
        "role": "assistant",
        "content": "MOVE: stay\nSAY: the treasure is far to the left",
    }
    assert (
        after[-1]["role"] == "user" and "Last turn: " + second + " stayed." in after[-1]["content"]
    )


def test_same_seed_same_maze_and_first_movers_vary():
    a, b = MazeCollabEnv(), MazeCollabEnv()
    first_movers = set()
    for seed in range(12):
        a.reset(seed=seed)
        b.reset(seed=seed)
        assert a.layout == b.layout and a.agent_selection == b.agent_selection
        first_movers.add(a.agent_selection)
    assert first_movers == set(GNOMES)


# ---------------------------------------------------------------------- rendering and arguments
def test_rgb_array_render_is_an_image_of_the_maze():
    env = MazeCollabEnv(render_mode="rgb_array")
    blank = env.render()
    assert blank.shape == (216, 216, 3) and blank.dtype == np.uint8
    env.reset(seed=4)
    image = env.render()
    assert image.shape == (216, 216, 3) and image.dtype == np.uint8
    r, c = env.layout.position(env.token)
    assert tuple(image[r * 24 + 12, c * 24 + 12]) == (205, 40, 50)  # the token
    tr, tc = env.layout.position(env.layout.treasure)
    assert tuple(image[tr * 24 + 12, tc * 24 + 12]) == (240, 195, 30)  # the treasure


def test_ansi_render_shows_both_layers():
    env = MazeCollabEnv(render_mode="ansi")
    env.reset(seed=2)
    text = env.render()
    assert "MazeCollab-v0" in text and "@" in text and "G" in text
    w0, w1 = env.layout.walls
    expected = {
        "#" if a and b else "0" if a else "1" if b else "." for a, b in zip(w0, w1, strict=True)
    }
    assert expected <= set(text)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"size": 4}, "size"),
        ({"size": "9"}, "size"),
        ({"variant": "hidden"}, "variant"),
        ({"treasure_holder": "gnome_2"}, "treasure_holder"),
        ({"reward_scale": "huge"}, "reward_scale"),
        ({"wall_density": 0.95}, "wall_density"),
        ({"max_message_length": 0}, "max_message_length"),
        ({"max_cycles": 0}, "max_cycles"),
    ],
)
def test_bad_arguments_are_clear(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MazeCollabEnv(**kwargs)


def test_bad_layout_option_is_clear():
    env = MazeCollabEnv()
    with pytest.raises(ValueError, match="MazeLayout"):
        env.reset(seed=0, options={"layout": "S...G"})


def test_registry_and_defaults():
    env = llm_marl_envs.make("llm_marl_envs/MazeCollab-v0")
    assert isinstance(env.unwrapped, MazeCollabEnv)
    assert env.max_cycles == 27 and env.size == 9
    assert DIRECTIONS[0] == "stay"
