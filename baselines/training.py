"""The trainer skeleton that ``cory.py`` and ``magrpo.py`` share, so that each stays one file of
algorithm: the command line, the checkpoint of a run and the check of its ``--resume``, the
JSONL logs and the curves.

* **Command line.** :func:`cli` parses a trainer's ``Args`` dataclass with tyro (as CleanRL
  does): one ``--kebab-case`` option per field, ``--flag`` / ``--no-flag`` for booleans, the
  docstring under each field as its help, its default shown; :data:`JsonDict` reads
  environment arguments in ``llm-marl``'s syntax (``--env-kwargs difficulty=2`` or a JSON
  object ``'{"difficulty": 2}'``); :data:`AutoFlag` is a ``--flag`` / ``--no-flag`` pair whose
  default (None) the device decides.
* **Device.** :class:`Compute` is where a run computes (``--device``: ``auto``, ``cpu``,
  ``cuda``, ``cuda:N``; an absent device is refused in one line naming the devices there) and
  whether its scoring and training passes run under bf16 autocast (``--bf16-autocast``; by
  default on a CUDA device that has bf16, off on the CPU): the autocast context for that
  device, the line the plan prints, and the peak GPU memory of an iteration.
* **Checkpoints.** :func:`save_checkpoint` writes ``<out-dir>/checkpoint/iteration-NNNNNN/``
  (``state.json`` with the next iteration, the args and the metrics so far, plus the trainer's
  extras; one ``learner_<name>.pt`` per learner, its tensors moved to the CPU, so a checkpoint
  written on a GPU is the one a CPU run writes; ``manifest.json``), atomically and checksummed,
  in the package's one checkpoint format (:mod:`llm_marl_envs.models.checkpoints`, which the
  ``ckpt:`` policy reads too); :func:`load_checkpoint` returns the newest one that verifies
  (a bad one costs one line on stderr and the previous one is tried), after
  :func:`check_resume` has compared its args with the run's.
* **Resume check.** :data:`RESUMABLE_CHANGES` are the arguments a ``--resume`` may change; any
  other difference is refused with one line (a ``SystemExit``) naming each flag and both values.
  :func:`check_weights` refuses, the same way, a checkpoint whose weights do not fit the model.
* **Logs.** :func:`write_log` (re)writes a JSONL log from a checkpoint's rows (lines logged
  after the checkpoint are dropped: the resumed run logs them again); :func:`append_log` adds
  one row.
* **Stops.** :class:`GracefulStop` turns SIGTERM (how a scheduler stops a job) and SIGINT
  (Ctrl-C) into a request the training loop reads between iterations: the run finishes the
  iteration in progress, saves a checkpoint and exits with one line saying where it saved and
  how to resume (status 128 + the signal: 143, 130); a second Ctrl-C stops at once, without a
  new checkpoint. A full or read-only disk while writing a checkpoint, a log or the curves ends
  in one line too (status 1); the previous checkpoint stays whole.
* **Curves.** :func:`plot_curves` draws the panels a trainer chooses (one line per metric key,
  optional std band, evaluation points, role-swap marks) into ``curves.png``.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, TypeVar

import docstring_parser  # tyro's own reader of field docstrings (a dependency of tyro)
import tyro

from llm_marl_envs.models import checkpoints
from llm_marl_envs.policies.generation import resolve_device, resolve_dtype_for
from llm_marl_envs.registry import parse_env_args

T = TypeVar("T")

#: Arguments that a ``--resume`` may change (each trainer has some of them): the length of the
#: run, how often it saves, where it writes, and where and in what precision it computes (a run
#: trained on a GPU resumes on the CPU); any other change is refused by :func:`check_resume`.
RESUMABLE_CHANGES = (
    "iterations",
    "resume",
    "checkpoint_every",
    "out_dir",
    "threads",
    "progress",
    "device",
    "bf16_autocast",
)


# --------------------------------------------------------------------------- command line
def _json_dict(text: list[str]) -> dict | None:
    """A JSON object, or KEY=VALUE pairs separated by commas: ``llm-marl --env-arg``'s syntax."""
    if text[0] in ("None", "null"):
        return None
    return parse_env_args(text[0])


