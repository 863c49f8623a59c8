"""CORY: two LLM agents fine-tuned together by sequential cooperative PPO (CleanRL style).

Paper: Ma et al., "Coevolving with the Other You: Fine-Tuning LLM with Sequential Cooperative
Multi-Agent Reinforcement Learning", NeurIPS 2024 (arXiv 2410.06101); see docs/baselines.md.

    python baselines/cory.py                              # CORY on IMDB, embedded SmolLM2-135M
    python baselines/cory.py --algo ppo                   # the single-agent PPO baseline
    python baselines/cory.py --lora --shared-base --lr 1e-4   # both agents on one base model
    python baselines/cory.py --env llm_marl_envs/GSM8K-v0 --env-kwargs '{"difficulty": 2}'
    python baselines/cory.py --resume                     # continue a killed run exactly
    python baselines/cory.py --device cuda                # on the GPU, in bf16 autocast

**Agents.** Two copies of the same pretrained LM, "A" and "B", each an independent PPO learner:
the causal LM, a value head (a scalar linear head on the last hidden state, initialised small)
and its own AdamW optimizer and KL controller. One frozen reference model (the initial weights)
serves both: a third copy with full fine-tuning; with ``--lora`` the base model with its
adapters disabled. ``--lora --shared-base`` puts both agents' adapters on ONE frozen base.

**One iteration.** ``batch_size`` episodes are played through the package's rollout engine
(pioneer_0 answers, observer_0 sees the task and the pioneer's answer and answers too), each
agent sampling with its own ``HFPolicy``. For each agent's completions (tokens t = 1..T):

    r_t = -eta * KL_t + [t = T] * R,
    KL_t = sum_v pi(v | s_t) (log pi(v | s_t) - log pi_ref(v | s_t))

the full-vocabulary KL between the policy and the reference at each generated position (as in
CORY; computed from the logits of both models before the update), R the task reward paid by
the env: ``cory`` trains on the collective r1 + r2 (``reward_mode="collective"``), ``ppo`` on
the pioneer's own r1 (``"individual"``; the observer's turn is a fixed stub, neither trained
nor part of the reward). Then GAE (gamma, lambda; the value after the last token is 0),
advantages whitened over the batch, and ``ppo_epochs`` passes over shuffled mini-batches of
the clipped PPO loss: max(-A rho, -A clip(rho, 1 +- clip)) + vf_coef * 0.5 * max((V - G)^2,
(V_clip - G)^2). eta follows the adaptive controller of Ziegler et al. (2019):
eta *= 1 + clip(KL / target - 1, -0.2, 0.2) * batch_size / horizon, KL = mean summed KL.

**Device.** ``--device`` (``auto``: CUDA when available) holds every model (the policies,
whose rollouts generate there, the reference, the value heads, the LoRA adapters) and every
tensor of the update; weights are initialised on the CPU, then moved. The scoring and training
passes run under bf16 autocast for that device with ``--bf16-autocast`` (default: on a CUDA
device with bf16, off on the CPU); ``training.Compute`` is the one place this is decided.

**Role exchange.** After every ``swap_every`` iterations A and B swap roles (model, value head,
optimizer and KL controller travel together): metrics say ``role_swap: true`` on the iteration
after which the roles were exchanged, and ``pioneer_model`` names the model that played pioneer.

**Outputs** in ``--out-dir``: ``metrics.jsonl`` (one line per iteration; keys ending in
``_pioneer`` / ``_observer`` are per role: task_reward (r1 / r2), kl (summed over tokens),
combined_reward (own task reward - eta * kl, the paper's "combined reward"), kl_coef,
policy_loss, value_loss, clip_frac, completion_tokens, explained_variance: how much of the returns'
variance the critic's values explain), ``eval.jsonl`` (task reward and completion length per
role on a fixed evaluation set: the same ``eval_episodes`` tasks, never trained on, and the same
sampling seeds every time, before training, every ``eval_every`` iterations and at the end; the
paired, low-noise measure of what training changed), ``curves.png``, and ``checkpoint/``
(the newest two checkpoints, ``iteration-NNNNNN/``: per model ``learner_A.pt`` / ``learner_B.pt``
with weights or adapter, value head, optimizer and KL controller; ``state.json`` with the next
iteration, roles, metrics, evaluations and args; ``manifest.json`` with every file's sha256).
Every random stream (episode seeds, sampling, mini-batch order) is derived from (seed,
iteration), so ``--resume`` replays a killed run exactly; checkpoints are written atomically and
verified on resume, a bad one falls back to the previous one
(``llm_marl_envs.models.checkpoints``).
Machine-dependent metrics (:data:`TIMING_KEYS`): seconds per iteration (``seconds``, its
``rollout_seconds`` and ``train_seconds``), ``cpu_seconds``, ``peak_rss_mb`` and the iteration's
``peak_gpu_memory_mb`` (None on the CPU). The command line (tyro), the checkpoint and resume
check, the logs and the curves are the skeleton shared with ``magrpo.py``
(``baselines/training.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import resource
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

import numpy as np

try:  # the 'train' extra; without it, one line that names the fix instead of a traceback
    import torch
    from tqdm import tqdm
    import tyro  # noqa: F401 - baselines/training.py parses the command line with it
except ModuleNotFoundError as missing:
    raise SystemExit(
        f"cory.py needs the 'train' extra ({missing.name} is not installed): "
        "pip install 'llm-marl-envs[train]'"
    ) from None

from llm_marl_envs.models import load_model
from llm_marl_envs.models.runtime import seeded
from llm_marl_envs.models.scoring import completion_logprobs
from llm_marl_envs.policies.generation import GenerationConfig
from llm_marl_envs.policies.hf import HFPolicy
from llm_marl_envs.rollout import rollout

# baselines/training.py, the skeleton shared with magrpo.py (command line, checkpoints, logs,
# curves): python puts this folder on sys.path when it runs this file as a script.
if __package__:  # python -m llm_marl_envs.baselines.cory (an installed package)
    from llm_marl_envs.baselines import training
else:  # python baselines/cory.py
    import training

IMDB, GSM8K = "llm_marl_envs/IMDBSentiment-v0", "llm_marl_envs/GSM8K-v0"
ROLES = ("pioneer_0", "observer_0")
# Per-env defaults for the Args left at None (GSM8K's: the paper's). On IMDB the paper's
# lr 1.41e-5 drives 100 iterations of batch 256 x 4 epochs; our CPU budget is 20 iterations of
# 16 x 1 epoch, where 1.41e-5 barely moves the policy and 5e-5 learns visibly. The paper's
# eta 0.3 weighs the KL against a classifier logit (spread of several units); our offline
# VADER reward lies in [-1, 1], so the same balance needs an eta several times smaller: 0.05. With
# 0.3 the KL penalty outweighed the task reward and CORY's agents learned to stop writing
# (docs/baselines.md has both runs). IMDB continuations are also fixed-length (eos masked until
# max_new_tokens), as the paper's GPT-2 continuations effectively are: an instruct model can end
# its turn at once, and with eta 0.05 one CORY seed of three drifted from short exclamations
# (which VADER scores high) to empty answers.
ENV_DEFAULTS = {
    IMDB: {"lr": 5e-5, "kl_coef": 0.05, "max_new_tokens": 24, "env_kwargs": {}},
    GSM8K: {
        "lr": 1e-5,
        "kl_coef": 0.01,
        "max_new_tokens": 96,
        "env_kwargs": {"data_source": "procedural", "difficulty": 1},
    },
}
#: Metrics that measure the machine, not the algorithm (they differ between identical runs).
TIMING_KEYS = (
    "seconds",
    "rollout_seconds",
    "train_seconds",
    "cpu_seconds",
    "peak_rss_mb",
    "peak_gpu_memory_mb",
)
EVAL_SEED = 2**40  # evaluation episodes reset with EVAL_SEED + k (training seeds stay far below)


@dataclass
class Args:
    env: str = IMDB
    """environment id: llm_marl_envs/IMDBSentiment-v0 or llm_marl_envs/GSM8K-v0"""
    env_kwargs: training.JsonDict = None
    """JSON dict of env arguments; None: {} for IMDB, {"data_source": "procedural",
    "difficulty": 1} for GSM8K (reward_mode is always set by --algo)"""
    algo: Literal["cory", "ppo"] = "cory"
    """'cory': pioneer + observer on r1 + r2 with role exchange; 'ppo': the pioneer alone on its
    own reward r1"""
    model: str = "default"
    """'default' (embedded SmolLM2-135M-Instruct), 'tiny' (random test model), or a Hub id /
    local folder"""
    iterations: int = 20
    """PPO iterations (rollout + update) in the whole run"""
    batch_size: int = 16
    """episodes per iteration (= completions per agent per update)"""
    mini_batch_size: int = 8
    """completions per gradient step"""
    ppo_epochs: int = 1
    """passes over each batch"""
    lr: float | None = None
    """AdamW learning rate; None: 5e-5 for IMDB (the paper: 1.41e-5 with 80x more samples),
    1e-5 for GSM8K"""
    kl_coef: float | None = None
    """initial KL coefficient eta; None: 0.05 for IMDB (VADER reward; the paper's 0.3 goes with
    a classifier logit), 0.01 for GSM8K"""
    adaptive_kl: bool = True
    """adapt eta towards --kl-target (Ziegler et al.); else eta is fixed"""
    kl_target: float = 6.0
    """target KL (summed over tokens) of the adaptive controller"""
    kl_horizon: int = 10_000
    """horizon of the adaptive controller, in episodes"""
    gamma: float = 1.0
    """discount of GAE"""
    lam: float = 0.95
    """lambda of GAE"""
    clip: float = 0.2
    """PPO ratio clip range"""
    value_clip: float = 0.2
    """value clip range around the old values"""
    vf_coef: float = 0.1
    """weight of the value loss"""
    max_grad_norm: float = 1.0
    """gradient-norm clip per step (0: off)"""
    swap_every: int = 5
    """role exchange period T_REx in iterations (0: never; cory only)"""
    max_new_tokens: int | None = None
    """most tokens per completion; None: 24 (IMDB), 96 (GSM8K)"""
    min_new_tokens: int | None = None
    """fewest tokens per completion (eos masked before); None: max_new_tokens for IMDB (fixed
    length), 0 for GSM8K"""
    temperature: float = 1.0
    """sampling temperature (log-probs and KL use the same one)"""
    lora: bool = False
    """train LoRA adapters instead of all weights"""
    shared_base: bool = False
    """with --lora: both agents' adapters on ONE frozen base model"""
    lora_r: int = 8
    """LoRA rank"""
    lora_alpha: int = 16
    """LoRA alpha"""
    device: str = "auto"
    """where every model and tensor lives: auto (CUDA when available, else the CPU), cpu, cuda
    or cuda:N"""
    bf16_autocast: training.AutoFlag = None
    """bfloat16 autocast in the scoring and training passes (weights and generation stay
    float32); None: on a CUDA device with bf16, off on the CPU (~1.5x faster on CPUs with
    AVX512-BF16/AMX, many times slower on CPUs without them)"""
    threads: int = 0
    """torch CPU threads (0: torch's default, one per core)"""
    seed: int = 0
    """seed of every random stream (episodes, sampling, LoRA/value-head init)"""
    out_dir: str | None = None
    """output folder; None: runs/<algo>-<env>-<seed>"""
    resume: bool = False
    """continue from <out-dir>/checkpoint if there is one"""
    checkpoint_every: int = 5
    """save a checkpoint (and curves.png) every N iterations and at the end (0: only at the
    end)"""
    eval_episodes: int = 64
    """episodes of the fixed evaluation set: the same tasks and sampling seeds at every
    evaluation, none of them used in training (0: no evaluation)"""
    eval_every: int = 10
    """evaluate before the first update, every N iterations and at the end"""


