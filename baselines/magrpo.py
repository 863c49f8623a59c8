"""MAGRPO: multi-agent group-relative policy optimisation for LLM collaboration (and GRPO).

Liu et al., "LLM Collaboration With Multi-Agent Reinforcement Learning", arXiv:2508.04652;
the algorithm of Liu et al., 2025 (arXiv:2508.04652). CleanRL-style: one file, one ``Args``
dataclass, the algorithm in straight-line code in :func:`main`.

Each iteration:

1. **Rollout.** ``batch_size * group_size`` episodes through the package's batched engine
   (``llm_marl_envs.rollout.rollout``, ``group_size=G``): the ``G`` episodes of a group play the
   same task; each agent samples with its own :class:`~llm_marl_envs.policies.hf.HFPolicy`
   (temperature 0.7, top-p 0.9), so joint action ``g`` pairs the ``g``-th completion of each agent.
2. **Joint reward.** ``R_g`` = the discounted sum (``gamma``) of the turn rewards, averaged over
   the agents. The MAGRPO envs pay every agent the same joint reward, so for one-round tasks
   ``R_g`` is just the episode's joint reward; multi-turn CoopCoding sums its rounds.
3. **Advantage.** ``A_g = R_g - mean_group(R)`` (optionally ``/ std``), clamped to
   ``[-adv_clip, adv_clip]``, the same for every agent (:func:`group_advantages`).
4. **Update.** Per agent, ``loss = -(1 / (B * G)) * sum_g A_g * sum_t log pi(token_t | prompt,
   tokens_<t)`` over all of the agent's turns (the paper's ``1/G`` averaged over the ``B`` prompts),
   with log-probabilities recomputed with gradients by
   ``llm_marl_envs.models.scoring.completion_logprobs``; one AdamW step per agent. No ratio, no
   clipping, no KL, no reference model (the paper's version).

``--algo grpo`` is the single-agent baseline (the paper: with one agent, MAGRPO reduces to GRPO):
ONE model with ONE optimizer plays every agent's role (the rollout engine batches both roles'
prompts into one call) and is trained on all agents' samples with the same group advantage, i.e.
a single LLM does both parts of the task. ``--algo magrpo`` gives each agent its own model copy
and optimizer (both start from the same pretrained weights).

Choices worth knowing:

* Log-probabilities in the loss are the model's own (temperature 1), as in the paper's formula;
  the samples were drawn at ``temperature``/``top_p``.
* Models stay in eval mode (dropout off, as TRL's GRPO does): no global RNG is ever used.
* ``max_new_tokens`` defaults to 48 (the paper uses 256): a CPU budget. On TL;DR it caps the
  detailed summary near 35 words, so a length ratio of 1.6-3.2 needs the concise agent to stop
  early: a shorter summarizer is the first thing MAGRPO can learn there.
* ``--device`` (``auto``: CUDA when available) is where the models, their rollouts and the
  update run; ``peak_gpu_memory_mb`` in the metrics is an iteration's peak GPU memory (None on
  the CPU).
* ``--bf16-autocast`` runs the training forward/backward under bf16 autocast for that device
  (default: on a CUDA device with bf16, off on the CPU); the weights and AdamW state stay
  float32, generation stays float32. On the CPU it pays only with native bf16 (AVX512-BF16 or
  AMX: ~1.6x faster); elsewhere torch emulates bf16 and it is many times slower, so the trainer
  warns (``llm_marl_envs.models.cpu_bf16_is_fast``).
* ``max_grad_norm`` 1.0 (TRL's default; the paper does not say); 0 disables clipping.

Randomness and resuming: the episode seeds of iteration ``i`` are ``seed * 1_000_000 + i * B + b``
(group ``b``), and every policy is reseeded at each iteration from ``(seed, i, learner)``, so an
iteration depends only on the weights and optimizer state it starts from (no sampling state
carries over). A checkpoint (``<out-dir>/checkpoint/iteration-NNNNNN/``, the newest two kept)
holds per learner (``learner_0.pt``, ``learner_1.pt``) the trainable weights (full model, or LoRA
adapter only) and the optimizer state; torch's global RNG state (``torch_rng.pt``; unused here,
restored anyway); the next iteration, the policy seeds, the args and the metrics so far
(``state.json``); and a sha256 of each file (``manifest.json``). It is written atomically and
verified on resume (``llm_marl_envs.models.checkpoints``): a bad checkpoint falls back to the
previous one, no good one starts afresh. ``--resume`` continues exactly where a killed run
stopped (same metrics, timing aside). The command line (tyro), the checkpoint and resume check,
the logs and the curves are the skeleton shared with ``cory.py`` (``baselines/training.py``).

Usage::

    python baselines/magrpo.py                                  # TL;DR, embedded SmolLM2, MAGRPO
    python baselines/magrpo.py --algo grpo                      # one shared model
    python baselines/magrpo.py --model tiny --iterations 3 --max-new-tokens 16 --lr 1e-3
    python baselines/magrpo.py --env llm_marl_envs/CoopCoding-v0 --env-kwargs num_turns=2 --lr 1e-5
    python baselines/magrpo.py --resume                         # continue runs/magrpo-...-1
    python baselines/magrpo.py --device cuda                    # on the GPU, in bf16 autocast

Evaluation: ``eval_episodes`` fixed tasks (episode seeds from :data:`EVAL_SEED`, far from any
training seed, so never trained on), played with the same sampling seeds every time before the
first update, every ``eval_every`` iterations and at the end: two evaluations differ only
through the weights, a paired measurement without the task-to-task noise of the training
curve. Each evaluation logs the joint reward (mean and std over the tasks), and per agent
the completion length and the share of turns with a format failure.

Outputs in ``--out-dir``: ``metrics.jsonl`` (one line per iteration), ``eval.jsonl`` (one line
per evaluation; ``iteration`` = the updates done before it), ``curves.png`` (the evaluations
drawn where they happened), ``checkpoint/``, ``episodes.jsonl`` (the latest iteration's
episodes, to read).
"""

