"""Maze layouts for MazeCollab-v0: generation, shortest paths under alternating turns.

A layout is an ``n x n`` grid, one wall layer per gnome (both layers are the same in the fully
observed variant), a start cell, a treasure cell and the gnome that moves first. Cells are
numbered row-major (``index = row * n + col``).

The token moves on alternating turns and a move is checked against the *mover's* walls only,
so which cells are reachable, and how fast, depends on whose turn it is. The search state is
therefore ``(cell, mover)``: :func:`turn_distances` runs one breadth-first search backwards
from the treasure over those ``2 * n * n`` states and gives, for every state, the fewest turns
(stays included) that bring the token to the treasure. :func:`generate_layout` keeps drawing
layouts from the episode's generator until the treasure is reachable from the start with the
given first mover, so every generated episode can be won.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from llm_marl_envs.core.validation import check_int, check_number

__all__ = [
    "DIRECTIONS",
    "MAX_SIZE",
    "MIN_SIZE",
    "MazeLayout",
    "generate_layout",
    "neighbours",
    "turn_distances",
]

MIN_SIZE, MAX_SIZE = 5, 15
UNREACHABLE = -1
# Order matters: the oracle breaks ties in this order, and moves index into neighbours().
DIRECTIONS = ("stay", "up", "down", "left", "right")
_DELTAS = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))


@lru_cache(maxsize=None)
def neighbours(size: int) -> tuple[tuple[int, ...], ...]:
    """``neighbours(n)[cell][k]``: the cell that ``DIRECTIONS[k]`` leads to, ``-1`` off the grid."""
    table = []
    for cell in range(size * size):
        row, col = divmod(cell, size)
        targets = []
        for dr, dc in _DELTAS:
            r, c = row + dr, col + dc
            targets.append(r * size + c if 0 <= r < size and 0 <= c < size else -1)
        table.append(tuple(targets))
    return tuple(table)


def turn_distances(
    size: int, walls: tuple[tuple[bool, ...], tuple[bool, ...]], treasure: int
) -> tuple[list[int], list[int]]:
    """Fewest turns from every ``(cell, mover)`` state to the treasure (``-1``: never).

    ``walls[g][cell]`` is True when the cell is a wall for gnome ``g``. A turn by gnome ``g``
    takes the token from ``p`` to ``q`` (``q == p`` for stay, else an in-grid neighbour that
    is not a wall for ``g``), and then the other gnome moves.
    """
    nbrs = neighbours(size)
    dist = ([UNREACHABLE] * (size * size), [UNREACHABLE] * (size * size))
    dist[0][treasure] = dist[1][treasure] = 0
    frontier = [(treasure, 0), (treasure, 1)]
    depth = 0
    while frontier:
        depth += 1
        following = []
        for cell, after in frontier:  # state (cell, `after` to move) is `depth - 1` from the goal
            mover = 1 - after
            mover_dist = dist[mover]
            entering_ok = not walls[mover][cell]
            for source in nbrs[cell]:  # moving back along a move: the source is a neighbour
                if source < 0 or mover_dist[source] != UNREACHABLE:
                    continue
                if source == cell or entering_ok:
                    mover_dist[source] = depth
                    following.append((source, mover))
        frontier = following
    return dist


def _solo_reachable(size: int, walls: tuple[bool, ...], start: int, treasure: int) -> bool:
    """Could one gnome reach the treasure by itself (its partner always staying)?"""
    if walls[treasure]:
        return False
    nbrs = neighbours(size)
    seen = {start}
    stack = [start]
    while stack:
        cell = stack.pop()
        for target in nbrs[cell]:
            if target >= 0 and target not in seen and not walls[target]:
                if target == treasure:
                    return True
                seen.add(target)
                stack.append(target)
    return False


@dataclass(frozen=True)
class MazeLayout:
    """One maze. ``walls[g]`` holds gnome ``g``'s wall flags, row-major.

    ``distance[g][cell]`` is the fewest turns to the treasure from ``cell`` when gnome ``g``
    is to move (``-1`` if it cannot be reached).
    """

    size: int
    walls: tuple[tuple[bool, ...], tuple[bool, ...]]
    start: int
    treasure: int
    first_mover: int
    distance: tuple[list[int], list[int]]

    @property
    def optimal_steps(self) -> int:
        """Fewest turns (stays included) from the start to the treasure."""
        return self.distance[self.first_mover][self.start]

    @property
    def shared_walls(self) -> bool:
        return self.walls[0] == self.walls[1]

    def cell(self, row: int, col: int) -> int:
        return row * self.size + col

    def position(self, cell: int) -> tuple[int, int]:
        """``(row, col)`` of a cell index."""
        return divmod(cell, self.size)

    def best_move(self, cell: int, mover: int) -> str:
        """A move of ``mover`` at ``cell`` on a shortest path to the treasure."""
        here = self.distance[mover][cell]
        if here <= 0:
            return "stay"
        after = self.distance[1 - mover]
        walls = self.walls[mover]
        for direction, target in zip(DIRECTIONS, neighbours(self.size)[cell], strict=True):
            if target < 0 or (target != cell and walls[target]):
                continue
            if after[target] == here - 1:
                return direction
        raise AssertionError("distance table is inconsistent")  # pragma: no cover

    @classmethod
    def from_grids(
        cls, grids: list[str] | tuple[list[str], list[str]], first_mover: int = 0
    ) -> MazeLayout:
        """Build a layout from text rows (``#`` wall, ``.`` open, ``S`` start, ``G`` treasure).

        Pass one grid (walls shared by both gnomes) or two (one per gnome; ``S`` and ``G``
        read from the first). Handy for tests and hand-made evaluation mazes.
        """
        layers = [grids] if isinstance(grids[0], str) else list(grids)
        if len(layers) not in (1, 2):
            raise ValueError("from_grids takes one grid or a pair of grids")
        rows = [row.replace(" ", "") for row in layers[0]]
        size = len(rows)
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise ValueError(f"maze size must be in [{MIN_SIZE}, {MAX_SIZE}], got {size}")
        walls = []
        for layer in layers:
            flat = "".join(row.replace(" ", "") for row in layer)
            if len(flat) != size * size or len(layer) != size:
                raise ValueError(f"every grid must be {size} rows of {size} cells")
            walls.append(tuple(ch == "#" for ch in flat))
        flat = "".join(rows)
        if flat.count("S") != 1 or flat.count("G") != 1:
            raise ValueError("the (first) grid must hold exactly one S and one G")
        start, treasure = flat.index("S"), flat.index("G")
        pair = (walls[0], walls[-1])
        if first_mover not in (0, 1):
            raise ValueError(f"first_mover must be 0 or 1, got {first_mover!r}")
        distance = turn_distances(size, pair, treasure)
        return cls(size, pair, start, treasure, first_mover, distance)


@lru_cache(maxsize=None)
def _far_cells(size: int) -> tuple[tuple[int, ...], ...]:
    """For each start cell, the cells at least ``size - 1`` steps away (treasure candidates)."""
    return tuple(
        tuple(
            t
            for t in range(size * size)
            if abs(s // size - t // size) + abs(s % size - t % size) >= size - 1
        )
        for s in range(size * size)
    )


def generate_layout(
    rng: np.random.Generator,
    size: int = 9,
    *,
    wall_density: float = 0.4,
    shared_walls: bool = False,
    require_both: bool = True,
    max_tries: int = 10_000,
) -> MazeLayout:
    """Draw a winnable maze from ``rng``.

    Args:
        rng: The episode's generator (the only source of randomness).
        size: Grid side, ``MIN_SIZE``..``MAX_SIZE``.
        wall_density: Chance that a cell is a wall, per gnome layer.
        shared_walls: One layer for both gnomes (the fully observed variant).
        require_both: With private walls, reject mazes that either gnome could solve alone
            (its partner only ever staying), so the gnomes must combine their moves.
        max_tries: Give up (``RuntimeError``) after this many rejected draws.

    The start is open for both gnomes; the treasure is open for at least one and at least
    ``size - 1`` steps away (Manhattan distance); the treasure is reachable under the
    alternating-turn rule from the start with the drawn first mover, in at most ``3 * size``
    turns (half of MazeCollab-v0's default turn budget).
    """
    size = check_int("size", size, MIN_SIZE, MAX_SIZE)
    check_number("wall_density", wall_density, 0, 0.7)
    n_cells = size * size
    layer_count = 1 if shared_walls else 2
    max_optimal = 3 * size  # half of MazeCollab's default turn budget
    for _ in range(max_tries):
        draw = rng.random(layer_count * n_cells + 3)  # one call per try: it is the slow part
        start = int(draw[-3] * n_cells)
        treasure = _far_cells(size)[start][int(draw[-2] * len(_far_cells(size)[start]))]
        first_mover = int(draw[-1] < 0.5)
        flags = (draw[: layer_count * n_cells] < wall_density).tolist()
        flags[start] = False
        walls0 = tuple(flags[:n_cells])
        if shared_walls:
            walls = (walls0, walls0)
        else:
            flags[n_cells + start] = False
            walls = (walls0, tuple(flags[n_cells:]))
        if walls[0][treasure] and walls[1][treasure]:
            continue
        if (
            require_both
            and not shared_walls
            and (
                _solo_reachable(size, walls[0], start, treasure)
                or _solo_reachable(size, walls[1], start, treasure)
            )
        ):
            continue
        distance = turn_distances(size, walls, treasure)
        if not 0 < distance[first_mover][start] <= max_optimal:
            continue
        return MazeLayout(size, walls, start, treasure, first_mover, distance)
    raise RuntimeError(
        f"no winnable {size}x{size} maze in {max_tries} draws with wall_density={wall_density}; "
        "lower the density"
    )
