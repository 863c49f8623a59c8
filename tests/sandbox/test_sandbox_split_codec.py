"""Pure logic: splitting check functions into asserts, and the plain-data wire format."""

from __future__ import annotations

import json
import math

import pytest

from llm_marl_envs.sandbox import ProgramResult, SandboxLimits, TestResult, split_asserts
from llm_marl_envs.sandbox import _codec as codec

CHECK = '''
METADATA = {}


def check(candidate):
    """docstring"""
    import math
    assert candidate(1) == 2
    x = 3
    assert candidate(x) == 4, "message"
    assert True, "free reward must not count"
    for i in range(3):
        assert candidate(i) == i + 1
    print("helper")
'''


def test_split_asserts_keeps_helpers_and_drops_constant_asserts():
    tests = split_asserts(CHECK)
    assert tests == [
        "import math\nassert candidate(1) == 2",
        "import math\nx = 3\nassert candidate(x) == 4, 'message'",
        "import math\nx = 3\nfor i in range(3):\n    assert candidate(i) == i + 1",
    ]
    for test in tests:
        compile(test, "<test>", "exec")


def test_split_asserts_renames_the_parameter_and_finds_other_names():
    tests = split_asserts("def verify(f):\n    assert f(1) == 1\n", function="verify")
    assert tests == ["f = candidate\nassert f(1) == 1"]
    with pytest.raises(ValueError):
        split_asserts("def other(candidate):\n    pass\n")
    with pytest.raises(SyntaxError):
        split_asserts("def check(candidate)\n")


PLAIN = [
    None,
    True,
    False,
    0,
    -7,
    2**9000,
    -(2**9000),
    1.5,
    -0.0,
    math.inf,
    "é\udc80",
    b"\x00\xff",
    1 + 2j,
    [1, [2, (3, 4)]],
    (),
    {1: "a", (2, 3): {"x": frozenset({1})}},
    {1, 2.5, "s"},
    frozenset({(1, 2)}),
]


@pytest.mark.parametrize("value", PLAIN, ids=lambda v: type(v).__name__)
def test_codec_round_trips_plain_data_exactly(value):
    back = codec.loads(codec.dumps(value))
    assert back == value and type(back) is type(value)
    nan = codec.loads(codec.dumps(float("nan")))
    assert type(nan) is float and math.isnan(nan)


class Liar:
    def __eq__(self, other):
        return True


class MyInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class MyList(list):
    pass


@pytest.mark.parametrize(
    "value",
    [
        Liar(),
        MyInt(1),
        MyList([1]),
        [Liar()],
        {"k": MyInt(2)},
        {MyInt(3): 1},
        bytearray(b"x"),
        range(3),
        print,
    ],
)
def test_codec_rejects_anything_but_exact_builtin_types(value):
    with pytest.raises(codec.WireError):
        codec.dumps(value)


def test_codec_rejects_cycles_and_malformed_payloads():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(codec.WireError):
        codec.dumps(cycle)
    for payload in [
        b"{",
        b'{"t": 1}',
        b'{"x": []}',
        b'{"s": [[1]]}',
        b'{"d": [[[1], 2]]}',
        b'{"b": "zz"}',
        b'{"t": [], "s": []}',
        b"[" * 100_000,
        b"1" * 10_000,
    ]:
        with pytest.raises(codec.WireError):
            codec.loads(payload)


def test_results_round_trip_through_json():
    result = ProgramResult(
        status="ok",
        tests=[TestResult(0, passed=True), TestResult(1)],
        tests_total=2,
        tests_run=2,
        tests_passed=1,
    )
    back = ProgramResult.from_dict(json.loads(result.to_json()))
    assert back == result and not back.all_passed
    assert SandboxLimits().to_dict()["timeout"] == 3.0
    with pytest.raises(ValueError):
        SandboxLimits(timeout=0)
