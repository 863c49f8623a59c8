"""Environment shards on Ray actors: :class:`RayExecutor` (``rollout(..., executor="ray")``).

The rollout engine stays in the driver with the policies; only the environments move. Each
Ray actor holds an :class:`EnvShard`: environment copies made on demand, stepped in batches
(one remote call per shard per engine step), with CPU-heavy steps (CoopCoding's sandbox) on
the shard's own thread pool, one thread per CPU the actor reserves. This is the shape the
RL frameworks built on Ray share (verl, OpenRLHF, RLlib's env runners): actors owning shards
of environments, a driver batching generation across them.

* **Group-aligned.** Episode group ``g`` (the ``group_size`` episodes of one GRPO group, same
  seed, same task) is played by worker ``g % num_workers``: a group never spans two shards.
* **Same records.** The engine and the policies are those of the local executor, an env
  reset with a seed replays exactly, and (``lockstep``, the default) the engine asks the
  policies only when every shard has answered, so each policy gets the batches it would get
  locally: a seeded rollout gives the same episode records with either executor, a model's
  log-probabilities included.
* **Faults.** The driver keeps, per slot, the episode's seed, reset options and the actions
  played so far. When a worker dies (``ray.kill``, a killed process, a lost machine), a
  replacement actor takes its place and each of its unfinished episodes is *replayed*
  there: reset from its seed, then stepped through the same actions, which gives back the
  state the dead worker held. The engine never notices; finished episodes were written
  already, so nothing is lost and nothing is played twice. When the cluster has no room for
  a replacement (a lost machine took its CPUs with it; the driver sees the free resources),
  or a replacement does not start within ``min(start_timeout, 60)`` seconds, the worker is
  dropped and its episodes are replayed on the workers left; when none is left, the rollout
  stops with a one-line :class:`WorkerLostError`. After ``max_worker_failures``
  deaths the rollout stops with a ``RolloutError`` caused by :class:`WorkerLostError`;
  ``ray.shutdown()`` during a rollout stops it the same way (:class:`RayShutdownError`), and
  so does a cluster whose head stopped answering (probed once a second while a rollout runs:
  :class:`~llm_marl_envs.rollout.ray.cluster.HeadWatch`), within seconds.
* **Errors.** An exception raised inside an environment reaches the caller as the original
  exception (its type and message), not as a Ray wrapper.

* **Reaching the cluster.** ``ray.init()`` is called on first use when Ray is not initialised:
  it joins the cluster named by ``address`` / ``RAY_ADDRESS`` or a local one started with
  ``ray start``, else starts a local instance. The head must accept a connection within 10 s
  first, so a wrong address, or ``auto`` after the head died, is one
  :class:`~llm_marl_envs.rollout.ray.cluster.ClusterError` line rather than a hang; so are a
  start timeout, a node without this package, and every worker dying while starting. When
  only some die while starting (their node left), the rollout goes on with the others, with
  a warning.

Ray is an optional extra (``pip install 'llm-marl-envs[ray]'``); importing this module does
not import it. Set-up and recipes: ``docs/ray.md``.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


from llm_marl_envs.core.optional import require
from llm_marl_envs.core.validation import check_int
from llm_marl_envs.policies.ray_actor import task_error_cause
from llm_marl_envs.rollout.ray.cluster import (
    ClusterError,
    HeadWatch,
    cluster_address,
    head_answers,
    start_failure,
)
from llm_marl_envs.rollout.ray.shard import EnvShard
from llm_marl_envs.rollout.executors import (
    EnvDescription,
    EnvExecutor,
    EnvSource,
    EnvUpdate,
    ExecutorLostError,
)

__all__ = [
    "ClusterError",
    "EnvShard",
    "RayExecutor",
    "RayShutdownError",
    "WorkerLostError",
    "import_ray",
]


#: The most seconds a replacement worker has to start before its episodes go elsewhere.
REPLACE_SECONDS = 60.0
#: Seconds a dead worker's reservation has to show as free before it counts as lost with its
#: machine.
ROOM_SECONDS = 3.0


class WorkerLostError(ExecutorLostError):
    """Ray workers died more often than ``max_worker_failures`` allows."""


class RayShutdownError(ExecutorLostError):
    """Ray was shut down (``ray.shutdown()`` from another thread, a stopped cluster) while a
    rollout was using it."""


def _ray_session(ray: Any) -> tuple | None:
    """This driver's connection to Ray (its job and node), or None when Ray is not running.

    A ``ray.shutdown()`` ends it; Ray's auto-init may start another at the next remote call,
    which has another identity, so "shut down" is "not the session the rollout opened"."""
    try:
        if not ray.is_initialized():
            return None
        context = ray.get_runtime_context()
        return (context.get_job_id(), context.get_node_id())
    except Exception:  # noqa: BLE001 - a half torn-down Ray: not running
        return None


def _shut_down_error(ray: Any, session: tuple | None, error: BaseException | None):
    """A :class:`RayShutdownError` (about ``error``) when the Ray ``session`` the rollout
    opened is no longer this driver's, else None."""
    if session is not None and _ray_session(ray) == session:
        return None
    detail = ""
    if error is not None:
        first = (str(error).splitlines() or [""])[0][:200]
        detail = f" ({type(error).__name__}: {first})" if first else f" ({type(error).__name__})"
    return RayShutdownError(
        "Ray was shut down during the rollout (ray.shutdown() called while it ran, or the "
        f"cluster stopped){detail}; keep Ray running until rollout() returns"
    )


