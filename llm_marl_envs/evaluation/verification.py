"""Verification of a leaderboard entry: a secret sample regenerated, bound to the files it checked.

An entry's scores follow from its recorded actions (``leaderboard add`` replays them); a
verification ties the actions to the claimed models. :func:`verify_folder` does four things:

* **Replay.** Every episode's recorded actions are played again through this package's
  environments (:mod:`llm_marl_envs.evaluation.replay`, as ``add`` does): the count goes on
  the badge ("114/114 replayed"), and an episode that does not replay makes it unverified.

* **Models.** It loads every model the entry's seats name and recomputes each one's identity
  from the loaded weights (``policy.describe()``: model id, Hub revision and
  ``weights_sha256``). A seat's spec carries its revision (``hf:org/model@<commit sha>``), so
  the verifier loads the revision the entry played. The manifest's claims must match: the
  weights hash is the pin (a local folder, the embedded model, a checkpoint or a Hub download
  is the model whose weights hash to it). A model that
  cannot be loaded, a claim without a weights hash or a claim that differs makes the entry
  unverified, naming the mismatch; no episode is regenerated then.
* **A secret, stratified sample.** The episodes to regenerate are drawn with a generator seeded
  by ``secrets.randbits(64)`` at verify time (recorded afterwards, so a draw can be repeated,
  never foreseen), every task getting its share (:func:`allocate`: at least one episode each,
  the rest in proportion). Its size comes from a stated power (:func:`sample_size`): if a
  fraction ``f`` of the ``N`` episodes were forged (``K = ceil(f N)`` of them, default
  ``f = 5%``), the sample catches at least one with probability at least ``0.95``. Drawing
  ``n_t`` of task ``t``'s ``N_t`` episodes without replacement misses all ``k_t`` forged ones
  there with the hypergeometric probability ``C(N_t - k_t, n_t) / C(N_t, n_t)``, so::

      power = 1 - max over k_1 + ... + k_T = K of  prod_t C(N_t - k_t, n_t) / C(N_t, n_t)

  the worst way a forger could spread ``K`` episodes over the tasks, knowing the allocation
  (:func:`catch_power`; one task: ``1 - C(N - K, n) / C(N, n)``). On lite-v2 (114 episodes,
  ``K = 6``) the rule regenerates 47.
* **Regeneration.** The sampled episodes are played again with the entry's seats (each task's
  seed, the episode's seed and reset options); each must give the same actions and score.

The verification records sha256 content hashes of the entry's ``results.json`` and of every
file in its ``episodes/`` folder, and a board's verification is sealed with an HMAC under the
board's own key (``<board>/verification.key``, made at the first verify; keep it out of a
submission and out of version control). :func:`check` (run by ``leaderboard build``) gives the
badge only when the seal and every hash still hold: an edited file, a hand-written
verification or one copied from another board shows "unverified" and why. The entries that
ship with the package carry unsealed verifications, trusted as the package's own files.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import math
import os
import random
import secrets
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from llm_marl_envs.evaluation.evaluate import load_episodes, task_policies
from llm_marl_envs.evaluation.metrics import item_value
from llm_marl_envs.evaluation.replay import episode_difference, replay_task
from llm_marl_envs.evaluation.submission import read_episodes
from llm_marl_envs.evaluation.suite import Suite
from llm_marl_envs.policies import GenerationConfig, ModelCache
from llm_marl_envs.registry import make

__all__ = [
    "FORGED_FRACTION",
    "POWER",
    "allocate",
    "catch_power",
    "check",
    "content_hashes",
    "forged_count",
    "sample_size",
    "seal",
    "verify_folder",
]

FORMAT = "llm-marl-envs/verification/2"
#: The share of forged episodes a verification is sized to catch ...
FORGED_FRACTION = 0.05
#: ... and the probability it catches at least one of them.
POWER = 0.95
KEY_FILE = "verification.key"


# --------------------------------------------------------------------------- the sample
def forged_count(episodes: int, fraction: float = FORGED_FRACTION) -> int:
    """``K``: the forged episodes a fraction stands for (at least one)."""
    return max(1, math.ceil(fraction * episodes - 1e-9))


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """``n`` draws spread over tasks of ``sizes`` episodes: one each first (while ``n``
    allows), the rest in proportion to the episodes left (largest remainders)."""
    n = min(n, sum(sizes.values()))
    drawn = dict.fromkeys(sizes, 0)
    for task in [t for t, size in sizes.items() if size][:n]:
        drawn[task] = 1
    left = n - sum(drawn.values())
    room = {task: sizes[task] - drawn[task] for task in sizes}
    quota = {task: left * r / max(1, sum(room.values())) for task, r in room.items()}
    for task in sizes:
        drawn[task] += math.floor(quota[task])
    remainder = n - sum(drawn.values())
    for task in sorted(sizes, key=lambda t: quota[t] - math.floor(quota[t]), reverse=True)[
        :remainder
    ]:
        drawn[task] += 1
    return drawn


def _miss(size: int, drawn: int, forged: int) -> float:
    """Probability that ``drawn`` of ``size`` episodes avoid all ``forged`` of them:
    C(size - forged, drawn) / C(size, drawn) = prod_i (size - drawn - i) / (size - i)."""
    chance = 1.0
    for i in range(forged):
        chance *= max(0, size - drawn - i) / (size - i)
    return chance


def catch_power(sizes: Mapping[str, int], drawn: Mapping[str, int], forged: int) -> float:
    """Probability that a stratified sample (``drawn[t]`` of ``sizes[t]``) holds at least one
    of ``forged`` episodes, however a forger spreads them over the tasks (the worst case)."""
    best = {0: 1.0}  # forged placed so far -> the largest chance of missing them all
    for task, size in sizes.items():
        step: dict[int, float] = {}
        for placed, chance in best.items():
            for k in range(min(size, forged - placed) + 1):
                miss = chance * _miss(size, drawn.get(task, 0), k)
                step[placed + k] = max(step.get(placed + k, 0.0), miss)
        best = step
    return 1.0 - best.get(forged, 0.0)


def sample_size(
    sizes: Mapping[str, int], fraction: float = FORGED_FRACTION, power: float = POWER
) -> int:
    """The smallest ``n`` whose allocation catches ``forged_count(N, fraction)`` forged
    episodes with probability >= ``power`` (binary search; all ``N`` at worst)."""
    total, forged = sum(sizes.values()), forged_count(sum(sizes.values()), fraction)
    low, high = 1, total
    while low < high:
        middle = (low + high) // 2
        if catch_power(sizes, allocate(sizes, middle), forged) >= power:
            high = middle
        else:
            low = middle + 1
    return high


def draw(pool: Mapping[str, Sequence[Any]], drawn: Mapping[str, int], secret: int) -> list:
    """``drawn[t]`` episodes of each task's ``pool[t]``, chosen by a generator of ``secret``."""
    rng = random.Random(secret)
    return [(task, line) for task in pool for line in rng.sample(list(pool[task]), drawn[task])]