#: A field type: a JSON object or ``KEY=VALUE,...`` on the command line (``None``: none given).
JsonDict = Annotated[
    dict | None,
    tyro.constructors.PrimitiveConstructorSpec(
        nargs=1,
        metavar="KEY=VALUE,...|JSON",
        instance_from_str=_json_dict,
        is_instance=lambda value: value is None or isinstance(value, dict),
        str_from_instance=lambda value: ["None" if value is None else json.dumps(value)],
    ),
]


#: A field type: a ``--flag`` / ``--no-flag`` pair whose default, None, leaves the choice to the
#: trainer (``--bf16-autocast``: on where the device has fast bf16).
AutoFlag = tyro.conf.DisallowNone[bool | None]


def cli(cls: type[T], argv: Sequence[str] | None, description: str) -> T:
    """``cls`` (an ``Args`` dataclass) from ``argv`` (None: ``sys.argv[1:]``) with tyro.

    tyro's defaults are the trainers' flags: ``--kebab-case`` names, ``--flag`` / ``--no-flag``
    pairs for booleans, the docstring under a field as its help (with the default). A bad
    command line prints the reason and exits with status 2 (``SystemExit``), as argparse does.
    """
    # tyro keeps the line breaks of a field docstring's indented lines: give it each docstring
    # as one paragraph, as the field's help (tyro reads dataclass metadata["help"] first)
    try:
        docs = {p.arg_name: p.description for p in docstring_parser.parse_from_object(cls).params}
    except (OSError, TypeError):  # no source to read (a module not in sys.modules): no help
        docs = {}
    for f in dataclasses.fields(cls):
        if docs.get(f.name) and "help" not in f.metadata:
            f.metadata = MappingProxyType({**f.metadata, "help": " ".join(docs[f.name].split())})
    return tyro.cli(cls, args=argv, description=description)


# --------------------------------------------------------------------------- device
@dataclass(frozen=True)
class Compute:
    """Where a trainer computes: the torch ``device`` of every model and tensor, and whether
    the scoring and training passes run under bf16 autocast (weights, optimizer states and
    generation stay float32)."""

    device: str
    bf16_autocast: bool

    @classmethod
    def of(cls, device: str, bf16_autocast: bool | None) -> Compute:
        """``--device`` and ``--bf16-autocast`` resolved: None autocasts where the device has
        fast bf16 (a CUDA device that supports it; never by default on the CPU, where the flag
        means what it always meant). An absent device exits with one line (``SystemExit``)."""
        try:
            resolved = resolve_device(device)
        except (ValueError, RuntimeError) as error:  # RuntimeError: torch's, for a bad name
            raise SystemExit(f"--device: {str(error).splitlines()[0]}") from None
        if bf16_autocast is None:
            bf16_autocast = resolve_dtype_for(resolved, "auto") == "bfloat16"
        compute = cls(resolved, bf16_autocast)
        if compute.bf16_autocast and compute.type == "cpu":
            warn_if_bf16_is_slow()
        return compute

    @property
    def type(self) -> str:
        """``"cpu"`` or ``"cuda"``: the device type that autocast and the memory counters take."""
        import torch

        return torch.device(self.device).type

    def autocast(self) -> Any:
        """The autocast context of the scoring and training passes (off: a no-op)."""
        import torch

        return torch.autocast(self.type, dtype=torch.bfloat16, enabled=self.bf16_autocast)

    def describe(self) -> str:
        """``"on cuda in bfloat16 autocast (weights float32)"``, ``"on cpu in float32"``: for
        the plan line."""
        precision = "bfloat16 autocast (weights float32)" if self.bf16_autocast else "float32"
        return f"on {self.device} in {precision}"

    def reset_peak_memory(self) -> None:
        """Start measuring an iteration's peak GPU memory (nothing to do on the CPU)."""
        if self.type == "cuda":
            import torch

            torch.cuda.reset_peak_memory_stats(self.device)

    def peak_memory_mb(self) -> float | None:
        """GPU memory allocated at most since :meth:`reset_peak_memory`, in MiB; None on the
        CPU (``peak_rss_mb`` measures that)."""
        if self.type != "cuda":
            return None
        import torch

        return torch.cuda.max_memory_allocated(self.device) / 2**20


