r"""Leaderboard entry names that a visitor can tell apart.

A leaderboard is read by people: two entries whose names look the same on the page are, to a
visitor, one entry, whatever their bytes. An attacker can use that. They register
``r\u0430nd\u043em text (floor)``, with CYRILLIC SMALL LETTERs A and O, next to the real
``random text (floor)``, insert invisible marks (zero-width spaces, variation selectors, U+034F COMBINING
GRAPHEME JOINER) into a copy of a name, write it in fullwidth letters or with a bidi override
(U+202E) that redraws it backwards, or submit a name that draws nothing at all (U+3164 HANGUL
FILLER, U+2800 BRAILLE PATTERN BLANK). This module gives the two checks an entry's name needs:

* :func:`display_name` is the name to show: invisible and control characters removed
  (:func:`clean`), refused when nothing visible is left or when it is too long;
* :func:`name_key` is what two names must not share: names with the same key look alike, so
  a board keeps one entry per key. :func:`name_keys` adds a second key that also catches the
  look-alikes of capitals (Cyrillic or Greek capitals that fold to unlike small letters), and
  :func:`same_name` compares both.

The key follows Unicode Technical Standard #39, "Unicode Security Mechanisms", section 4
Confusable Detection (https://www.unicode.org/reports/tr39/#Confusable_Detection): the
*skeleton* of a string maps each character to its prototype in Unicode's ``confusables.txt``
(shipped, converted, as ``confusables.txt`` next to this module by
``scripts/make_confusables.py``), and two strings are confusable when their skeletons are
equal. Before the skeleton, the name is cleaned, NFKC-normalised (fullwidth and other
compatibility forms) and case-folded, so that names differing only in case also collide.

>>> name_key("Random  Text (floor)") == name_key("r\u0430nd\u043em t\u0435\u0445t (floor)")
True
>>> same_name("model-a", "model-b")
False
>>> display_name("\u202egpt\u200b-4 ")
'gpt-4'
>>> display_name("\u3164")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: the entry's name has no visible character once control, ...; give --name

Standard library only, and nothing from the rest of :mod:`llm_marl_envs.evaluation`, so that
any module of it may import this one; errors are plain :class:`ValueError` with one-line
messages that name the fix.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from importlib.resources import files
from types import MappingProxyType

#: The code points with the Default_Ignorable_Code_Point property, as (first, last) ranges:
#: Unicode 15.0's DerivedCoreProperties.txt (UAX #44, Unicode Character Database). A renderer
#: draws nothing for them when it does not support them, so they make two equal-looking names
#: different strings.
DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # SOFT HYPHEN
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x115F, 0x1160),  # HANGUL CHOSEONG FILLER, HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ, AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x200B, 0x200F),  # ZERO WIDTH SPACE, (NON-)JOINER, LEFT-TO-RIGHT / RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # WORD JOINER, invisible operators, bidi isolates, deprecated formats
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1..16
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE (byte order mark)
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # unassigned, reserved as ignorable
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT CONTROLS
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN / END BEAM, TIE, SLUR, PHRASE
    (0xE0000, 0xE0FFF),  # tags, VARIATION SELECTOR-17..256, reserved
)

#: Categories that :func:`clean` removes: controls, formats, surrogates, private use,
#: unassigned, line and paragraph separators (whitespace among them becomes a space first).
REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

#: Letters, digits, punctuation or symbols that draw nothing in common fonts though they are
#: not default-ignorable (the Hangul fillers are, and are listed for callers that skip
#: :func:`clean`).
BLANK_LOOKING = frozenset(
    {
        "\u115f",  # HANGUL CHOSEONG FILLER
        "\u1160",  # HANGUL JUNGSEONG FILLER
        "\u2800",  # BRAILLE PATTERN BLANK
        "\u3164",  # HANGUL FILLER
        "\uffa0",  # HALFWIDTH HANGUL FILLER
        "\U0001d159",  # MUSICAL SYMBOL NULL NOTEHEAD
    }
)

_INK_CATEGORIES = ("L", "N", "P", "S")  # letters, numbers, punctuation, symbols

_NO_VISIBLE = (
    "the entry's name has no visible character once control, format and default-ignorable "
    "characters are removed; give --name"
)


def is_default_ignorable(ch: str) -> bool:
    """Whether the character ``ch`` has Unicode's Default_Ignorable_Code_Point property.

    >>> is_default_ignorable("\\u200b"), is_default_ignorable("a")
    (True, False)
    """
    point = ord(ch)
    return any(first <= point <= last for first, last in DEFAULT_IGNORABLE)


def _removed(ch: str) -> bool:
    return is_default_ignorable(ch) or unicodedata.category(ch) in REMOVED_CATEGORIES


def clean(text: object) -> str:
    """``str(text)`` without what draws nothing or rearranges the line, in NFC, spaces collapsed.

    Whitespace (a tab, a newline, U+2028 LINE SEPARATOR, U+3000 IDEOGRAPHIC SPACE...) becomes a
    space; every other default-ignorable character and every character of categories Cc, Cf,
    Cs, Co, Cn, Zl and Zp (a bidi override, a zero-width space, a private-use character) is
    removed. The rest is NFC-normalised, runs of spaces become one and the ends are stripped.

    >>> clean(" Qwen\\u200b2.5\\t\\t7B\\ufe0f ")
    'Qwen2.5 7B'
    """
    kept = (" " if ch.isspace() else ch for ch in str(text))
    joined = "".join(ch for ch in kept if not _removed(ch))
    return " ".join(unicodedata.normalize("NFC", joined).split())


def _draws_ink(ch: str) -> bool:
    return unicodedata.category(ch).startswith(_INK_CATEGORIES) and ch not in BLANK_LOOKING


def visible(text: object) -> bool:
    """Whether ``clean(text)`` holds a character that draws ink.

    That is a letter, number, punctuation or symbol (categories L*, N*, P*, S*) other than the
    :data:`BLANK_LOOKING` ones; spaces (Zs) and combining marks on their own (M*) are not.

    >>> visible("\\u2800 \\u3000"), visible("\\u0301"), visible("a")
    (False, False, True)
    """
    return any(_draws_ink(ch) for ch in clean(text))


@functools.cache
def prototypes() -> Mapping[int, str]:
    """The shipped UTS #39 table: each confusable code point's prototype (read once).

    Made from Unicode's ``confusables.txt`` by ``scripts/make_confusables.py``: ``#`` lines
    are comments, every other line a source code point, a tab and its prototype's code points,
    in hex.

    >>> prototypes()[0x0430]  # CYRILLIC SMALL LETTER A
    'a'
    """
    text = (files("llm_marl_envs.leaderboard") / "confusables.txt").read_text(encoding="utf-8")
    table: dict[int, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            source, _, target = line.partition("\t")
            table[int(source, 16)] = "".join(chr(int(cp, 16)) for cp in target.split())
    return MappingProxyType(table)


def skeleton(text: object) -> str:
    """The UTS #39 skeleton of ``str(text)``: NFD, each character by its prototype, NFD again.

    Two strings with the same skeleton are confusable (UTS #39, section 4). The skeleton is
    for comparing, never for showing: ``m`` becomes ``rn`` and ``0`` becomes ``O``.
    (Revisions of UTS #39 after Unicode 15.0 also drop default-ignorable characters here;
    :func:`name_key` removes them before, with :func:`clean`.)

    >>> skeleton("m\\u0430x0")
    'rnaxO'
    """
    decomposed = unicodedata.normalize("NFD", str(text))
    return unicodedata.normalize("NFD", decomposed.translate(prototypes()))


def _folded(text: object) -> str:
    """``clean(text)`` in NFKC, spaces collapsed again (NFKC makes U+00A8 a space and U+0308)."""
    return " ".join(unicodedata.normalize("NFKC", clean(text)).split())


def name_key(text: object) -> str:
    """What two names must not share to be told apart: their confusable, caseless skeleton.

    The skeleton (:func:`skeleton`) of the :func:`clean` text, NFKC-normalised and case-folded,
    case-folded once more after the skeleton (whose prototypes may be capitals, as ``O`` for
    ``0``). Case, Cyrillic or Greek lower-case look-alikes, fullwidth forms, invisible
    characters and extra spaces do not change it.

    Folding case first loses the look-alikes that only capitals have: U+0422 CYRILLIC CAPITAL
    LETTER TE folds to U+0442, which does not look like ``t``, so ``GPT-4`` written with it has
    another key than ``GPT-4``. The second key of :func:`name_keys` catches those.

    >>> name_key("Qwen2.5-7B") == name_key("\\uff31w\\u0435n2.5-7B"), name_key("m0del")
    (True, 'rnodel')
    """
    return skeleton(_folded(text).casefold()).casefold()


def name_keys(text: object) -> tuple[str, str]:
    """The keys of which two names must share none: ``name_key(text)`` and the cased key.

    The cased key is the :func:`name_key` of the name's skeleton taken before folding case, so
    capitals are mapped as capitals (U+0422 CYRILLIC CAPITAL LETTER TE to ``T``, U+0392 GREEK
    CAPITAL LETTER BETA to ``B``). One key cannot do both: ``I`` looks like ``l`` and is the
    capital of ``i``, but ``i`` does not look like ``l`` (UTS #39 maps ``I`` to ``l``), so the
    cased key of ``Instruct`` is ``lnstruct`` and that of ``instruct`` is ``instruct``; the
    first key, caseless, holds those two together. A board keeps one entry per key of each
    kind; :func:`same_name` compares both.

    >>> name_keys("GPT-4"), name_keys("Instruct")
    (('gpt-4', 'gpt-4'), ('instruct', 'lnstruct'))
    >>> [a == b for a, b in zip(name_keys("GP\\u0422-4"), name_keys("GPT-4"))]
    [False, True]
    """
    folded = _folded(text)
    return name_key(folded), name_key(skeleton(folded))


def same_name(a: object, b: object) -> bool:
    """Whether names ``a`` and ``b`` look alike: they share a key of :func:`name_keys`.

    Names with the same :func:`name_key` always do (so ``same_name`` is true for every pair
    :func:`name_key` holds together, and for capital look-alikes besides).

    >>> same_name("random text (floor)", "RANDOM TEXT (FL\\u039f\\u039fR)")
    True
    >>> same_name("GPT-4", "GP\\u0422-4"), same_name("instruct", "lnstruct")
    (True, False)
    """
    return any(x == y for x, y in zip(name_keys(a), name_keys(b), strict=True))


def display_name(text: object, max_chars: int = 80) -> str:
    """The name to show for an entry: ``clean(text)``, checked.

    Raises :class:`ValueError` (one line, naming the fix) when nothing visible is left
    (:func:`visible`) or when the cleaned name is longer than ``max_chars`` characters.

    >>> display_name("  my\\u00a0\\u00a0model ")
    'my model'
    """
    name = clean(text)
    if not any(_draws_ink(ch) for ch in name):
        raise ValueError(_NO_VISIBLE)
    if len(name) > max_chars:
        raise ValueError(
            f"the entry's name is {len(name)} characters, over the limit of {max_chars}; "
            "give a shorter --name"
        )
    return name
