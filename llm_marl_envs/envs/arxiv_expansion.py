"""ArxivExpansion-v1 / -v0: two agents expand one arXiv abstract into the two halves of an introduction.

| | |
|---|---|
| Id | ``llm_marl_envs/ArxivExpansion-v1`` (AEC and native Parallel); ``-v0`` kept |
| Agents | ``background_0`` (background and motivation, c1) and ``methods_0`` (methods and implications, c2), simultaneous, one round |
| Action | free text (``FreeText``, 8,192 chars) |
| Observation | instruction + the abstract; ``infos[agent]["messages"]`` has it as chat |
| Reward | MAGRPO's joint writing reward with its arXiv table (maximum 3.0), the same for both agents; ``reward_impl`` picks whose implementation |
| Paper | Liu et al., "LLM Collaboration With Multi-Agent Reinforcement Learning" (MAGRPO), arXiv:2508.04652 |

**Reward implementation** (``reward_impl``, in ``infos[agent]["reward_impl"]`` and every
episode record):

* ``"authors-2025"`` (v1's): bit for bit the authors' released
  ``arxiv_combined_reward`` as it was until 2025-12-30, the code behind the paper's arXiv
  figures: the paper's length table below, with the authors' matching details;
* ``"authors"``: their code today; since 2025-12-31 the length plateau is [1.3, 1.6], with
  ramps on [0.8, 1.3) and (1.6, 2.0];
* ``"paper"`` (v0's and the default): the description below, written from the paper.

The authors' code differs from the description: transition phrases are plain substrings
of ``(c1 + c2).lower()``, the two texts joined with no separator (a phrase may straddle
the join), and a phrase in two categories counts for both; 12 categories (maximum 2.98);
their stopword list; the Jaccard similarity of two empty content-word sets is 1.0.
``docs/magrpo_parity.md`` lists every difference and how it was checked.

**Reward** (``llm_marl_envs.rewards.writing``, table ``ARXIV``), gated like TL;DR's:

1. ``structure`` +0.5: both texts have 128..256 words;
2. ``length_ratio`` up to +1.0: rho = len(c2) / len(c1); 1.0 on [1.0, 1.3], linear ramps on
   [0.8, 1.0) and (1.3, 1.5]; outside [0.8, 1.5] the climb stops;
3. ``vocabulary`` up to +0.5: u = unique words of c2 / unique words of c1; 0.5 on [0.7, 1.3],
   ramps on [0.5, 0.7) and (1.3, 1.7]; outside [0.5, 1.7] the climb stops;
4. ``coherence`` = 0.4 T with T computed on c1 + c2, and ``consistency`` =
   0.6 min(J, 0.23) / 0.23.

Components as in TLDRSummarization-v0 (levels, ``total``, raw ``rho``/``u``/``T``/``J``,
``task_reward``, ``format_failure``).

**Data** (``data_source``): ``"auto"`` (Hub ``OpenMLRL/arXiv_abstract`` or its cache, else the
bundled sample), ``"hub"``, ``"bundled"`` (invented abstracts written for this project), or a
local file with an ``abstract_text`` column. ``split`` may be sliced.

**Arguments.** ``split``, ``data_source``, ``reward_impl``, ``max_action_length``,
``max_cycles`` (accepted; an episode is one round), ``render_mode``. ``reset(options={"row_index": i})`` plays row ``i``.

**Version history.** Versions are registry arguments (``envs_registry.yaml``): one class,
whose defaults are v0's; each version's entry states the arguments that define it. v0:
initial version (``reward_impl="paper"``). v1: ``reward_impl="authors-2025"`` (scores
comparable with the paper's arXiv figures, computed by the authors' code).
"""

from __future__ import annotations

from typing import Any

from llm_marl_envs.core.simultaneous import TextParallelEnv
from llm_marl_envs.data.arxiv import load_arxiv_abstracts
from llm_marl_envs.envs.base.writing import WritingEnv

__all__ = ["ArxivExpansionEnv", "env", "parallel_env"]

_LENGTH = "Write 128 to 256 words of plain prose, without headings or lists."


class ArxivExpansionEnv(WritingEnv):
    """Introduction writing from an abstract by two agents (see the module docstring)."""

    metadata = {**WritingEnv.metadata, "name": "ArxivExpansion-v0"}
    ROLES = {"background_0": "background and motivation", "methods_0": "methods and implications"}
    INSTRUCTIONS = {
        "background_0": (
            "You are writing the first half of the introduction of the paper whose abstract "
            "is given: the background of the problem and why it matters. " + _LENGTH
        ),
        "methods_0": (
            "You are writing the second half of the introduction of the paper whose abstract "
            "is given: the approach it takes and what its results imply. " + _LENGTH
        ),
    }
    TASK = "arxiv"
    load_data = staticmethod(load_arxiv_abstracts)
    SOURCE_LABEL = "Abstract"

    def _source(self, row: dict[str, Any]) -> str:
        title = row.get("title")
        return f"{title}\n\n{row['abstract_text']}" if title else row["abstract_text"]


def env(**kwargs: Any) -> ArxivExpansionEnv:
    """AEC form."""
    return ArxivExpansionEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """Native Parallel form (both agents act in one ``step``)."""
    return TextParallelEnv(ArxivExpansionEnv(**kwargs))
