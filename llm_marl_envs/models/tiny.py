"""A tiny random GPT-2 and its tokenizer, built in-process, for tests and smoke runs.

:func:`tiny_model` needs no download: a byte-level BPE tokenizer is trained by the
``tokenizers`` library on the built-in :data:`CORPUS` and the bundled data samples,
wrapped in a transformers fast tokenizer with ChatML special tokens and a chat template,
and a 2-layer GPT-2 (~0.6M parameters) gets weights drawn by this module from ``seed`` (not by
transformers' own initialisation, which changed between releases), so it is the same model on
every transformers version: the ``tiny`` leaderboard entry verifies wherever it loads.

It reads :data:`CONTEXT` (4,096) positions, prompt and answer together: every environment's
longest prompt plus its registry token budget fits (``tests/models/test_tiny_context.py``; the
longest, a 9x9 MazeCollab game's late turn with the scripted partner, is ~2,900 tokens). Its
first 1,024 position rows, and every other weight, are the ones the model had when it read
1,024 positions: the rows past 1,024 are drawn after the rest, so any prompt and answer that
fitted in 1,024 positions give the same logits as before. (A maze game that runs all its
cycles with answers of the full budget, as this model's gibberish does, outgrows any fixed
context: :class:`~llm_marl_envs.policies.hf.HFPolicy` cuts such prompts from the left.)

The weights are drawn with a wide ``initializer_range`` so that next-token logits are well
separated: greedy decoding then gives the same tokens whether a prompt is generated alone or
left-padded in a batch (with near-uniform logits, float noise from padding could flip an
argmax). Its text is gibberish (often invalid UTF-8, decoded as U+FFFD).

>>> model, tokenizer = tiny_model(seed=0)              # doctest: +SKIP
>>> tokenizer.decode(tokenizer("maze ✓")["input_ids"])  # doctest: +SKIP
'maze ✓'
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from llm_marl_envs.core.optional import require

__all__ = ["CHAT_TEMPLATE", "CONTEXT", "CORPUS", "tiny_model", "tiny_tokenizer"]

#: ChatML without a default system message.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

#: Positions the tiny model reads: prompt plus answer (``n_positions``, ``model_max_length``).
CONTEXT = 4096
#: The position table the weights were first drawn with; rows past it are appended after.
_FIRST_POSITIONS = 1024

#: The tokenizer's training text: the words the environments use.
CORPUS = """\
You are a gnome in a maze. The maze is a grid of walls and open cells. Move up, down, left or
right. Your partner sees the other half of the maze; tell them where the exit is. The exit is
two cells to the left and one cell up. Walls block the way north; the corridor turns east.
Action: left. Action: up. Action: stay. You reached the goal in 7 steps. Reward: 1.0.
Question: A library had 120 books. It bought 3 boxes of 15 books each and then gave 40 books
to a school. How many books does the library have now?
Answer: The boxes hold 3 * 15 = 45 books, so the library had 120 + 45 = 165 books. After
giving away 40 it has 165 - 40 = 125 books. The answer is 125.
Question: Tom has 8 apples and buys 12 more. He eats 5. How many apples are left?
Answer: 8 + 12 = 20, and 20 - 5 = 15. The answer is 15.
Reference: The answer is 42. A reference answer written by another solver may be wrong.
Solve the grade-school math problem. Reason step by step, then end with "The answer is 9."
The donor game: you may give some of your resources to a recipient; the gift is doubled.
Round 3 of 10. You have 14.5 units. Give 0.5 of your resources. Cooperation pays off.
Write a positive movie review. This film was wonderful, moving and funny; the acting is superb.
The plot was dull and the ending terrible; I would not recommend it. A great, great movie!
Summarize the post in one sentence. TL;DR: the author asks for advice about a job offer.
Expand the title into an abstract. We propose a method for multi-agent reinforcement learning
with language models, and show that it improves cooperation on text games.
def add(a, b):
    return a + b

def solve(numbers: list[int]) -> int:
    total = 0
    for n in numbers:
        if n % 2 == 0:
            total += n
    return total
{"action": "right", "message": "the key is behind the door"} [1, 2, 3] (x, y) = (4, 5)
Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 25 50 99 100 1000 3.14 -7 +3 = < > % $ # @ & | ^ ~ `
Unicode: café, naïve, Zürich, São Paulo, Ελληνικά, русский, 日本語, 中文, 한국어, ✓ ✗ → ← ↑ ↓ 🙂
Turn 1. Turn 2. Player A, player B, pioneer, observer, agent, reward, episode, done.
"""


def _training_texts() -> list[str]:
    """:data:`CORPUS` plus every text field of the package's bundled data samples."""
    import json
    from importlib import resources

    texts = CORPUS.splitlines(keepends=True)
    samples = resources.files("llm_marl_envs.data") / "samples"
    for entry in sorted(samples.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".jsonl"):
            for line in entry.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    texts.extend(v for v in json.loads(line).values() if isinstance(v, str))
    return texts


