"""The option groups the ``llm-marl`` subcommands share, and what each group's options give.

Each ``add_*`` function adds a group to a subcommand's parser; its reader turns the parsed
options back into the arguments the package takes: :func:`placement` and
:func:`generation_config` (a :class:`~llm_marl_envs.policies.GenerationConfig`),
:func:`server_options` (how requests travel to an ``openai:`` seat) and
:func:`executor_options` (where the environments step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import argparse
import json
from pathlib import Path

from llm_marl_envs.policies import GenerationConfig
from llm_marl_envs.policies.specs import POLICY_SPECS

if TYPE_CHECKING:
    from llm_marl_envs.policies.openai.options import ServerOptions

__all__ = [
    "add_batch_size_option",
    "add_env_options",
    "add_executor_options",
    "add_model_options",
    "add_placement_options",
    "add_server_options",
    "byte_size",
    "executor_options",
    "generation_config",
    "placement",
    "server_options",
]


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


def placement(args: argparse.Namespace) -> dict:
    """The ``device``, ``dtype`` and ``compile`` fields of a ``GenerationConfig`` from
    :func:`add_placement_options`' options."""
    return {"device": args.device, "dtype": args.dtype, "compile": args.compile}


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """``--max-new-tokens``, ``--temperature``, ``--top-p`` and the placement options: how
    model policies generate (``rollout``, ``play``, ``demo``); read by :func:`generation_config`."""
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="tokens a model may write per turn (default: the environment's budget, the "
        "'tokens' line of llm-marl list)",
    )
    parser.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature; 0 = greedy (default)"
    )
    parser.add_argument(
        "--top-p", type=float, default=1.0, help="nucleus sampling (with --temperature > 0)"
    )
    add_placement_options(parser)


def generation_config(args: argparse.Namespace) -> GenerationConfig:
    """Model settings from the command line (temperature 0 = greedy; where models run:
    ``--device``, ``--dtype``, ``--compile``). Without ``--max-new-tokens`` the budget is each
    environment's (the policy factory sets it)."""
    sampling = args.temperature > 0
    return GenerationConfig(
        max_new_tokens=args.max_new_tokens,
        do_sample=sampling,
        temperature=args.temperature if sampling else 1.0,
        top_p=args.top_p if sampling else 1.0,
        **placement(args),
    )


def add_env_options(parser: argparse.ArgumentParser) -> None:
    """``ENV_ID``, ``--policy``, ``--agent AGENT=SPEC``, ``--env-arg`` and ``--seed``: what
    ``rollout`` and ``play`` play (the ``--env-arg`` syntax:
    :func:`~llm_marl_envs.registry.parse_env_args`)."""
    parser.add_argument("env_id", help="a registered id, e.g. llm_marl_envs/MazeCollab-v0")
    parser.add_argument(
        "--policy", default="default", help=f"policy of every agent: {', '.join(POLICY_SPECS)}"
    )
    parser.add_argument(
        "--agent",
        action="append",
        metavar="AGENT=SPEC",
        help="a different policy for one agent (repeatable)",
    )
    parser.add_argument(
        "--env-arg",
        "--env-kwargs",
        dest="env_arg",
        action="append",
        metavar="KEY=VALUE",
        help="environment arguments, the trainers' syntax: KEY=VALUE (YAML value), several "
        "separated by commas, or a JSON object; repeatable",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode")


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


def server_options(args: argparse.Namespace, batch_size: int | None = None) -> ServerOptions:
    """The :class:`~llm_marl_envs.policies.openai.ServerOptions` of
    :func:`add_server_options`' options, built once and passed whole (``concurrency``
    defaults to ``batch_size`` where one is given, else to ServerOptions')."""
    from llm_marl_envs.policies.openai.options import ServerOptions

    concurrency = args.concurrency or batch_size
    given = {} if concurrency is None else {"concurrency": concurrency}
    return ServerOptions(timeout=args.timeout, max_retries=args.retries, **given)


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


def byte_size(text: str) -> int:
    """Bytes, with an optional K, M or G suffix (powers of 1024): ``32M``, ``500000``."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    scale = units.get(text[-1:].upper(), 1)
    try:
        value = int(float(text[:-1] if scale > 1 else text) * scale)
    except (ValueError, OverflowError):  # not a number, NaN, inf
        raise argparse.ArgumentTypeError(f"must be a size like 500000 or 32M, got {text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text}")
    return value


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
    :class:`~llm_marl_envs.rollout.ray.RayExecutor` built from the ``--ray-*``
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
    from llm_marl_envs.rollout.ray import RayExecutor, import_ray

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
