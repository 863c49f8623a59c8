"""DonorGame-v1 / -v0: the Donor game of indirect reciprocity (cultural evolution of cooperation).

| | |
|---|---|
| Id | ``llm_marl_envs/DonorGame-v0`` (AEC) |
| Agents | ``player_0`` .. ``player_{N-1}`` (``num_agents`` N, even, 12 by default); each round half of them are donors and act, one after the other |
| Action | free text ending with ``Answer: <amount>`` (punishment variant: ``Answer: Donate, <amount>`` or ``Answer: Punish, <amount>``) |
| Observation | the rules (and the agent's strategy, if given) + this round's situation: own resources, the recipient and its resources, the recipient's reputation trace; ``infos[agent]["messages"]`` has it as chat (system + user) |
| Reward | each step, every agent's change of resources (donor: -x; recipient: +multiplier * x); an agent's rewards sum to final resources - endowment |
| Maximum | mean final resources 30,720 (N=12, 12 rounds, multiplier 2, everyone always gives everything) |
| Paper | Vallinder & Hughes, "Cultural Evolution of Cooperation among LLM Agents", arXiv:2412.10270 (2024) |

**Rules.** Every player starts with ``endowment`` units (10). In each of ``num_rounds`` rounds
the players are split into donor-recipient pairs. The donor gives ``x`` units, any amount in
``[0, own resources]``, and the recipient receives ``multiplier * x`` (2; the paper ablates 1.5
and 3). Roles alternate every round, a donor never gives to the same recipient twice, and the
players are not told how many rounds there are. With ``punishment=True`` (costly punishment)
the donor may instead spend ``x`` units to take ``punishment_multiplier * x`` from the recipient
(never below 0).

**Pairing schedule.** At reset a permutation drawn from the episode RNG splits the players into
halves X and Y of size m = N/2, and two further permutations give offsets ``o`` and ``o'`` of
``range(m)``. In rounds 1, 3, 5, ... X[i] gives to Y[(i + o[k]) % m]; in rounds 2, 4, 6, ...
Y[j] gives to X[(j + o'[k]) % m] (k counts the rounds of each kind). Hence roles alternate
and no donor meets the same recipient twice; that is also why ``num_rounds`` is at most N.
``reset(options={"reverse_pairings": True})`` swaps donor and recipient in every pair of every
round (same seed: same pairs, reversed; the evolution helper's second game).
``reset(options={"strategies": {agent: text}})`` puts each agent's strategy text into its
prompts. Other option keys are ignored (PettingZoo's ``api_test`` passes one); the values of
these two are checked. ``env.schedule`` lists every round's ``(donor, recipient)`` pairs.

**Turn order.** In each round the round's donors act one after the other, in seat order
(``player_0`` first); recipients do not act. The pairs of a round are disjoint and every trace
hop refers to an earlier round, so playing the donors one by one is the same as playing them
simultaneously: all the round's donor prompts are set when the round starts (a batched
rollout can read them together), and no donor's choice changes another's situation in that
round. After the last donor of the last round every agent terminates. One *cycle* is one
round here: ``env.num_cycles`` counts completed rounds and ``max_cycles=k`` (default
``num_rounds``) truncates after round k.

**Observation.** The system message holds the rules (with the multiplier and the answer
format, never the number of rounds) and, if given, the agent's strategy. The user message says
the round number, the donor's resources, the recipient's name and resources, and the
recipient's reputation trace: its most recent donation (percentage of its resources at the
time, to whom, in which round), then what that partner did before that, and so on, at most
``trace_depth`` hops (3) back; fewer in early rounds ("no history yet" in round 1). The donor's
info also has these facts as fields: ``round`` (1-based), ``own_resources``, ``recipient``,
``recipient_resources`` and ``trace`` (the traced records of ``env.history``, newest first).
``infos[agent]["role"]`` is ``"donor"`` or ``"recipient"`` for the current round.

**Parsing** (``parse_donation``). The amount is the number after the last ``Answer:`` that is
followed by one (case-insensitive, markdown ``**`` allowed; ``Answer: Donate, x`` and
``Answer: Punish, x`` too); else the last ``Donate, x`` / ``Punish, x``; else the whole reply
if it is just a number. Numbers may have a sign, a leading ``$``, thousands commas, decimals
and an exponent. Anything else donates 0 and is a format failure: ``"no_amount"``,
``"non_finite"`` (inf / nan), ``"punish_not_allowed"`` (a punishment without
``punishment=True``), or the base class's ``"empty"`` / ``"too_long"``. Valid amounts are
clamped to ``[0, own resources]`` (``clamped`` = 1).

**Rewards.** At each donor step the donor's reward is ``-x`` and the recipient's is
``+multiplier * x`` (punishment: ``-min(its resources, punishment_multiplier * x)``); all
other agents get 0. PettingZoo accumulates an agent's rewards until it next acts, so the
rewards ``last()`` reports to an agent over a game sum to final resources - endowment.
``reward_components`` of each donor turn: ``amount`` (given or spent on punishment),
``fraction`` (amount / resources before; 0 when the donor had nothing), ``punished`` (0/1),
``clamped`` (0/1), ``format_failure`` (0/1), ``donor_reward``, ``recipient_reward``, and
``task_reward`` (the reward paid to the acting agent this step, = ``donor_reward``, as in the
other environments).

**Infos at the end** (termination or truncation), for every agent: ``final_resources``,
``donation_fraction`` (mean over its donor turns of the fraction given; punishing counts as
giving 0), ``punishments`` (count), and ``game``: ``final_resources`` (all agents),
``mean_final_resources``, ``mean_donation_fraction``, ``punishment_frequency`` (punishing
turns / donor turns) and ``total_donated``. ``env.game_summary`` keeps that dict after the
agents are gone; ``env.resources`` and ``env.history`` (records with ``round``, ``donor``,
``recipient``, ``amount``, ``fraction``, ``kind``) can be read at any time. ``data_source`` is
``"procedural"`` and ``row_id`` the reset seed.

**Code.** The rules (pairing schedule, parsing, reputation traces) are in
``llm_marl_envs.games.donor_rules``, the scoring in ``llm_marl_envs.rewards.donor``; this
module is the environment around them.

**Cultural evolution.** ``llm_marl_envs.algorithms.donor_evolution.evolve`` runs the paper's outer
loop (two games per generation with reversed pairings, the better half survives, new agents
write strategies from the survivors'). Scripted players are in
``llm_marl_envs.policies.scripted.donor``.

**Arguments.** ``worked_example``, ``num_agents`` (even, >= 2), ``num_rounds`` (1..N; default min(12, N)),
``endowment`` (10.0), ``multiplier`` (2.0), ``trace_depth`` (3, >= 0), ``punishment``
(False), ``punishment_multiplier`` (2.0), ``max_cycles`` (rounds; default ``num_rounds``),
``render_mode`` ("human"/"ansi"), ``max_action_length`` (8,192).

**Worked example** (``worked_example``; on in v1, off in v0): each decision's chat holds
one example exchange first (a made-up round, then the reply ``Answer: 4``, or
``Answer: Donate, 4`` with punishment), also shown in the flat prompt. A small model then
answers in the format (docs/benchmarks/prompt_formats.md).

**Version history.** Versions are registry arguments (``envs_registry.yaml``): one class,
whose defaults are v0's; each version's entry states the arguments that define it. v0:
initial version. v1: ``worked_example=True`` (the observation changes, the rules and rewards
do not).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from llm_marl_envs.core.text_env import CleanAction, TextAECEnv
from llm_marl_envs.core.validation import check_bool, check_int, check_number
from llm_marl_envs.games.donor_rules import (
    FORMAT_ERRORS,
    format_units,
    pairing_schedule,
    parse_donation,
    reputation_trace,
)
from llm_marl_envs.rewards.donor import donation, game_summary

__all__ = ["FORMAT_ERRORS", "DonorGameEnv", "env", "parse_donation"]

OPTION_KEYS = ("reverse_pairings", "strategies")
_num = format_units


# ---------------------------------------------------------------------------- the env
class DonorGameEnv(TextAECEnv):
    """The Donor game (see the module docstring for rules, observations and rewards).

    Args:
        num_agents: Number of players N, an even int >= 2 (players are paired).
        num_rounds: Rounds per game, 1..N (default ``min(12, N)``).
        endowment: Units each player starts with.
        multiplier: The recipient gets ``multiplier * x`` for a donation of ``x``.
        trace_depth: Hops of the recipient's reputation trace shown to the donor (>= 0).
        punishment: Allow ``Punish, x`` (costly punishment).
        punishment_multiplier: Punishing with ``x`` removes ``punishment_multiplier * x``.
        max_cycles: Truncate after this many rounds (default ``num_rounds``).
        render_mode: ``None``, ``"human"`` or ``"ansi"``.
        max_action_length: Longest scored reply in characters.
    """

    metadata = {**TextAECEnv.metadata, "name": "DonorGame-v0"}

    def __init__(
        self,
        *,
        num_agents: int = 12,
        num_rounds: int | None = None,
        endowment: float = 10.0,
        multiplier: float = 2.0,
        trace_depth: int = 3,
        punishment: bool = False,
        punishment_multiplier: float = 2.0,
        max_cycles: int | None = None,
        render_mode: str | None = None,
        max_action_length: int = 8192,
        worked_example: bool = False,
    ) -> None:
        self.worked_example = bool(worked_example)
        n = check_int("num_agents", num_agents, 2)
        if n % 2:
            raise ValueError(
                f"num_agents must be even (players are paired as donor and recipient), got {n}"
            )
        if num_rounds is None:
            num_rounds = min(12, n)
        rounds = check_int(
            "num_rounds",
            num_rounds,
            1,
            n,
            why=(
                f" (roles alternate, so a donor can meet each of the num_agents/2 = {n // 2} "
                "players of the other half once per direction without repeating a partner)"
            ),
        )
        self.endowment = check_number("endowment", endowment, positive=True)
        self.multiplier = check_number("multiplier", multiplier, positive=True)
        self.trace_depth = check_int("trace_depth", trace_depth, 0)
        self.punishment = check_bool("punishment", punishment)
        self.punishment_multiplier = check_number(
            "punishment_multiplier", punishment_multiplier, positive=True
        )
        agents = [f"player_{i}" for i in range(n)]
        super().__init__(
            agents,
            {a: "player" for a in agents},
            max_cycles=rounds if max_cycles is None else max_cycles,
            render_mode=render_mode,
            max_action_length=max_action_length,
        )
        self.num_rounds = rounds
        self.resources: dict[str, float] = {a: self.endowment for a in agents}
        self.history: list[dict[str, Any]] = []
        self.schedule: list[list[tuple[str, str]]] = []
        self.strategies: dict[str, str] = {}
        self.game_summary: dict[str, Any] | None = None
        self._rules = {a: self._rules_text(a) for a in agents}
        self._system: dict[str, str] = dict(self._rules)
        self._question = self._question_text()
        self._given: dict[str, list[dict[str, Any]]] = {a: [] for a in agents}
        self._round = 0  # 0-based index of the round being played
        self._seat = 0  # index of the acting pair in the round
        self._rounds_done = 0
        self._summary_printed = False

    # ------------------------------------------------------------------ constant text
    def _rules_text(self, agent: str) -> str:
        m = _num(self.multiplier)
        lines = [
            f"You are {agent}, one of {len(self.possible_agents)} players in a donor game.",
            (
                f"Every player starts with {_num(self.endowment)} units. In each round the "
                "players are paired up: one is the donor, the other the recipient. Roles "
                "alternate from round to round, and you never donate to the same player twice."
            ),
            (
                "The donor decides how many of its units to give; the recipient receives "
                f"{m} times that amount (each unit given is worth {m} units to the recipient)."
            ),
            (
                "Before deciding, the donor sees what the recipient did the last time it was a "
                "donor (what share of its resources it gave, and to whom), what that player "
                "did before that, and so on."
            ),
        ]
        if self.punishment:
            lines.append(
                "Instead of donating, the donor may punish: spending x units removes "
                f"{_num(self.punishment_multiplier)}x units from the recipient (never below 0)."
            )
        lines.append(
            "Your goal is to have as many units as possible at the end of the game. "
            "The number of rounds is not announced."
        )
        return "\n".join(lines)

    def _question_text(self) -> str:
        m, pm = _num(self.multiplier), _num(self.punishment_multiplier)
        if self.punishment:
            return (
                f"Donating x units gives your recipient {m}x; punishing with x units removes "
                f"{pm}x from it. Both cost you x. Do you donate or punish, and how many units? "
                'End your reply with "Answer: Donate, <amount>" or "Answer: Punish, <amount>".'
            )
        return (
            f"Each unit you give is worth {m} units to your recipient. How many units do you "
            'give? End your reply with "Answer: <amount>".'
        )

    # ------------------------------------------------------------------ episode
    @property
    def num_cycles(self) -> int:
        """Completed rounds (a cycle is one round: half the agents act in it)."""
        return self._rounds_done

    def _new_episode(self, options: dict[str, Any]) -> None:
        # Other keys are ignored, as in the other environments: PettingZoo's api_test resets
        # with options={"options": 1} and requires that to work.
        reverse = options.get("reverse_pairings", False)
        if not isinstance(reverse, (bool, np.bool_)):
            raise TypeError(f"options['reverse_pairings'] must be a bool, got {reverse!r}")
        strategies = options.get("strategies") or {}
        if not isinstance(strategies, dict):
            raise TypeError(
                "options['strategies'] must be a dict agent -> str, "
                f"got {type(strategies).__name__}"
            )
        for agent, text in strategies.items():
            if agent not in self.possible_agents:
                raise ValueError(f"options['strategies'] names unknown agent {agent!r}")
            if not isinstance(text, str):
                raise TypeError(f"options['strategies'][{agent!r}] must be a str, got {text!r}")
        self.strategies = dict(strategies)
        self._system = {
            a: (f"{rules}\n\nYour strategy:\n{strategies[a]}" if strategies.get(a) else rules)
            for a, rules in self._rules.items()
        }
        self.schedule = self._draw_schedule(bool(reverse))
        self.resources = {a: self.endowment for a in self.possible_agents}
        self.history = []
        self._given = {a: [] for a in self.possible_agents}
        self.game_summary = None
        self._round = self._seat = self._rounds_done = 0
        self._set_task_info("procedural", self.np_random_seed)
        self._start_round()

    def _draw_schedule(self, reverse: bool) -> list[list[tuple[str, str]]]:
        return pairing_schedule(self.np_random, self.possible_agents, self.num_rounds, reverse)

    def _start_round(self) -> None:
        """Set roles and the prompts of every donor of the current round."""
        pairs = self.schedule[self._round]
        infos = self.infos
        round_number = self._round + 1
        for donor, recipient in pairs:
            infos[donor]["role"] = "donor"
            infos[recipient]["role"] = "recipient"
        for donor, recipient in pairs:
            self._prompt_donor(donor, recipient, round_number)
        self._seat = 0
        self.agent_selection = pairs[0][0]

    def _trace(self, recipient: str, round_number: int) -> list[dict[str, Any]]:
        return reputation_trace(self._given, recipient, round_number, self.trace_depth)

    def _prompt_donor(self, donor: str, recipient: str, round_number: int) -> None:
        own, theirs = self.resources[donor], self.resources[recipient]
        trace = self._trace(recipient, round_number)
        lines = [
            f"Round {round_number}. You are the donor; your recipient is {recipient}.",
            f"You have {_num(own)} units; {recipient} has {_num(theirs)} units.",
        ]
        if trace:
            lines.append(f"What {recipient} did recently:")
            for rec in trace:
                if rec["kind"] == "punish":
                    lines.append(
                        f"- In round {rec['round']}, {rec['donor']} spent {rec['fraction']:.0%} "
                        f"of its resources to punish {rec['recipient']}."
                    )
                else:
                    lines.append(
                        f"- In round {rec['round']}, {rec['donor']} gave {rec['fraction']:.0%} "
                        f"of its resources to {rec['recipient']}."
                    )
        elif self.trace_depth:
            lines.append(f"What {recipient} did recently: no history yet.")
        lines.append(self._question)
        user = "\n".join(lines)
        system = self._system[donor]
        info = self.infos[donor]
        info["round"] = round_number
        info["own_resources"] = own
        info["recipient"] = recipient
        info["recipient_resources"] = theirs
        info["trace"] = trace
        example: list[dict[str, str]] = []
        flat_example = ""
        if self.worked_example:
            reply = "Answer: Donate, 4" if self.punishment else "Answer: 4"
            shown = (
                "(an example, not your game)\nRound 1. You are the donor; your recipient is "
                f"player_x.\nYou have 10 units; player_x has 10 units.\n{self._question}"
            )
            example = [{"role": "user", "content": shown}, {"role": "assistant", "content": reply}]
            flat_example = f"Example:\n{shown}\nReply: {reply}\n\n"
        self._set_prompt(
            donor,
            f"{system}\n\n{flat_example}{user}",
            [{"role": "system", "content": system}, *example, {"role": "user", "content": user}],
        )

    def _play(self, agent: str, action: CleanAction) -> None:
        pairs = self.schedule[self._round]
        donor, recipient = pairs[self._seat]
        if agent != donor:  # cannot happen through step(); guards direct misuse
            raise RuntimeError(f"{agent} acted, but it is {donor}'s turn")
        failure = action.failure
        kind, amount = "donate", 0.0
        if failure is None:
            kind, parsed, failure = parse_donation(action.text, self.punishment)
            if parsed is not None:
                amount = parsed
        resources = self.resources
        before = resources[donor]
        turn = donation(
            amount, kind, before, resources[recipient], self.multiplier, self.punishment_multiplier
        )
        amount, clamped, fraction = turn.amount, turn.clamped, turn.fraction
        loss, gain = turn.donor_reward, turn.recipient_reward
        resources[donor] = before - amount
        resources[recipient] += gain
        self.rewards[donor] = loss
        self.rewards[recipient] = gain
        record = {
            "round": self._round + 1,
            "donor": donor,
            "recipient": recipient,
            "amount": amount,
            "fraction": fraction,
            "kind": kind,
        }
        self.history.append(record)
        self._given[donor].append(record)
        components = {
            "amount": amount,
            "fraction": fraction,
            "punished": 1.0 if kind == "punish" else 0.0,
            "clamped": clamped,
            "format_failure": 0.0 if failure is None else 1.0,
            "donor_reward": loss,
            "recipient_reward": gain,
            "task_reward": loss,
        }
        self._record(agent, CleanAction(action.text, failure), components)
        self.transcript[-1].role = f"donor to {recipient}, round {self._round + 1}"
        self._seat += 1
        if self._seat < len(pairs):
            self.agent_selection = pairs[self._seat][0]
            return
        self._rounds_done += 1
        self._round += 1
        if self._rounds_done >= self.num_rounds:
            for a in self.agents:
                self.terminations[a] = True
            self._finish()
        elif self._rounds_done >= self.max_cycles:
            self._finish()  # the base class truncates every agent after this step
        else:
            self._start_round()

    def _finish(self) -> None:
        """Write the end-of-game infos."""
        summary, per_agent = game_summary(self.history, self._given, self.resources)
        self.game_summary = summary
        for a in self.agents:
            self.infos[a].update(per_agent[a], game=summary)

    # ------------------------------------------------------------------ rendering
    def _render_header(self) -> str:
        variant = f" | punishment x{_num(self.punishment_multiplier)}" if self.punishment else ""
        return (
            f"=== {self.metadata['name']} | seed {self.np_random_seed} | "
            f"N={len(self.possible_agents)} | {self.num_rounds} rounds | "
            f"multiplier {_num(self.multiplier)}{variant} ==="
        )

    def _resources_line(self) -> str:
        label = "final resources" if self.game_summary is not None else "resources"
        parts = ", ".join(f"{a}={_num(v)}" for a, v in self.resources.items())
        return f"--- {label}: {parts}"

    def render_transcript(self) -> str:
        """The transcript so far, then every player's resources."""
        if not self.schedule:
            return super().render_transcript()
        return f"{super().render_transcript()}\n{self._resources_line()}"

    def render(self) -> str | None:
        out = super().render()
        if (
            self.render_mode == "human"
            and self.game_summary is not None
            and not getattr(self, "_summary_printed", False)
        ):
            print(self._resources_line())
            self._summary_printed = True
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._summary_printed = False
        super().reset(seed=seed, options=options)


def env(**kwargs: Any) -> DonorGameEnv:
    """PettingZoo-style constructor: ``donor_game.env(num_agents=12, punishment=True)``."""
    return DonorGameEnv(**kwargs)