def import_ray():
    """``import ray``, or a :class:`MissingDependencyError` (an ImportError) naming the extra."""
    return require("ray", "ray", "executor='ray' (environments on Ray actors)")


@dataclass
class _Episode:
    """What the driver keeps of the episode playing in a slot, to replay it elsewhere."""

    seed: int
    options: dict | None
    worker: int
    generation: int  # of the actor (at index ``worker``) that holds its env
    actions: list[str] = field(default_factory=list)


class RayExecutor(EnvExecutor):
    """Environment shards on ``num_workers`` Ray actors (see the module docstring).

    Args:
        num_workers: Actors (default: the cluster's CPUs divided by ``cpus_per_worker``).
        cpus_per_worker: CPUs each actor reserves (Ray's ``num_cpus``; 0 places actors without
            reserving any); also the threads its heavy steps run on (at least 1). When the
            cluster has fewer CPUs in all than ``num_workers`` of these, each worker reserves
            an equal share instead (with a warning), so more workers than cores still start.
        address: The Ray cluster to join when Ray is not initialised yet (default: Ray's own
            rule: ``RAY_ADDRESS``, a local ``ray start`` instance, else a new local one).
        max_worker_failures: Worker deaths tolerated per rollout before
            :class:`WorkerLostError` (default ``2 * num_workers``).
        actor_options: More ``.options(...)`` for the actors (``resources``,
            ``scheduling_strategy``, ``runtime_env``, ...). When this executor starts Ray
            (``ray.init``), a ``runtime_env`` goes to the job instead, where Ray accepts
            local folders (``working_dir``, ``py_modules``) and the actors inherit it.
        keep_workers: Keep the actors (and their env copies) alive when a rollout ends, for
            the next rollout of the same env with this executor (a training loop: one
            executor, a rollout per iteration); :meth:`shutdown` (or ``with``) frees them.
            Default False: each rollout starts its actors and kills them at its end.
        start_timeout: Seconds to wait for the actors to start (Ray holds an actor back
            while the cluster lacks the CPUs it reserves) before giving up with a
            :class:`ClusterError` ("start timeout") that says what the cluster had free.
        lockstep: The engine asks the policies only when every shard has answered, so a
            policy gets the batches it would get with the local executor, and a model's
            records (log-probabilities included) are the same. False: it goes on with the
            shards that answered first (more throughput when shards are uneven; a model's
            log-probabilities may then differ in their last digits, as batches differ).

    ``workers`` holds the actor handles by index (an actor that died is replaced in place;
    one lost with its machine stays, dead and unused), ``live_workers`` those in use;
    ``failures`` counts the deaths of the last rollout, ``calls`` its remote calls and
    ``call_slots`` the slots they carried (``call_slots / calls``: how full the calls were).

    >>> from llm_marl_envs.rollout import rollout, RayExecutor  # doctest: +SKIP
    >>> with RayExecutor(4, keep_workers=True) as executor:  # doctest: +SKIP
    ...     for iteration in range(100):
    ...         result = rollout("llm_marl_envs/GSM8K-v0", policy, episodes=512,
    ...                          batch_size=128, executor=executor)
    """

    def __init__(
        self,
        num_workers: int | None = None,
        *,
        cpus_per_worker: float = 1,
        address: str | None = None,
        max_worker_failures: int | None = None,
        actor_options: Mapping[str, Any] | None = None,
        keep_workers: bool = False,
        start_timeout: float = 300.0,
        lockstep: bool = True,
    ) -> None:
        self.num_workers = check_int("num_workers", num_workers, 1, none_ok=True)
        if isinstance(cpus_per_worker, bool) or not isinstance(cpus_per_worker, (int, float)):
            raise TypeError(f"cpus_per_worker must be a number, got {cpus_per_worker!r}")
        if cpus_per_worker < 0:
            raise ValueError(f"cpus_per_worker must be >= 0, got {cpus_per_worker}")
        self.cpus_per_worker = cpus_per_worker
        self.address = address
        self.max_worker_failures = check_int(
            "max_worker_failures", max_worker_failures, 0, none_ok=True
        )
        self.actor_options = dict(actor_options or {})
        self.keep_workers = bool(keep_workers)
        self.start_timeout = float(start_timeout)
        self.lockstep = bool(lockstep)
        self.workers: list[Any] = []
        self.failures = 0
        self.calls = 0  # remote calls of the last rollout (reset, step, replay)
        self.call_slots = 0  # slots those calls carried, in all
        self._generation: list[int] = []
        self._live: list[int] = []  # the workers still in use (a lost one may not come back)
        self._need: dict[str, float] = {}  # what one worker reserves, for a replacement
        self._episodes: dict[int, _Episode] = {}
        self._release: dict[int, list[int]] = defaultdict(list)
        self._lock = threading.RLock()
        self._ray: Any = None
        self._shard_cls: Any = None
        self._shard_args: tuple = ()
        self._opened_with: tuple | None = None  # (env, env_kwargs) of the live workers
        self._session: tuple | None = None  # the Ray connection the workers belong to
        self._job_env: dict | None = None  # the runtime_env this executor's ray.init was given
        self._head: HeadWatch | None = None  # probes the cluster's head while in use

    @property
    def live_workers(self) -> list[Any]:
        """The actors in use (``workers`` less those lost with their machines)."""
        return [self.workers[i] for i in self._live if i < len(self.workers)]

    # ------------------------------------------------------------------ EnvExecutor
    def open(
        self, env: EnvSource, env_kwargs: Mapping[str, Any] | None, copies: int
    ) -> EnvDescription:
        ray = self._ray = import_ray()
        check_int("copies", copies, 1)
        options = dict(self.actor_options)
        if not ray.is_initialized():  # a head that does not answer: one line, not a hang
            address, _ = cluster_address(self.address)
            # the runtime_env goes to the job: Ray uploads local folders (working_dir,
            # py_modules) only from ray.init, and the actors inherit it
            ray.init(
                address=address, log_to_driver=True, runtime_env=options.pop("runtime_env", None)
            )
            self._job_env = self.actor_options.get("runtime_env")
        elif self._job_env is not None and self._job_env == options.get("runtime_env"):
            del options["runtime_env"]  # the job this executor started has it already
        address = self._head_address(ray)
        if address is not None and not head_answers(address):
            self.workers, self._opened_with = [], None
            raise RayShutdownError(
                f"the Ray cluster stopped: its head at {address} does not answer"
            )
        # Ray's client, asked anything of a head that stops meanwhile, waits a minute and
        # then ends the process: the start runs on a thread, watched from here
        return self._while_head_answers(address, lambda: self._open(ray, env, env_kwargs, options))

    def _open(
        self, ray: Any, env: EnvSource, env_kwargs: Mapping[str, Any] | None, options: dict
    ) -> EnvDescription:
        session = _ray_session(ray)
        if session != self._session:  # a new Ray: actors kept from an old one are gone
            self.workers, self._opened_with, self._session = [], None, session
        count = self.num_workers
        if count is None:
            cpus = ray.cluster_resources().get("CPU", 1)
            count = max(1, int(cpus // self.cpus_per_worker)) if self.cpus_per_worker else 1
        self.failures, self._episodes = 0, {}
        self.calls = self.call_slots = 0
        self._release = defaultdict(list)
        key = (env, dict(env_kwargs or {}))
        if self.workers and self._opened_with == key and len(self._live) == count:
            self._watch_head(ray)
            return self._get(self.workers[0].describe.remote())  # kept from the last rollout
        self.shutdown()
        self._watch_head(ray)
        per_worker = self._cpus_each(count, ray.cluster_resources().get("CPU", 0))
        threads = max(1, int(per_worker))
        self._shard_cls = ray.remote(EnvShard).options(
            num_cpus=per_worker, max_concurrency=1, **options
        )
        self._shard_args = (env, dict(env_kwargs or {}), threads)
        self.workers = [self._shard_cls.remote(*self._shard_args) for _ in range(count)]
        self._generation = [0] * count
        self._live = list(range(count))
        self._need = {"CPU": per_worker, "GPU": self.actor_options.get("num_gpus") or 0}
        self._need.update(self.actor_options.get("resources") or {})
        self._opened_with = key
        # every shard makes its first copy: a bad env or argument fails here, not mid-rollout
        return self._start([worker.describe.remote() for worker in self.workers], per_worker)

    def _start(self, refs: list[Any], per_worker: float) -> EnvDescription:
        """Wait for each worker's first copy (``refs``: their ``describe`` calls).

        A worker that dies while starting (its node left the cluster), or one still waiting
        for a place after a node left (the cluster lost what it reserves), is dropped with a
        warning and the rollout goes on with the workers that started. None started, a node
        without this package, a bad env argument, or ``start_timeout`` passing: one line."""
        total = self._ray.cluster_resources()
        deadline = time.monotonic() + self.start_timeout
        waiting = dict(enumerate(refs))
        started: dict[int, EnvDescription] = {}
        lost: dict[int, BaseException] = {}
        while waiting:
            self._collect(waiting, started, lost, min(1.0, max(0.0, deadline - time.monotonic())))
            if not waiting:
                break
            if started and self._shrank(total):  # a node left: the waiting have no place
                for index in list(waiting):
                    del waiting[index]
                    lost[index] = ClusterError("still waiting for a place when a node left")
            elif time.monotonic() >= deadline:
                raise self._start_timeout(len(refs), per_worker) from None
        missing = [e for e in lost.values() if "No module named 'llm_marl_envs" in str(e)]
        if missing or not started:
            self.shutdown()
            raise start_failure((missing or list(lost.values()))[0], len(refs)) from None
        if lost:
            self._lost_at_start(lost, len(refs))
        return started[min(started)]

    def _collect(
        self,
        waiting: dict[int, Any],
        started: dict[int, EnvDescription],
        lost: dict[int, BaseException],
        timeout: float,
    ) -> None:
        """Move the workers whose first copy is ready within ``timeout`` seconds from
        ``waiting`` to ``started`` (or ``lost``: died while starting). An env's own error
        (a bad argument) ends the start, as itself."""
        ray = self._ray
        ready, _ = ray.wait(list(waiting.values()), num_returns=len(waiting), timeout=timeout)
        for index in [i for i, ref in waiting.items() if ref in ready]:
            try:
                started[index] = ray.get(waiting.pop(index))
            except (ray.exceptions.RayActorError, ModuleNotFoundError) as error:
                lost[index] = error
            except ray.exceptions.RayTaskError as error:  # the env's own error
                self.shutdown()
                raise task_error_cause(error) from None

    def _start_timeout(self, count: int, per_worker: float) -> ClusterError:
        """The workers did not start in time: they are killed; what to change, in one line."""
        free = self._ray.available_resources()
        self.shutdown()
        asked = {"CPU": per_worker, **dict(self.actor_options.get("resources") or {})}
        return ClusterError(
            f"start timeout: Ray did not start {count} workers reserving {asked} "
            f"each within {self.start_timeout:g} s (the cluster had free: "
            f"{ {k: v for k, v in free.items() if k in asked} }); lower --num-workers "
            "or what each reserves (--ray-resources), add machines to the cluster, or "
            "give them longer (--ray-start-timeout)"
        )

    def _lost_at_start(self, lost: dict[int, BaseException], count: int) -> None:
        """Stop using the workers ``lost`` while starting (of ``count``), with a warning."""
        for index in lost:
            self._live.remove(index)
            self._generation[index] += 1
            try:
                self._ray.kill(self.workers[index])
            except Exception:  # noqa: BLE001 - gone with its node
                pass
        self.failures += len(lost)
        first = str(next(iter(lost.values()))).strip().splitlines() or [""]
        warnings.warn(
            f"{len(lost)} of {count} Ray workers were lost while starting (their node "
            f"left the cluster? {first[0][:200]}); the rollout goes on with "
            f"{len(self._live)}",
            stacklevel=4,
        )

    def _shrank(self, before: Mapping[str, float]) -> bool:
        """Whether the cluster has less of what a worker reserves than ``before``."""
        try:
            now = self._ray.cluster_resources()
        except Exception:  # noqa: BLE001 - cannot tell: keep waiting (start_timeout bounds it)
            return False
        return any(now.get(key, 0) < before.get(key, 0) for key, need in self._need.items() if need)

    def _cpus_each(self, count: int, total: float) -> float:
        """``cpus_per_worker``, or an equal share of a cluster that has fewer CPUs in all."""
        wanted = self.cpus_per_worker
        if not wanted or not total or count * wanted <= total:
            return wanted
        share = total / count
        share = float(int(share)) if share >= 1 else int(share * 10_000) / 10_000
        warnings.warn(
            f"num_workers={count} x cpus_per_worker={wanted:g} is more than the cluster's "
            f"{total:g} CPUs; each worker reserves {share:g} CPU instead",
            stacklevel=4,
        )
        return share

    def reset(
        self,
        slots: Sequence[int],
        seeds: Sequence[int],
        groups: Sequence[int],
        options: Sequence[dict | None] | None = None,
    ) -> list[Future[EnvUpdate]]:
        options = list(options or [None] * len(slots))
        futures = [Future() for _ in slots]
        by_worker: dict[int, list[int]] = defaultdict(list)
        with self._lock:
            for i, (slot, seed, group) in enumerate(zip(slots, seeds, groups, strict=True)):
                worker = self._live[group % len(self._live)]
                old = self._episodes.get(slot)
                if old is not None and old.worker != worker:
                    if old.generation == self._generation[old.worker]:
                        self._release[old.worker].append(slot)
                self._episodes[slot] = _Episode(seed, options[i], worker, self._generation[worker])
                self._keep(worker, slot)
                by_worker[worker].append(i)
            for worker, items in by_worker.items():
                release, self._release[worker] = self._release[worker], []
                self._call(
                    worker,
                    "reset",
                    (
                        [slots[i] for i in items],
                        [seeds[i] for i in items],
                        [options[i] for i in items],
                        release,
                    ),
                    [slots[i] for i in items],
                    [futures[i] for i in items],
                )
        return futures

    def step(self, slots: Sequence[int], actions: Sequence[str]) -> list[Future[EnvUpdate]]:
        futures = [Future() for _ in slots]
        steps: dict[int, list[int]] = defaultdict(list)
        replays: dict[int, list[int]] = defaultdict(list)
        with self._lock:
            for i, (slot, action) in enumerate(zip(slots, actions, strict=True)):
                episode = self._episodes[slot]
                episode.actions.append(action)
                if episode.generation == self._generation[episode.worker]:
                    steps[episode.worker].append(i)
                else:  # its worker died while the policy was thinking
                    replays[episode.worker].append(i)
            for worker, items in steps.items():
                self._call(
                    worker,
                    "step",
                    ([slots[i] for i in items], [actions[i] for i in items]),
                    [slots[i] for i in items],
                    [futures[i] for i in items],
                )
            for worker, items in replays.items():
                self._replay(worker, [slots[i] for i in items], [futures[i] for i in items])
        return futures

    def check(self) -> None:
        """Raise :class:`RayShutdownError` when Ray was shut down under the rollout, or its
        cluster's head stopped answering (its calls in flight would never answer)."""
        if self._ray is not None and self.workers and not self._ray.is_initialized():
            raise _shut_down_error(self._ray, None, None)
        lost = self._head.lost if self._head is not None else None
        if lost is not None and self.workers:
            raise RayShutdownError(
                f"the Ray cluster stopped: its head at {self._head.address} has not answered "
                f"for {lost:.0f} s"
            )

    @staticmethod
    def _head_address(ray: Any) -> str | None:
        """``HOST:PORT`` of the head of the cluster this driver is on (None: cannot tell)."""
        try:
            address = ray.get_runtime_context().gcs_address
        except Exception:  # noqa: BLE001 - an older Ray: Ray's own timeout applies
            return None
        return address if isinstance(address, str) and ":" in address else None

    def _while_head_answers(self, address: str | None, work: Any) -> Any:
        """``work()`` on a thread of its own, given up with :class:`RayShutdownError` when
        the head at ``address`` stops answering meanwhile (Ctrl-C still reaches here)."""
        if address is None:
            return work()
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["value"] = work()
            except BaseException as error:  # noqa: BLE001 - raised again by the caller
                box["error"] = error
            finally:
                done.set()

        watch = HeadWatch(address)
        threading.Thread(target=run, name="ray-executor-open", daemon=True).start()
        try:
            while not done.wait(0.25):
                if watch.lost is not None:
                    self.workers, self._opened_with = [], None
                    raise RayShutdownError(
                        f"the Ray cluster stopped while the workers started: its head at "
                        f"{address} has not answered for {watch.lost:.0f} s"
                    )
        finally:
            watch.stop()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _watch_head(self, ray: Any) -> None:
        """Probe the head of the cluster this driver is on (see :class:`HeadWatch`)."""
        address = self._head_address(ray)
        if self._head is not None and self._head.address != address:
            self._head.stop()
            self._head = None
        if self._head is None and isinstance(address, str) and ":" in address:
            self._head = HeadWatch(address)

    def close(self) -> None:
        """End the rollout: the actors are killed, unless ``keep_workers``."""
        self._episodes = {}
        if not self.keep_workers:
            self.shutdown()

    def shutdown(self) -> None:
        """Kill the actors (their env copies go with them)."""
        ray, workers = self._ray, self.workers
        self.workers, self._episodes, self._opened_with = [], {}, None
        if self._head is not None:
            self._head.stop()
            self._head = None
        if ray is None or _ray_session(ray) != self._session:
            return  # Ray was shut down: its actors went with it (ray.kill would start a new Ray)
        for worker in workers:
            try:
                ray.kill(worker)
            except Exception:  # noqa: BLE001 - already dead: nothing to free
                pass

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # ------------------------------------------------------------------ calls and faults
    def _call(
        self, worker: int, method: str, args: tuple, slots: list[int], futures: list[Future]
    ) -> None:
        """One remote call on ``worker`` for ``slots``; its answer completes ``futures``."""
        actor, generation = self.workers[worker], self._generation[worker]
        self.calls += 1
        self.call_slots += len(slots)
        if not self._ray.is_initialized():  # shut down under us: no auto-init of a new Ray
            raise _shut_down_error(self._ray, None, None)
        try:
            ref = getattr(actor, method).remote(*args)
            future = ref.future()
        except Exception as error:  # Ray refused the call: shut down under us?
            lost = _shut_down_error(self._ray, self._session, error)
            if lost is None:
                raise
            raise lost from error
        future.add_done_callback(
            lambda done: self._answered(done, worker, generation, slots, futures)
        )

    def _answered(
        self, done: Future, worker: int, generation: int, slots: list[int], futures: list[Future]
    ) -> None:
        ray = self._ray
        try:
            updates = done.result()
        except ray.exceptions.RayActorError as error:
            lost = _shut_down_error(ray, self._session, error)
            if lost is not None:  # not a dead worker: Ray itself is gone
                for future in futures:
                    future.set_exception(lost)
                return
            # replace the worker off Ray's callback thread; replay its episodes there
            threading.Thread(
                target=self._recover,
                args=(worker, generation, slots, futures, error),
                name="ray-executor-recover",
                daemon=True,
            ).start()
            return
        except ray.exceptions.RayTaskError as error:
            for future in futures:
                future.set_exception(task_error_cause(error))
            return
        except BaseException as error:  # noqa: BLE001 - handed to the engine as it is
            lost = _shut_down_error(ray, self._session, error)
            for future in futures:
                future.set_exception(error if lost is None else lost)
            return
        for future, update in zip(futures, updates, strict=True):
            future.set_result(update)

    def _recover(
        self,
        worker: int,
        generation: int,
        slots: list[int],
        futures: list[Future],
        error: BaseException,
    ) -> None:
        """Replace a dead worker (once per death) and replay ``slots`` there; any failure on
        the way is set on ``futures``, so the engine never waits for nothing."""
        try:
            with self._lock:
                if not self.workers:  # closed meanwhile
                    raise WorkerLostError(f"Ray worker {worker} lost: {error}")
                if self._generation[worker] == generation:  # first news of this death
                    if self._head is not None and not self._head.answers():
                        raise RayShutdownError(  # not a worker: the whole cluster is gone
                            f"the Ray cluster stopped: its head at {self._head.address} does "
                            f"not answer (a worker died: {str(error).splitlines()[0][:200]})"
                        )
                    self.failures += 1
                    limit = self.max_worker_failures
                    if limit is None:
                        limit = 2 * len(self.workers)
                    if self.failures > limit:
                        raise WorkerLostError(
                            f"Ray workers died {self.failures} times in one rollout (more than "
                            f"max_worker_failures={limit}); the last: "
                            f"{str(error).splitlines()[0]}"
                        )
                    self._generation[worker] += 1
                    self._release[worker] = []
                    if self._room_for_one():
                        self.workers[worker] = self._shard_cls.remote(*self._shard_args)
                        self._watch_start(self.workers[worker])
                    else:  # a lost machine: its episodes go to the workers left
                        self._drop(worker, error)
                self._replay(worker, slots, futures)
        except BaseException as failure:  # noqa: BLE001 - handed to the engine
            failure = _shut_down_error(self._ray, self._session, failure) or failure
            for future in futures:
                if not future.done():
                    future.set_exception(failure)

    def _room_for_one(self) -> bool:
        """Whether the cluster has free what one more worker reserves (a lost machine's
        resources are gone from it). A dead worker's own reservation takes a moment to show
        as free again, so this looks for up to :data:`ROOM_SECONDS`."""
        deadline = time.monotonic() + ROOM_SECONDS
        while True:
            try:
                free = self._ray.available_resources()
            except Exception:  # noqa: BLE001 - cannot tell: try a replacement (bounded below)
                return True
            if all(free.get(key, 0) >= amount for key, amount in self._need.items() if amount):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.25)

    def _watch_start(self, actor: Any) -> None:
        """Kill a replacement that has not started within ``min(start_timeout, 60)`` seconds
        (the cluster's free resources were a moment's): its calls then fail, and the next
        recovery finds no room and hands its episodes to the workers left."""
        ray, bound = self._ray, min(self.start_timeout, REPLACE_SECONDS)

        def watch() -> None:
            try:
                ray.get(actor.describe.remote(), timeout=bound)
            except ray.exceptions.GetTimeoutError:
                warnings.warn(
                    f"a replacement Ray worker did not start within {bound:g} s; its episodes "
                    "go to the workers left",
                    stacklevel=1,
                )
                try:
                    ray.kill(actor)
                except Exception:  # noqa: BLE001 - gone already
                    pass
            except Exception:  # noqa: BLE001 - died: its calls say so, and recovery follows
                pass

        threading.Thread(target=watch, name="ray-executor-start", daemon=True).start()

    def _drop(self, worker: int, error: BaseException) -> None:
        """Stop using ``worker`` (under the lock); :class:`WorkerLostError` when none is left."""
        if worker in self._live:
            self._live.remove(worker)
        if not self._live:
            free = {k: v for k, v in self._ray.available_resources().items() if k in self._need}
            raise WorkerLostError(
                "every Ray worker was lost and the cluster has no room for a new one (a worker "
                f"reserves {self._need}; free: {free}); the last loss: "
                f"{str(error).splitlines()[0][:200]}"
            )

    def _replay(self, worker: int, slots: list[int], futures: list[Future]) -> None:
        """Rebuild ``slots``' episodes on ``worker``'s current actor, or, when ``worker`` was
        dropped, on the workers left (under the lock)."""
        if worker not in self._live:
            if not self._live:
                raise WorkerLostError("every Ray worker was lost")
            moved: dict[int, list[int]] = defaultdict(list)
            for i, slot in enumerate(slots):
                moved[self._live[slot % len(self._live)]].append(i)
            for target, items in moved.items():
                self._replay(target, [slots[i] for i in items], [futures[i] for i in items])
            return
        items = []
        for slot in slots:
            episode = self._episodes[slot]
            episode.worker = worker
            episode.generation = self._generation[worker]
            self._keep(worker, slot)
            items.append((slot, episode.seed, episode.options, list(episode.actions)))
        self._call(worker, "replay", (items,), slots, futures)

    def _keep(self, worker: int, slot: int) -> None:
        """``slot`` plays on ``worker`` now: a release of its old copy there, still waiting
        for the worker's next reset, is cancelled (a slot that moved away and came back with
        a replay would lose its copy mid-episode). Under the lock."""
        pending = self._release.get(worker)
        if pending and slot in pending:
            pending[:] = [other for other in pending if other != slot]

    def _get(self, ref: Any, timeout: float | None = None) -> Any:
        """``ray.get``, re-raising an env's own exception (type and message) as it is."""
        ray = self._ray
        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.RayTaskError as error:
            raise task_error_cause(error) from None
