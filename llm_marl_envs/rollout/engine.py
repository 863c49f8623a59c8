"""The batched rollout engine: many copies of an environment, played in lockstep.

:func:`rollout` keeps ``batch_size`` copies of an AEC environment busy. At each step it
gathers the pending turn of every live copy, groups the prompts by policy (each agent's
policy, or one shared policy for several agents), calls each policy once with its whole
batch, and feeds the answers back. A copy whose episode ends starts the next episode at once
(continuous batching), so copies never wait for the slowest episode of a batch.

* **Seeds and groups.** Episode ``i`` belongs to group ``i // group_size`` and resets with
  ``seed + group``: the ``group_size`` copies of a group play the same task (GRPO / MAGRPO
  groups); with sampling their answers differ.
* **CPU-heavy steps.** When an environment's ``step`` does real work (CoopCoding-v0 runs
  tests in the sandbox; such envs set ``heavy_step = True``) the steps run in worker threads
  while the model generates for the other copies; a copy sits out while its step is running.
* **Records.** Every finished episode becomes an
  :class:`~llm_marl_envs.rollout.records.EpisodeRecord`, appended to ``out`` (JSONL) as soon
  as it finishes, as one complete line written at once and flushed (see
  :mod:`llm_marl_envs.rollout.records` for what a killed writer leaves and how it is read).
  A record longer than ``max_record_bytes`` is not written (a ``RecordTooLargeWarning``; its
  episode index goes to ``RolloutResult.unwritten_episodes``).
* **Failures.** If a policy fails, :class:`RolloutError` is raised after the finished
  episodes are saved; ``error.result`` holds them. Ctrl-C (``KeyboardInterrupt``) likewise
  raises :class:`RolloutInterrupted`, a ``KeyboardInterrupt`` that carries ``result``. Either
  way the file holds exactly the finished episodes, each on a complete line.

>>> from llm_marl_envs.rollout import rollout
>>> from llm_marl_envs.policies.scripted import scripted_policy
>>> result = rollout("llm_marl_envs/GSM8K-v0", {
...     "pioneer_0": scripted_policy("llm_marl_envs/GSM8K-v0", "pioneer_0"),
...     "observer_0": scripted_policy("llm_marl_envs/GSM8K-v0", "observer_0"),
... }, episodes=4, batch_size=2, env_kwargs={"data_source": "bundled"}, progress=False)
>>> len(result.episodes), result.episodes[0].turns[0].agent
(4, 'pioneer_0')
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec

import llm_marl_envs
from llm_marl_envs.policies.base import Completion, Policy, PolicyError, Prompt, as_policy
from llm_marl_envs.rollout.records import (
    DEFAULT_MAX_RECORD_BYTES,
    EpisodeRecord,
    RecordTooLargeWarning,
    TurnRecord,
    append_line,
    encode_record,
    json_safe,
)

__all__ = ["RolloutError", "RolloutInterrupted", "RolloutResult", "rollout"]

# infos keys that are large or repeated in the turns; left out of an episode's final_infos.
_SKIP_FINAL_INFO = ("messages",)


@dataclass
class RolloutResult:
    """What :func:`rollout` returns.

    Attributes:
        episodes: Finished episodes, in the order of their index.
        wall_seconds: Total time of the rollout.
        policy_seconds: Time inside each policy's ``generate`` (by policy name).
        env_seconds: Time inside the environments (reset, last, step), summed over copies.
        policy_calls: Number of ``generate`` calls (by policy name).
        turns: Number of agent turns played.
        unwritten_episodes: Indices of finished episodes whose record was longer than
            ``max_record_bytes`` and so was not written to ``out`` (they are in ``episodes``).
    """

    episodes: list[EpisodeRecord] = field(default_factory=list)
    wall_seconds: float = 0.0
    policy_seconds: dict[str, float] = field(default_factory=dict)
    env_seconds: float = 0.0
    policy_calls: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    unwritten_episodes: list[int] = field(default_factory=list)

    def mean_returns(self) -> dict[str, float]:
        """Each agent's mean return over the finished episodes."""
        totals: dict[str, list[float]] = defaultdict(list)
        for episode in self.episodes:
            for agent, value in episode.returns.items():
                totals[agent].append(value)
        return {agent: sum(v) / len(v) for agent, v in totals.items()}