@lru_cache(maxsize=1)
def _trained_bpe_json() -> str:
    tokenizers = require("tokenizers", "train", "the tiny test model")
    bpe = tokenizers.Tokenizer(tokenizers.models.BPE())
    bpe.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=4096,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_training_texts(), trainer=trainer)
    return bpe.to_str()


def tiny_tokenizer() -> Any:
    """A byte-level BPE tokenizer (4,096 tokens) trained in-process (deterministic).

    Trained on :data:`CORPUS` and the texts of the bundled data samples (~0.2 MB, about
    0.15 s once per process), so the environments' prompts take realistic token counts (a
    GSM8K prompt is ~200 tokens).

    Special tokens ``<|endoftext|>`` (bos), ``<|im_start|>``, ``<|im_end|>`` (eos and pad);
    left padding; the ChatML :data:`CHAT_TEMPLATE`. Any text round-trips through
    ``encode``/``decode``.
    """
    tokenizers = require("tokenizers", "train", "the tiny test model")
    transformers = require("transformers", "train", "the tiny test model")
    bpe = tokenizers.Tokenizer.from_str(_trained_bpe_json())
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
        model_max_length=CONTEXT,
        clean_up_tokenization_spaces=False,
    )


def tiny_model(seed: int = 0, dtype: Any = None) -> tuple[Any, Any]:
    """A random 2-layer GPT-2 and :func:`tiny_tokenizer`, identical for the same ``seed``.

    Args:
        seed: Seeds the weight initialisation (the caller's global torch RNG is untouched).
        dtype: ``torch.float32`` (default), ``torch.float64``, ``torch.bfloat16``, or its name.

    Returns:
        ``(model, tokenizer)``; the model is in eval mode on the CPU. It reads
        :data:`CONTEXT` positions (prompt plus answer).
    """
    transformers = require("transformers", "train", "the tiny test model")
    from llm_marl_envs.models.runtime import resolve_dtype, seeded

    tokenizer = tiny_tokenizer()
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=_FIRST_POSITIONS,
        n_embd=64,
        n_layer=2,
        n_head=2,
        # Wide weights: well-separated logits, so greedy decoding is robust to float noise.
        initializer_range=0.7,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with seeded(seed):  # (the constructor's own initialisation, thrown away, draws from it)
        model = transformers.GPT2LMHeadModel(config)
    generator = _draw_weights(model, seed)
    _extend_positions(model, CONTEXT, generator)
    model.to(resolve_dtype(dtype))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.eval()
    return model, tokenizer


def _draw_weights(model: Any, seed: int) -> Any:
    """Draw every weight here, not with transformers' own initialisation (which changed
    between releases: the same seed gave other weights under transformers 5.10 and 5.24), so
    the tiny model is the same model on every transformers version this package supports.

    Parameters in name order: biases zero, layer-norm scales one, every other weight normal
    with the config's ``initializer_range``, from a generator seeded with ``seed`` (the
    output head is tied to the token embeddings, so it is drawn once). Returns the generator,
    for the weights drawn after these."""
    torch = require("torch", "train", "the tiny test model")
    generator = torch.Generator().manual_seed(seed)
    std = model.config.initializer_range
    with torch.no_grad():
        for name, parameter in sorted(model.named_parameters()):
            if name.endswith(".bias"):
                parameter.zero_()
            elif ".ln_" in name:
                parameter.fill_(1.0)
            else:
                drawn = torch.randn(parameter.shape, generator=generator, dtype=torch.float32)
                parameter.copy_(drawn * std)
    return generator


def _extend_positions(model: Any, context: int, generator: Any) -> None:
    """Grow GPT-2's position table to ``context`` rows, drawing the new rows (normal, the
    config's ``initializer_range``) from ``generator`` after every other weight, so the
    existing rows and weights stay as drawn."""
    torch = require("torch", "train", "the tiny test model")
    table = model.transformer.wpe.weight.detach()
    extra = torch.randn(
        context - table.shape[0], table.shape[1], generator=generator, dtype=table.dtype
    )
    extra = extra * model.config.initializer_range
    model.transformer.wpe = torch.nn.Embedding.from_pretrained(
        torch.cat([table, extra]), freeze=False
    )
    model.config.n_positions = context
