"""The benchmark's ``llm-marl`` subcommand ``eval``, and the option groups its
siblings share (server transport, placement, executors).

``llm-marl eval SUITE (--policy SPEC | --team SEAT=SPEC ... | --pairings SPEC ...) [--tasks NAME ...] [--out DIR]``
    Plays a frozen evaluation suite (``lite``, ``full``, an older version such as ``lite-v1``,
    or a suite YAML file) with one policy in every seat or a team (a spec per seat index or
    agent name), with a progress bar per task; writes per-episode JSONL and ``results.json``
    (scores with 95% bootstrap intervals and a manifest). Run the same command again to resume
    a stopped evaluation.
    ``--pairings A B ...`` plays cross-play instead (:mod:`llm_marl_envs.evaluation.pairings`):
    solo, homogeneous and heterogeneous pairs in both seat orders, into ``crossplay.json``.
The board's own subcommand, ``llm-marl leaderboard``, lives in
:mod:`llm_marl_envs.cli.leaderboard`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "add_batch_size_option",
    "add_eval_parser",
    "add_placement_options",
    "add_server_options",
    "os_error",
    "placement",
    "run_eval",
    "server_options",
]


def add_eval_parser(sub) -> None:
    from llm_marl_envs.policies.specs import POLICY_SPECS

    p_eval = sub.add_parser(
        "eval",
        help="evaluate a policy or a team on a frozen benchmark suite",
        description="Play a frozen evaluation suite and write scored, resumable results.",
    )
    p_eval.add_argument(
        "suite",
        help="a packaged suite (lite, full: the newest versions; lite-v1, full-v1: older ones) or a suite YAML file",
    )
    who = p_eval.add_mutually_exclusive_group(required=True)
    who.add_argument("--policy", help=f"the policy of every seat: {', '.join(POLICY_SPECS)}")
    who.add_argument(
        "--team",
        nargs="+",
        metavar="SEAT=SPEC",
        help="a policy per seat: 0=SPEC 1=SPEC (seats cycle, so two specs alternate) and/or "
        "AGENT=SPEC",
    )
    who.add_argument(
        "--pairings",
        nargs="+",
        metavar="SPEC",
        help="cross-play of these models: solo, homogeneous and heterogeneous pairs in both "
        "seat orders; a matrix, collaboration gaps and seat-order effects per task",
    )
    p_eval.add_argument("--tasks", nargs="+", metavar="NAME", help="only these tasks")
    p_eval.add_argument(
        "--out", default=None, help="output folder (default: results/<suite>-<team>)"
    )
    p_eval.add_argument("--name", default=None, help="the entry's name (default: the team)")
    add_batch_size_option(p_eval, "episodes played in lockstep per task (a task's items x samples)")
    p_eval.add_argument(
        "--data",
        nargs="+",
        metavar="TASK=PATH",
        help="read a task's data from a local copy in the Hub's schema (the full suite)",
    )
    add_placement_options(p_eval)
    add_server_options(p_eval)
    p_eval.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_executor_options(p_eval)


def add_placement_options(parser) -> None:
    """``--device``, ``--dtype`` and ``--compile``: where model policies run (``rollout``,
    ``play``, ``demo``, ``eval``, ``leaderboard verify``); an ``openai:`` server ignores them."""
    parser.add_argument(
        "--device",
        default="auto",
        help="where models run: auto (CUDA when available, else the CPU; default), cpu, cuda, "
        "cuda:N",
    )
    parser.add_argument(
        "--dtype",
        default="auto",
        help="model weights: auto (bfloat16 on a GPU that has it, float32 on the CPU; "
        "default), float32, bfloat16 (bf16), float16",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="generate with a static KV cache and torch.compile (CUDA only; the first calls "
        "pay the compile)",
    )


def add_server_options(parser) -> None:
    """``--concurrency``, ``--timeout`` and ``--retries``: how requests travel to an ``openai:``
    server seat (``rollout``, ``play``, ``demo``, ``eval``, ``leaderboard verify``). Transport
    settings, not part of what is played: a resumed evaluation may change them. A spec can
    carry its own: ``openai:URL#MODEL?concurrency=4&timeout=120&retries=2``."""
    parser.add_argument(
        "--concurrency",
        type=_positive_int,
        default=None,
        metavar="N",
        help="openai: seats: most requests in flight at once; how many are adapts to the server "
        "below it (starts at 2, grows while answers keep their pace, halves on a timeout; "
        "default: the batch size)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=None,
        metavar="S",
        help="openai: seats: total seconds one request attempt may take (connect, queue, the "
        "whole answer); default 30 s plus 0.25 s per token of the turn's budget",
    )
    parser.add_argument(
        "--retries",
        type=_non_negative_int,
        default=3,
        metavar="N",
        help="openai: seats: retries after a timeout, connection error, HTTP 429 or 5xx "
        "(default 3)",
    )