class RolloutError(RuntimeError):
    """A policy failed mid-rollout; ``result`` holds the episodes that finished before."""

    def __init__(self, message: str, result: RolloutResult) -> None:
        super().__init__(message)
        self.result = result


class RolloutInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a rollout; ``result`` holds the episodes that finished before.

    A ``KeyboardInterrupt`` (not an ``Exception``), so code that does not know about it still
    stops as it would on any Ctrl-C.
    """

    def __init__(self, message: str, result: RolloutResult) -> None:
        super().__init__(message)
        self.result = result


class _Slot:
    """One environment copy and the episode it is playing."""

    def __init__(self, env: AECEnv) -> None:
        self.env = env
        self.record: EpisodeRecord | None = None
        self.last_turn: dict[str, TurnRecord] = {}
        self.prompt: Prompt | None = None
        self.future: Future | None = None
        self.step_seconds = 0.0


def rollout(
    env: str | Callable[[], AECEnv | ParallelEnv],
    policies: Policy | Callable | Mapping[str, Policy | Callable],
    *,
    episodes: int,
    batch_size: int = 8,
    seed: int = 0,
    group_size: int = 1,
    env_kwargs: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    include_tokens: bool = False,
    progress: bool | None = None,
    env_workers: int | None = None,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
) -> RolloutResult:
    """Play ``episodes`` episodes of ``env`` with ``policies``, ``batch_size`` at a time.

    Args:
        env: A registered id (made with ``llm_marl_envs.make(env, **env_kwargs)``) or a
            function returning an AEC or Parallel env.
        policies: One policy for every agent, or ``{agent: policy}``; a policy is a
            :class:`~llm_marl_envs.policies.Policy` or a function ``(observation, info) -> str``.
        episodes: Number of episodes.
        batch_size: Environment copies played in lockstep (1 = one episode at a time).
        seed: Seed of the first group; group ``g`` resets with ``seed + g``.
        group_size: Consecutive episodes that share a seed (same task).
        env_kwargs: Constructor arguments when ``env`` is an id.
        out: Append each finished episode to this JSONL file (created or truncated first).
        include_tokens: Also write token ids and log-probabilities to ``out``.
        progress: Show a progress bar (default: when stderr is a terminal).
        env_workers: Threads for env steps (default: ``min(batch_size, 8)`` for envs with
            ``heavy_step = True``, else 0, i.e. steps run inline).
        max_record_bytes: Longest record (one JSONL line, in bytes) written to ``out``; a
            longer one is skipped whole with a warning and listed in
            ``RolloutResult.unwritten_episodes``. None: no cap.

    Returns:
        A :class:`RolloutResult`. Raises :class:`RolloutError` if a policy fails and
        :class:`RolloutInterrupted` on Ctrl-C, both after the finished episodes are saved.
    """
    for name, value, low in (("episodes", episodes, 0), ("batch_size", batch_size, 1), ("group_size", group_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    make_env, env_id, kwargs = _env_factory(env, env_kwargs)
    envs = [make_env() for _ in range(min(batch_size, max(episodes, 1)))]
    agents = list(envs[0].possible_agents)
    agent_policies = _resolve_policies(policies, agents)
    if env_workers is None:
        env_workers = min(batch_size, 8) if getattr(envs[0].unwrapped, "heavy_step", False) else 0
    executor = ThreadPoolExecutor(env_workers, thread_name_prefix="env-step") if env_workers else None
    result = RolloutResult()
    finished: dict[int, EpisodeRecord] = {}
    # Unbuffered: each record goes to the OS in one write (append_line), so a killed process
    # leaves at most its last line cut short.
    handle = open(out, "wb", buffering=0) if out is not None else None  # noqa: SIM115
    bar = _progress_bar(episodes, env_id, progress)
    queue = deque(range(episodes))
    slots = [_Slot(e) for e in envs]
    started = time.perf_counter()
    env_seconds = 0.0

    def finish(slot: _Slot) -> None:
        record = slot.record
        if handle is not None:  # written before it counts as kept
            line = encode_record(record, include_tokens)
            if max_record_bytes is not None and len(line) > max_record_bytes:
                result.unwritten_episodes.append(record.episode)
                warnings.warn(
                    f"{out}: episode {record.episode} not written: its record is {len(line)} "
                    f"bytes, more than max_record_bytes={max_record_bytes}",
                    RecordTooLargeWarning, stacklevel=2,
                )
            else:
                append_line(handle, line)
        finished[record.episode] = record
        bar.update(1)
        slot.record = None

    def advance(slot: _Slot) -> None:
        """Run ``slot`` to its next live turn (dead steps, episode ends, new episodes)."""
        env_ = slot.env
        while True:
            if slot.record is None:
                if not queue:
                    slot.prompt = None
                    return
                index = queue.popleft()
                group = index // group_size
                env_.reset(seed=seed + group)
                slot.record = EpisodeRecord(
                    env_id=env_id, seed=seed + group, episode=index, group=group,
                    returns={a: 0.0 for a in env_.possible_agents},
                    data_source=getattr(env_.unwrapped, "data_source", None),
                    row_id=getattr(env_.unwrapped, "row_id", None),
                    env_kwargs=json_safe(kwargs),
                    policies={a: agent_policies[a].name for a in env_.possible_agents},
                    package_version=llm_marl_envs.__version__,
                )
                slot.last_turn = {}
            if not env_.agents:
                finish(slot)
                continue
            agent = env_.agent_selection
            observation, reward, terminated, truncated, info = env_.last()
            record = slot.record
            record.returns[agent] = record.returns.get(agent, 0.0) + float(reward)
            previous = slot.last_turn.get(agent)
            if previous is not None:
                previous.reward += float(reward)
                previous.reward_components = dict(info.get("reward_components") or {})
                previous.format_error = info.get("format_error")
            if terminated or truncated:
                record.final_infos[agent] = json_safe(
                    {k: v for k, v in info.items() if k not in _SKIP_FINAL_INFO}
                )
                env_.step(None)
                continue
            slot.prompt = Prompt(agent, str(observation), list(info.get("messages") or []), info)
            return

    def step(slot: _Slot, text: str) -> None:
        tick = time.perf_counter()
        slot.env.step(text)
        slot.step_seconds += time.perf_counter() - tick

    try:
        tick = time.perf_counter()
        for slot in slots:
            advance(slot)
        env_seconds += time.perf_counter() - tick
        while True:
            for slot in slots:  # harvest finished background steps
                if slot.future is not None and slot.future.done():
                    slot.future.result()
                    slot.future = None
                    tick = time.perf_counter()
                    advance(slot)
                    env_seconds += time.perf_counter() - tick
            ready = [s for s in slots if s.future is None and s.prompt is not None]
            if not ready:
                running = [s.future for s in slots if s.future is not None]
                if not running:
                    break
                # a timeout, so that a Ctrl-C delivered to another thread is seen here
                wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                continue
            by_policy: dict[int, list[_Slot]] = defaultdict(list)
            for slot in ready:
                by_policy[id(agent_policies[slot.prompt.agent])].append(slot)
            for group_slots in by_policy.values():
                policy = agent_policies[group_slots[0].prompt.agent]
                completions = _generate(policy, [s.prompt for s in group_slots], result)
                for slot, completion in zip(group_slots, completions, strict=True):
                    prompt = slot.prompt
                    turn = TurnRecord(
                        agent=prompt.agent,
                        role=prompt.info.get("role"),
                        observation=prompt.observation,
                        messages=prompt.messages,
                        action=completion.text,
                        prompt_ids=completion.prompt_ids,
                        completion_ids=completion.completion_ids,
                        logprobs=completion.logprobs,
                    )
                    slot.record.turns.append(turn)
                    slot.last_turn[prompt.agent] = turn
                    slot.prompt = None
                    result.turns += 1
                    if executor is not None:
                        slot.future = executor.submit(step, slot, completion.text)
                    else:
                        tick = time.perf_counter()
                        slot.env.step(completion.text)
                        advance(slot)
                        env_seconds += time.perf_counter() - tick
    except (PolicyError, KeyboardInterrupt) as error:
        for slot in slots:
            if slot.future is not None:
                slot.future.exception()  # let running steps end before we return
        _finalise(result, finished, started, env_seconds, slots)
        if isinstance(error, KeyboardInterrupt):
            raise RolloutInterrupted(f"interrupted (Ctrl-C); {_kept(result, out)}", result) from error
        raise RolloutError(f"{error}; {_kept(result, out)}", result) from error
    finally:
        bar.close()
        if handle is not None:
            handle.close()
        if executor is not None:
            executor.shutdown(wait=True)
    _finalise(result, finished, started, env_seconds, slots)
    return result


def _kept(result: RolloutResult, out: str | Path | None) -> str:
    """``"N finished episode(s) kept (written to FILE)"``, with the records left out if any."""
    text = f"{len(result.episodes)} finished episode(s) kept"
    if out is None:
        return text
    unwritten = result.unwritten_episodes
    if not unwritten:
        return text + f" (written to {out})"
    return (text + f" ({len(result.episodes) - len(unwritten)} written to {out}; "
            f"{len(unwritten)} over the record size cap not written: episodes {sorted(unwritten)})")


def _finalise(result, finished, started, env_seconds, slots) -> None:
    result.episodes = [finished[i] for i in sorted(finished)]
    result.wall_seconds = time.perf_counter() - started
    result.env_seconds = env_seconds + sum(s.step_seconds for s in slots)


def _generate(policy: Policy, prompts: list[Prompt], result: RolloutResult) -> list[Completion]:
    tick = time.perf_counter()
    try:
        completions = policy.generate(prompts)
    except PolicyError:
        raise
    except Exception as error:  # a policy bug or a model error: report it the same way
        raise PolicyError(f"policy {policy.name!r} failed: {type(error).__name__}: {error}") from error
    elapsed = time.perf_counter() - tick
    result.policy_seconds[policy.name] = result.policy_seconds.get(policy.name, 0.0) + elapsed
    result.policy_calls[policy.name] = result.policy_calls.get(policy.name, 0) + 1
    if len(completions) != len(prompts):
        raise PolicyError(
            f"policy {policy.name!r} returned {len(completions)} completions for {len(prompts)} prompts"
        )
    for completion in completions:
        if not isinstance(completion, Completion) or not isinstance(completion.text, str):
            raise PolicyError(f"policy {policy.name!r} must return Completion objects with str text, got {completion!r}")
    return completions


def _env_factory(env, env_kwargs):
    kwargs = dict(env_kwargs or {})
    if isinstance(env, str):
        spec = llm_marl_envs.spec(env)  # raises with close matches for unknown ids
        return (lambda: llm_marl_envs.make(env, **kwargs)), spec.id, kwargs
    if not callable(env):
        raise TypeError(f"env must be a registered id or a function returning an env, got {env!r}")
    if kwargs:
        raise ValueError("env_kwargs apply to registered ids; pass a function that builds the env instead")

    def make_aec():
        made = env()
        if isinstance(made, ParallelEnv):
            made = parallel_to_aec(made)
        if not isinstance(made, AECEnv):
            raise TypeError(f"the env function returned {type(made).__name__}, not a PettingZoo env")
        return made

    probe = make_aec()
    name = probe.metadata.get("name", type(probe.unwrapped).__name__)
    first = [probe]
    return (lambda: first.pop() if first else make_aec()), name, kwargs


def _resolve_policies(policies, agents: list[str]) -> dict[str, Policy]:
    if isinstance(policies, Mapping):
        missing = [a for a in agents if a not in policies]
        unknown = [a for a in policies if a not in agents]
        if missing or unknown:
            raise ValueError(f"policies must cover the agents {agents}; missing {missing}, unknown {unknown}")
        converted: dict[int, Policy] = {}
        resolved = {}
        for agent in agents:  # the same object for several agents stays one policy (one batch)
            value = policies[agent]
            resolved[agent] = converted.setdefault(id(value), as_policy(value))
        return resolved
    shared = as_policy(policies)
    return {agent: shared for agent in agents}


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress_bar(total: int, env_id: str, enabled: bool | None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _LineBar(total, env_id)
    return tqdm(total=total, desc=env_id.split("/")[-1], unit="episode", file=sys.stderr)


class _LineBar:
    """A plain-text progress line for installs without tqdm."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.count = total, label, 0

    def update(self, n: int) -> None:
        self.count += n
        print(f"\r{self.label}: {self.count}/{self.total} episodes", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        print(file=sys.stderr)
