"""The maze layouts of MazeCollab-v0 (``games.maze_layout``): generation, the alternating-turn
distances, hand-made grids, argument checks."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from llm_marl_envs.games.maze_layout import MazeLayout, generate_layout, neighbours

# A corridor along row 0: each gnome may only enter every other cell, so the token needs
# both gnomes, one move each, alternately; the rest of the grid is walled for both.
CORRIDOR_0 = ["S.#.#G", "######", "######", "######", "######", "######"]
CORRIDOR_1 = ["S#.#.G", "######", "######", "######", "######", "######"]


def _forward_optimal(layout: MazeLayout) -> int:
    """Fewest turns by a plain forward BFS over (cell, mover): an independent check."""
    nbrs = neighbours(layout.size)
    start = (layout.start, layout.first_mover)
    seen, queue = {start: 0}, deque([start])
    while queue:
        cell, mover = queue.popleft()
        if cell == layout.treasure:
            return seen[cell, mover]
        for target in nbrs[cell]:
            if target < 0 or (target != cell and layout.walls[mover][target]):
                continue
            state = (target, 1 - mover)
            if state not in seen:
                seen[state] = seen[cell, mover] + 1
                queue.append(state)
    return -1


# ---------------------------------------------------------------------- generation
@pytest.mark.parametrize("size", [5, 9, 15])
def test_generated_mazes_are_winnable_and_need_both_gnomes(size):
    rng = np.random.default_rng(size)
    for _ in range(60):
        layout = generate_layout(rng, size)
        assert 0 < layout.optimal_steps <= 3 * size
        assert layout.optimal_steps == _forward_optimal(layout)
        assert not layout.walls[0][layout.start] and not layout.walls[1][layout.start]
        assert not (layout.walls[0][layout.treasure] and layout.walls[1][layout.treasure])
        (sr, sc), (tr, tc) = layout.position(layout.start), layout.position(layout.treasure)
        assert abs(sr - tr) + abs(sc - tc) >= size - 1
        for gnome in (0, 1):  # alone (partner always staying) it cannot be done
            if layout.walls[gnome][layout.treasure]:
                continue  # this gnome cannot even enter the treasure cell
            solo = MazeLayout.from_grids(_grid(layout, gnome))
            assert solo.distance[0][solo.start] == -1


def _grid(layout: MazeLayout, gnome: int) -> list[str]:
    rows = []
    for r in range(layout.size):
        row = ""
        for c in range(layout.size):
            i = layout.cell(r, c)
            row += (
                "S"
                if i == layout.start
                else "G"
                if i == layout.treasure
                else "#"
                if layout.walls[gnome][i]
                else "."
            )
        rows.append(row)
    return rows


def test_full_variant_shares_one_layout():
    layout = generate_layout(np.random.default_rng(0), 9, shared_walls=True)
    assert layout.shared_walls and layout.optimal_steps == _forward_optimal(layout)


def test_alternating_turn_distances_on_a_hand_made_corridor():
    # Cells 1..5 of row 0: gnome_0 may enter 1 and 3, gnome_1 may enter 2 and 4, both enter G.
    layout = MazeLayout.from_grids((CORRIDOR_0, CORRIDOR_1), first_mover=0)
    assert layout.optimal_steps == 5  # right, right, right, right, right, alternating
    assert [layout.best_move(c, m) for c, m in [(0, 0), (1, 1), (2, 0), (3, 1), (4, 0)]] == [
        "right"
    ] * 5
    late = MazeLayout.from_grids((CORRIDOR_0, CORRIDOR_1), first_mover=1)
    assert late.optimal_steps == 6  # gnome_1 cannot enter cell 1: it has to stay first
    assert late.best_move(0, 1) == "stay"


def test_from_grids_rejects_bad_grids():
    with pytest.raises(ValueError, match="S and one G"):
        MazeLayout.from_grids(["....."] * 5)
    with pytest.raises(ValueError, match="size"):
        MazeLayout.from_grids(["S..G"] * 4)
    with pytest.raises(ValueError, match="rows"):
        MazeLayout.from_grids(["S...G", "....", ".....", ".....", "....."])


def test_generation_arguments_are_checked():
    rng = np.random.default_rng(0)
    for size in (4, 16, True, 9.0):
        with pytest.raises(ValueError, match="size"):
            generate_layout(rng, size)
    with pytest.raises(ValueError, match="wall_density"):
        generate_layout(rng, 9, wall_density=0.9)