def parse_args(argv: list[str] | None = None) -> Args:
    """Command line -> Args (tyro: one ``--kebab-case`` option per field, ``--no-...`` for
    booleans, the field docstrings as help)."""
    return training.cli(Args, argv, description=__doc__.split("\n\n")[0])


def resolve(args: Args) -> Args:
    """Fill the fields left at None with the env's defaults; check the combinations."""
    # SystemExit: a one-line message naming the fix, not a traceback (as magrpo.py's checks);
    # the command line already refuses another --algo, an Args built in Python may not
    if args.algo not in ("cory", "ppo"):
        raise SystemExit(f"--algo must be 'cory' or 'ppo', got {args.algo!r}")
    if args.shared_base and not args.lora:
        raise SystemExit("--shared-base needs --lora (full fine-tuning cannot share weights)")
    if args.checkpoint_every < 0:
        raise SystemExit(
            f"--checkpoint-every must be >= 0 (0: only at the end), got {args.checkpoint_every}"
        )
    defaults = ENV_DEFAULTS.get(args.env, ENV_DEFAULTS[IMDB])
    filled = {k: copy.deepcopy(v) for k, v in defaults.items() if getattr(args, k) is None}
    out_dir = args.out_dir or f"runs/{args.algo}-{args.env.split('/')[-1]}-{args.seed}"
    args = dataclasses.replace(args, **filled, out_dir=out_dir)
    if args.min_new_tokens is None:  # IMDB continuations are fixed-length (see ENV_DEFAULTS)
        min_new_tokens = args.max_new_tokens if args.env == IMDB else 0
        args = dataclasses.replace(args, min_new_tokens=min_new_tokens)
    if not 0 <= args.min_new_tokens <= args.max_new_tokens:
        raise SystemExit(
            "--min-new-tokens must be in [0, --max-new-tokens="
            f"{args.max_new_tokens}], got {args.min_new_tokens}"
        )
    return args


