"""Tests of leaderboard entry names a visitor can tell apart (llm_marl_envs.leaderboard.names)."""

from __future__ import annotations

import importlib.util
import itertools
import unicodedata
from pathlib import Path

import pytest

from llm_marl_envs.leaderboard.names import (
    BLANK_LOOKING,
    DEFAULT_IGNORABLE,
    REMOVED_CATEGORIES,
    clean,
    display_name,
    is_default_ignorable,
    name_key,
    name_keys,
    prototypes,
    same_name,
    skeleton,
    visible,
)

REPO = Path(__file__).resolve().parents[2]
NAME = "random text (floor)"
INVISIBLE = ["\u034f", "\ufe0f", "\U000e0101", "\u200b", "\u2060", "\u00ad"]
#: Cyrillic letters drawn like Latin a, e, o, p, c, x.
CYRILLIC = str.maketrans("aeopcx", "\u0430\u0435\u043e\u0440\u0441\u0445")


def _fullwidth(text: str) -> str:
    return "".join(
        "\u3000" if ch == " " else chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text
    )


def _one_line_error(text: str) -> str:
    with pytest.raises(ValueError) as caught:
        display_name(text)
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message
    assert "--name" in message
    return message


# --------------------------------------------------------------------------- look-alikes
@pytest.mark.parametrize(
    "variant",
    [
        NAME,
        "Random Text (floor)",
        "RANDOM TEXT (FLOOR)",
        NAME.translate(CYRILLIC),
        "random  text (floor)",
        " random text\t(floor)\n",
        "random\u00a0text (floor)",
        _fullwidth(NAME),
        "r\u034fandom te\ufe0fxt (flo\U000e0101or)\u200b",
        "\u202erandom text (floor)\u202c",
        "random text (fl\u03bf\u03bfr)",  # Greek small omicron
        "random text (f1oor)",  # UTS #39 maps 1 (and l, I, |) to l
        "random text (fl00r)",  # ... and 0 to O
    ],
)
def test_look_alikes_of_a_name_share_its_key(variant):
    assert name_key(variant) == name_key(NAME)
    assert same_name(variant, NAME)


def test_the_cyrillic_look_alike_really_is_another_string():
    spoof = NAME.translate(CYRILLIC)
    assert spoof != NAME and {unicodedata.name(ch).split()[0] for ch in spoof} >= {"CYRILLIC"}
    assert name_key(spoof) == name_key(NAME)


@pytest.mark.parametrize("latin", ["scripted policy", "pace-box", "Codex-Approx"])
def test_each_cyrillic_look_alike_letter_maps_to_its_latin_letter(latin):
    spoof = latin.translate(CYRILLIC)
    assert spoof != latin
    assert name_key(spoof) == name_key(latin)


def test_greek_omicron_looks_like_latin_o():
    assert skeleton("\u03bf") == "o"
    assert name_key("m\u03bfdel") == name_key("model")
    assert name_key("M\u039fDEL") == name_key("model")  # capital omicron folds to omicron


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (NAME, "random text (ceiling)"),
        ("model-a", "model-b"),
        ("Qwen2.5-7B", "Qwen2.5-72B"),
        ("instruct", "lnstruct"),  # i is told apart from l
        ("hf:tiny", "hf:default"),
    ],
)
def test_different_names_have_different_keys(a, b):
    assert name_key(a) != name_key(b)
    assert not same_name(a, b)


def test_names_on_the_board_are_told_apart():
    board = [
        "SmolLM2-135M after CORY on IMDB (seed 2; model A leads)",
        "SmolLM2-135M-Instruct (embedded, greedy)",
        "ckpt:cory-imdb-s2#A@iteration-000020",
        "ckpt:cory-imdb-s2#B@iteration-000020",
        "hf:default",
        "hf:tiny",
        "random text (floor)",
        "scripted players (oracles where they exist)",
        "tiny random-init GPT-2 (test model)",
    ]
    for a, b in itertools.combinations(board, 2):
        assert not same_name(a, b), (a, b)


