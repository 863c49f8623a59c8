"""Generated text pairs for the writing-reward parity tests (``test_writing_parity.py``).

The pairs are built to reach every level of the MAGRPO writing reward and its edges: word
counts at and around the structure gate (8 / 256 for TL;DR, 128 / 256 for arXiv), character
ratios exactly on the trapezoids' corners (and one character off), vocabulary ratios on both
sides of the vocabulary ramps, stopword-only texts, texts without any word character,
transition phrases hidden inside other words ("so" in "also"), phrases straddling the join of
``c1 + c2``, Unicode letters, digits, marks, case changes, and whitespace that ``str.split``
treats as a separator (tabs, newlines, no-break and ideographic spaces).

This module is the generator only. The expected totals were computed by running the authors'
released reward functions (outside this repository) on exactly these pairs; the test data
stores those values and a hash of the pairs, so a change here is caught as "regenerate".
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator

CONTENT = (
    "model data result network reddit boyfriend money apartment landlord rent job interview "
    "university paper method benchmark training agent policy reward gradient dataset sample "
    "experiment baseline accuracy language vision robot planning memory attention transformer "
    "friend sister wedding car dog cat vacation budget loan advice problem solution question "
    "answer evidence theory proof graph node edge cluster signal noise error variance"
).split()
STOP = (
    "a the of and to in is it that for on with as at by from this these those be been was were "
    "i you he she we they my your our their me him her us them not no so also too very just "
    "about above after again because before being below between during into through until"
).split()
TRANSITIONS = (
    "however; therefore; in addition; for example; as a result; on the other hand; moreover; "
    "in conclusion; meanwhile; nevertheless; in fact; similarly; although; because; since; "
    "first; then; finally; overall; indeed; in other words; in order to; to sum up; even so; "
    "if; unless; when; while; as well as; such as; in particular; what is more; be that as it "
    "may; the bottom line is; owing to; thanks to; rather; still; yet; but; were; had; should"
).split("; ")
HIDDEN = (
    "also person reason asks bifurcate buttery stillness sincere hadron formerly whensoever "
    "therein thenceforth yesterday heretofore whileaway iffy gifted thusly rathers sowing "
    "ifs buttress sinceremente"
).split()
UNICODE = (
    "café naïve Ünïcödé 中文 日本語 😀 İstanbul ǅemal straße σοφία ١٢٣ ñandú Ωmega "
    "x\u0301y ﬁne ǈubav ĲSSEL under_score 42 3.14 don't it's — … ‽"
).split()
PUNCT = "- — ... !! ? ( ) , ; : \" ' # * / & %".split()
SPACES = (" ", " ", " ", " ", "\t", "\n", "\u00a0", "\u3000", "  ", "\r\n", "\u2028")

#: Corners of the length-ratio trapezoids of both tasks and both arXiv tables.
RATIO_EDGES = {
    "tldr": (1.1, 1.6, 3.2, 5.0),
    "arxiv": (0.8, 1.0, 1.3, 1.5, 1.6, 2.0),
}
WORD_COUNTS = {
    "tldr": (0, 1, 7, 8, 9, 12, 20, 40, 100, 255, 256, 257),
    "arxiv": (0, 10, 127, 128, 129, 160, 200, 255, 256, 257),
}


def _word(rng: random.Random, pools: list[list[str]], weights: list[float]) -> str:
    pool = rng.choices(pools, weights)[0]
    word = rng.choice(pool)
    style = rng.random()
    if style < 0.08:
        return word.upper()
    if style < 0.2:
        return word.capitalize()
    return word


def _text(rng: random.Random, n_words: int, vocabulary: int, profile: dict) -> str:
    """``n_words`` whitespace-separated tokens drawn from a vocabulary of about ``vocabulary``."""
    pools = [
        CONTENT[: max(1, vocabulary)],
        STOP,
        TRANSITIONS,
        HIDDEN,
        UNICODE,
        PUNCT,
    ]
    weights = [
        profile["content"],
        profile["stop"],
        profile["transition"],
        profile["hidden"],
        profile["unicode"],
        profile["punct"],
    ]
    tokens: list[str] = []
    while len(tokens) < n_words:
        token = _word(rng, pools, weights)
        if " " in token and len(tokens) + len(token.split()) > n_words:
            continue  # a multi-word phrase that would overshoot the count
        tokens.extend([token] if " " not in token else token.split())
    tokens = tokens[:n_words]
    out = []
    for i, token in enumerate(tokens):
        if i:
            out.append(rng.choice(SPACES) if rng.random() < 0.15 else " ")
        out.append(token)
    if tokens and rng.random() < 0.3:
        out.append(rng.choice(".!?"))
    if rng.random() < 0.1:
        out.insert(0, rng.choice(SPACES))
    return "".join(out)


def _fit_length(rng: random.Random, text: str, target: int) -> str:
    """Pad with spaces or trim characters so that ``len(text) == target`` (when possible)."""
    if target <= 0:
        return text
    if len(text) < target:
        filler = rng.choice((" ", "  ", "x"))
        while len(text) < target:
            text += filler[: target - len(text)]
        return text
    return text[:target]


def _profile(rng: random.Random) -> dict:
    return {
        "content": rng.uniform(0.5, 4.0),
        "stop": rng.uniform(0.0, 3.0),
        "transition": rng.uniform(0.0, 1.0),
        "hidden": rng.uniform(0.0, 0.6),
        "unicode": rng.uniform(0.0, 0.5),
        "punct": rng.uniform(0.0, 0.4),
    }


def pair(task: str, index: int, seed: int = 0) -> tuple[str, str]:
    """The ``index``-th generated pair for ``task`` (``"tldr"`` or ``"arxiv"``)."""
    rng = random.Random(seed * 1_000_003 + index * 7 + (0 if task == "tldr" else 3))
    counts = WORD_COUNTS[task]
    low, high = (8, 40) if task == "tldr" else (128, 170)
    n1 = rng.choice(counts) if rng.random() < 0.25 else rng.randint(low, high)
    kind = rng.random()
    if kind < 0.02:  # stopwords only, or nothing that \w matches
        pool = STOP if rng.random() < 0.5 else PUNCT
        c1 = " ".join(rng.choice(pool) for _ in range(n1))
        c2 = " ".join(rng.choice(pool) for _ in range(rng.choice(counts) or n1))
        return c1, c2
    narrow = {
        "content": 1.0,
        "stop": 0.0,
        "transition": 0.0,
        "hidden": 0.0,
        "unicode": 0.0,
        "punct": 0.0,
    }
    vocabulary_shape = rng.random()  # a narrow c1 or c2 moves u past the vocabulary ramps
    if vocabulary_shape < 0.1:
        c1 = _text(rng, n1, rng.randint(2, 8), narrow)
    else:
        c1 = _text(rng, n1, rng.randint(3, len(CONTENT)), _profile(rng))
    if task == "tldr":
        ratio = rng.choice(RATIO_EDGES[task]) if rng.random() < 0.3 else rng.uniform(0.8, 6.0)
    else:
        ratio = rng.choice(RATIO_EDGES[task]) if rng.random() < 0.3 else rng.uniform(0.6, 2.1)
    target_chars = max(1, round(len(c1) * ratio)) + rng.choice((0, 0, 0, -1, 1))
    # Build c2 a word at a time until it is long enough, with its own vocabulary breadth.
    average = max(1.0, len(c1) / max(1, n1))
    n2 = max(0, round(target_chars / average))
    if rng.random() < 0.1:
        n2 = rng.choice(counts)
    if 0.1 <= vocabulary_shape < 0.2:
        c2 = _text(rng, n2, rng.randint(2, 8), narrow)
    else:
        c2 = _text(rng, n2, rng.randint(2, len(CONTENT)), _profile(rng))
    if rng.random() < 0.5:  # share words with c1 so the Jaccard term varies
        shared = [w for w in c1.split() if rng.random() < 0.3][: max(0, n2 // 3)]
        words = c2.split()
        for w in shared:
            if words:
                words[rng.randrange(len(words))] = w
        c2 = " ".join(words)
    if rng.random() < 0.6:
        c2 = _fit_length(rng, c2, target_chars)
    if rng.random() < 0.05:  # a phrase straddling the join of c1 + c2 (arXiv searches c1 + c2)
        c1, c2 = c1.rstrip() + " in", "case " + c2.lstrip()
    return c1, c2


def pairs(task: str, n: int, seed: int = 0) -> Iterator[tuple[str, str]]:
    """The first ``n`` generated pairs for ``task``."""
    for index in range(n):
        yield pair(task, index, seed)


def edge_pairs() -> list[tuple[str, str]]:
    """Hand-written pairs for the edges the issue names (used for both tasks)."""
    eight = "one two three four five six seven eight"
    words = [f"w{i}" for i in range(300)]
    out = [
        ("", ""),
        ("", eight),
        (eight, ""),
        ("   ", "\n\t "),
        (eight, eight),
        (eight, eight + " " + eight),
        (" ".join(words[:7]), " ".join(words[:20])),
        (" ".join(words[:8]), " ".join(words[:256])),
        (" ".join(words[:256]), " ".join(words[:256])),
        (" ".join(words[:257]), " ".join(words[:256])),
        (" ".join(words[:128]), " ".join(words[:128])),
        (" ".join(words[:127]), " ".join(words[:200])),
        (" ".join(["the"] * 10), " ".join(["and"] * 30)),  # only stopwords: J of two empty sets
        (" ".join(["!!"] * 10), " ".join(["??"] * 30)),  # no \w at all: unique words 0
        (" ".join(["the"] * 130), " ".join(["and", "of"] * 90)),
        ("also person reason asks " * 3, "sincere hadron whensoever thusly " * 6),
        ("café naïve 中文 😀 İstanbul straße σοφία ١٢٣", "ÜNÏCÖDÉ ǅemal ﬁne ĲSSEL " * 6),
        ("one\u00a0two\u3000three\tfour\nfive six seven eight", "a\u2028b c d e f g h i j k l"),
    ]
    # Exact character ratios on every corner, and one character either side.
    base = " ".join(words[10:20])  # 10 words, len 39
    base_long = " ".join(words[100:240])  # 140 words
    for text in (base, base_long):
        for edge in sorted({e for edges in RATIO_EDGES.values() for e in edges}):
            for delta in (-1, 0, 1):
                target = round(len(text) * edge) + delta
                other = " ".join(words[20 : 20 + max(8, target // 5)])
                out.append((text, _fit_length(random.Random(target), other, target)))
    return out


def digest(items: list[tuple[str, str]]) -> str:
    """SHA-256 of the pairs (JSON, UTF-8): the identity of a generated set."""
    return hashlib.sha256(json.dumps(items, ensure_ascii=False).encode("utf-8")).hexdigest()