# ------------------------------------------------------------------ small pieces
class KLController:
    """eta of the KL penalty; adaptive (Ziegler et al. 2019) when ``target`` is set."""

    def __init__(self, value: float, target: float | None = None, horizon: int = 10_000) -> None:
        self.value, self.target, self.horizon = float(value), target, horizon

    def update(self, kl: float, n_steps: int) -> None:
        if self.target is not None:
            error = float(np.clip(kl / self.target - 1.0, -0.2, 0.2))
            self.value *= 1.0 + error * n_steps / self.horizon


def gae(rewards, values, mask, gamma: float, lam: float):
    """Advantages and returns of right-padded sequences ``(batch, T)``; V after the end is 0."""
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    next_value = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        running = (delta + gamma * lam * running) * mask[:, t]
        advantages[:, t] = running
        next_value = values[:, t] * mask[:, t]
    return advantages, advantages + values * mask


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def whiten(x, mask):
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    return (x - mean) * torch.rsqrt(var + 1e-8) * mask


def padded(rows: list[list[int]], width: int) -> torch.Tensor:
    """Token-id rows right-padded with 0 into a ``(len(rows), width)`` tensor."""
    out = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


class AdapterPolicy(HFPolicy):
    """An HFPolicy that switches a (possibly shared) peft model to its own adapter first."""

    adapter: str | None = None

    def activate(self) -> None:
        if self.adapter is not None:
            self.model.set_adapter(self.adapter)

    def generate(self, prompts):
        self.activate()
        return super().generate(prompts)