def warn_if_bf16_is_slow() -> None:
    """Warn that ``--bf16-autocast`` on this CPU is emulated (when it is)."""
    from llm_marl_envs.models import cpu_bf16_is_fast

    if not cpu_bf16_is_fast():
        warnings.warn(
            "--bf16-autocast on a CPU without AVX512-BF16/AMX: torch emulates bf16 and "
            "training is many times slower than float32",
            stacklevel=3,  # the trainer's line that resolved its Compute
        )


# --------------------------------------------------------------------------- checkpoints, resume
def check_resume(saved: dict, given: dict, free: Iterable[str] = RESUMABLE_CHANGES) -> None:
    """Refuse (one line, no traceback) a resume whose arguments differ outside ``free``."""
    free = set(free)
    changed = {
        k: (saved.get(k), given.get(k))
        for k in sorted(set(saved) | set(given))
        if k not in free and saved.get(k) != given.get(k)
    }
    if changed:
        listed = ", ".join(
            f"--{k.replace('_', '-')} (checkpoint {a!r}, now {b!r})"
            for k, (a, b) in changed.items()
        )
        verb = "differs" if len(changed) == 1 else "differ"
        raise SystemExit(
            f"--resume: {listed} {verb} from the checkpoint's run; use the "
            "checkpoint's values, or a new --out-dir for a new run"
        )


def check_weights(saved: Iterable[str], expected: Iterable[str], args: Any) -> None:
    """Refuse (one line) a checkpoint whose trainable weights are not the model's."""
    if set(saved) != set(expected):
        raise SystemExit(
            f"--resume: the checkpoint's weights do not fit --model {args.model!r} "
            f"(lora={args.lora}); resume with the model it was trained from"
        )


def save_checkpoint(
    out_dir: Path,
    iteration: int,
    args: Any,
    metrics: list[dict],
    payloads: dict[str, Any],
    **extra: Any,
) -> None:
    """Everything ``--resume`` needs, as ``<out_dir>/checkpoint/iteration-<iteration>/``:
    ``state.json`` (the next iteration, the args, the metrics so far and ``extra``, JSON values
    only) and one ``<name>.pt`` per payload (its tensors on the CPU: :func:`on_cpu`), written
    atomically with a sha256 per file; the previous checkpoint stays as the fallback."""
    state = {"iteration": iteration, "args": dataclasses.asdict(args), "metrics": metrics, **extra}
    checkpoints.save(out_dir / "checkpoint", iteration, state, on_cpu(payloads))


