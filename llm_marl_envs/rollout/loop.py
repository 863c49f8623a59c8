"""The lockstep loop of a rollout: :class:`RolloutEngine` and the slots it keeps busy.

:class:`RolloutEngine` plays the slots of an opened executor until every episode has finished,
in four parts read top to bottom (pending turns, policy batches, environment steps, records;
see :mod:`llm_marl_envs.rollout.engine` for the whole story), with the progress bar it shows.
:func:`~llm_marl_envs.rollout.rollout` checks the caller's arguments, opens the executor,
resolves the policies and then builds one engine; that front door stays in
:mod:`llm_marl_envs.rollout.engine`, which re-exports :class:`RolloutEngine`. The loop lives
here, apart from the argument checking, so that each file reads as one thing; import
:class:`RolloutEngine` from :mod:`llm_marl_envs.rollout`.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from pathlib import Path
from typing import Any

import llm_marl_envs
from llm_marl_envs.policies.base import Completion, Policy, PolicyError, Prompt
from llm_marl_envs.rollout.results import (
    RolloutError,
    RolloutInterrupted,
    RolloutResult,
    add_to_stats,
    kept_summary,
)
from llm_marl_envs.rollout.executors import EnvExecutor, EnvUpdate, ExecutorLostError
from llm_marl_envs.rollout.plan import EpisodePlan
from llm_marl_envs.rollout.records import (
    EpisodeRecord,
    RecordTooLargeWarning,
    TurnRecord,
    append_line,
    encode_record,
    json_safe,
)

# infos keys that are large or repeated in the turns; left out of an episode's final_infos.
_SKIP_FINAL_INFO = ("messages",)


class _Slot:
    """The episode playing in one slot (its environment lives in the executor)."""

    def __init__(self) -> None:
        self.episode = -1  # index of the episode started by the last reset
        self.record: EpisodeRecord | None = None
        self.last_turn: dict[str, TurnRecord] = {}
        self.prompt: Prompt | None = None
        self.pending: Future[EnvUpdate] | None = None  # a reset or step in flight


class RolloutEngine:
    """One rollout: slots of an opened executor played until ``episodes`` have finished.

    :func:`rollout` builds it (after checking arguments, opening the executor and resolving
    the policies) and closes the executor afterwards. :meth:`run` plays once. ``plan``, checked
    against ``episodes`` by :meth:`EpisodePlan.episode_count
    <llm_marl_envs.rollout.plan.EpisodePlan.episode_count>`, fixes the seeds, reset options and
    record numbers.
    """

    def __init__(
        self,
        executor: EnvExecutor,
        policies: Mapping[str, Policy],
        *,
        env_id: str,
        env_kwargs: Mapping[str, Any],
        episodes: int,
        copies: int,
        seed: int,
        group_size: int,
        out: str | Path | None,
        include_tokens: bool,
        progress: bool | None,
        max_record_bytes: int | None,
        keep: str = "all",
        plan: EpisodePlan | None = None,
    ) -> None:
        self.executor = executor
        self.policies = dict(policies)
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs)
        self.episodes, self.seed, self.group_size = episodes, seed, group_size
        plan = plan if plan is not None else EpisodePlan()
        self.seeds, self.reset_options = plan.seeds, plan.reset_options
        self.out, self.include_tokens, self.progress = out, include_tokens, progress
        self._warned_no_ids: set[str] = set()  # policies said to give no token ids
        self.max_record_bytes = max_record_bytes
        self.keep = keep
        self.numbers = plan.episode_numbers
        self.slots = [_Slot() for _ in range(copies)]
        self.queue = deque(range(episodes))
        self.result = RolloutResult()
        self.finished: dict[int, EpisodeRecord] = {}
        self.env_seconds = 0.0
        self._handle = None
        self._bar: Any = None

    def run(self) -> RolloutResult:
        """Play every episode; see :func:`rollout` for the errors it raises."""
        # Unbuffered: each record goes to the OS in one write (append_line), so a killed
        # process leaves at most its last line cut short.
        if self.out is not None:
            self._handle = open(self.out, "wb", buffering=0)  # noqa: SIM115
        self._bar = _progress_bar(self.episodes, self.env_id, self.progress)
        started = time.perf_counter()
        try:
            self._settle(self._start_episodes(range(len(self.slots))))
            while True:
                if self.executor.lockstep:
                    self._wait_for_all_envs()
                self._settle(
                    i
                    for i, s in enumerate(self.slots)
                    if s.pending is not None and s.pending.done()
                )
                ready = self._pending_turns()
                if ready:
                    self._ask_policies(ready)
                elif not self._wait_for_envs():
                    break
        except (PolicyError, ExecutorLostError, KeyboardInterrupt) as error:
            # let running steps end before we return (a lost executor's never end)
            wait_s = 0 if isinstance(error, ExecutorLostError) else None
            for slot in self.slots:
                if slot.pending is not None:
                    try:
                        slot.pending.exception(timeout=wait_s)
                    except (TimeoutError, CancelledError):
                        pass
            self._finalise(started)
            kept = kept_summary(self.result, self.out)
            if isinstance(error, KeyboardInterrupt):
                raise RolloutInterrupted(f"interrupted (Ctrl-C); {kept}", self.result) from error
            raise RolloutError(f"{error}; {kept}", self.result) from error
        finally:
            self._bar.close()
            if self._handle is not None:
                self._handle.close()
        self._finalise(started)
        return self.result

    # ------------------------------------------------------------------ 1. pending turns
    def _pending_turns(self) -> list[int]:
        """Slots whose episode waits for an action (and whose env is not busy)."""
        return [i for i, s in enumerate(self.slots) if s.pending is None and s.prompt is not None]

    def _wait_for_envs(self) -> bool:
        """Wait a little for env work in flight; False when there is none (all done)."""
        running = [s.pending for s in self.slots if s.pending is not None]
        if not running:
            return False
        # a timeout, so that a Ctrl-C delivered to another thread is seen here
        if not wait(running, timeout=0.2, return_when=FIRST_COMPLETED).done:
            self.executor.check()  # work that can never finish (Ray shut down) ends the wait
        return True

    def _wait_for_all_envs(self) -> None:
        """Wait until no env work is in flight (lockstep executors)."""
        while True:
            running = [s.pending for s in self.slots if s.pending is not None]
            if not running or all(f.done() for f in running):
                return
            wait(running, timeout=0.2)  # a timeout, so that a Ctrl-C is seen here
            self.executor.check()  # work that can never finish (Ray shut down) ends the wait

    # ------------------------------------------------------------------ 2. policy batches
    def _ask_policies(self, ready: list[int]) -> None:
        """One ``generate`` call per policy for its pending turns, each batch then stepped."""
        batches: dict[int, list[int]] = defaultdict(list)
        for i in ready:
            batches[id(self.policies[self.slots[i].prompt.agent])].append(i)
        for batch in batches.values():
            policy = self.policies[self.slots[batch[0]].prompt.agent]
            completions = self._generate(policy, [self.slots[i].prompt for i in batch])
            self._apply_actions(batch, completions)

    def _generate(self, policy: Policy, prompts: list[Prompt]) -> list[Completion]:
        tick = time.perf_counter()
        try:
            completions = policy.generate(prompts)
        except PolicyError:
            raise
        except Exception as error:  # a policy bug or a model error: report it the same way
            raise PolicyError(
                f"policy {policy.name!r} failed: {type(error).__name__}: {error}"
            ) from error
        elapsed = time.perf_counter() - tick
        result = self.result
        result.policy_seconds[policy.name] = result.policy_seconds.get(policy.name, 0.0) + elapsed
        result.policy_calls[policy.name] = result.policy_calls.get(policy.name, 0) + 1
        if len(completions) != len(prompts):
            raise PolicyError(
                f"policy {policy.name!r} returned {len(completions)} completions "
                f"for {len(prompts)} prompts"
            )
        for completion in completions:
            if not isinstance(completion, Completion) or not isinstance(completion.text, str):
                raise PolicyError(
                    f"policy {policy.name!r} must return Completion objects with "
                    f"str text, got {completion!r}"
                )
        return completions

    # ------------------------------------------------------------------ 3. environment steps
    def _apply_actions(self, batch: list[int], completions: list[Completion]) -> None:
        """Record each turn, hand the actions to the executor, fold in the updates ready."""
        for i, completion in zip(batch, completions, strict=True):
            slot = self.slots[i]
            prompt = slot.prompt
            if self.include_tokens and completion.completion_ids is None:
                self._warn_no_ids(self.policies[prompt.agent].name)
            turn = TurnRecord(
                agent=prompt.agent,
                role=prompt.info.get("role"),
                observation=prompt.observation,
                messages=prompt.messages,
                action=completion.text,
                prompt_ids=completion.prompt_ids,
                completion_ids=completion.completion_ids,
                logprobs=completion.logprobs,
                completion_tokens=completion.completion_tokens,
            )
            slot.record.turns.append(turn)
            slot.last_turn[prompt.agent] = turn
            slot.prompt = None
            self.result.turns += 1
        self._settle(self._track(batch, self.executor.step(batch, [c.text for c in completions])))

    def _warn_no_ids(self, name: str) -> None:
        """``include_tokens`` asked for token ids policy ``name`` does not give: say so once per
        policy (its turns are written without them), never silently."""
        if name not in self._warned_no_ids:
            self._warned_no_ids.add(name)
            warnings.warn(
                f"include_tokens: policy {name} gives no token ids (nor log-probabilities); its "
                "turns are written without them",
                stacklevel=3,
            )

    def _start_episodes(self, free: Iterable[int]) -> list[int]:
        """Reset each free slot into the next queued episode (a slot idles once none is left).

        Returns the slots whose reset is already done (to be settled by the caller).
        """
        slots, seeds, groups = [], [], []
        for i in free:
            self.slots[i].prompt = None
            if not self.queue:
                continue
            index = self.queue.popleft()
            self.slots[i].episode = index
            slots.append(i)
            groups.append(self._number(index) // self.group_size)
            seeds.append(self._group_seed(index))
        if not slots:
            return []
        if self.reset_options is None:
            return self._track(slots, self.executor.reset(slots, seeds, groups))
        options = [self.reset_options[self.slots[i].episode // self.group_size] for i in slots]
        return self._track(slots, self.executor.reset(slots, seeds, groups, options=options))

    def _number(self, index: int) -> int:
        """The number the record of this call's ``index``-th episode carries."""
        return index if self.numbers is None else self.numbers[index]

    def _group_seed(self, index: int) -> int:
        """The reset seed of this call's ``index``-th episode: ``seeds`` of its group of this
        call, else ``seed`` + its numbered group."""
        if self.seeds is not None:
            return self.seeds[index // self.group_size]
        return self.seed + self._number(index) // self.group_size

    def _track(self, batch: list[int], futures: list[Future[EnvUpdate]]) -> list[int]:
        """Note the executor's work in flight; return the slots whose work is already done."""
        if len(futures) != len(batch):
            raise RuntimeError(
                f"the executor returned {len(futures)} futures for {len(batch)} slots"
            )
        for i, future in zip(batch, futures, strict=True):
            self.slots[i].pending = future
        return [i for i in batch if self.slots[i].pending.done()]

    def _settle(self, done: Iterable[int]) -> None:
        """Fold finished env work into the records (in the order given, which is slot order);
        start the next episode in each slot whose episode ended."""
        done = list(done)
        while done:  # a loop, not recursion: an episode may also end at its reset
            ended = []
            for i in done:
                slot = self.slots[i]
                update = slot.pending.result()  # an env's exception is raised here
                slot.pending = None
                self.env_seconds += update.seconds
                if update.start is not None:
                    self._open_record(slot, update)
                self._absorb(slot, update)
                if update.done:
                    self._finish_episode(slot)
                    ended.append(i)
            done = self._start_episodes(ended)

    def _open_record(self, slot: _Slot, update: EnvUpdate) -> None:
        start, index = update.start, slot.episode
        number = self._number(index)
        agents = start.possible_agents
        slot.record = EpisodeRecord(
            env_id=self.env_id,
            seed=self._group_seed(index),
            episode=number,
            group=number // self.group_size,
            returns={a: 0.0 for a in agents},
            data_source=start.data_source,
            row_id=start.row_id,
            reward_impl=start.reward_impl,
            env_kwargs=json_safe(self.env_kwargs),
            policies={a: self.policies[a].name for a in agents},
            package_version=llm_marl_envs.__version__,
            reset_options=(
                None if self.reset_options is None else self.reset_options[index // self.group_size]
            ),
        )
        slot.last_turn = {}

    def _absorb(self, slot: _Slot, update: EnvUpdate) -> None:
        """Rewards and infos of each ``last()`` into the record; the live turn as a prompt."""
        record = slot.record
        for view in update.views:
            agent, info = view.agent, view.info
            record.returns[agent] = record.returns.get(agent, 0.0) + view.reward
            previous = slot.last_turn.get(agent)
            if previous is not None:
                previous.reward += view.reward
                previous.reward_components = dict(info.get("reward_components") or {})
                previous.format_error = info.get("format_error")
            if view.terminated or view.truncated:
                record.final_infos[agent] = json_safe(
                    {k: v for k, v in info.items() if k not in _SKIP_FINAL_INFO}
                )
            else:
                slot.prompt = Prompt(
                    agent, view.observation, list(info.get("messages") or []), info
                )
        if not update.done and slot.prompt is None:
            raise RuntimeError(
                f"the executor's update for episode {record.episode} has neither "
                "a live turn nor the end of the episode"
            )

    # ------------------------------------------------------------------ 4. records
    def _finish_episode(self, slot: _Slot) -> None:
        """Write the slot's finished episode (unless over the cap), count it in the stats and
        keep what ``keep`` says of it."""
        record = slot.record
        if self._handle is not None:  # written before it counts as kept
            line = encode_record(record, self.include_tokens)
            cap = self.max_record_bytes
            if cap is not None and len(line) > cap:
                self.result.unwritten_episodes.append(record.episode)
                warnings.warn(
                    f"{self.out}: episode {record.episode} not written: its record is "
                    f"{len(line)} bytes, more than max_record_bytes={cap}",
                    RecordTooLargeWarning,
                    stacklevel=2,
                )
            else:
                append_line(self._handle, line)
        add_to_stats(self.result.stats, record)
        self.result.finished += 1
        if self.keep == "all":
            self.finished[record.episode] = record
        elif self.keep == "summaries":
            record.turns = []
            self.finished[record.episode] = record
        self._bar.update(1)
        slot.record = None

    def _finalise(self, started: float) -> None:
        result = self.result
        result.episodes = [self.finished[i] for i in sorted(self.finished)]
        result.wall_seconds = time.perf_counter() - started
        result.env_seconds = self.env_seconds


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
        print(
            f"\r{self.label}: {self.count}/{self.total} episodes",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        print(file=sys.stderr)