@dataclass
class Learner:
    """One PPO learner: an LM (or its adapter) + value head + optimizer + KL controller."""

    label: str  # "A" or "B": the underlying model, which keeps its label through role swaps
    policy: AdapterPolicy
    value_head: torch.nn.Linear
    optimizer: torch.optim.Optimizer
    kl_ctl: KLController
    params: list[torch.nn.Parameter]

    def weights(self) -> dict[str, torch.Tensor]:  # what a checkpoint keeps of the LM
        names = {id(p) for p in self.params}
        return {k: v for k, v in self.policy.model.named_parameters() if id(v) in names}


def build_learners(
    args: Args, device: str
) -> tuple[dict[str, Learner], torch.nn.Module | None, int]:
    """Learners "A" (and "B" for cory), the frozen reference (None with LoRA) and the pad id,
    on ``device``. Every weight is initialised on the CPU (the same values on any device), then
    moved there, the optimizers built after."""
    base, tokenizer = load_model(args.model)
    labels = ["A", "B"] if args.algo == "cory" else ["A"]
    generation = {
        "max_new_tokens": args.max_new_tokens,
        "min_new_tokens": args.min_new_tokens,
        "generation": GenerationConfig(temperature=args.temperature, do_sample=True),
    }
    reference = None
    models = [base] + [copy.deepcopy(base) for _ in labels[1:] if not args.shared_base]
    if not args.lora:
        reference = copy.deepcopy(base).requires_grad_(False).to(device)
    learners = {}
    with seeded(args.seed):  # LoRA and value-head initialisation; the global RNG is left alone
        for i, label in enumerate(labels):
            if args.shared_base and i > 0:  # a second adapter on the first agent's peft model
                shared = learners["A"].policy.model
                shared.add_adapter(f"model_{label}", copy.deepcopy(shared.peft_config["default"]))
                policy = AdapterPolicy(shared, tokenizer, **generation, name=f"cory:{label}")
                policy.adapter = f"model_{label}"
            else:
                policy = AdapterPolicy(models[i], tokenizer, **generation, name=f"cory:{label}")
                if args.lora:
                    policy.add_lora(r=args.lora_r, alpha=args.lora_alpha)
                    policy.adapter = "default"
            policy.model.eval().to(device)  # no dropout: the PPO ratio must be 1 at first
            if policy.adapter is None:
                params = list(policy.model.parameters())
            else:
                params = [
                    p for n, p in policy.model.named_parameters() if f".{policy.adapter}." in n
                ]
            head = torch.nn.Linear(base.config.hidden_size, 1)
            torch.nn.init.normal_(head.weight, std=1e-3)
            torch.nn.init.zeros_(head.bias)
            head.to(device)
            optimizer = torch.optim.AdamW([*params, *head.parameters()], lr=args.lr)
            kl_ctl = KLController(
                args.kl_coef, args.kl_target if args.adaptive_kl else None, args.kl_horizon
            )
            learners[label] = Learner(label, policy, head, optimizer, kl_ctl, params)
    return learners, reference, tokenizer.pad_token_id