def server_options(args: argparse.Namespace, batch_size: int | None = None) -> dict:
    """The ``OpenAIPolicy`` arguments of :func:`add_server_options`' options (``concurrency``
    defaults to ``batch_size`` where one is given)."""
    options = {"timeout": args.timeout, "max_retries": args.retries}
    if args.concurrency is not None or batch_size is not None:
        options["concurrency"] = args.concurrency or batch_size
    return options


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return int(text)


def _non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return int(text)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def placement(args: argparse.Namespace) -> dict:
    """The ``device``, ``dtype`` and ``compile`` fields of a ``GenerationConfig`` from
    :func:`add_placement_options`' options."""
    return {"device": args.device, "dtype": args.dtype, "compile": args.compile}


def add_batch_size_option(parser, help: str) -> None:
    """``--batch-size auto|N`` (rollout and eval): auto is 8 on the CPU and 256 on a GPU, whose
    model policies split each call into micro-batches that fit its free memory
    (:func:`~llm_marl_envs.policies.generation.resolve_batch_size`)."""
    parser.add_argument(
        "--batch-size",
        type=_batch_size,
        default="auto",
        metavar="auto|N",
        help=f"{help}; auto (default): 8 on the CPU, 256 on a GPU (each model call split into "
        "micro-batches that fit its free memory)",
    )


def _batch_size(text: str) -> int | str:
    if text == "auto":
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be auto or an int >= 1, got {text}")
    return int(text)


def add_executor_options(parser) -> None:
    """``--executor local|ray``, ``--num-workers N`` and the ``--ray-*`` cluster options
    (rollout and eval)."""
    parser.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="where the environments step: in this process (local), or in shards on Ray "
        "actors (ray; needs the ray extra; joins RAY_ADDRESS's cluster or starts a local one)",
    )
    parser.add_argument(
        "--num-workers",
        type=int,
        default=None,
        metavar="N",
        help="Ray actors holding the environments (--executor ray; default: one per CPU)",
    )
    ray = parser.add_argument_group("Ray cluster (--executor ray; docs/ray.md)")
    ray.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="the cluster to join: HOST:PORT of its head, ray://HOST:PORT, or auto (the one "
        "`ray start` started on this machine); default: RAY_ADDRESS, else a local Ray",
    )
    ray.add_argument(
        "--ray-runtime-env",
        metavar="FILE",
        help="a JSON or YAML file with the workers' runtime_env (e.g. pip: [llm-marl-envs[ray]], "
        "or working_dir), for nodes that do not have the package installed",
    )
    ray.add_argument(
        "--ray-resources",
        metavar="KEY=N[,KEY=N]",
        help="what each worker reserves: CPU, GPU or a custom resource (a JSON object works "
        "too); default: one CPU",
    )
    ray.add_argument(
        "--ray-start-timeout",
        type=float,
        metavar="S",
        help="seconds the workers have to start (default 300); then one line saying what the "
        "cluster had free",
    )
    ray.add_argument(
        "--ray-max-worker-failures",
        type=int,
        metavar="N",
        help="worker deaths tolerated in one rollout (default: twice the workers)",
    )


_RAY_OPTIONS = (
    "ray_address",
    "ray_runtime_env",
    "ray_resources",
    "ray_start_timeout",
    "ray_max_worker_failures",
)