@pytest.mark.parametrize(
    ("spoof", "real"),
    [
        ("GP\u0422-4", "GPT-4"),  # Cyrillic capital Te folds to a small te unlike t
        ("Qwen2.5-7\u0392", "Qwen2.5-7B"),  # Greek capital Beta folds to beta, not b
        ("\u041d\u041a-\u041c", "HK-M"),  # Cyrillic En, Ka, Em
    ],
)
def test_capital_look_alikes_are_caught_by_the_cased_key(spoof, real):
    assert name_key(spoof) != name_key(real)  # case is folded first: UTS #39 on the small letters
    assert name_keys(spoof)[1] == name_keys(real)[1]
    assert same_name(spoof, real)


def test_names_differing_in_case_share_a_key_even_with_capital_i():
    assert name_keys("Instruct") == ("instruct", "lnstruct")
    assert name_keys("instruct") == ("instruct", "instruct")
    assert same_name("Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct")
    assert same_name("Qwen2.5-7B-Instruct", "Qwen2.5-7B-lnstruct")  # capital I looks like l


def test_the_skeleton_maps_m_to_rn_and_digits_to_letters():
    assert skeleton("m") == "rn"
    assert skeleton("0 1 I |") == "O l l l"
    assert name_key("modern") == name_key("rnodern")


# --------------------------------------------------------------------------- invisible characters
@pytest.mark.parametrize("mark", INVISIBLE)
def test_an_inserted_invisible_character_is_removed_and_keeps_the_key(mark):
    assert is_default_ignorable(mark)
    for at in (0, 3, len(NAME) // 2, len(NAME)):
        variant = NAME[:at] + mark + NAME[at:]
        assert clean(variant) == NAME
        assert name_key(variant) == name_key(NAME)
        assert display_name(variant) == NAME


def test_bidi_overrides_and_isolates_are_removed():
    assert clean("\u202eroolf\u202c \u2066x\u2069") == "roolf x"
    assert display_name("\u202d\u202e(floor) text random") == "(floor) text random"


def test_default_ignorable_ranges_are_unicode_15():
    assert DEFAULT_IGNORABLE[0] == (0x00AD, 0x00AD) and DEFAULT_IGNORABLE[-1] == (0xE0000, 0xE0FFF)
    assert all(first <= last for first, last in DEFAULT_IGNORABLE)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(DEFAULT_IGNORABLE))
    assert sum(last - first + 1 for first, last in DEFAULT_IGNORABLE) == 4174
    assert not any(map(is_default_ignorable, "a \u00a0\u3000\u2800-"))


def test_whitespace_controls_separate_words_and_other_controls_vanish():
    assert clean("a\tb\nc\u2028d\u3000\u3000e") == "a b c d e"
    assert clean("a\x00b\x7fc\ue000d\U0010fffd") == "abcd"
    assert clean(12) == "12"
    assert clean("e\u0301") == "\u00e9"  # NFC


# --------------------------------------------------------------------------- display_name
@pytest.mark.parametrize(
    "blank",
    ["", "   ", "\u3164", "\u115f", "\u2800", "\u0301\u0308", " \u0301 ", "\u3000\u200b\u202e"],
)
def test_a_name_with_nothing_visible_is_refused_in_one_line(blank):
    assert not visible(blank)
    assert "no visible character" in _one_line_error(blank)


def test_a_long_name_is_refused_naming_the_limit():
    assert display_name("x" * 80) == "x" * 80
    message = _one_line_error("x" * 81)
    assert "81 characters" in message and "limit of 80" in message
    assert display_name("x" * 81 + "\u200b" * 5, max_chars=81) == "x" * 81
    with pytest.raises(ValueError, match="limit of 3"):
        display_name("abcd", max_chars=3)


def test_visible_means_some_character_draws_ink():
    assert visible("a") and visible("7") and visible("-") and visible("\u2192")
    assert visible("\u2800x")
    assert not visible("\U0001d159") and BLANK_LOOKING >= {"\u2800", "\u3164"}


# --------------------------------------------------------------------------- the table
def test_the_shipped_table_loads():
    table = prototypes()
    assert len(table) > 6000
    assert table[0x0430] == "a" and table[0x006D] == "rn" and table[0x0031] == "l"
    assert prototypes() is table  # read once
    path = REPO / "llm_marl_envs" / "leaderboard" / "confusables.txt"
    header = [line for line in path.read_text(encoding="utf-8").splitlines() if line[:1] == "#"]
    text = "\n".join(header)
    assert "Version: " in text and "Date: " in text and "terms_of_use" in text
    assert "scripts/make_confusables.py" in text