# ------------------------------------------------------------------ PPO for one learner
def forward(learner, prompts, completions, targets, run, reference=False):
    """Log-probs, logits, values and mask of completions under the learner (differentiable).

    With ``reference=True``: under the frozen reference instead (the separate copy, or this
    learner's model with its adapters disabled); values are then None."""
    model, context = learner.policy.model, nullcontext()
    if reference and run.ref_model is not None:
        model = run.ref_model
    elif reference:
        context = model.disable_adapter()
    learner.policy.activate()
    with context, run.compute.autocast():
        _, mask, *hidden, logits = completion_logprobs(
            model,
            prompts,
            completions,
            pad_id=run.pad_id,
            return_hidden=not reference,
            return_logits=True,
        )
    logits = logits.float() / run.temperature
    logprobs = torch.log_softmax(logits, -1).gather(-1, targets[:, : mask.shape[1], None])
    logprobs = logprobs.squeeze(-1)
    values = None if reference else learner.value_head(hidden[0].float()).squeeze(-1) * mask
    return logprobs * mask, logits, values, mask


def ppo_update(learner: Learner, turns, run, rng: np.random.Generator) -> dict[str, float]:
    """Shape the rewards of one agent's turns, then run the PPO epochs; returns its stats."""
    prompts = [t.prompt_ids for t in turns]
    completions = [t.completion_ids for t in turns]
    n, width = len(turns), max(len(c) for c in completions)
    device = run.compute.device
    targets = padded(completions, width).to(device)
    chunks = [
        list(range(i, min(i + run.mini_batch_size, n))) for i in range(0, n, run.mini_batch_size)
    ]

    # 1. Old log-probs, values and full-vocabulary KL to the reference, before any update.
    old_logprobs, old_values, kl, mask = (torch.zeros(n, width, device=device) for _ in range(4))
    with torch.no_grad():
        for idx in chunks:
            sub = ([prompts[i] for i in idx], [completions[i] for i in idx], targets[idx])
            lp, logits, v, m = forward(learner, *sub, run)
            ref_logits = forward(learner, *sub, run, reference=True)[1]
            log_p, log_q = torch.log_softmax(logits, -1), torch.log_softmax(ref_logits, -1)
            k = m.shape[1]
            old_logprobs[idx, :k], old_values[idx, :k], mask[idx, :k] = lp, v, m
            kl[idx, :k] = (log_p.exp() * (log_p - log_q)).sum(-1) * m

    # 2. Per-token rewards: -eta * KL everywhere, + the task reward at the last token.
    eta = learner.kl_ctl.value
    scores = torch.tensor([float(t.reward) for t in turns], device=device)
    rewards = -eta * kl
    rewards[torch.arange(n, device=device), mask.sum(1).long() - 1] += scores
    advantages, returns = gae(rewards, old_values, mask, run.gamma, run.lam)
    advantages = whiten(advantages, mask)

    # 3. PPO epochs over shuffled mini-batches.
    stats: dict[str, list[float]] = {"policy_loss": [], "value_loss": [], "clip_frac": []}
    for _ in range(run.ppo_epochs):
        order = rng.permutation(n)
        for start in range(0, n, run.mini_batch_size):
            picked = order[start : start + run.mini_batch_size]
            idx = torch.as_tensor(picked, device=device)
            logprobs, _, values, m = forward(
                learner,
                [prompts[i] for i in picked],
                [completions[i] for i in picked],
                targets[idx],
                run,
            )
            k = m.shape[1]
            adv, ret = advantages[idx, :k], returns[idx, :k]
            ratio = torch.exp(logprobs - old_logprobs[idx, :k])
            clipped = ratio.clamp(1 - run.clip, 1 + run.clip)
            pg_loss = masked_mean(torch.max(-adv * ratio, -adv * clipped), m)
            v_old = old_values[idx, :k]
            v_clipped = v_old + (values - v_old).clamp(-run.value_clip, run.value_clip)
            vf_loss = 0.5 * masked_mean(torch.max((values - ret) ** 2, (v_clipped - ret) ** 2), m)
            loss = pg_loss + run.vf_coef * vf_loss
            learner.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if run.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(
                    [*learner.params, *learner.value_head.parameters()], run.max_grad_norm
                )
            learner.optimizer.step()
            stats["policy_loss"].append(pg_loss.item())
            stats["value_loss"].append(vf_loss.item())
            stats["clip_frac"].append(masked_mean(((ratio - 1).abs() > run.clip).float(), m).item())

    # Explained variance of the returns by the old values (1: a perfect critic, <= 0: none).
    error = returns - old_values
    residual = masked_mean((error - masked_mean(error, mask)) ** 2, mask)
    spread = masked_mean((returns - masked_mean(returns, mask)) ** 2, mask)
    kl_sum = kl.sum(1).mean().item()
    learner.kl_ctl.update(kl_sum, n_steps=n)
    task = float(np.mean([t.reward_components.get("task_reward", t.reward) for t in turns]))
    return {
        "task_reward": task,
        "kl": kl_sum,
        "combined_reward": task - eta * kl_sum,
        "kl_coef": eta,
        **{k: float(np.mean(v)) for k, v in stats.items()},
        "completion_tokens": mask.sum(1).mean().item(),
        "explained_variance": (1.0 - residual / spread.clamp(min=1e-8)).item(),
    }