# --------------------------------------------------------------------------- models
def _model_problems(claimed: Mapping[str, dict], loaded: Mapping[str, dict]) -> list[str]:
    """How the manifest's model claims differ from the models loaded for the same seats."""
    problems = [
        f"the manifest names model {spec!r}, which no seat plays"
        for spec in claimed
        if spec not in loaded
    ]
    for spec, model in loaded.items():
        claim = claimed.get(spec) or {}
        for field in ("model_id", "revision", "weights_sha256"):
            if claim.get(field) != model.get(field):
                problems.append(
                    f"model {spec}: the manifest claims {field} {claim.get(field)!r}, "
                    f"the loaded model has {model.get(field)!r}"
                )
    return problems


def _load_models(
    suite: Suite, results: dict, models: ModelCache, generation: GenerationConfig | None
) -> tuple[dict[str, dict], list[str]]:
    """Load every model of the entry's seats; their identities from the loaded weights, and
    the problems (a model that cannot be loaded, a claim that differs)."""
    for name, task in results["manifest"]["tasks"].items():
        try:
            with closing(make(suite.task(name).env, **suite.task(name).kwargs)) as env:
                task_policies(models, suite.task(name), env, task["seats"], 0, generation)
        except Exception as error:  # any failure to load leaves the model unchecked
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            return {}, [f"task {name}: a seat's model could not be loaded ({reason})"]
    loaded = models.describe()
    return loaded, _model_problems(results["manifest"].get("policies", {}), loaded)