import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

try:  # the 'train' extra; without it, one line that names the fix instead of a traceback
    import torch
    from tqdm.auto import tqdm
    import tyro  # noqa: F401 - baselines/training.py parses the command line with it
except ModuleNotFoundError as missing:
    raise SystemExit(
        f"magrpo.py needs the 'train' extra ({missing.name} is not installed): "
        "pip install 'llm-marl-envs[train]'"
    ) from None

import llm_marl_envs
from llm_marl_envs.models.scoring import completion_logprobs
from llm_marl_envs.policies import GenerationConfig
from llm_marl_envs.policies.hf import HFPolicy
from llm_marl_envs.registry import parse_env_args
from llm_marl_envs.rollout import rollout

# baselines/training.py, the skeleton shared with cory.py (command line, checkpoints, logs,
# curves): python puts this folder on sys.path when it runs this file as a script.
if __package__:  # python -m llm_marl_envs.baselines.magrpo (an installed package)
    from llm_marl_envs.baselines import training
else:  # python baselines/magrpo.py
    import training

#: Metrics that measure the machine, not the algorithm (they differ between identical runs).
TIMING_KEYS = (
    "seconds",
    "rollout_seconds",
    "train_seconds",
    "gen_tokens_per_s",
    "train_tokens_per_s",
    "peak_rss_mb",
    "peak_gpu_memory_mb",
)

#: Evaluation episodes reset with ``EVAL_SEED + k``; training seeds (``seed * 1_000_000 + ...``)
#: stay far below it for any seed under a million.
EVAL_SEED = 2**40


