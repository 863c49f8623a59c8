"""The Ray executor against the local one, side by side in one run, and a scaling model.

1. **CPU-bound steps** (CoopCoding-v0, scripted players: every step runs the tests in the
   sandbox): episodes per second with the local executor, 1 Ray worker and 2 Ray workers
   (one CPU each; each worker steps its envs on a pool of one thread per CPU it reserves).
2. **Cheap steps** (GSM8K-v0, scripted players, 1,000 episodes): wall time of the local
   executor and of Ray with 1 and 2 workers; the per-episode overhead of the Ray path.
   Workers are warm (``keep_workers``: a training loop starts them once); the cold start
   (actors made and their first env copies built) is reported apart.
3. **Serialisation**: bytes sent per turn each way (the action; the ``EnvUpdate`` back),
   pickled as Ray pickles them, for GSM8K, CoopCoding and the maze.
4. **The model and its check**: a synthetic env whose step sleeps ``--sim-cost`` seconds (an
   actor on a machine of its own: it waits, it uses no CPU here) on 1..N actors that reserve
   no CPU; measured turns per second next to the model's
   ``1 / (1 / (N r) + c)`` in lockstep and ``min(N r, 1 / c)`` pipelined: ``r`` the
   per-actor rate, ``c`` the driver's cost per turn, measured with steps that cost nothing.

5. **A cluster of two nodes**: two ``ray start`` processes of one CPU each on this machine
   (``llm_marl_envs.testing.LocalRayCluster``), joined by address, next to a
   one-node cluster of two CPUs: episodes per second and start-up for CoopCoding and GSM8K,
   then the second node killed a third of the way into a CoopCoding rollout (wall time, the
   stall after the loss, the records). ``--cluster-only`` measures just this part into the
   existing JSON.

Every configuration plays the same seeds and the records are compared (digests). Targets
(issue 20): CoopCoding 2 workers >= 1.7x the episodes/s of 1 worker; GSM8K Ray <= 2x the
local wall time. Results: ``docs/benchmarks/ray_scaling.{md,json,png}``.

Usage: ``python benchmarks/ray_scaling.py [--repeats 3] [--coding-episodes 48]
[--gsm8k-episodes 1000] [--sim-actors 1 2 4 8 16] [--sim-cost 0.01] [--cluster-only]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import platform
import secrets
import statistics
import time
from pathlib import Path

import gymnasium
from pettingzoo import AECEnv

import llm_marl_envs
from llm_marl_envs.rollout import LocalExecutor, RayExecutor, rollout, scripted_policy
from llm_marl_envs.rollout.ray.executor import ROOM_SECONDS, EnvShard

GSM8K = "llm_marl_envs/GSM8K-v0"
CODING = "llm_marl_envs/CoopCoding-v0"
MAZE = "llm_marl_envs/MazeCollab-v0"
DATA = {"data_source": "bundled"}
KWARGS = {GSM8K: DATA, CODING: {}, MAZE: {}}


class SleepyEnv(AECEnv):
    """Two agents, ``turns`` turns each; a step sleeps ``cost`` seconds (synthetic work)."""

    metadata = {"name": "sleepy_v0", "is_parallelizable": False}

    def __init__(self, cost: float = 0.0, turns: int = 2, observation_chars: int = 400) -> None:
        super().__init__()
        self.cost, self.turns, self.text = cost, turns, "x" * observation_chars
        self.possible_agents = ["a_0", "a_1"]
        self.observation_spaces = {a: gymnasium.spaces.Text(10_000) for a in self.possible_agents}
        self.action_spaces = {a: gymnasium.spaces.Text(10_000) for a in self.possible_agents}

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def observe(self, agent):
        return self.text

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection, self.played = self.agents[0], 0

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if self.cost:
            time.sleep(self.cost)
        self._cumulative_rewards[agent] = 0.0
        self.played += 1
        self.rewards = {a: 0.0 for a in self.agents}
        self.rewards[agent] = float(len(action or "")) / 100
        if self.played >= self.turns * len(self.agents):
            self.terminations = {a: True for a in self.agents}
        self._accumulate_rewards()
        self.agent_selection = self.agents[self.played % len(self.agents)]


def _policies(env_id):
    agents = llm_marl_envs.make(env_id, **KWARGS[env_id]).possible_agents
    return {a: scripted_policy(env_id, a) for a in agents}


def _digest(result, names: bool = True) -> str:
    """The records' digest; ``names=False`` leaves out the policies' names (a wrapper's)."""
    records = [e.to_dict() for e in result.episodes]
    if not names:
        records = [{k: v for k, v in record.items() if k != "policies"} for record in records]
    text = json.dumps(records, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _timed(env, policies, episodes, batch_size, executor, env_kwargs, seed=0):
    tick = time.perf_counter()
    result = rollout(
        env,
        policies,
        episodes=episodes,
        batch_size=batch_size,
        seed=seed,
        env_kwargs=env_kwargs,
        progress=False,
        executor=executor,
    )
    return time.perf_counter() - tick, result


def side_by_side(env_id, episodes, batch_size, repeats, workers=(1, 2), threads=()) -> dict:
    """Wall seconds (median of ``repeats``) per executor; the cold start of each Ray pool.
    ``threads``: also the local executor with that many env-step threads (the machine's own
    scaling of the same work)."""
    policies, kwargs = _policies(env_id), KWARGS[env_id]
    rows, digests = {}, {}
    for name, env_workers in (("local", None), *((f"local-{t}-threads", t) for t in threads)):
        times = []
        for _ in range(repeats):
            wall, result = _timed(
                env_id, policies, episodes, batch_size, LocalExecutor(env_workers), kwargs
            )
            times.append(wall)
        rows[name] = {"wall": statistics.median(times), "walls": times, "turns": result.turns}
        digests[name] = _digest(result)
    opens = []
    for _ in range(repeats):  # what the local executor's rollouts spend making their copies
        executor, tick = LocalExecutor(), time.perf_counter()
        executor.open(env_id, kwargs, min(batch_size, episodes))
        opens.append(time.perf_counter() - tick)
        executor.close()
    rows["local"]["making_copies"] = statistics.median(opens)
    for count in workers:
        with RayExecutor(count, keep_workers=True) as executor:
            cold, _ = _timed(env_id, policies, 2 * count, batch_size, executor, kwargs, seed=10**6)
            times = []
            for _ in range(repeats):
                wall, result = _timed(env_id, policies, episodes, batch_size, executor, kwargs)
                times.append(wall)
        name = f"ray-{count}"
        rows[name] = {
            "wall": statistics.median(times),
            "walls": times,
            "turns": result.turns,
            "cold_start": cold,
        }
        digests[name] = _digest(result)
    for name, row in rows.items():
        row["episodes_per_s"] = episodes / row["wall"]
        row["same_records_as_local"] = digests[name] == digests["local"]
    return rows


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def machine_scaling(repeats: int, n: int = 30_000_000) -> dict:
    """The machine's own ceiling: a pure-Python CPU loop in 1 process, then in 2 processes
    at once (work per second, 2 / 1; median of ``repeats`` interleaved pairs)."""
    import multiprocessing

    ratios = []
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [1000, 1000])  # both processes started
        for _ in range(repeats):
            tick = time.perf_counter()
            pool.apply(_spin, (n,))
            one = time.perf_counter() - tick
            tick = time.perf_counter()
            pool.map(_spin, [n, n], chunksize=1)
            two = time.perf_counter() - tick
            ratios.append(2 * one / two)
    return {"ratio": statistics.median(ratios), "ratios": ratios}


def bytes_per_turn(env_id, episodes=8) -> dict:
    """Mean pickled size of a step's request (the action) and answer (its EnvUpdate)."""
    shard = EnvShard(env_id, KWARGS[env_id])
    shard.describe()
    sent, back, turns = 0, 0, 0
    policies = _policies(env_id)
    for seed in range(episodes):
        update = shard.reset([0], [seed], [None])[0]
        back += len(pickle.dumps(update, protocol=5))
        while not update.done:
            view = update.views[-1]
            action = policies[view.agent](view.observation, view.info)
            sent += len(pickle.dumps(([0], [action]), protocol=5))
            update = shard.step([0], [action])[0]
            back += len(pickle.dumps([update], protocol=5))
            turns += 1
    shard.close()
    return {"turns": turns, "request_bytes": sent / turns, "answer_bytes": back / turns}


def simulate(actor_counts, cost, slots_per_actor, episodes_per_actor) -> list[dict]:
    """Turns per second of SleepyEnv(cost) on N zero-CPU actors (warm), in lockstep (the
    default) and pipelined (``lockstep=False``); and with steps that cost nothing (the
    driver's own rate)."""
    rows = []
    runs = (("lockstep", cost, True), ("pipelined", cost, False), ("zero_cost", 0.0, True))
    for count in actor_counts:
        row = {"actors": count}
        for label, step_cost, lockstep in runs:

            def factory(step_cost=step_cost):
                return SleepyEnv(step_cost)

            slots = slots_per_actor * count
            with RayExecutor(
                count, cpus_per_worker=0, keep_workers=True, lockstep=lockstep
            ) as executor:
                _timed(factory, lambda o, i: "ok", count, slots, executor, None)
                wall, result = _timed(
                    factory, lambda o, i: "ok", episodes_per_actor * count, slots, executor, None
                )
            row[label] = result.turns / wall
            row[f"{label}_slots_per_call"] = executor.call_slots / executor.calls
        rows.append(row)
        print(
            f"  {count} actors: lockstep {row['lockstep']:.0f}, pipelined "
            f"{row['pipelined']:.0f}, zero-cost steps {row['zero_cost']:.0f} turns/s",
            flush=True,
        )
    return rows


class _NodeKiller:
    """Scripted players that lose the second node at the ``at``-th policy call (a machine
    lost mid-rollout) and note when each call came (the stall after the loss)."""

    def __init__(self, env_id, cluster, at: int) -> None:
        self.cluster, self.at, self.calls, self.killed_at = cluster, at, [], None
        self.inner = _policies(env_id)

    def policies(self) -> dict:
        return {agent: self._wrap(policy) for agent, policy in self.inner.items()}

    def _wrap(self, policy):
        def act(observation, info):
            self.calls.append(time.perf_counter())
            if len(self.calls) == self.at:
                self.cluster.kill("node2")
                self.killed_at = time.perf_counter()
            return policy(observation, info)

        return act


def two_nodes(repeats: int, coding_episodes: int, batch_size: int, gsm8k_episodes: int) -> dict:
    """The same rollouts with 2 workers on a one-node cluster (``ray start --head`` with 2
    CPUs) and on a cluster of two ``ray start`` nodes of one CPU each, on this machine (the
    driver joins each by address, as a user's would; Ray's default health checks); each
    pool's start-up; then a node lost a third of the way into a CoopCoding rollout: its wall
    time next to the same rollout's without a loss, the stall after the loss, the records."""
    import tempfile

    import ray

    token = os.environ["RAY_AUTH_TOKEN"]  # (set by main before Ray was imported)

    from llm_marl_envs.testing import LocalRayCluster

    work = {"CoopCoding-v0": (CODING, coding_episodes), "GSM8K-v0": (GSM8K, gsm8k_episodes)}
    local, results = {}, {}
    for name, (env_id, episodes) in work.items():
        _, results[name] = _timed(
            env_id, _policies(env_id), episodes, batch_size, LocalExecutor(), KWARGS[env_id]
        )
        local[name] = _digest(results[name])
    rows: dict = {}
    for where, cpus in (("one node", [2]), ("two nodes", [1, 1])):
        with tempfile.TemporaryDirectory(prefix="ray-cluster-") as root:
            cluster = LocalRayCluster(Path(root), fast_health_checks=False)
            cluster.env["RAY_AUTH_TOKEN"] = token
            try:
                tick = time.perf_counter()
                for index, count in enumerate(cpus):
                    cluster.start("head" if index == 0 else f"node{index + 1}", cpus=count)
                ray.init(address=cluster.address, logging_level="warning")
                row = rows[where] = {"ray_up": time.perf_counter() - tick}
                for name, (env_id, episodes) in work.items():
                    row[name] = _on_cluster(ray, env_id, episodes, batch_size, repeats, local[name])
                    print(where, name, json.dumps(row[name]), flush=True)
                if where == "two nodes":
                    plain = _digest(results["CoopCoding-v0"], names=False)
                    runs = []
                    for attempt in range(repeats):
                        if attempt:  # the lost machine comes back
                            cluster.start("node2")
                        runs.append(_lose_a_node(cluster, coding_episodes, batch_size, plain))
                        print("lost node", json.dumps(runs[-1]), flush=True)
                    row["lost_node"] = {
                        "episodes": coding_episodes,
                        "lost_after_turns": runs[0]["lost_after_turns"],
                        "wall": statistics.median(run["wall"] for run in runs),
                        "stall": statistics.median(run["stall"] for run in runs),
                        "wall_without_loss": row["CoopCoding-v0"]["wall"],
                        "runs": runs,
                    }
            finally:
                if ray.is_initialized():
                    ray.shutdown()
                cluster.stop()
    rows["repeats"] = repeats
    return rows


def _on_cluster(ray, env_id, episodes, batch_size, repeats, local_digest) -> dict:
    """A pool of 2 warm workers on the cluster Ray is joined to: its start-up, then the
    median wall time of ``repeats`` rollouts."""
    policies, kwargs = _policies(env_id), KWARGS[env_id]
    with RayExecutor(2, keep_workers=True) as executor:
        cold, _ = _timed(env_id, policies, 4, batch_size, executor, kwargs, seed=10**6)
        nodes = {ray.get(worker.node.remote()) for worker in executor.live_workers}
        walls = []
        for _ in range(repeats):
            wall, result = _timed(env_id, policies, episodes, batch_size, executor, kwargs)
            walls.append(wall)
    return {
        "cold_start": cold,
        "wall": statistics.median(walls),
        "walls": walls,
        "episodes_per_s": episodes / statistics.median(walls),
        "nodes": len(nodes),
        "same_records_as_local": _digest(result) == local_digest,
    }


def _lose_a_node(cluster, episodes: int, batch_size: int, local_digest: str) -> dict:
    """A CoopCoding rollout on both nodes whose second node is lost a third of the way in."""
    turns = 2 * episodes  # a scripted CoopCoding episode is 2 turns
    killer = _NodeKiller(CODING, cluster, at=turns // 3)
    executor = RayExecutor(2, keep_workers=True)  # (kept: to count them after)
    tick = time.perf_counter()
    result = rollout(
        CODING,
        killer.policies(),
        episodes=episodes,
        batch_size=batch_size,
        seed=0,
        progress=False,
        executor=executor,
    )
    wall = time.perf_counter() - tick
    live = len(executor.live_workers)
    executor.shutdown()
    # the longest wait for a turn after the loss (the turns of one batch come together)
    calls = [killer.killed_at, *(t for t in killer.calls if t > killer.killed_at)]
    stall = max(later - earlier for earlier, later in zip(calls, calls[1:], strict=False))
    return {
        "episodes": episodes,
        "lost_after_turns": killer.at,
        "wall": wall,
        "stall": stall,
        "failures": executor.failures,
        "live_workers": live,
        "same_records_as_local": _digest(result, names=False) == local_digest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--coding-episodes", type=int, default=192)
    parser.add_argument("--coding-batch-sizes", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--gsm8k-episodes", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--sim-actors", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--sim-cost", type=float, default=0.01)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks/ray_scaling"))
    parser.add_argument("--render-only", action="store_true", help="redraw from the JSON")
    parser.add_argument(
        "--cluster-only",
        action="store_true",
        help="measure only the two-node cluster, into the JSON's other figures",
    )
    args = parser.parse_args()
    # one token for every Ray of this run, set before Ray is imported: Ray reads it once, and
    # the clusters of `ray start` processes below use token authentication
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(16)
    if args.render_only:
        render(json.loads(args.out.with_suffix(".json").read_text()), args.out)
        return
    cluster_args = (
        args.repeats,
        args.coding_episodes,
        max(args.coding_batch_sizes),
        args.gsm8k_episodes,
    )
    if args.cluster_only:
        data = json.loads(args.out.with_suffix(".json").read_text())
        data["cluster"] = two_nodes(*cluster_args)
        args.out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
        render(data, args.out)
        return
    import ray

    tick = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="warning")
    init = time.perf_counter() - tick
    machine = machine_scaling(args.repeats)
    print(f"machine: 2 busy cores do {machine['ratio']:.2f}x the work of one", flush=True)
    print("CoopCoding-v0 (CPU-bound steps)", flush=True)
    coding = {}
    for batch_size in args.coding_batch_sizes:
        coding[str(batch_size)] = side_by_side(
            CODING, args.coding_episodes, batch_size, args.repeats, threads=(1, 2)
        )
        print(
            batch_size,
            json.dumps(
                {k: round(v["episodes_per_s"], 2) for k, v in coding[str(batch_size)].items()}
            ),
            flush=True,
        )
    print("GSM8K-v0 (cheap steps)", flush=True)
    gsm8k = side_by_side(GSM8K, args.gsm8k_episodes, args.batch_size, args.repeats)
    print(json.dumps({k: round(v["wall"], 3) for k, v in gsm8k.items()}), flush=True)
    sizes = {env_id.split("/")[1]: bytes_per_turn(env_id) for env_id in (GSM8K, CODING, MAZE)}
    print("simulation", flush=True)
    sim = simulate(args.sim_actors, args.sim_cost, slots_per_actor=8, episodes_per_actor=32)
    ray.shutdown()
    print("a cluster of two nodes", flush=True)
    cluster = two_nodes(*cluster_args)
    data = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, Ray {ray.__version__}",
        "ray_init_seconds": init,
        "machine_scaling": machine,
        "repeats": args.repeats,
        "coding": {"episodes": args.coding_episodes, "by_batch_size": coding},
        "gsm8k": {"episodes": args.gsm8k_episodes, "batch_size": args.batch_size, "rows": gsm8k},
        "bytes_per_turn": sizes,
        "simulation": {
            "cost": args.sim_cost,
            "slots_per_actor": 8,
            "episodes_per_actor": 32,
            "turns_per_episode": 4,
            "rows": sim,
        },
        "cluster": cluster,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    render(data, args.out)


def render(data: dict, out: Path) -> None:
    by_batch, gsm8k = data["coding"]["by_batch_size"], data["gsm8k"]["rows"]
    sim = data["simulation"]
    speedups = {
        int(b): rows["ray-2"]["episodes_per_s"] / rows["ray-1"]["episodes_per_s"]
        for b, rows in by_batch.items()
    }
    best = max(speedups, key=speedups.get)
    coding = by_batch[str(best)]
    turns_per_episode = coding["local"]["turns"] / data["coding"]["episodes"]
    one_thread = coding["local-1-threads"]["episodes_per_s"]
    episodes = data["gsm8k"]["episodes"]
    per_actor = 1 / sim["cost"]  # r: turns/s one actor steps
    # c: the driver's seconds per turn, from the zero-cost runs (the median over the pools)
    c = statistics.median(1 / row["zero_cost"] for row in sim["rows"])

    def lockstep_model(n: float) -> float:  # a round: the actors' steps, then the driver's
        return 1 / (1 / (n * per_actor) + c)

    def pipelined_model(n: float) -> float:  # the driver works while the actors step
        return min(n * per_actor, 1 / c)

    lines = [
        "# Ray executor: scaling out the environments",
        "",
        "Generated by `python benchmarks/ray_scaling.py` (also `make bench`); do not edit by "
        "hand. Raw figures: `ray_scaling.json`.",
        "",
        f"Machine: {data['machine']}; a local Ray instance with every core "
        f"(`ray.init` took {data['ray_init_seconds']:.1f} s). Scripted players; every "
        f"configuration plays the same seeds; times are medians of {data['repeats']} runs on "
        "warm workers (`RayExecutor(keep_workers=True)`, as a training loop keeps them); "
        "'cold start' is the first rollout of a fresh pool (actors started, first env copies "
        "built) and is not in the medians.",
        "",
        "## CPU-bound steps: CoopCoding-v0",
        "",
        f"{data['coding']['episodes']} episodes per run; each step runs the tests in the "
        f"sandbox (a scripted episode is {turns_per_episode:g} turns, about "
        f"{1000 / (one_thread * turns_per_episode):.1f} ms per turn on one thread). "
        "A Ray worker "
        "reserves one CPU and steps its envs on one thread per CPU it reserves; the local "
        "executor steps them on up to 8 threads of its own (`local`), or on 1 or 2 "
        "(`local-N-threads`: the machine's own scaling of the same work, for reference).",
        "",
        "| batch size | executor | episodes/s | wall s | cold start s | same records as local |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for batch_size, rows in by_batch.items():
        for name, row in rows.items():
            cold = f"{row['cold_start']:.2f}" if "cold_start" in row else "-"
            lines.append(
                f"| {batch_size} | {name} | {row['episodes_per_s']:.1f} | {row['wall']:.3f} | "
                f"{cold} | {'yes' if row['same_records_as_local'] else 'NO'} |"
            )
    passed = [b for b, v in speedups.items() if v >= 1.7]
    if len(passed) == len(speedups):
        verdict = "met at every batch size"
    elif passed:
        verdict = "met at batch size " + ", ".join(map(str, passed)) + " only"
    else:
        verdict = "NOT met"
    ratios = ", ".join(f"{v:.4f}x at batch size {b}" for b, v in speedups.items())
    lines += [
        "",
        f"**2 workers / 1 worker: {ratios}** (target >= 1.7x: {verdict}; this ratio "
        "moves by about 0.2 from run to run on this machine). The machine's own ceiling, "
        "measured in the same run: two processes "
        "running a pure-Python loop at once do "
        f"{data['machine_scaling']['ratio']:.2f}x the work of one (median of "
        f"{len(data['machine_scaling']['ratios'])}; "
        + ", ".join(f"{r:.2f}" for r in data["machine_scaling"]["ratios"])
        + "): with both cores busy each runs slower (clock, shared caches, the host). "
        "For reference, the local executor's 2 threads / 1 thread on the same "
        "work: "
        + ", ".join(
            f"{rows['local-2-threads']['episodes_per_s'] / rows['local-1-threads']['episodes_per_s']:.2f}x"
            f" at batch size {b}"
            for b, rows in by_batch.items()
        )
        + ". Each step starts a sandboxed process (new namespaces, a minimal root, "
        "seccomp) to run a few milliseconds of tests; the same work on the local executor's "
        "two threads scales no better than on two Ray workers, so here the bound is this "
        "work on this machine, not the executor.",
        "",
        "## Cheap steps: GSM8K-v0",
        "",
        f"{episodes} episodes, batch size {data['gsm8k']['batch_size']}. The local "
        "executor makes its copies in every rollout (as `rollout` always does: "
        f"{gsm8k['local']['making_copies']:.3f} s of its wall time here); warm Ray workers "
        "keep theirs from one rollout to the next, as a training loop would.",
        "",
        "| executor | wall s | x local | overhead per episode (ms) | cold start s | "
        "same records as local |",
        "|---|---:|---:|---:|---:|---|",
    ]
    local = gsm8k["local"]["wall"]
    for name, row in gsm8k.items():
        cold = f"{row['cold_start']:.2f}" if "cold_start" in row else "-"
        lines.append(
            f"| {name} | {row['wall']:.3f} | {row['wall'] / local:.2f} | "
            f"{1000 * (row['wall'] - local) / episodes:.3f} | {cold} | "
            f"{'yes' if row['same_records_as_local'] else 'NO'} |"
        )
    worst = max(gsm8k[n]["wall"] for n in gsm8k if n != "local") / local
    lines += [
        "",
        f"**Ray path / local: at most {worst:.2f}x the wall time** (target <= 2x: "
        f"{'met' if worst <= 2 else 'NOT met'}).",
    ]
    lines += _cluster_lines(data.get("cluster"), data)
    lines += [
        "",
        "## Bytes per turn",
        "",
        "Pickled (protocol 5, as Ray sends them) per turn: the request (slot and action) and "
        "the answer (the `EnvUpdate`: every `last()` up to the next live turn, with the next "
        "prompt and the infos).",
        "",
        "| env | request bytes | answer bytes |",
        "|---|---:|---:|",
    ]
    for name, row in data["bytes_per_turn"].items():
        lines.append(f"| {name} | {row['request_bytes']:.0f} | {row['answer_bytes']:.0f} |")
    lines += [
        "",
        "## A scaling model, and its check",
        "",
        "One driver runs the engine and the policies; each actor steps its shard. Let `r` be "
        "the turns per second one actor steps (`1 / step cost`, times its threads for heavy "
        "steps) and `c` the driver's seconds per turn (engine bookkeeping, the Ray call, "
        "unpickling the answer). In **lockstep** (the default: the engine asks the policies "
        "once every shard has answered, so batches are the local executor's) a round is the "
        "actors' steps, then the driver's share, one after the other; **pipelined** "
        "(`lockstep=False`) the driver works while the actors step:",
        "",
        "    lockstep:   turns/s = 1 / (1 / (N r) + c)",
        "    pipelined:  turns/s = min(N r, 1 / c)",
        "",
        f"Measured here: `c` = {1e6 * c:.0f} us per turn (`1 / c` = {1 / c:.0f} turns/s; the "
        "median over the pools below of a synthetic env whose steps cost nothing). In "
        "lockstep the actors run at 80% of their rate or better while the driver's share "
        "of a round stays under a fifth: up to `N = 1 / (4 c r)` actors; past it each "
        "actor added brings less.",
        "",
        f"The check: a synthetic env whose step sleeps {1000 * sim['cost']:.0f} ms "
        f"(`r` = {per_actor:.0f} turns/s; sleeping, so the actors use no CPU here, as if "
        f"each had a machine of its own), {sim['slots_per_actor']} slots per actor, "
        f"{sim['episodes_per_actor']} episodes of {sim['turns_per_episode']} turns per actor, "
        "on actors that reserve no CPU:",
        "",
        "| actors | lockstep: model | measured | measured / model | slots per call | "
        "pipelined: model | measured | measured / model | slots per call | zero-cost steps |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in sim["rows"]:
        n = row["actors"]
        lines.append(
            f"| {n} | {lockstep_model(n):.0f} | {row['lockstep']:.0f} | "
            f"{row['lockstep'] / lockstep_model(n):.2f} | "
            f"{row.get('lockstep_slots_per_call', float('nan')):.1f} | "
            f"{pipelined_model(n):.0f} | "
            f"{row['pipelined']:.0f} | {row['pipelined'] / pipelined_model(n):.2f} | "
            f"{row.get('pipelined_slots_per_call', float('nan')):.1f} | "
            f"{row['zero_cost']:.0f} |"
        )
    worst = max(abs(1 - r["lockstep"] / lockstep_model(r["actors"])) for r in sim["rows"])
    lines += [
        "",
        f"**Lockstep follows its model** within {100 * worst:.0f}% over the range: one "
        f"driver feeds about {1 / (4 * c * per_actor):.0f} actors of "
        f"{1000 * sim['cost']:.0f} ms steps at 80% of their rate. **Pipelined falls behind "
        "its model** past a few actors, and the 'slots per call' columns say why: without "
        "rounds, the slots of a shard drift apart (an episode that ends resets alone, then "
        "steps alone, and nothing brings it back into its shard's batch), so calls carry "
        "fewer and fewer slots while each still costs the driver a whole call; the model's "
        "constant `c` per turn leaves that out. Lockstep re-forms full batches every round, "
        "so with this engine it is also the faster mode at scale. (Merging the steps queued "
        "for a busy shard into its next call would stop the drift; not built.)",
    ]
    coding_rate = coding["ray-1"]["episodes_per_s"]
    coding_turns = coding["ray-1"]["turns"] / data["coding"]["episodes"]
    r_code = coding_rate * coding_turns
    lines += [
        "",
        f"For CoopCoding (one worker steps {r_code:.0f} turns/s per CPU it reserves) the "
        f"lockstep model says one driver feeds about {1 / (4 * c * r_code):.0f} one-CPU "
        "workers at 80% of their rate; beyond, the driver, not the sandboxes, sets the "
        "rate: run several drivers (one per group of workers). GSM8K's steps cost almost "
        "nothing, so its rollouts are driver-bound from the first worker and gain nothing "
        "from more (the table above).",
        "",
        "**With a vLLM policy** (an `openai:` spec pointing at a vLLM server) the driver also "
        "sends each turn's prompt and parses its answer: its cost per turn becomes `c + h`, "
        "with `h` the HTTP client's cost per request, and the generation server adds its own "
        "ceiling `g` (turns/s it can serve). In lockstep a round is then the actors' "
        "steps, the generation and the driver's share one after another: `1 / turns/s = "
        "1 / (N r) + 1 / g + c + h`. For "
        "cheap envs the limit is then `g`: scale the servers (more vLLM replicas, one policy "
        "client each), not the env actors; for costly envs (code execution) `N r` stays the "
        "limit until `N` reaches `g / r`. `h` and `g` were not measured here (no GPU, no vLLM "
        "on this machine).",
        "",
        "Caveats: the driver and the actors share this machine's cores, so `c` includes "
        "contention that a driver on its own machine would not see; the simulated actors "
        "sleep instead of computing, standing in for machines of their own.",
    ]
    _plot(sim, lockstep_model, pipelined_model, out)
    lines += ["", f"![throughput against actors]({out.name}.png)", ""]
    out.with_suffix(".md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {out.with_suffix('.md')}")


def _cluster_lines(cluster: dict | None, data: dict) -> list[str]:
    """The two-node section (empty before it was measured)."""
    if not cluster:
        return []
    one, two = cluster["one node"], cluster["two nodes"]
    lost = two["lost_node"]
    names = [name for name in one if isinstance(one[name], dict)]
    lines = [
        "",
        "## A cluster of two nodes",
        "",
        "The same rollouts with 2 workers (one CPU each) on a cluster of one node (`ray start "
        "--head --num-cpus=2`) and on one of two nodes (`ray start` twice, one CPU each: each "
        "node with its own raylet and object store), both on this machine, with Ray's default "
        "health checks; the driver joins each by address, as a user's would. Both share its two "
        "cores: the figures show what the cluster path costs, not what a second machine "
        f"brings. Medians of {cluster['repeats']} runs on warm workers; 'start-up' is the first "
        "rollout of a fresh pool (4 episodes: actors placed, first env copies built).",
        "",
        "| rollout | where | episodes/s | wall s | start-up s | nodes used | same records as local |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for name in names:
        for where, row in (("one node", one[name]), ("two nodes", two[name])):
            lines.append(
                f"| {name} | {where} | {row['episodes_per_s']:.1f} | {row['wall']:.3f} | "
                f"{row['cold_start']:.2f} | {row['nodes']} | "
                f"{'yes' if row['same_records_as_local'] else 'NO'} |"
            )
    ratios = ", ".join(
        f"{name} {two[name]['episodes_per_s'] / one[name]['episodes_per_s']:.2f}x" for name in names
    )
    runs = lost["runs"]
    extra = lost["wall"] - lost["wall_without_loss"]
    same = all(run["same_records_as_local"] for run in runs)
    counts = sorted({(run["failures"], run["live_workers"]) for run in runs})
    walls = ", ".join(f"{run['wall']:.2f}" for run in runs)
    lines += [
        "",
        f"**Two nodes / one node: {ratios}** of the episodes per second. Bringing the "
        f"cluster up: {one['ray_up']:.1f} s for one node, {two['ray_up']:.1f} s for two (each "
        "`ray start` waited for until the head lists its node, and the driver joined).",
        "",
        f"**A lost node.** {lost['episodes']} CoopCoding episodes on both nodes; the second "
        "node's processes (its raylet and its workers) are killed with SIGKILL, as a lost "
        f"machine ends them, after {lost['lost_after_turns']} turns; {len(runs)} runs, the "
        "node started again between them. Median wall time "
        f"{lost['wall']:.2f} s against {lost['wall_without_loss']:.2f} s without a loss "
        f"(+{extra:.2f} s; runs: {walls} s). "
        f"The longest wait for a turn after the loss was {lost['stall']:.1f} s (median): "
        "Ray telling the driver that the worker is gone, the driver looking for room "
        f"for a replacement for up to {ROOM_SECONDS:g} s (none: Ray's default health checks "
        "have not yet declared the node dead, and its CPU, reserved by the dead worker, is "
        "not seen free again), then dropping the worker and replaying its unfinished episodes "
        "on the worker left, which plays the rest alone. (failures, workers left) per run: "
        f"{counts}; records {'equal to' if same else 'DIFFERENT from'} the local run's in "
        f"{'every run' if same else 'some runs'}.",
    ]
    return lines


def _plot(sim: dict, lockstep_model, pipelined_model, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    actors = [row["actors"] for row in sim["rows"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    modes = (
        ("lockstep", lockstep_model, "1/(1/(N r) + c)", "C0", "o-"),
        ("pipelined", pipelined_model, "min(N r, 1/c)", "C1", "s-"),
    )
    for mode, model, formula, color, marker in modes:
        ax.plot(
            actors,
            [model(n) for n in actors],
            "--",
            color=color,
            alpha=0.7,
            label=f"{mode}: model {formula}",
        )
        ax.plot(
            actors,
            [row[mode] for row in sim["rows"]],
            marker,
            color=color,
            label=f"{mode}: measured",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("Ray actors")
    ax.set_ylabel("turns per second")
    ax.set_title(f"synthetic step of {1000 * sim['cost']:.0f} ms per turn")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
