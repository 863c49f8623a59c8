"""Policies from the reference trainers' checkpoints: ``ckpt:RUN_DIR[#LEARNER]``.

``baselines/cory.py`` and ``baselines/magrpo.py`` write ``<run dir>/checkpoint/iteration-N/``
in the package's checkpoint format (:mod:`llm_marl_envs.models.checkpoints`): ``state.json``
(the run's arguments among others), one ``learner_<label>.pt`` per trained model (CORY: ``A``
and ``B``; MAGRPO: ``0``, ``1``, ...; GRPO and PPO: one) holding its trainable weights (the
whole model, or a LoRA adapter), and ``manifest.json`` with each file's size and sha256.
:func:`checkpoint_policy` loads the newest checkpoint that verifies (format, sizes, sha256),
rebuilds the base model the run started from (``args.model``; a LoRA adapter of the run's rank
and alpha when it trained one), puts the learner's weights in, and returns an
:class:`~llm_marl_envs.policies.hf.HFPolicy`: a trained model in any seat of ``llm-marl eval``
or ``llm-marl rollout``.

Which learner played which role last is in the checkpoint's ``state.json`` (CORY's ``order``:
the pioneer first; MAGRPO's learners list their agents).
"""

from __future__ import annotations

from pathlib import Path

from llm_marl_envs.policies.generation import GenerationConfig

from llm_marl_envs.models import checkpoints

__all__ = ["CheckpointError", "checkpoint_policy", "newest_checkpoint"]


class CheckpointError(ValueError):
    """A ``ckpt:`` spec that names no usable checkpoint (the message says what is wrong)."""


def newest_checkpoint(run_dir: str | Path) -> Path:
    """The newest ``iteration-N`` folder of a run (or of a ``checkpoint/`` folder) that
    verifies (:func:`llm_marl_envs.models.checkpoints.verify`: format, sizes, sha256); a
    :class:`CheckpointError` naming the newest one's bad file when none does."""
    root = Path(run_dir)
    if (root / "checkpoint").is_dir():
        root = root / "checkpoint"
    if (root / checkpoints.STATE).is_file():  # an iteration folder itself
        candidates = [root]
    else:
        candidates = [folder for _, folder in checkpoints.finished(root)]
    if not candidates:
        raise CheckpointError(
            f"ckpt: {run_dir} holds no checkpoint (expected a trainer's run folder with "
            "checkpoint/iteration-N/, from baselines/cory.py or baselines/magrpo.py)"
        )
    errors = []
    for folder in candidates:
        try:
            checkpoints.verify(folder)
        except checkpoints.BadCheckpoint as error:
            errors.append(error)
        else:
            return folder
    raise CheckpointError(f"ckpt: no checkpoint in {run_dir} verifies (newest: {errors[0]})")


def checkpoint_policy(spec: str, generation: GenerationConfig | None = None):
    """An ``HFPolicy`` from ``RUN_DIR[#LEARNER]`` (the part after ``ckpt:``) that generates as
    ``generation`` says, on its device; its weights in the run's dtype unless
    ``generation.dtype`` names one (``"auto"`` and None take the run's dtype when it trained in
    another than float32)."""
    import torch

    from llm_marl_envs.policies.hf import HFPolicy

    path, _, learner = spec.partition("#")
    folder = newest_checkpoint(path)
    learners = sorted(p.stem[len("learner_") :] for p in folder.glob("learner_*.pt"))
    if not learner:
        if len(learners) != 1:
            raise CheckpointError(
                f"ckpt:{path} has {len(learners)} learners ({', '.join(learners)}): name one, "
                f"e.g. ckpt:{path}#{learners[0] if learners else 'A'}"
            )
        learner = learners[0]
    if learner not in learners:
        raise CheckpointError(
            f"ckpt:{path} has no learner {learner!r}; its learners: {', '.join(learners)}"
        )
    try:
        state, payloads = checkpoints.load(folder, [f"learner_{learner}"])
    except checkpoints.BadCheckpoint as error:
        raise CheckpointError(f"ckpt:{spec}: {error}") from None
    args, payload = state["args"], payloads[f"learner_{learner}"]
    weights = payload.get("weights", payload.get("params"))
    if not isinstance(weights, dict):
        raise CheckpointError(f"ckpt:{spec}: learner_{learner}.pt holds no weights")
    generation = generation or GenerationConfig()
    if generation.dtype in (None, "auto") and args.get("dtype") not in (None, "float32", "auto"):
        generation = generation.replace(dtype=args["dtype"])
    policy = HFPolicy.from_config(
        args["model"], generation, name=f"ckpt:{Path(path).name}#{learner}@{folder.name}"
    )
    base = getattr(policy.model.config, "_name_or_path", "?")
    if args.get("lora"):
        policy.add_lora(r=args["lora_r"], alpha=args["lora_alpha"])
    known = dict(policy.model.named_parameters())
    unknown = sorted(set(weights) - set(known))
    if unknown:
        raise CheckpointError(
            f"ckpt:{spec}: {len(unknown)} saved weights do not fit {args['model']!r} "
            f"(e.g. {unknown[0]})"
        )
    with torch.no_grad():
        for name, tensor in weights.items():
            known[name].copy_(tensor)
    policy.model.eval()
    policy.checkpoint = {"folder": str(folder), "learner": learner, "args": args}
    policy.model_id = f"ckpt:{spec} (trained from {base})"
    policy.source = "checkpoint"  # (a trainer's run folder: the ckpt: name says so)
    return policy