@dataclass
class Args:
    env: str = "llm_marl_envs/TLDRSummarization-v0"
    """registered environment id (TLDRSummarization-v0, ArxivExpansion-v0, CoopCoding-v0, ...)"""
    env_kwargs: str = '{"data_source": "bundled"}'
    """environment arguments: KEY=VALUE pairs separated by commas (YAML values) or a JSON
    object, as for llm-marl --env-arg"""
    algo: Literal["magrpo", "grpo"] = "magrpo"
    """'magrpo' (a model + optimizer per agent) or 'grpo' (one shared model plays every agent)"""
    model: str = "default"
    """'default' (embedded SmolLM2-135M-Instruct), 'tiny' (random test model), Hub id or folder"""
    device: str = "auto"
    """where the models, their generation and training run: auto (CUDA when available, else
    the CPU), cpu, cuda or cuda:N"""
    dtype: str = "float32"
    """weight dtype; keep float32 to train all weights (bf16 weights lose lr-sized updates)"""
    bf16_autocast: training.AutoFlag = None
    """training forward/backward under bf16 autocast (weights stay fp32); None: on a CUDA
    device with bf16, off on the CPU (~1.5x faster on CPUs with AVX512-BF16/AMX, many times
    slower on CPUs without them)"""
    lora: bool = False
    """train LoRA adapters (HFPolicy.add_lora) instead of all weights: less memory, larger lr"""
    lora_r: int = 16
    """LoRA rank"""
    lora_alpha: int = 32
    """LoRA scaling alpha"""
    iterations: int = 20
    """training iterations (one rollout + one optimizer step per learner each)"""
    batch_size: int = 2
    """prompts (groups) per iteration: B"""
    group_size: int = 4
    """G: completions sampled per prompt and agent (joint actions per group), >= 2"""
    lr: float = 2e-5
    """AdamW learning rate (paper: 5e-6 writing, 1e-5 coding, over ~1,000 steps; 2e-5 shows
    learning within the 20 iterations of a CPU run)"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    max_grad_norm: float = 1.0
    """clip each learner's gradient to this global norm (0: no clipping)"""
    gradient_accumulation: int = 1
    """split each learner's sequences into this many micro-batches (same gradient, less memory)"""
    temperature: float = 0.7
    """sampling temperature"""
    top_p: float = 0.9
    """nucleus sampling mass"""
    max_new_tokens: int = 48
    """most tokens per completion (paper: 256, too slow for 2 CPU cores)"""
    gamma: float = 1.0
    """discount over an agent's turns in multi-turn envs (paper's option: 0.9); 1 = plain return"""
    normalize_std: bool = False
    """divide advantages by the group's reward std (the paper's MAGRPO does not)"""
    adv_clip: float = 10.0
    """clamp advantages to [-adv_clip, adv_clip]"""
    seed: int = 1
    """seed of the episodes (tasks) and of sampling"""
    out_dir: str = ""
    """output folder ('': runs/<algo>-<env name>-<seed>)"""
    resume: bool = False
    """continue from <out-dir>/checkpoint (other arguments must match the checkpoint's)"""
    checkpoint_every: int = 5
    """write the checkpoint and curves.png every N iterations (0: only at the end)"""
    eval_episodes: int = 8
    """tasks of the fixed evaluation set: the same tasks and sampling seeds at every
    evaluation, none of them used in training (0: no evaluation)"""
    eval_every: int = 5
    """evaluate before the first update, every N iterations and at the end"""
    progress: bool = True
    """show a tqdm progress bar over iterations"""


# --- command line: tyro reads Args (field docstrings are the help) --------------------------


def parse_args(argv=None) -> Args:
    """``Args`` from the command line (``argv`` None: ``sys.argv[1:]``)."""
    args = training.cli(Args, argv, description=__doc__.split("\n\n")[0])
    if args.group_size < 2:
        raise SystemExit("--group-size must be >= 2 (a group of one has no baseline)")
    return args


def parse_env_kwargs(text: str) -> dict:
    """``'{"a": 1}'`` or ``'a=1,b=x'`` -> dict: the syntax of ``llm-marl --env-arg`` too
    (:func:`llm_marl_envs.registry.parse_env_args`)."""
    return parse_env_args(text)


# --- the algorithm's pure parts --------------------------------------------------------------