def _generator():
    spec = importlib.util.spec_from_file_location(
        "make_confusables", REPO / "scripts" / "make_confusables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SYNTHETIC = """\ufeff# confusables.txt
# Date: 2099-01-01, 00:00:00 GMT
# \u00a9 2099 Unicode\u00ae, Inc.
# For terms of use, see http://www.unicode.org/terms_of_use.html
#
# Version: 99.0.0
#

006D ;\t0072 006E ;\tMA\t# ( m \u2192 rn ) LATIN SMALL LETTER M \u2192 R, N\t#

0430 ;\t0061 ;\tMA\t# ( \u0430 \u2192 a ) CYRILLIC SMALL LETTER A \u2192 LATIN SMALL LETTER A\t#
1D41A ;\t0061 ;\tMA\t# ( \U0001d41a \u2192 a ) MATHEMATICAL BOLD SMALL A \u2192 a\t#
"""


def test_the_generator_writes_the_expected_table(tmp_path, capsys):
    source = tmp_path / "confusables.txt"
    source.write_text(SYNTHETIC, encoding="utf-8")
    out = tmp_path / "table.txt"
    assert _generator().main([str(source), "--out", str(out)]) == 0
    assert "wrote 3 mappings" in capsys.readouterr().out
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        "006D\t0072 006E",
        "0430\t0061",
        "1D41A\t0061",
    ]
    header = "\n".join(lines[:12])
    for expected in (
        "# confusables.txt",
        "# Date: 2099-01-01, 00:00:00 GMT",
        "# Version: 99.0.0",
        "# \u00a9 2099 Unicode\u00ae, Inc.",
        "http://www.unicode.org/terms_of_use.html",
        "https://www.unicode.org/Public/security/99.0.0/confusables.txt",
        "python scripts/make_confusables.py confusables.txt",
    ):
        assert expected in header
    again = tmp_path / "again.txt"
    _generator().main([str(source), "--out", str(again)])
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("0430 ; zz ; MA\n", "line 1 is not"),
        ("0430 ; 0061 ; MA\n0430 ; 006F ; MA\n", "line 2 maps U+0430 a second time"),
        ("# only comments\n", "no mappings"),
    ],
)
def test_the_generator_refuses_a_bad_source_in_one_line(tmp_path, capsys, body, error):
    source = tmp_path / "confusables.txt"
    source.write_text(body, encoding="utf-8")
    out = tmp_path / "table.txt"
    assert _generator().main([str(source), "--out", str(out)]) == 1
    message = capsys.readouterr().err
    assert error in message and message.count("\n") == 1
    assert not out.exists()


# --------------------------------------------------------------------------- properties
try:
    from hypothesis import given, settings, strategies as st
except ImportError:  # hypothesis comes with the dev extra; without it the properties do not run
    st = None

if st is not None:
    SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None)
    #: Any code point, with invisible, look-alike, blank and lone-surrogate ones made likely.
    TEXT = st.text(
        st.one_of(
            st.characters(),
            st.sampled_from(
                [*INVISIBLE, " ", "\t", "\u3000", "\u202e", "\u0301", "\u2800", "\ud800"]
                + ["a", "\u0430", "0", "I", "\u0422", "\u00a8", "\ufdfa"]
            ),
        ),
        max_size=30,
    )

    @SETTINGS
    @given(TEXT)
    def test_clean_keeps_no_removed_character_and_keeps_the_key(text):
        cleaned = clean(text)
        assert not any(is_default_ignorable(ch) for ch in cleaned)
        assert not any(unicodedata.category(ch) in REMOVED_CATEGORIES for ch in cleaned)
        assert cleaned == cleaned.strip() and "  " not in cleaned
        assert clean(cleaned) == cleaned
        assert name_key(clean(text)) == name_key(text)
        assert name_keys(clean(text)) == name_keys(text)

    @SETTINGS
    @given(TEXT)
    def test_display_name_returns_the_clean_name_or_a_one_line_error(text):
        try:
            shown = display_name(text)
        except ValueError as error:
            assert "\n" not in str(error)
            assert not visible(text) or len(clean(text)) > 80
        else:
            assert shown == clean(text) and visible(shown) and same_name(shown, text)