def executor_options(args: argparse.Namespace) -> dict:
    """The ``executor`` / ``num_workers`` arguments of ``rollout`` / ``evaluate``: a
    :class:`~llm_marl_envs.rollout.ray_executor.RayExecutor` built from the ``--ray-*``
    options for ``--executor ray``."""
    given = [name for name in _RAY_OPTIONS if getattr(args, name, None) is not None]
    if args.num_workers is not None and args.executor != "ray":
        raise ValueError("--num-workers applies to --executor ray")
    if given and args.executor != "ray":
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ValueError(f"{flags} apply to --executor ray")
    if args.num_workers is not None and args.num_workers < 1:
        raise ValueError("--num-workers must be at least 1")
    if args.executor != "ray":
        return {}
    from llm_marl_envs.rollout.ray_executor import RayExecutor, import_ray

    import_ray()  # without the extra: a one-line error naming it, before any work
    if args.ray_start_timeout is not None and not args.ray_start_timeout > 0:
        raise ValueError(f"--ray-start-timeout must be positive, got {args.ray_start_timeout}")
    if args.ray_max_worker_failures is not None and args.ray_max_worker_failures < 0:
        raise ValueError("--ray-max-worker-failures must be at least 0")
    actor_options: dict = {}
    if args.ray_runtime_env is not None:
        actor_options["runtime_env"] = _runtime_env(args.ray_runtime_env)
    cpus = 1.0
    if args.ray_resources is not None:
        resources = _resources(args.ray_resources)
        cpus = resources.pop("CPU", cpus)
        if "GPU" in resources:
            actor_options["num_gpus"] = resources.pop("GPU")
        if resources:
            actor_options["resources"] = resources
    executor = RayExecutor(
        args.num_workers,
        cpus_per_worker=cpus,
        address=args.ray_address,
        max_worker_failures=args.ray_max_worker_failures,
        actor_options=actor_options,
        start_timeout=300.0 if args.ray_start_timeout is None else args.ray_start_timeout,
    )
    return {"executor": executor}


def _runtime_env(path: str) -> dict:
    """A runtime_env from a JSON or YAML file (a mapping), or a one-line ValueError."""
    import yaml

    file = Path(path)
    if not file.is_file():
        raise ValueError(f"--ray-runtime-env {path}: no such file")
    try:
        loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"--ray-runtime-env {path} is not JSON or YAML: {first}") from None
    if not isinstance(loaded, dict):
        raise ValueError(
            f"--ray-runtime-env {path} must hold a mapping (e.g. pip: [...], working_dir: ...)"
        )
    return loaded


def _resources(text: str) -> dict[str, float]:
    """``--ray-resources``: ``KEY=N[,KEY=N]`` or a JSON object of non-negative numbers."""
    text = text.strip()
    if text.startswith("{"):
        try:
            pairs = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"--ray-resources {text!r} is not a JSON object: {error}") from None
        if not isinstance(pairs, dict):
            raise ValueError(f"--ray-resources {text!r} must be an object")
        items = list(pairs.items())
    else:
        items = [part.partition("=")[::2] for part in text.split(",") if part.strip()]
    resources: dict[str, float] = {}
    for key, value in items:
        key = str(key).strip()
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not key or not number >= 0 or number == float("inf"):
            raise ValueError(
                f"--ray-resources: {key}={value} must be a name and a number >= 0 "
                "(e.g. CPU=2,GPU=1 or custom_resource=1)"
            )
        resources[key] = number
    return resources


def run_eval(args: argparse.Namespace) -> int:
    """``llm-marl eval``: 0 when done, 130 on Ctrl-C (the finished episodes are kept)."""
    from llm_marl_envs.evaluation.evaluate import Team, evaluate
    from llm_marl_envs.evaluation.run_folder import RESULTS_FILE, slug
    from llm_marl_envs.evaluation.suite import load_suite
    from llm_marl_envs.policies import GenerationConfig
    from llm_marl_envs.policies.generation import resolve_batch_size
    from llm_marl_envs.registry import parse_assignments

    args.batch_size = resolve_batch_size(args.batch_size, args.device)  # cross-play's too
    suite = load_suite(args.suite)
    if args.data:
        suite = suite.with_data_sources(
            {k: str(v) for k, v in parse_assignments(args.data, "--data").items()}
        )
    generation = GenerationConfig(**placement(args))  # the suite sets the rest, per task
    where = executor_options(args)
    if args.pairings:
        return _run_pairings(args, suite, generation, where)
    team = Team.parse(args.policy, args.team)
    out = Path(args.out or f"results/{suite.label}-{slug(team.label, 'team', sep='_')}")
    status, results = _resumable(
        out,
        lambda: evaluate(
            suite,
            team,
            out,
            tasks=args.tasks,
            batch_size=args.batch_size,
            progress=False if args.no_progress else None,
            entry=args.name,
            generation=generation,
            server_options=server_options(args, args.batch_size),
            **where,
        ),
    )
    if status is not None:
        return status
    print(summary(results))
    print(f"results: {out / RESULTS_FILE}")
    return 0


