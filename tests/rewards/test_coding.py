"""Static part of the cooperative-coding reward (MAGRPO, arXiv:2508.04652): fences, structure, syntax, cooperation."""

from __future__ import annotations

import warnings

import pytest

from llm_marl_envs.rewards.coding import analyse, build_program, coding_reward, extract_code

PROMPT = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum."""\n'
AUX = "def aux(xs):\n    return sum(xs)\n"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("def aux(x):\n    return x", "def aux(x):\n    return x"),
        ("Here:\n```python\ndef aux(x):\n    return x\n```\nDone.", "def aux(x):\n    return x"),
        ("```\ndef aux(x):\n    return 1\n```", "def aux(x):\n    return 1"),
        (
            "```py\ndef f():\n    pass\n```\n```python\ndef aux():\n    return 2\n```",
            "def aux():\n    return 2",
        ),
        ("```python\ndef aux():\n    return 3\n", "def aux():\n    return 3"),  # unterminated fence
    ],
)
def test_extract_code(text, code):
    assert extract_code(text, "aux") == code


@pytest.mark.parametrize(
    ("main", "passed", "expected"),
    [
        # non-trivial use of aux, all tests pass: 0.4 + 0.6 + 0.5 + 1 + 0.5 + 1.0 = 4.0
        ("def total(xs):\n    s = aux(xs)\n    return s * 1 if xs else 0\n", 4, 4.0),
        # trivial wrappers get the call bonus only
        ("def total(xs):\n    return aux(xs)\n", 4, 0.4 + 0.6 + 0.5 + 1 + 0.5),
        (
            "def total(xs):\n    '''doc'''\n    y = aux(xs)\n    return y\n",
            2,
            0.4 + 0.6 + 0.5 + 0.5 + 0.5,
        ),
        # does not call aux: no cooperation points
        ("def total(xs):\n    return sum(xs)\n", 4, 0.4 + 0.6 + 0.5 + 1),
        # aux result ignored: -0.5
        (
            "def total(xs):\n    aux(xs)\n    return sum(xs)\n",
            4,
            0.4 + 0.6 + 0.5 + 1 + 0.5 + 1.0 - 0.5,
        ),
        # no test passed: no cooperation
        ("def total(xs):\n    s = aux(xs)\n    return s + 1\n", 0, 0.4 + 0.6 + 0.5),
        # main without return: stop after aux's structure points
        ("def total(xs):\n    print(aux(xs))\n", 4, 0.4),
        # main not defined
        ("def other(xs):\n    return 1\n", 4, 0.4),
        # syntax error in main: stop after structure
        ("def total(xs):\n    return (aux(xs)\n", 4, 0.4),
    ],
)
def test_coding_reward_table(main, passed, expected):
    analysis = analyse(PROMPT, AUX, main, "total")
    components = coding_reward(analysis, passed, 4)
    assert components["total"] == pytest.approx(expected)
    parts = ("structure", "syntax", "tests", "cooperation")
    assert components["total"] == pytest.approx(sum(components[k] for k in parts))


def test_missing_aux_gets_no_aux_points_and_no_cooperation():
    analysis = analyse(PROMPT, "", "def total(xs):\n    return aux(xs)\n", "total")
    assert not analysis.aux_defined and analysis.calls_aux
    assert coding_reward(analysis, 4, 4) == {
        "structure": 0.6,
        "syntax": 0.5,
        "tests": 1.0,
        "cooperation": 0.0,
        "total": 2.1,
    }


def test_program_keeps_prompt_imports_and_reports_syntax_errors():
    program = build_program(PROMPT, AUX, "def total(xs):\n    return aux(xs)\n")
    assert program.startswith("from typing import List")
    bad = analyse(PROMPT, "def aux(:\n", "def total(xs):\n    return 1\n", "total")
    assert not bad.syntax_ok and bad.syntax_error.startswith("SyntaxError")
    with_nul = analyse(
        PROMPT, "def aux():\n    return '\x00'\n", "def total(xs):\n    return 1\n", "total"
    )
    assert not with_nul.syntax_ok and not with_nul.aux_defined  # NUL bytes: unparsable, no crash


def test_agents_invalid_escapes_raise_no_warnings():
    # Python warns about '\L' while compiling; an agent's code is data, so the env stays quiet.
    main = "def total(xs):\n    return len('C:\\Let')\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        analysis = analyse(PROMPT, AUX, main, "total")
    assert analysis.syntax_ok and analysis.aux_defined
