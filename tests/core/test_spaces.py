"""FreeText and TextObservation."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from gymnasium.spaces import Text

from llm_marl_envs.core.spaces import FreeText, TextObservation
from llm_marl_envs.core.text_env import clean_text


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "plain",
        "punctuation! (yes) #1",
        "naïve café — “quotes”",
        "日本語 😀",
        "\x00\x1b\n\t",
        "\ufffd",
        "\ud800",
    ],
)
def test_contains_any_string_up_to_max_length(text):
    assert FreeText(64).contains(text)


@pytest.mark.parametrize("value", [b"bytes", 3, None, ["a"], "x" * 17])
def test_rejects_non_strings_and_long_strings(value):
    assert not FreeText(16).contains(value)


def test_is_a_gymnasium_text_space():
    space = FreeText(10, min_length=2)
    assert isinstance(space, Text)
    assert not space.contains("a") and space.contains("ab")
    assert space == FreeText(10, min_length=2) and space != FreeText(11, min_length=2)


def test_sample_is_printable_seeded_and_in_bounds():
    a, b = FreeText(64, seed=3), FreeText(64, seed=3)
    samples = [a.sample() for _ in range(200)]
    assert samples == [b.sample() for _ in range(200)]
    assert all(a.contains(s) for s in samples)
    assert len({len(s) for s in samples}) > 20  # lengths vary over [0, 64]
    assert any(not s.isascii() for s in samples)
    assert all(clean_text(s) == s for s in samples)  # nothing to clean
    assert all(len(s.encode("utf-8")) >= len(s) for s in samples)  # encodable: no surrogates


def test_sample_max_length_bounds_samples_only():
    space = FreeText(1 << 20, sample_max_length=32, seed=0)
    assert max(len(space.sample()) for _ in range(100)) <= 32
    assert space.contains("x" * (1 << 20))
    with pytest.raises(ValueError, match="sample_max_length"):
        FreeText(8, sample_max_length=9)


def test_masked_sampling_still_works():
    space = FreeText(5, seed=0)
    mask = np.zeros(len(space.character_list), dtype=np.int8)
    mask[space.character_index("z")] = 1
    assert set(space.sample(mask=(4, mask))) == {"z"}


def test_text_observation_is_a_plain_string_with_a_dtype():
    obs = TextObservation("Question: 2 + 2?")
    assert obs == "Question: 2 + 2?" and isinstance(obs, str)
    assert obs.dtype == FreeText(8).dtype
    assert obs.upper() == "QUESTION: 2 + 2?" and obs[:8] == "Question"
    assert json.loads(json.dumps({"obs": obs})) == {"obs": "Question: 2 + 2?"}
    assert pickle.loads(pickle.dumps(obs)) == obs


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("fine text", "fine text"),
        ("keeps\nnewlines\tand tabs", "keeps\nnewlines\tand tabs"),
        ("bell\x07 nul\x00 esc\x1b[0m del\x7f c1\x85", "bell nul esc[0m del c1"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("日本語 😀", "日本語 😀"),
    ],
)
def test_clean_text(raw, clean):
    assert clean_text(raw) == clean


# --------------------------------------------------------------------------- flattening (issue 30)
# Gymnasium flattened a Text space into max_length charset indices: FlattenObservation on an
# observation made a 1,048,576-long int32 vector, then raised KeyError on a character outside
# the 145-character charset. FreeText refuses every flattening function with one line.
@pytest.mark.parametrize("function", ["flatdim", "flatten_space"])
def test_flattening_the_space_is_refused_naming_the_text_route(function):
    from gymnasium.spaces import utils

    with pytest.raises(ValueError, match="tokenizer or a language-model policy") as refused:
        getattr(utils, function)(FreeText(1 << 20))
    assert "\n" not in str(refused.value) and "FreeText(" in str(refused.value)


@pytest.mark.parametrize("text", ["plain", "日本語 😀 \ud800", "€"])
def test_flattening_a_text_is_refused_whatever_its_characters(text):
    from gymnasium.spaces import Dict, utils

    space = FreeText(64)
    for call in (
        lambda: utils.flatten(space, text),
        lambda: utils.unflatten(space, np.zeros(64, dtype=np.int32)),
        lambda: utils.flatten_space(Dict(text=space, n=Text(4))),
    ):
        with pytest.raises(ValueError, match="cannot flatten it"):
            call()


def test_flatten_observation_refuses_at_wrap_time():
    import gymnasium

    import llm_marl_envs  # noqa: F401 - registers the Gymnasium ids

    env = gymnasium.make("llm_marl_envs/IMDBSentiment-pioneer_0-v1", data_source="bundled")
    with pytest.raises(ValueError, match="give the observation string to a tokenizer"):
        gymnasium.wrappers.FlattenObservation(env)
    env.close()
