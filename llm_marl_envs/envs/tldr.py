"""TLDRSummarization-v1 / -v0: two agents summarise the same Reddit post, concisely and in detail.

| | |
|---|---|
| Id | ``llm_marl_envs/TLDRSummarization-v1`` (AEC and native Parallel); ``-v0`` kept |
| Agents | ``summarizer_0`` (concise summary, c1) and ``elaborator_0`` (detailed summary, c2), simultaneous, one round |
| Action | free text (``FreeText``, 8,192 chars) |
| Observation | instruction + the post; ``infos[agent]["messages"]`` has it as chat (system + user) |
| Reward | MAGRPO's joint writing reward (maximum 3.0), the same for both agents; ``reward_impl`` picks whose implementation |
| Paper | Liu et al., "LLM Collaboration With Multi-Agent Reinforcement Learning" (MAGRPO), arXiv:2508.04652 |

**Reward implementation** (``reward_impl``, in ``infos[agent]["reward_impl"]`` and every
episode record): ``"authors"`` (v1's: bit for bit the authors' released
``tldr_combined_reward``, which produced the paper's TL;DR figures), ``"authors-2025"`` (the
same for TL;DR) or ``"paper"`` (v0's and the default: the description below, written from the paper).
The authors' code differs from the description in four places: transition phrases are
plain substrings of the lower-cased text ("so" inside "also" counts) and a phrase listed in
two categories counts for both; 12 categories (T at most 0.95, so the maximum is 2.98); their
stopword list; the Jaccard similarity of two empty content-word sets is 1.0 (ours 0.0).
``docs/magrpo_parity.md`` lists every difference and how it was checked.

**Reward** (``llm_marl_envs.rewards.writing``, table ``TLDR``), gated: the first level that
fails stops the climb, earlier levels keep their points.

1. ``structure`` +0.5: both texts have 8..256 words;
2. ``length_ratio`` up to +1.0: rho = len(c2) / len(c1) in characters; 1.0 on [1.6, 3.2],
   linear from 0 at 1.1 and down to 0 at 5.0; outside [1.1, 5.0] the climb stops;
3. ``vocabulary`` up to +0.5: u = unique words of c2 / unique words of c1; 0.5 for u >= 2.0,
   linear from 0 at 1.3; below 1.3 the climb stops;
4. ``coherence`` = 0.4 T (transition phrases used by c2, 13 categories: T = 0.4 + 0.05 per
   extra category, at most 1.0) and ``consistency`` = 0.6 min(J, 0.03) / 0.03 (Jaccard
   similarity of the two texts' words, stopwords removed).

``reward_components`` per agent: the five levels, ``total``, the raw ``rho``, ``u``, ``T``,
``J`` (those reached), ``task_reward`` (= ``total``) and ``format_failure`` (this agent's
text was empty or over ``max_action_length``: the joint reward is then 0).

**Data** (``data_source``): ``"auto"`` (Hub ``trl-lib/tldr`` or its cache, else the bundled
sample), ``"hub"``, ``"bundled"`` (Reddit-style posts written for this project), or a local
file in the Hub schema (``prompt``, ``completion``). ``split`` may be sliced like MAGRPO's
``"train[:1000]"`` / ``"test[:1000]"``. ``infos`` give ``data_source`` and ``row_id``.

**Arguments.** ``split``, ``data_source``, ``reward_impl``, ``max_action_length``,
``max_cycles`` (accepted; an episode is one round), ``render_mode``. ``reset(options={"row_index": i})`` plays row ``i``.
``llm_marl_envs.make_parallel`` gives the Parallel form.

**Version history.** Versions are registry arguments (``envs_registry.yaml``): one class,
whose defaults are v0's; each version's entry states the arguments that define it. v0:
initial version (``reward_impl="paper"``). v1: ``reward_impl="authors"`` (scores comparable
with the MAGRPO authors' code and figures).
"""

from __future__ import annotations

from typing import Any

from llm_marl_envs.core.simultaneous import TextParallelEnv
from llm_marl_envs.data.tldr import load_tldr, post_text
from llm_marl_envs.envs.base.writing import WritingEnv

__all__ = ["TLDRSummarizationEnv", "env", "parallel_env"]


class TLDRSummarizationEnv(WritingEnv):
    """TL;DR summarisation by a concise and a detailed summariser (see the module docstring)."""

    metadata = {**WritingEnv.metadata, "name": "TLDRSummarization-v0"}
    ROLES = {"summarizer_0": "concise summarizer", "elaborator_0": "detailed elaborator"}
    INSTRUCTIONS = {
        "summarizer_0": (
            "Summarise the Reddit post below as a short TL;DR: one or two plain sentences "
            "with the main point only."
        ),
        "elaborator_0": (
            "Summarise the Reddit post below in detail: several sentences covering the "
            "situation, the key facts and what the poster is asking, in varied wording, "
            "linked with transition words such as 'however', 'because' or 'as a result'."
        ),
    }
    TASK = "tldr"
    load_data = staticmethod(load_tldr)
    SOURCE_LABEL = "Post"

    def _source(self, row: dict[str, Any]) -> str:
        return post_text(row["prompt"])


def env(**kwargs: Any) -> TLDRSummarizationEnv:
    """AEC form."""
    return TLDRSummarizationEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """Native Parallel form (both agents act in one ``step``)."""
    return TextParallelEnv(TLDRSummarizationEnv(**kwargs))
