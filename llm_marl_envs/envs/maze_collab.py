"""MazeCollab-v1 / -v0: two gnomes steer one token through a maze that neither can see whole.

| | |
|---|---|
| Id | ``llm_marl_envs/MazeCollab-v0`` (AEC only: turns alternate) |
| Agents | ``gnome_0``, ``gnome_1``; the first mover is drawn from the seed, then they alternate |
| Action | free text: a move (``MOVE: left``) and a message for the partner (``SAY: ...``), or JSON ``{"move": "left", "say": "..."}`` |
| Observation | rules, the agent's own walls as an ASCII map with the token (and the treasure if it knows it), the turn count, what the partner did and said last; ``infos[agent]["messages"]`` is the append-only chat |
| Reward | team reward, the same for both: paper components (-0.1 per turn, -0.5 per invalid move, +20 on reaching the treasure) divided by 20 (``reward_scale="normalised"``, success = +1) or as they are (``"raw"``) |
| Paper | Chen, Fried & Topcu, "Gnomes at Night" (shared-control maze), IJCAI-24 (arXiv:2405.14173) |

**Rules.** One token sits on an ``n x n`` grid (``size`` 5..15, default 9). Each gnome has
its own wall layout and sees only its own walls; one gnome (the *guide*) sees the treasure,
the other (the *seeker*) does not. On its turn a gnome may send a message and moves the token
``up``, ``down``, ``left``, ``right`` or ``stay``. A move is legal when it stays on the grid
and the target cell is not a wall *for the gnome that moves*; an illegal move leaves the token
where it is. The episode ends (termination) when the token reaches the treasure, or is
truncated after ``max_cycles`` cycles (a cycle is one turn of each gnome; default ``3 * size``,
i.e. ``6 * size`` turns).

**Parsing** (``parse_move``): case-insensitive ``MOVE: <direction>`` anywhere (the last one
counts; ``north/south/west/east`` and ``wait`` are accepted too), ``SAY: <message>`` (rest of
the line), a JSON object with ``move``/``action``/``direction`` and ``say``/``message`` keys,
or a bare direction word as the whole reply. A reply without a move counts as ``stay`` with
the invalid-move penalty and ``format_error = "no_move"`` (or ``"empty"`` / ``"too_long"``).
Messages are cut to ``max_message_length`` characters.

**Reward components** (``llm_marl_envs.rewards.maze``; ``infos[agent]["reward_components"]``
of the gnome that moved):
``step`` (-0.1), ``invalid`` (-0.5 or 0), ``success`` (+20 or 0), ``raw_total``,
``task_reward`` (what was paid: ``raw_total``, divided by 20 when normalised), and why a move
was invalid: ``format_failure`` (no readable move), ``off_grid``, ``blocked`` (0/1); the
mover's ``infos[agent]["move_error"]`` names it too. Every turn both gnomes receive
``task_reward``. At the end both infos hold ``success``,
``steps`` (turns taken), ``optimal_steps`` (fewest possible turns from the start, with the
same first mover, by a search over position x whose turn it is), ``steps_ratio`` (steps /
optimal_steps, successful episodes only) and ``invalid_moves``. Every turn the mover's info
also has ``token`` (row, col), ``legal_moves`` for its own walls, and ``oracle_move``: a move
on a shortest path to the treasure, computed from *both* layouts. ``oracle_move`` is
privileged information for teacher policies and imitation data; do not show it to a learner.

**Generation** (``llm_marl_envs.games.maze_layout``): from the episode's seed, walls per
gnome with probability ``wall_density``; start open for both; treasure at least ``size - 1``
steps away; redrawn until the treasure is reachable under the alternating-turn rule in at most
``3 * size`` turns (half the default budget) and, with private walls, no gnome could reach it
alone. ``reset(options={"layout": MazeLayout})`` plays a given maze (other option keys are
ignored, as PettingZoo's API test expects) (``MazeLayout.from_grids``
builds one from text).

**Variants.** ``variant="partial"`` (default): private walls, one guide. ``variant="full"``:
one wall layout shared by both, both see everything; the map shows ``.`` open, ``#`` wall,
``S`` start, ``G`` goal, ``@`` token: the easier level.

**Rendering.** ``"ansi"``: the maze with both layers (``#`` wall for both, ``0``/``1`` wall
for that gnome only), token, start and treasure, and the last moves; ``"human"`` prints it
after every turn; ``"rgb_array"``: a uint8 image (24 px per cell: white open, blue wall of
gnome_0, orange wall of gnome_1, dark grey both, gold treasure, green start, red token), so
episodes can be saved as pictures or video. ``render_transcript()`` gives every turn.

**Arguments.** ``worked_example``, ``size``, ``variant``, ``wall_density`` (default 0.4), ``treasure_holder``
(``"random"``, ``"gnome_0"`` or ``"gnome_1"``), ``reward_scale``, ``max_message_length``
(default 300), ``max_action_length`` (default 2,048), ``max_cycles``, ``render_mode``.

**Worked example** (``worked_example``; on in v1, off in v0): before the game each gnome's
chat holds one example exchange (an example map, then the reply ``MOVE: right`` /
``SAY: ...``), and the flat prompt shows it as "Example: ... Reply: ...". A small model then
answers in the format (docs/benchmarks/prompt_formats.md).

**Version history.** Versions are registry arguments (``envs_registry.yaml``): one class,
whose defaults are v0's; each version's entry states the arguments that define it. v0:
initial version. v1: ``worked_example=True`` (the observation changes, the rules and rewards
do not).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from llm_marl_envs.core.text_env import CleanAction, TextAECEnv
from llm_marl_envs.core.validation import check_choice, check_int, check_number
from llm_marl_envs.rewards.maze import SUCCESS_REWARD, turn_components
from llm_marl_envs.games.maze_layout import (
    DIRECTIONS,
    MAX_SIZE,
    MIN_SIZE,
    MazeLayout,
    generate_layout,
    neighbours,
)

__all__ = ["GNOMES", "MazeCollabEnv", "env", "parse_move"]

GNOMES = ("gnome_0", "gnome_1")
VARIANTS = ("partial", "full")
REWARD_SCALES = ("normalised", "raw")

_WORDS = {
    "up": "up",
    "north": "up",
    "down": "down",
    "south": "down",
    "left": "left",
    "west": "left",
    "right": "right",
    "east": "right",
    "stay": "stay",
    "wait": "stay",
}
_WORD_PATTERN = "|".join(_WORDS)
_MOVE = re.compile(rf"\bmove\b\W{{0,6}}({_WORD_PATTERN})\b", re.IGNORECASE)
_SAY = re.compile(r"\b(?:say|message)\b\s*[:=]\s*(.*)", re.IGNORECASE)
_MOVE_IN_MESSAGE = re.compile(r"\bmove\b\s*[:=]", re.IGNORECASE)
_BARE = re.compile(rf"^\W*({_WORD_PATTERN})\W*$", re.IGNORECASE)


def parse_move(text: str) -> tuple[str | None, str, str | None]:
    """Read ``(direction, message, error)`` from a reply; ``error`` is ``"no_move"`` or None.

    ``direction`` is one of ``stay/up/down/left/right`` (None when no move was found).
    """
    if "{" in text:
        parsed = _parse_json(text)
        if parsed is not None:
            return parsed
    message = ""
    say = _SAY.search(text)
    if say:
        message = say.group(1)
        cut = _MOVE_IN_MESSAGE.search(message)
        if cut:
            message = message[: cut.start()]
        message = message.strip().strip("\"'`").strip()
    moves = _MOVE.findall(text)
    if moves:
        return _WORDS[moves[-1].lower()], message, None
    bare = _BARE.match(text)
    if bare:
        return _WORDS[bare.group(1).lower()], message, None
    return None, message, "no_move"


def _parse_json(text: str) -> tuple[str | None, str, str | None] | None:
    try:
        data = json.loads(text[text.index("{") : text.rindex("}") + 1])
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    fields = {str(k).lower(): v for k, v in data.items()}
    message = next((fields[k] for k in ("say", "message", "msg") if k in fields), "")
    message = message if isinstance(message, str) else json.dumps(message)
    move = next((fields[k] for k in ("move", "action", "direction") if k in fields), None)
    word = _WORDS.get(move.strip().lower()) if isinstance(move, str) else None
    return word, " ".join(message.split()), None if word else "no_move"


_RULES = (
    "You are {agent}, one of two gnomes moving a single shared token through a {n}x{n} maze. "
    "You take turns: on your turn you move the token one cell up, down, left or right, or stay. "
    "Each gnome sees only its own walls, and a move is blocked when the target cell is a wall "
    "for the gnome who moves (your partner's walls are different from yours). A blocked or "
    "unreadable move leaves the token where it is and costs a penalty. {knowledge} "
    "Reach the treasure in as few turns as possible.\n"
    "Map legend: # your wall, . open for you, S start, @ token{goal_legend}. "
    "Row 0 is the top row, column 0 the left column; up lowers the row number.\n"
    "Reply with two lines:\nMOVE: <up|down|left|right|stay>\nSAY: <a short message for your partner>"
)
_KNOWLEDGE = {
    "guide": "You can see the treasure (G); your partner cannot, so tell it where to go.",
    "seeker": "Your partner can see the treasure; you cannot, so listen to its messages.",
    "full": "Both gnomes see the same walls and the treasure (G).",
}


#: The worked example of ``worked_example=True`` (v1): one exchange shown before the game, so
#: a small model sees the reply format once (measured: SmolLM2-135M answers "MOVE: ..." with
#: it and never without it, docs/benchmarks/prompt_formats.md).
EXAMPLE_STATE = (
    "(an example, not your game)\n"
    "    0 1 2\n 0  . . G\n 1  . # .\n 2  @ . .\n"
    "Turn 1 of 6. The token is at row 2, column 0.\n"
    "The treasure is at row 0, column 2.\n"
    "gnome_1 has not said anything yet."
)
EXAMPLE_REPLY = "MOVE: right\nSAY: I go right; then we go up twice."


class MazeCollabEnv(TextAECEnv):
    """Two gnomes, private walls, one token (see the module docstring)."""

    metadata = {
        **TextAECEnv.metadata,
        "name": "MazeCollab-v0",
        "render_modes": ["human", "ansi", "rgb_array"],
        "render_fps": 4,
    }

    def __init__(
        self,
        *,
        size: int = 9,
        variant: str = "partial",
        wall_density: float = 0.4,
        treasure_holder: str = "random",
        reward_scale: str = "normalised",
        max_message_length: int = 300,
        max_cycles: int | None = None,
        render_mode: str | None = None,
        max_action_length: int = 2048,
        worked_example: bool = False,
    ) -> None:
        check_int("size", size, MIN_SIZE, MAX_SIZE)
        self.worked_example = bool(worked_example)
        check_choice("variant", variant, VARIANTS)
        check_choice("treasure_holder", treasure_holder, ("random", *GNOMES))
        check_choice("reward_scale", reward_scale, REWARD_SCALES)
        check_number("wall_density", wall_density, 0, 0.7)
        check_int("max_message_length", max_message_length, 1)
        super().__init__(
            list(GNOMES),
            {g: "gnome" for g in GNOMES},
            max_cycles=3 * int(size) if max_cycles is None else max_cycles,
            render_mode=render_mode,
            max_action_length=max_action_length,
        )
        self.size = int(size)
        self.variant = variant
        self.wall_density = float(wall_density)
        self.treasure_holder = treasure_holder
        self.reward_scale = reward_scale
        self.max_message_length = max_message_length
        self._scale = 1.0 / SUCCESS_REWARD if reward_scale == "normalised" else 1.0
        self.layout: MazeLayout | None = None
        self.token = 0
        self.steps = 0
        self.invalid_moves = 0
        self.success = False
        self.knows_treasure = {g: False for g in GNOMES}
        self.last_messages = {g: "" for g in GNOMES}
        self._last_event = ""
        self._rules: dict[str, str] = {}
        self._rows: dict[str, list[str]] = {}
        self._history: dict[str, list[dict[str, str]]] = {}
        self._shown: dict[str, dict[str, str]] = {}
        self._treasure_line: dict[str, str] = {}
        self._legal: dict[str, list[tuple[str, ...]]] = {}
        self._neighbours: tuple[tuple[int, ...], ...] = ()

    # ------------------------------------------------------------------ episode
    def _new_episode(self, options: dict[str, Any]) -> None:
        layout = options.get("layout")
        if layout is None:
            layout = generate_layout(
                self.np_random,
                self.size,
                wall_density=self.wall_density,
                shared_walls=self.variant == "full",
            )
            self._set_task_info("procedural", self.np_random_seed)
        elif isinstance(layout, MazeLayout):
            self._set_task_info("layout", None)
        else:
            raise ValueError(f"options['layout'] must be a MazeLayout, got {type(layout).__name__}")
        holder = int(self.np_random.integers(2))  # drawn every episode: the stream stays aligned
        if self.treasure_holder != "random":
            holder = GNOMES.index(self.treasure_holder)
        self.layout, self.token = layout, layout.start
        self._neighbours = neighbours(layout.size)
        self.steps = self.invalid_moves = 0
        self.success = False
        self.last_messages = {g: "" for g in GNOMES}
        self._last_event = ""
        full = self.variant == "full"
        for index, gnome in enumerate(GNOMES):
            knows = full or index == holder
            role = "full" if full else ("guide" if knows else "seeker")
            self.knows_treasure[gnome] = knows
            self.infos[gnome]["role"] = "guide" if knows else "seeker"
            self._rules[gnome] = _RULES.format(
                agent=gnome,
                n=layout.size,
                knowledge=_KNOWLEDGE[role],
                goal_legend=", G treasure" if knows else "",
            )
            self._rows[gnome] = _map_rows(layout, index, knows)
            self._history[gnome] = [{"role": "system", "content": self._rules[gnome]}]
            if self.worked_example:
                self._history[gnome] += [
                    {"role": "user", "content": EXAMPLE_STATE},
                    {"role": "assistant", "content": EXAMPLE_REPLY},
                ]
            if knows:
                tr, tc = divmod(layout.treasure, layout.size)
                self._treasure_line[gnome] = f"The treasure is at row {tr}, column {tc}."
            else:
                self._treasure_line[gnome] = "You do not know where the treasure is."
            self._legal[gnome] = _legal_moves(layout, index)
        self.agent_selection = GNOMES[layout.first_mover]
        for gnome in GNOMES:
            self._prompt(gnome)

    def _play(self, agent: str, action: CleanAction) -> None:
        layout, mover = self.layout, _INDEX[agent]
        if action.failure is None:
            direction, message, error = parse_move(action.text)
        else:
            direction, message, error = None, "", action.failure
        self.last_messages[agent] = message[: self.max_message_length]
        if direction is None:
            outcome = "unparseable"
        else:
            target = self._neighbours[self.token][_DIRECTION_INDEX[direction]]
            if target < 0:
                outcome = "off_grid"
            elif target != self.token and layout.walls[mover][target]:
                outcome = "blocked"
            else:
                outcome = None
                self.token = target
        self.steps += 1
        self.success = success = self.token == layout.treasure
        components = turn_components(outcome, success, self._scale)
        reward = components["task_reward"]
        if outcome is not None:
            self.invalid_moves += 1
        self.rewards = {"gnome_0": reward, "gnome_1": reward}
        info = self.infos[agent]
        info["move_error"] = error if direction is None else outcome
        self._record(agent, CleanAction(action.text, error), components)
        history = self._history[agent]
        history.append(self._shown[agent])
        history.append({"role": "assistant", "content": action.text})
        self._last_event = _describe(agent, direction, outcome is not None)
        following = GNOMES[1 - mover]
        self.agent_selection = following
        if success:
            self.terminations = {"gnome_0": True, "gnome_1": True}
            self._finish()
        elif self.num_cycles >= self.max_cycles:
            self._finish()
        else:
            self._prompt(following)

    def _finish(self) -> None:
        optimal = self.layout.optimal_steps
        summary = {
            "success": self.success,
            "steps": self.steps,
            "optimal_steps": optimal,
            "steps_ratio": self.steps / optimal if self.success else None,
            "invalid_moves": self.invalid_moves,
        }
        for gnome in GNOMES:
            self._prompt(gnome)
            self.infos[gnome].update(summary)

    # ------------------------------------------------------------------ observations
    def _prompt(self, gnome: str) -> None:
        layout = self.layout
        row, col = divmod(self.token, layout.size)
        rows = self._rows[gnome].copy()
        line = rows[row + 1]
        at = 4 + 2 * col
        rows[row + 1] = line[:at] + "@" + line[at + 1 :]
        rows.append(
            f"Turn {self.steps + 1} of {2 * self.max_cycles}. The token is at row {row}, column {col}."
        )
        rows.append(self._treasure_line[gnome])
        if self._last_event:
            rows.append("Last turn: " + self._last_event)
        partner = GNOMES[1 - _INDEX[gnome]]
        said = self.last_messages[partner]
        rows.append(
            f'{partner} said: "{said}"' if said else partner + " has not said anything yet."
        )
        if self.success:
            rows.append("The token reached the treasure: the game is over.")
        state = "\n".join(rows)
        self._shown[gnome] = user = {"role": "user", "content": state}
        history = self._history[gnome].copy()
        history.append(user)
        example = (
            f"Example:\n{EXAMPLE_STATE}\nReply:\n{EXAMPLE_REPLY}\n\n" if self.worked_example else ""
        )
        self._set_prompt(gnome, self._rules[gnome] + "\n\n" + example + state, history)
        info = self.infos[gnome]
        info["token"] = (row, col)
        info["legal_moves"] = self._legal[gnome][self.token]
        info["oracle_move"] = layout.best_move(self.token, _INDEX[gnome])

    # ------------------------------------------------------------------ rendering
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            if self.layout is None:  # before the first reset: an empty board of the right size
                return np.full((24 * self.size, 24 * self.size, 3), _PALETTE[0], dtype=np.uint8)
            return self.render_rgb()
        text = (
            self.render_text()
            if self.layout is not None
            else self._render_header() + "\n(no episode yet: call reset())"
        )
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    def render_text(self) -> str:
        """Both wall layers, token, start and treasure, and the last messages."""
        layout = self.layout
        n = layout.size
        header = (
            f"=== {self.metadata['name']} | seed {self.np_random_seed} | {n}x{n} {self.variant} | "
            f"turn {self.steps} / {2 * self.max_cycles} ==="
        )
        grid = ["    " + " ".join(str(c % 10) for c in range(n))]
        w0, w1 = layout.walls
        for r in range(n):
            cells = []
            for c in range(n):
                i = r * n + c
                ch = "#" if w0[i] and w1[i] else "0" if w0[i] else "1" if w1[i] else "."
                ch = "G" if i == layout.treasure else "S" if i == layout.start else ch
                cells.append("@" if i == self.token else ch)
            grid.append(f"{r:>2}  " + " ".join(cells))
        lines = [header, *grid]
        if self._last_event:
            lines.append(f"last turn: {self._last_event}")
        for gnome in GNOMES:
            if self.last_messages[gnome]:
                lines.append(f'{gnome} said: "{self.last_messages[gnome]}"')
        if self.success or self.steps >= 2 * self.max_cycles:
            lines.append(
                f"{'success' if self.success else 'out of turns'} after {self.steps} turns "
                f"(fewest possible: {layout.optimal_steps})"
            )
        return "\n".join(lines)

    def render_rgb(self, cell: int = 24) -> np.ndarray:
        """The maze as an ``(n * cell, n * cell, 3)`` uint8 image."""
        layout = self.layout
        n = layout.size
        w0 = np.array(layout.walls[0], dtype=np.int8).reshape(n, n)
        w1 = np.array(layout.walls[1], dtype=np.int8).reshape(n, n)
        image = _PALETTE[w0 + 2 * w1].repeat(cell, axis=0).repeat(cell, axis=1)
        image[::cell, :] = image[:, ::cell] = _GRID
        image[-1, :] = image[:, -1] = _GRID

        def paint(
            index: int, colour: np.ndarray, inset: int, mask: np.ndarray | None = None
        ) -> None:
            r, c = divmod(index, n)
            patch = image[
                r * cell + inset : (r + 1) * cell - inset, c * cell + inset : (c + 1) * cell - inset
            ]
            if mask is None:
                patch[...] = colour
            else:
                patch[mask[inset : cell - inset, inset : cell - inset]] = colour

        paint(layout.start, _START, cell // 4)
        paint(layout.treasure, _TREASURE, cell // 6)
        paint(self.token, _TOKEN, 0, _disc(cell))
        return image

    def _render_header(self) -> str:
        return f"=== {self.metadata['name']} | seed {self.np_random_seed} | {self.size}x{self.size} {self.variant} ==="


# ---------------------------------------------------------------------- helpers
_INDEX = {g: i for i, g in enumerate(GNOMES)}
_DIRECTION_INDEX = {d: i for i, d in enumerate(DIRECTIONS)}


_PALETTE = np.array(
    [[248, 248, 244], [110, 150, 215], [235, 160, 85], [70, 70, 70]], dtype=np.uint8
)  # open, wall of gnome_0, wall of gnome_1, wall of both
_GRID = np.array([200, 200, 200], dtype=np.uint8)
_START = np.array([120, 200, 120], dtype=np.uint8)
_TREASURE = np.array([240, 195, 30], dtype=np.uint8)
_TOKEN = np.array([205, 40, 50], dtype=np.uint8)


def _disc(cell: int) -> np.ndarray:
    centre = (cell - 1) / 2
    yy, xx = np.mgrid[0:cell, 0:cell]
    return (yy - centre) ** 2 + (xx - centre) ** 2 <= (0.32 * cell) ** 2


def _map_rows(layout: MazeLayout, gnome: int, knows_treasure: bool) -> list[str]:
    """One agent's static map: column header, then one row string per grid row."""
    n, walls = layout.size, layout.walls[gnome]
    rows = ["    " + " ".join(str(c % 10) for c in range(n))]
    for r in range(n):
        cells = []
        for c in range(n):
            i = r * n + c
            ch = "#" if walls[i] else "."
            if i == layout.start:
                ch = "S"
            elif i == layout.treasure and knows_treasure:
                ch = "G"
            cells.append(ch)
        rows.append(f"{r:>2}  " + " ".join(cells))
    return rows


def _legal_moves(layout: MazeLayout, gnome: int) -> list[tuple[str, ...]]:
    """For every cell, the moves that are legal there for ``gnome`` (its own walls)."""
    walls = layout.walls[gnome]
    return [
        tuple(
            d
            for d, t in zip(DIRECTIONS, targets, strict=True)
            if t >= 0 and (t == cell or not walls[t])
        )
        for cell, targets in enumerate(neighbours(layout.size))
    ]


def _describe(agent: str, direction: str | None, invalid: bool) -> str:
    if direction is None:
        return f"{agent} gave no readable move; the token stayed."
    if invalid:
        return f"{agent} tried to move {direction} but was blocked; the token stayed."
    return f"{agent} stayed." if direction == "stay" else f"{agent} moved {direction}."


def env(**kwargs: Any) -> MazeCollabEnv:
    """AEC form (the game is turn-based, so there is no native Parallel form)."""
    return MazeCollabEnv(**kwargs)