# ------------------------------------------------------------------ checkpoints and plots
def save_checkpoint(out: Path, args: Args, learners, iteration: int, **state) -> None:
    """Write ``checkpoint/iteration-<iteration>/`` (the next iteration) atomically, with a
    sha256 per file; the previous checkpoint stays as the fallback (``training.save_checkpoint``).
    ``state``: the metrics, evaluations and roles, for ``state.json``."""
    training.save_checkpoint(
        out,
        iteration,
        args,
        payloads={
            f"learner_{label}": {
                "weights": learner.weights(),
                "value_head": learner.value_head.state_dict(),
                "optimizer": learner.optimizer.state_dict(),
                "kl_coef": learner.kl_ctl.value,
            }
            for label, learner in learners.items()
        },
        **state,
    )


def load_checkpoint(out: Path, learners, args: Args) -> dict | None:
    """Restore the learners from the newest checkpoint that verifies (its args checked against
    ``args``); returns its state, or None (no good checkpoint: the run starts from scratch;
    ``training.load_latest`` said why)."""
    found = training.load_checkpoint(out, args)
    if found is None:
        return None
    state, payloads = found
    for label, learner in learners.items():
        saved = payloads[f"learner_{label}"]
        training.check_weights(saved["weights"], learner.weights(), args)
        with torch.no_grad():
            for name, tensor in learner.weights().items():
                tensor.copy_(saved["weights"][name])
        learner.value_head.load_state_dict(saved["value_head"])
        learner.optimizer.load_state_dict(saved["optimizer"])
        learner.kl_ctl.value = saved["kl_coef"]
    return state


def plot(metrics: list[dict], path: Path, evals: list[dict] = (), title: str = "") -> None:
    """Task reward (with the evaluations), KL and combined reward per role, as a PNG; dotted
    lines after the iterations that exchanged the roles."""
    roles = [role for role in ("pioneer", "observer") if f"task_reward_{role}" in metrics[0]]

    def panel(key: str, title: str):
        lines = [(role, f"{key}_{role}", {"alpha": 0.7}) for role in roles]
        if key != "kl" and len(roles) == 2:  # cory: the mean of the two roles
            lines.append(("mean", f"{key}_mean", {"color": "black"}))
        if key == "task_reward":  # evaluations sit between iterations (after n updates)
            lines += [
                (
                    f"{role} (eval)",
                    f"task_reward_{role}",
                    {"eval": True, "marker": marker, "linestyle": "--"},
                )
                for role, marker in zip(roles, "os", strict=False)
            ]
        return title, lines

    training.plot_curves(
        path,
        metrics,
        [
            (*panel("task_reward", "task reward"), "mean task reward per episode"),
            (*panel("kl", "KL to reference"), "KL (sum over tokens)"),
            (*panel("combined_reward", "combined reward"), "task reward - eta x KL"),
        ],
        evals,
        swaps=True,
        title=title,
    )