# --------------------------------------------------------------------------- regeneration
def _regenerate(
    suite: Suite,
    results: dict,
    chosen: list[tuple[str, dict]],
    models: ModelCache,
    write: Callable[[str], None],
    generation: GenerationConfig | None,
) -> list[dict]:
    """Play each chosen episode again with the entry's seats; one check per episode."""
    from llm_marl_envs.rollout import rollout

    checks = []
    names = [t.name for t in suite.tasks]
    for task_name in sorted({t for t, _ in chosen}):
        task = suite.task(task_name)
        lines = [line for t, line in chosen if t == task_name]
        seats = results["manifest"]["tasks"][task_name]["seats"]
        seed = suite.raw.get("seed", 0) * 1_000 + names.index(task_name)  # as evaluate seeds
        with closing(make(task.env, **task.kwargs)) as env:
            policies = task_policies(models, task, env, seats, seed, generation)
        played = rollout(
            task.env,
            policies,
            seeds=[line["seed"] for line in lines],
            reset_options=[line["options"] for line in lines],
            batch_size=results["manifest"].get("batch_size", 8),
            env_kwargs=task.kwargs,
            progress=False,
        )
        for line, record in zip(lines, played.episodes, strict=True):
            check = {
                "task": task_name,
                "key": line["key"],
                "sample": line["sample"],
                "actions_match": [t.action for t in line["record"].turns]
                == [t.action for t in record.turns],
                "score": item_value(task.primary, [line["record"]], task),
                "regenerated_score": item_value(task.primary, [record], task),
            }
            checks.append(check)
            write(f"  {task_name} {line['key']}: " + ("reproduced" if _ok(check) else "DIFFERS"))
    return checks


def _replay_all(suite: Suite, folder: Path) -> tuple[dict[str, int], list[str]]:
    """Every episode's recorded actions replayed: how many replay as recorded, and where the
    others differ."""
    differ, total = [], 0
    for name, played in read_episodes(folder, suite).items():
        again = replay_task(suite.task(name), played)
        for (item, sample, record), replayed in zip(played, again, strict=True):
            found = episode_difference(record, replayed)
            if found:
                differ.append(f"task {name}, item {item.key} sample {sample}: {found}")
        total += len(played)
    return {"replayed": total - len(differ), "episodes": total}, differ


def _ok(check: dict) -> bool:
    return check["actions_match"] and check["score"] == check["regenerated_score"]


def verify_folder(
    folder: Path,
    suite: Suite,
    results: dict,
    *,
    sample: int | None = None,
    secret: int | None = None,
    write: Callable[[str], None] = print,
    generation: GenerationConfig | None = None,
) -> dict:
    """The verification of the entry in ``folder`` (its ``results`` already checked against
    ``suite``): models checked, then a secret stratified sample regenerated (``sample``
    episodes, default :func:`sample_size`'s; ``secret``: the draw's seed, default a fresh
    ``secrets.randbits(64)``; the models where ``generation`` says). Not written anywhere:
    the caller does that."""
    import llm_marl_envs

    secret = secrets.randbits(64) if secret is None else secret
    files = content_hashes(folder)  # what is read below is what the verification binds
    pool = {t: load_episodes(folder / "episodes" / f"{t}.jsonl.gz") for t in results["tasks"]}
    sizes = {task: len(lines) for task, lines in pool.items()}
    size = sample_size(sizes) if sample is None else min(sample, sum(sizes.values()))
    drawn = allocate(sizes, size)
    forged = forged_count(sum(sizes.values()))
    replay, unreplayed = _replay_all(suite, folder)
    models = ModelCache()
    try:
        loaded, problems = _load_models(suite, results, models, generation)
        checks = (
            []
            if problems
            else _regenerate(suite, results, draw(pool, drawn, secret), models, write, generation)
        )
    finally:
        models.close()
    problems += unreplayed + [
        f"{c['task']} {c['key']} does not reproduce" for c in checks if not _ok(c)
    ]
    return {
        "format": FORMAT,
        "verified": not problems and bool(checks),
        "problems": problems,
        "secret_seed": secret,
        "sample": {
            "episodes": sum(sizes.values()),
            "size": size,
            "per_task": drawn,
            "forged_fraction": FORGED_FRACTION,
            "forged": forged,
            "power": round(catch_power(sizes, drawn, forged), 4),
        },
        "replay": replay,
        "regenerated": sum(map(_ok, checks)),
        "models": loaded,
        "files": files,
        "package_version": llm_marl_envs.__version__,
        "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "episodes": checks,
    }