def group_advantages(
    rewards, group_size: int, normalize_std: bool = False, clip: float = 10.0
) -> torch.Tensor:
    """``A_g = R_g - mean(group)`` (``/ (std + 1e-8)`` if ``normalize_std``), clamped to
    ``[-clip, clip]``. ``rewards`` holds consecutive groups; std is the population std."""
    grouped = torch.as_tensor(rewards, dtype=torch.float64).reshape(-1, group_size)
    advantages = grouped - grouped.mean(dim=1, keepdim=True)
    if normalize_std:
        advantages = advantages / (grouped.std(dim=1, unbiased=False, keepdim=True) + 1e-8)
    return advantages.clamp(-clip, clip).reshape(-1)


def joint_reward(episode, agents, gamma: float) -> float:
    """Discounted sum of each agent's turn rewards, averaged over the agents."""
    per_agent = []
    for agent in agents:
        rewards = [turn.reward for turn in episode.turns if turn.agent == agent]
        per_agent.append(sum(gamma**k * r for k, r in enumerate(rewards)))
    return float(np.mean(per_agent))


def derive_seed(*parts: int) -> int:
    """A 63-bit seed from integers (numpy's SeedSequence; no global RNG)."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1, np.uint64)[0] >> np.uint64(1))


def policy_gradient_step(
    learner, episodes, advantages, args, compute: training.Compute
) -> tuple[dict, float, int]:
    """One optimizer step on ``-(1/N) sum_e A_e sum_turns sum_t log pi`` over the learner's turns.

    Returns the loss per agent (its share of the sum), the gradient norm (before clipping)
    and the number of tokens the model read. When every advantage is 0 (all groups tied) there
    is no gradient and AdamW leaves the weights alone.
    """
    model, optimizer = learner["policy"].model, learner["optimizer"]
    samples = [  # (agent, prompt ids, completion ids, advantage) of the learner's turns; turns
        (turn.agent, turn.prompt_ids, turn.completion_ids, float(advantages[e]))  # with A = 0
        for e, episode in enumerate(episodes)  # add nothing to the gradient: skipped
        for turn in episode.turns
        if turn.agent in learner["agents"] and advantages[e] != 0
    ]
    losses, tokens = dict.fromkeys(learner["agents"], 0.0), 0
    optimizer.zero_grad(set_to_none=True)
    chunk = max(1, -(-len(samples) // args.gradient_accumulation))
    for begin in range(0, len(samples), chunk):
        part = samples[begin : begin + chunk]
        with compute.autocast():
            logprobs, mask = completion_logprobs(
                model,
                [s[1] for s in part],
                [s[2] for s in part],
                pad_id=learner["policy"].tokenizer.pad_token_id,
            )
        advantage = torch.tensor([s[3] for s in part], dtype=torch.float32, device=compute.device)
        per_sample = -advantage * (logprobs * mask).sum(dim=1) / len(episodes)
        per_sample.sum().backward()  # micro-batch gradients add up to the full batch's
        for (agent, *_), value in zip(part, per_sample.tolist(), strict=True):
            losses[agent] += value
        tokens += sum(len(s[1]) + len(s[2]) for s in part)
    max_norm = args.max_grad_norm if args.max_grad_norm > 0 else float("inf")
    norm = float(torch.nn.utils.clip_grad_norm_(learner["params"], max_norm))
    optimizer.step()
    return losses, norm, tokens


# --- checkpoints and plots -------------------------------------------------------------------


def save_checkpoint(
    out_dir: Path, next_iteration: int, args: Args, learners, metrics, evals=()
) -> None:
    """Everything ``--resume`` needs, as ``checkpoint/iteration-<next_iteration>/`` (atomic,
    checksummed; the previous checkpoint stays as the fallback)."""
    payloads = {
        f"learner_{index}": {
            "agents": learner["agents"],
            "params": {
                n: p.detach()  # trainable weights: the model, or the LoRA adapter
                for n, p in learner["policy"].model.named_parameters()
                if p.requires_grad
            },
            "optimizer": learner["optimizer"].state_dict(),
        }
        for index, learner in enumerate(learners)
    }
    payloads["torch_rng"] = torch.get_rng_state()  # unused by this script; restored all the same
    # the policy seeds are for the record only: the policies are reseeded at every iteration
    training.save_checkpoint(
        out_dir,
        next_iteration,
        args,
        metrics,
        payloads,
        policy_seeds=[learner["policy"].seed for learner in learners],
        evals=list(evals),
    )


def load_checkpoint(out_dir: Path, args: Args, learners) -> tuple[int, list[dict], list[dict]]:
    """Restore the learners from the newest checkpoint that verifies (its args checked against
    ``args``); returns the next iteration, the metrics and the evaluations so far: ``(0, [],
    [])`` when there is no good one (the run starts from scratch; ``training.load_latest``
    said why)."""
    found = training.load_checkpoint(out_dir, args)
    if found is None:
        return 0, [], []
    state, payloads = found
    for index, learner in enumerate(learners):
        saved, model = payloads[f"learner_{index}"], learner["policy"].model
        trainable = [n for n, p in model.named_parameters() if p.requires_grad]
        training.check_weights(saved["params"], trainable, args)
        model.load_state_dict(saved["params"], strict=False)
        learner["optimizer"].load_state_dict(saved["optimizer"])
    torch.set_rng_state(payloads["torch_rng"])
    return state["iteration"], state["metrics"], state.get("evals", [])


def plot_curves(
    metrics: list[dict], path: Path, agents: list[str], title: str = "", evals=()
) -> None:
    """Joint reward (mean ± std, max; the evaluations where they happened), loss and completion
    length per iteration, as a PNG."""
    training.plot_curves(
        path,
        metrics,
        [
            (
                "joint reward",
                [
                    ("mean", "reward_mean", {"band": "reward_std"}),
                    ("max", "reward_max", {"linestyle": ":"}),
                    ("eval (fixed tasks)", "reward_mean", {"eval": True, "linestyle": "--"}),
                ],
                "joint reward per episode",
            ),
            ("loss", [(agent, f"loss/{agent}", {}) for agent in agents], "policy-gradient loss"),
            (
                "completion tokens",
                [(agent, f"completion_tokens/{agent}", {}) for agent in agents],
                "tokens per completion",
            ),
        ],
        evals,
        title=title,
    )


def evaluate(args: Args, policies: dict, learners: list[dict], env_kwargs: dict, updates: int):
    """Joint reward, completion length and format failures on the fixed evaluation tasks.

    Every evaluation plays the same ``eval_episodes`` tasks (seeds from :data:`EVAL_SEED`) with
    the same sampling seeds, so two evaluations differ only through the weights. The policies
    are reseeded again before the next training rollout, so evaluating changes no training
    sample."""
    for index, learner in enumerate(learners):
        learner["policy"].reseed(EVAL_SEED + index)
    result = rollout(
        args.env,
        policies,
        episodes=args.eval_episodes,
        batch_size=args.eval_episodes,
        seed=EVAL_SEED,
        env_kwargs=env_kwargs,
        progress=None,  # a bar on a terminal (the first evaluation is the run's first long step)
    )
    agents = list(policies)
    rewards = np.array([joint_reward(e, agents, args.gamma) for e in result.episodes])
    row = {
        "iteration": updates,
        "episodes": len(result.episodes),
        "reward_mean": float(rewards.mean()),
        "reward_std": float(rewards.std()),
    }
    for agent in agents:
        turns = [t for e in result.episodes for t in e.turns if t.agent == agent]
        row[f"completion_tokens/{agent}"] = float(np.mean([len(t.completion_ids) for t in turns]))
        row[f"format_failure_rate/{agent}"] = float(
            np.mean([t.format_error is not None for t in turns])
        )
    return row


# --- main ------------------------------------------------------------------------------------


def main(argv=None) -> list[dict]:
    """Train; returns the metrics of every iteration (also in ``<out-dir>/metrics.jsonl``)."""
    args = parse_args(argv)
    compute = training.Compute.of(args.device, args.bf16_autocast)
    env_kwargs = parse_env_kwargs(args.env_kwargs)
    env_name = args.env.split("/")[-1]
    out_dir = Path(args.out_dir or f"runs/{args.algo}-{env_name}-{args.seed}")
    # SIGTERM / SIGINT stop the run at the next iteration's end, with a checkpoint; a full disk
    # or a read-only folder ends in one line (training.GracefulStop)
    with training.GracefulStop(args.algo, out_dir) as stop:
        out_dir.mkdir(parents=True, exist_ok=True)
        agents = list(llm_marl_envs.make(args.env, **env_kwargs).possible_agents)
        n_episodes = args.batch_size * args.group_size
        models = len(agents) if args.algo == "magrpo" else 1
        evaluations = (
            f"an evaluation of {args.eval_episodes} fixed tasks before the first update, every "
            f"{args.eval_every} iterations and at the end"
            if args.eval_episodes > 0
            else "no evaluations"
        )
        tqdm.write(  # before the first slow step (loading the models), so a user knows
            f"{args.algo} on {env_name} with the {args.model!r} model, seed {args.seed}, "
            f"{compute.describe()}: loading "
            f"{models} model(s), then {args.iterations} iterations of {args.batch_size} groups of "
            f"{args.group_size} episodes ({n_episodes} per iteration; measured with the defaults: "
            f"about 90 s per iteration on 2 CPU cores) and {evaluations}; results in {out_dir}"
        )

        # Learners: a model + optimizer per agent (magrpo), or one for all agents (grpo).
        learners = []
        for played in [[a] for a in agents] if args.algo == "magrpo" else [agents]:
            policy = HFPolicy.from_spec(
                args.model,
                dtype=args.dtype,
                device=compute.device,
                max_new_tokens=args.max_new_tokens,
                generation=GenerationConfig(
                    do_sample=True, temperature=args.temperature, top_p=args.top_p
                ),
                name=f"{args.algo}:{'+'.join(played)}",
            )
            if args.lora:
                policy.add_lora(r=args.lora_r, alpha=args.lora_alpha)
            policy.model.eval()  # dropout off for the whole run; gradients still flow
            params = [p for p in policy.model.parameters() if p.requires_grad]
            optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)
            learners.append(
                {"agents": played, "policy": policy, "optimizer": optimizer, "params": params}
            )
        policies = {agent: learner["policy"] for learner in learners for agent in learner["agents"]}

        start, metrics, evals = 0, [], []  # evals: one row per evaluation
        if args.resume:  # the newest good checkpoint, or none: from scratch
            start, metrics, evals = load_checkpoint(out_dir, args, learners)
        training.write_log(
            out_dir / "metrics.jsonl", metrics
        )  # drops lines logged after the checkpoint
        training.write_log(out_dir / "eval.jsonl", evals)
        title = f"{args.algo} on {env_name}, seed {args.seed}"

        def run_eval(updates: int) -> None:
            row = evaluate(args, policies, learners, env_kwargs, updates)
            evals.append(row)
            training.append_log(out_dir / "eval.jsonl", row)
            tqdm.write(
                f"eval after {updates} updates: joint reward {row['reward_mean']:.3f} "
                f"± {row['reward_std']:.3f} over {row['episodes']} fixed tasks"
            )

        def save(done: int) -> None:
            save_checkpoint(out_dir, done, args, learners, metrics, evals)
            if metrics:
                plot_curves(metrics, out_dir / "curves.png", agents, title, evals)

        if args.eval_episodes > 0 and start == 0 and not evals:
            run_eval(0)
            stop.check(start, saved=False, save=save)  # SIGTERM during it

        bar = stop.watch(
            tqdm(
                range(start, args.iterations),
                initial=start,
                total=args.iterations,
                unit="it",
                desc=f"{args.algo} {env_name}",
                disable=not args.progress,
                file=sys.stderr,
            )
        )
        for iteration in bar:
            tick = time.perf_counter()
            compute.reset_peak_memory()

            # 1. Rollout: B groups of G episodes; group b plays the task of seed*1e6 + iteration*B + b.
            for index, learner in enumerate(learners):
                learner["policy"].reseed(derive_seed(args.seed, iteration, index))
            result = rollout(
                args.env,
                policies,
                episodes=n_episodes,
                batch_size=n_episodes,
                seed=args.seed * 1_000_000 + iteration * args.batch_size,
                group_size=args.group_size,
                env_kwargs=env_kwargs,
                out=out_dir / "episodes.jsonl",
                progress=False,
            )
            episodes = result.episodes  # in order: group b is episodes[b*G : (b+1)*G]
            rollout_seconds = time.perf_counter() - tick

            # 2-3. Joint rewards and group-relative advantages, the same for every agent.
            rewards = np.array([joint_reward(episode, agents, args.gamma) for episode in episodes])
            advantages = group_advantages(
                rewards, args.group_size, args.normalize_std, args.adv_clip
            )

            # 4. One policy-gradient step per learner.
            tick_train = time.perf_counter()
            losses, grad_norms, train_tokens = {}, {}, 0
            for learner in learners:
                loss, norm, tokens = policy_gradient_step(
                    learner, episodes, advantages, args, compute
                )
                losses.update(loss)
                grad_norms["+".join(learner["agents"])] = norm
                train_tokens += tokens
            train_seconds = time.perf_counter() - tick_train

            # Metrics. Components: the first agent's last turn (the envs' shared joint score);
            # raw values such as rho are averaged over the episodes that reached them.
            turns = {a: [t for ep in episodes for t in ep.turns if t.agent == a] for a in agents}
            scores = [
                next(t for t in reversed(ep.turns) if t.agent == agents[0]).reward_components
                for ep in episodes
            ]
            names = sorted({k for c in scores for k, v in c.items() if isinstance(v, (int, float))})
            gen_tokens = sum(len(t.completion_ids) for a in agents for t in turns[a])
            seconds = time.perf_counter() - tick
            row = {
                "iteration": iteration,
                "episodes": len(episodes),
                "reward_mean": float(rewards.mean()),
                "reward_std": float(rewards.std()),
                "reward_max": float(rewards.max()),
                "reward_min": float(rewards.min()),
                "zero_std_groups": int(
                    (rewards.reshape(-1, args.group_size).std(axis=1) == 0).sum()
                ),
                "advantage_abs_mean": float(advantages.abs().mean()),
                **{
                    f"reward_components/{k}": float(np.mean([c[k] for c in scores if k in c]))
                    for k in names
                },
                **{f"loss/{a}": losses[a] for a in agents},
                **{f"grad_norm/{name}": norm for name, norm in grad_norms.items()},
                **{
                    f"completion_tokens/{a}": float(
                        np.mean([len(t.completion_ids) for t in turns[a]])
                    )
                    for a in agents
                },
                "format_failures": sum(
                    t.format_error is not None for a in agents for t in turns[a]
                ),
                "seconds": seconds,
                "rollout_seconds": rollout_seconds,
                "train_seconds": train_seconds,
                "gen_tokens_per_s": gen_tokens / rollout_seconds,
                "train_tokens_per_s": train_tokens / train_seconds,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # KiB
                "peak_gpu_memory_mb": compute.peak_memory_mb(),  # None on the CPU
            }
            metrics.append(row)
            training.append_log(out_dir / "metrics.jsonl", row)
            bar.set_postfix(reward=f"{row['reward_mean']:.3f}", s_it=f"{seconds:.0f}")

            done = iteration + 1
            every = args.eval_every > 0 and done % args.eval_every == 0
            if args.eval_episodes > 0 and (every or done == args.iterations):
                run_eval(done)
            last = done == args.iterations
            saved = last or bool(args.checkpoint_every and done % args.checkpoint_every == 0)
            if saved:
                save(done)
            if not last:  # SIGTERM / Ctrl-C: save (if not just saved) and exit with one line
                stop.check(done, saved=saved, save=save)
        bar.close()
        return metrics


if __name__ == "__main__":
    main()