# ------------------------------------------------------------------ training loop
def observer_stub(observation: str, info: dict) -> str:
    """The observer's turn in ``--algo ppo``: a fixed answer (its reward is not used)."""
    return "."


def evaluate(args: Args, roles: dict[str, Learner], env_kwargs: dict, updates: int) -> dict:
    """Task reward and completion length per role on the fixed evaluation episodes.

    Every evaluation plays the same ``eval_episodes`` tasks with the same sampling seeds, so two
    evaluations differ only through the weights: a paired measurement, free of the task-to-task
    noise of the training curves."""
    policies = {role: learner.policy for role, learner in roles.items()}
    policies.setdefault("observer_0", observer_stub)
    for i, learner in enumerate(roles.values()):
        learner.policy.reseed(EVAL_SEED + i)
    result = rollout(
        args.env,
        policies,
        episodes=args.eval_episodes,
        batch_size=args.batch_size,
        seed=EVAL_SEED,
        env_kwargs=env_kwargs,
        progress=None,  # a bar on a terminal (the evaluation is the run's first long step)
    )
    row: dict = {"iteration": updates, "pioneer_model": roles["pioneer_0"].label}
    for role in roles:
        turns = [next(t for t in e.turns if t.agent == role) for e in result.episodes]
        name = role.split("_")[0]
        row[f"task_reward_{name}"] = float(
            np.mean([t.reward_components.get("task_reward", t.reward) for t in turns])
        )
        row[f"completion_tokens_{name}"] = float(np.mean([len(t.completion_ids) for t in turns]))
    row["task_reward_mean"] = float(np.mean([row[f"task_reward_{r.split('_')[0]}"] for r in roles]))
    return row


#: Measured with the defaults (IMDB, the embedded model, 20 x 16 episodes, 3 evaluations of
#: 64) on 2 CPU cores: 52 s per iteration, 21 minutes in all (docs/baselines.md).
DEFAULT_RUN_MINUTES = 21


def plan(args: Args, compute: training.Compute) -> str:
    """What the run will do, where, in order, and how long the default run took when measured
    (on the CPU)."""
    evaluations = (
        f"an evaluation of {args.eval_episodes} fixed episodes before training, every "
        f"{args.eval_every} iterations and at the end"
        if args.eval_episodes > 0
        else "no evaluations"
    )
    text = (
        f"{args.algo} on {args.env.split('/')[-1]} with the {args.model!r} model, seed "
        f"{args.seed}, {compute.describe()}: loading the models, then {evaluations}; "
        f"{args.iterations} iterations of {args.batch_size} episodes; results in {args.out_dir}"
    )
    defaults = Args()
    same = compute.type == "cpu" and all(
        getattr(args, k) == getattr(defaults, k)
        for k in ("env", "model", "iterations", "batch_size", "eval_episodes", "lora")
    )
    if same:
        text += f" (measured: about {DEFAULT_RUN_MINUTES} minutes on 2 CPU cores)"
    return text