# --------------------------------------------------------------------------- binding
def content_hashes(folder: Path) -> dict[str, str]:
    """sha256 of the entry's ``results.json`` and of every file in its ``episodes/``."""
    paths = [folder / "results.json", *sorted((folder / "episodes").iterdir())]
    return {
        path.relative_to(folder).as_posix(): "sha256:"
        + hashlib.sha256(path.read_bytes()).hexdigest()
        for path in paths
        if path.is_file()
    }


def board_key(board: Path, create: bool = False) -> bytes | None:
    """The board's sealing key (``<board>/verification.key``); made when ``create`` and absent."""
    path = Path(board) / KEY_FILE
    key = path.read_text(encoding="utf-8").strip().encode() if path.is_file() else b""
    if not key and create:  # absent, or left empty by an older version killed making it
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{KEY_FILE}.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(secrets.token_hex(32) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)  # whole or absent: never an empty key
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        key = path.read_text(encoding="utf-8").strip().encode()
    return key or None


def _mac(verification: Mapping[str, Any], key: bytes) -> str:
    body = {k: v for k, v in verification.items() if k != "seal"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def seal(verification: dict, key: bytes) -> dict:
    """``verification`` with its seal (an HMAC of everything else under the board's key)."""
    return {**verification, "seal": _mac(verification, key)}


def check(path: Path, folder: Path, key: bytes | None, *, shipped: bool = False) -> dict:
    """What ``leaderboard build`` shows of the verification at ``path`` for the entry in
    ``folder``: ``verified`` (True, False, or None when there is none), the verification's
    numbers and ``problems`` (why it is not verified). A board's verification must be sealed
    by the board's ``key``; a ``shipped`` one (the package's own files) is not sealed."""
    if not path.is_file():
        return {"verified": None, "problems": []}
    try:
        verification = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _unverified(f"{path.name} is not JSON")
    if not isinstance(verification, dict) or verification.get("format") != FORMAT:
        return _unverified(f"{path.name} is not a verification of this package ({FORMAT})")
    if not shipped and (
        key is None
        or not hmac.compare_digest(str(verification.get("seal")), _mac(verification, key))
    ):
        return _unverified("the verification is not sealed by this board's key")
    recorded, now = verification.get("files") or {}, content_hashes(folder)
    changed = (set(recorded) ^ set(now)) | {f for f in now if recorded.get(f) != now[f]}
    if changed:
        return _unverified("changed since it was verified: " + ", ".join(sorted(changed)))
    return {
        "verified": bool(verification.get("verified")),
        "problems": list(verification.get("problems", [])),
        "replay": verification.get("replay"),
        "regenerated": verification.get("regenerated", 0),
        "sample": verification.get("sample"),
        "models": verification.get("models", {}),
        "secret_seed": verification.get("secret_seed"),
        "at": verification.get("at"),
    }


def _unverified(why: str) -> dict[str, Any]:
    return {"verified": False, "problems": [why]}


def summary(trust: Mapping[str, Any]) -> str:
    """What the badge says: what was replayed and regenerated, with the sample's power; or
    why the entry is not verified (the first problem; ``problems`` has them all)."""
    replay = trust.get("replay")
    said = [f"{replay['replayed']}/{replay['episodes']} replayed"] if replay else []
    if trust["verified"] is None:
        said.append("not regenerated")
    elif not trust["verified"]:
        problems = trust["problems"]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        said.append(f"unverified: {problems[0]}{more}")
    else:
        sample = trust["sample"]
        said.append(
            f"{trust['regenerated']} regenerated (a secret sample that catches "
            f"{sample['forged_fraction']:.0%} forged episodes with probability "
            f"{sample['power']:.2f})"
        )
    return ", ".join(said)