def on_cpu(value: Any) -> Any:
    """``value`` with every tensor in it (in dicts, lists and tuples) detached and moved to the
    CPU: what a checkpoint holds, whichever device trained (a resume on another device moves
    it back with ``load_state_dict`` / ``copy_``)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: on_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(on_cpu(item) for item in value)
    return value


def load_checkpoint(out_dir: Path, args: Any) -> tuple[dict, dict[str, Any]] | None:
    """The state and payloads of the newest checkpoint in ``<out_dir>/checkpoint`` that
    verifies, its args checked against ``args`` (:func:`check_resume`); None when there is no
    good one (the run starts from scratch; :func:`load_latest` said why)."""
    found = load_latest(out_dir / "checkpoint")
    if found is not None:
        check_resume(found[0]["args"], dataclasses.asdict(args))
    return found


def note(message: str) -> None:
    """One line on stderr (not ``warnings.warn``: its source line would make it two)."""
    print(message, file=sys.stderr, flush=True)


def load_latest(root: Path) -> tuple[dict, dict[str, Any]] | None:
    """The state and payloads of the newest checkpoint under ``root`` that verifies, or None.

    Every bad checkpoint costs one line on stderr (the file and why, and what happens next);
    None comes with one line saying the run starts from scratch. Since every random stream of
    the trainers is derived from (seed, iteration), a resumed run, from whichever checkpoint or
    from scratch, logs the same metrics as an uninterrupted one."""
    found = checkpoints.finished(root)
    old = [p for p in (root / checkpoints.STATE, root / "state.pt") if p.is_file()]
    if not found and old:  # the unverifiable layout of earlier versions: refuse to overwrite it
        raise SystemExit(
            f"--resume: {old[0]} was written by an earlier version of this trainer "
            "(no checksums); resume it with that version, or move it away to start "
            "afresh"
        )
    if not found:
        note(f"--resume: no checkpoint in {root} yet; starting from scratch")
        return None
    for k, (_, folder) in enumerate(found):
        try:
            return checkpoints.load(folder, checkpoints.verify(folder))
        except checkpoints.BadCheckpoint as error:
            after = (
                f"falling back to the previous checkpoint {found[k + 1][1].name}"
                if k + 1 < len(found)
                else "no good checkpoint left, starting from scratch"
            )
            note(f"--resume: {error}; {after}")
    return None


# --------------------------------------------------------------------------- stops
#: OS errors of a write that the user fixes outside the run (space, quota, a read-only folder).
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


class GracefulStop:
    """SIGTERM and SIGINT, for the time of a ``with`` block, ask the run to stop at its next
    safe point instead of killing it (the handlers only set :attr:`signal`; the loop saves).

    The training loop calls :meth:`check` between iterations: if a stop was requested it saves
    (the ``save`` it is given, unless the iteration just saved) and exits with one line
    (``SystemExit(128 + signal)``). A second SIGINT stops at once: the ``with`` block turns the
    ``KeyboardInterrupt`` into one line naming the last checkpoint. An ``OSError`` of a full or
    read-only disk (:data:`DISK_ERRORS`) becomes one line as well. The handlers are installed
    only in the main thread (Python's rule); the previous ones come back at the end.
    """

    def __init__(self, prog: str, out_dir: Path) -> None:
        self.prog, self.out_dir = prog, Path(out_dir)
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}
        self.bar: Any = None  # a progress bar to close before the last line

    def watch(self, bar: T) -> T:
        """Remember the loop's progress bar (closed before the last line, which stays last)."""
        self.bar = bar
        return bar

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
        if isinstance(error, KeyboardInterrupt):
            raise SystemExit(
                self._line(f"stopped at once by a second {signal.Signals.SIGINT.name}", 130)
            ) from None
        if isinstance(error, OSError) and error.errno in DISK_ERRORS:
            where = error.filename or "a file"
            self._close_bar()
            if error.errno in (errno.ENOSPC, errno.EDQUOT):
                what, fix = "cannot write", "free space"
            else:
                what, fix = "cannot access", "make the folder writable (or pick another --out-dir)"
            note(
                f"{self.prog}: {what} {where}: {error.strerror or error}; {fix}, then resume: "
                f"{self._resume_hint()}"
            )
            raise SystemExit(1) from None
        return False

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signal == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: at once
        self.signal = signum
        # os.write, not print: a handler may run while the main thread is inside a print
        os.write(
            2,
            f"\n{self.prog}: {signal.Signals(signum).name} received: finishing this iteration, "
            "then saving a checkpoint (Ctrl-C again stops at once, without one)\n".encode(),
        )

    @property
    def requested(self) -> bool:
        return self.signal is not None

    def check(self, iteration: int, saved: bool, save: Any) -> None:
        """At a safe point, after ``iteration`` iterations: if a stop was requested, run
        ``save(iteration)`` (unless ``saved``: this point has just written its checkpoint), say where
        and how to resume in one line, and exit with status 128 + the signal."""
        if self.signal is None:
            return
        if not saved:
            save(iteration)
        name = signal.Signals(self.signal).name
        raise SystemExit(
            self._line(f"stopped by {name} after {iteration} iterations", 128 + self.signal)
        )

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _last_checkpoint(self) -> Path | None:
        found = checkpoints.finished(self.out_dir / "checkpoint")
        return found[0][1] if found else None

    def _resume_hint(self) -> str:
        last = self._last_checkpoint()
        where = f"the last checkpoint is {last}" if last else "there is no checkpoint yet"
        return f"{where}; run the same command with --resume to continue"

    def _line(self, what: str, status: int) -> int:
        self._close_bar()
        note(f"{self.prog}: {what}; {self._resume_hint()}")
        return status


# --------------------------------------------------------------------------- logs and curves
def write_log(path: Path, rows: list[dict]) -> None:
    """``path`` holds ``rows``, one JSON object a line (a resume rewrites its logs this way)."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def append_log(path: Path, row: dict) -> None:
    """One more line in the JSONL log ``path``."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


#: One curve of a panel: (label, key of the metric rows, matplotlib options). The option
#: ``band=<key>`` shades ± that key around the line; ``eval=True`` reads the key from the
#: evaluation rows instead, drawn between iterations (after ``iteration`` updates).
Line = tuple[str, str, dict]


def plot_curves(
    path: Path,
    metrics: list[dict],
    panels: Sequence[tuple[str, Sequence[Line]] | tuple[str, Sequence[Line], str]],
    evals: Sequence[dict] = (),
    swaps: bool = False,
    title: str = "",
) -> None:
    """One panel per ``(title, lines[, y-axis label])`` against the updates done, as a PNG.

    The x axis counts updates: iteration ``i``'s training row is drawn at ``i + 1`` (after its
    update) and an evaluation row at its own ``iteration`` (the updates done before it), so
    evaluations sit where they happened and the axis has integer ticks from 0. Lines whose
    key the rows lack are skipped; each line gets its own marker and dash pattern, drawn
    see-through, so no agent's line hides another's. ``swaps``: a dotted vertical line after
    each iteration whose ``role_swap`` is
    true. ``title``: the figure's title (env, algorithm, seed).
    """
    from matplotlib.figure import Figure  # the Agg canvas, without pyplot's global state
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(4.8 * len(panels), 4.2), layout="constrained")
    if title:
        fig.suptitle(title)
    markers = "o^sDvP*X"
    for ax, (panel_title, lines, *ylabel) in zip(
        fig.subplots(1, len(panels), squeeze=False)[0], panels, strict=True
    ):
        for number, (label, key, options) in enumerate(lines):
            options = dict(options)
            band, from_evals = options.pop("band", None), options.pop("eval", False)
            rows = [r for r in (evals if from_evals else metrics) if key in r]
            if not rows:
                continue
            options.setdefault("marker", markers[number % len(markers)])
            options.setdefault("markersize", 4)
            # lines that coincide stay visible: each its own dash pattern, drawn see-through
            options.setdefault("linestyle", ("-", "--", "-.", ":")[number % 4])
            options.setdefault("alpha", 0.85)
            x = [r["iteration"] + (0 if from_evals else 1) for r in rows]
            y = [r[key] for r in rows]
            ax.plot(x, y, label=label, **options)
            if band:
                spread = [r[band] for r in rows]
                ax.fill_between(
                    x,
                    [a - s for a, s in zip(y, spread, strict=True)],
                    [a + s for a, s in zip(y, spread, strict=True)],
                    alpha=0.2,
                    label="± std",
                )
        if swaps:
            for row in metrics:
                if row["role_swap"]:
                    ax.axvline(row["iteration"] + 1, color="grey", linestyle=":", linewidth=0.8)
        ax.set(
            title=panel_title, xlabel="updates done", ylabel=ylabel[0] if ylabel else panel_title
        )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.savefig(path, dpi=100)