def _run_pairings(args: argparse.Namespace, suite, generation, where: dict) -> int:
    from llm_marl_envs.evaluation.pairings import run_pairings

    out = Path(args.out or f"results/{suite.label}-crossplay")
    status, table = _resumable(
        out,
        lambda: run_pairings(
            suite,
            args.pairings,
            out,
            tasks=args.tasks,
            batch_size=args.batch_size,
            progress=False if args.no_progress else None,
            generation=generation,
            server_options=server_options(args, args.batch_size),
            **where,
        ),
    )
    if status is not None:
        return status
    print(crossplay_summary(table))
    print(f"cross-play: {out / 'crossplay.json'}")
    return 0


def _resumable(out: Path, play: Callable[[], Any]) -> tuple[int | None, Any]:
    """``(None, play())``, or the exit status of an evaluation stopped by Ctrl-C (130) or a
    failing rollout (1), whose finished episodes stay in ``out`` for the same command to
    resume."""
    from llm_marl_envs.rollout.engine import RolloutError, RolloutInterrupted
    from llm_marl_envs.rollout.executors import ExecutorLostError

    try:
        return None, play()
    except (RolloutInterrupted, KeyboardInterrupt):
        print(
            f"eval stopped: interrupted (Ctrl-C); finished episodes are kept in {out}; "
            "run the same command to resume"
        )
        return 130, None
    except (RolloutError, ExecutorLostError) as error:  # a policy, or the Ray cluster
        print(f"eval stopped: {error}; run the same command to resume")
        return 1, None
    except OSError as error:  # disk full, a read-only folder: finished episodes are kept
        if isinstance(error, FileNotFoundError):
            raise
        print(f"eval stopped: {os_error(error)}; run the same command to resume")
        return 1, None


def os_error(error: OSError) -> str:
    """A failed write as one line: the file and the reason (disk full, read-only, ...)."""
    where = f" {error.filename}" if error.filename else ""
    reason = error.strerror or str(error) or type(error).__name__
    return f"cannot write{where}: {reason} (free some space or fix the folder's permissions)"


def _cell(value: dict | None) -> str:
    if value is None:
        return "-"
    return f"{value['mean']:+.3f} [{value['lo']:+.3f}, {value['hi']:+.3f}]"


def crossplay_summary(table: dict) -> str:
    """Each task's cross-play matrix, collaboration gaps and seat-order effects, as text."""
    lines = []
    for task, block in table.items():
        models = block["models"]
        lines += [
            "",
            f"{task} ({block['primary']} on 0..1; row: seat 0 {block['seats'][0]}, "
            f"column: seat 1 {block['seats'][-1]})",
        ]
        width = max(len(m) for m in models)
        for model, row in zip(models, block["matrix"], strict=True):
            cells = "  ".join(_cell(v).strip() for v in row)
            lines.append(f"  {model.ljust(width)}  {cells}")
        for model, gap in block["gap"].items():
            lines.append(f"  collaboration gap {model}: {_cell(gap)} (pair - solo)")
        for pair, effect in block["seat_order"].items():
            first, second = pair.split("|")
            lines.append(f"  seat order {first} first vs {second} first: {_cell(effect)}")
    return "\n".join(lines).lstrip("\n")


def summary(results: dict) -> str:
    """The scores of a result as a small table (task, primary metric, mean [lo, hi], n)."""
    rows = [("task", "metric", "mean", "95% interval", "n")]
    for name, task in results["tasks"].items():
        value = task["metrics"][task["primary"]]
        if value is None:
            rows.append((name, task["primary"], "-", "-", "0"))
            continue
        rows.append(
            (
                name,
                task["primary"],
                f"{value['mean']:.3f}",
                f"[{value['lo']:.3f}, {value['hi']:.3f}]",
                str(value["n"]),
            )
        )
    overall = results.get("overall")
    if overall:
        rows.append(
            (
                "overall",
                "score 0..1",
                f"{overall['mean']:.3f}",
                f"[{overall['lo']:.3f}, {overall['hi']:.3f}]",
                str(overall["n"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return f"{results['entry']} on {results['suite']['name']}-v{results['suite']['version']}\n" + (
        "\n".join(line.rstrip() for line in lines)
    )
