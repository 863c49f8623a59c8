"""Reward implementations: which ones each task offers, the default, and the check.

Some tasks can be scored in more than one way (``reward_impl``), each named here:

* ``"paper"``: the reward as the paper describes it, written from the text (MAGRPO: Liu et
  al., 2025, arXiv:2508.04652);
* ``"authors"``: bit for bit what the authors' released code computes today;
* ``"authors-2025"``: the writing tasks' code as released in 2025, before the authors changed
  arXiv's length table on 2025-12-31 (the code behind the paper's arXiv figures).
* ``"hardened"`` (coding only): the authors' coding reward with a cooperation bonus that must
  be earned (:mod:`llm_marl_envs.rewards.coding_hardened`; CoopCoding-v4).

``docs/magrpo_parity.md`` lists every difference. A function or environment given no
implementation uses :data:`DEFAULT_REWARD_IMPL`; each registered version names its own in
``envs_registry.yaml`` (``TLDRSummarization-v1``: ``reward_impl: authors``). The scorer of a
name is chosen in one place per task family: :func:`llm_marl_envs.rewards.writing.writing_scorer`
for the writing tasks, ``CoopCodingEnv`` (with the sandbox) for coding.

>>> check_reward_impl("arxiv", "authors-2025")
'authors-2025'
"""

from __future__ import annotations

__all__ = ["DEFAULT_REWARD_IMPL", "REWARD_IMPLS", "check_reward_impl"]

_WRITING = ("paper", "authors", "authors-2025")
#: The implementations of each task that offers more than one: ``{task: names}``.
REWARD_IMPLS: dict[str, tuple[str, ...]] = {
    "tldr": _WRITING,
    "arxiv": _WRITING,
    "coding": ("paper", "authors", "hardened"),
}
#: The implementation of a caller that names none.
DEFAULT_REWARD_IMPL = "paper"


def check_reward_impl(task: str, reward_impl: object) -> str:
    """``reward_impl`` if ``task`` offers it, else a one-line ``ValueError`` naming the choices."""
    if task not in REWARD_IMPLS:
        raise ValueError(f"task must be one of {sorted(REWARD_IMPLS)}, got {task!r}")
    if reward_impl not in REWARD_IMPLS[task]:
        raise ValueError(
            f"reward_impl must be one of {list(REWARD_IMPLS[task])}, got {reward_impl!r}"
        )
    return str(reward_impl)