def train(args: Args) -> tuple[list[dict], dict[str, Learner]]:
    """Run (or resume) training; returns the metrics and ``{role: learner}`` at the end."""
    args = resolve(args)
    compute = training.Compute.of(args.device, args.bf16_autocast)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    out = Path(args.out_dir)
    # SIGTERM / SIGINT stop the run at the next iteration's end, with a checkpoint; a full disk
    # or a read-only folder ends in one line (training.GracefulStop)
    with training.GracefulStop(args.algo, out) as stop:
        out.mkdir(parents=True, exist_ok=True)
        tqdm.write(plan(args, compute))  # before the first slow step (loading models)
        learners, ref_model, pad_id = build_learners(args, compute.device)
        # The update code reads these run constants from one object.
        run = SimpleNamespace(
            **dataclasses.asdict(args), ref_model=ref_model, pad_id=pad_id, compute=compute
        )
        reward_mode = "collective" if args.algo == "cory" else "individual"
        env_kwargs = {**args.env_kwargs, "reward_mode": reward_mode}
        title = f"{args.algo} on {args.env.split('/')[-1]}, seed {args.seed}"
        order = list(learners)  # order[0] plays pioneer_0, order[1] observer_0
        metrics: list[dict] = []
        evals: list[dict] = []  # one row per evaluation; "iteration" = updates done before it
        start = 0
        state = load_checkpoint(out, learners, args) if args.resume else None
        if state is not None:  # the logs are rewritten from it: lines logged after it are dropped
            start, order = state["iteration"], state["order"]
            metrics, evals = state["metrics"], state["evals"]
        training.write_log(out / "metrics.jsonl", metrics)
        training.write_log(out / "eval.jsonl", evals)

        def seated() -> dict[str, Learner]:  # {role: learner}; ppo: the pioneer only
            return {role: learners[label] for role, label in zip(ROLES, order, strict=False)}

        def run_eval(updates: int) -> None:
            row = evaluate(args, seated(), env_kwargs, updates)
            evals.append(row)
            training.append_log(out / "eval.jsonl", row)
            tqdm.write(
                f"eval after {updates} updates: "
                + ", ".join(f"{k} {v:.3f}" for k, v in row.items() if k.startswith("task_reward"))
            )

        def save(done: int) -> None:
            save_checkpoint(out, args, learners, done, metrics=metrics, evals=evals, order=order)
            if metrics:
                plot(metrics, out / "curves.png", evals, title)

        if args.eval_episodes > 0 and start == 0 and not evals:
            run_eval(0)
            stop.check(start, saved=False, save=save)  # SIGTERM during it

        bar = stop.watch(
            tqdm(
                range(start, args.iterations), initial=start, total=args.iterations, desc=args.algo
            )
        )
        for iteration in bar:
            tick, cpu_tick = time.perf_counter(), time.process_time()
            compute.reset_peak_memory()
            roles = seated()
            policies = {role: learner.policy for role, learner in roles.items()}
            policies.setdefault("observer_0", observer_stub)  # ppo: the observer is not trained
            for i, learner in enumerate(roles.values()):
                learner.policy.reseed(args.seed * 1_000_000 + 2 * iteration + i)
            # Episode k of this iteration resets with seed * 1e6 + iteration * batch_size + k.
            result = rollout(
                args.env,
                policies,
                episodes=args.batch_size,
                batch_size=args.batch_size,
                seed=args.seed * 1_000_000 + iteration * args.batch_size,
                env_kwargs=env_kwargs,
                progress=False,
            )
            rollout_seconds = time.perf_counter() - tick

            row: dict = {"iteration": iteration, "pioneer_model": order[0]}
            for i, (role, learner) in enumerate(roles.items()):
                turns = [next(t for t in e.turns if t.agent == role) for e in result.episodes]
                rng = np.random.default_rng([args.seed, iteration, i])
                stats = ppo_update(learner, turns, run, rng)
                row.update({f"{k}_{role.split('_')[0]}": v for k, v in stats.items()})
            for key in ("task_reward", "combined_reward"):
                row[f"{key}_mean"] = float(
                    np.mean([row[f"{key}_{r.split('_')[0]}"] for r in roles])
                )

            swap = (
                args.algo == "cory"
                and args.swap_every > 0
                and (iteration + 1) % args.swap_every == 0
            )
            if swap:  # role exchange: the models (with heads, optimizers, eta) change seats
                order.reverse()
            seconds = time.perf_counter() - tick
            row.update(
                role_swap=swap,
                seconds=seconds,
                rollout_seconds=rollout_seconds,
                train_seconds=seconds - rollout_seconds,
                cpu_seconds=time.process_time() - cpu_tick,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                peak_gpu_memory_mb=compute.peak_memory_mb(),
            )
            metrics.append(row)
            training.append_log(out / "metrics.jsonl", row)
            bar.set_postfix(
                reward=f"{row['task_reward_mean']:.3f}",
                kl=f"{row['kl_pioneer']:.2f}",
                pioneer=order[0],
            )

            last = iteration + 1 == args.iterations
            if args.eval_episodes > 0 and ((iteration + 1) % args.eval_every == 0 or last):
                run_eval(iteration + 1)
            saved = last or bool(
                args.checkpoint_every and (iteration + 1) % args.checkpoint_every == 0
            )
            if saved:
                save(iteration + 1)
            if not last:  # SIGTERM / Ctrl-C: save (if not just saved) and exit with one line
                stop.check(iteration + 1, saved=saved, save=save)
        if metrics:
            plot(metrics, out / "curves.png", evals, title)
        return metrics, seated()


def main(argv: list[str] | None = None) -> list[dict]:
    """Command-line entry point; returns the metric dicts (one per iteration)."""
    return train(parse_args(argv))[0]


if __name__ == "__main__":
    main()
