"""Tests of the procedural GSM8K-style problem generator and its bundled sample.

Covers the bundled ``gsm8k_sample.jsonl`` (valid, distinct, reproducible), the
generator (determinism, step counts, number ranges, RNG hygiene, template
data) and the independent worked-solution verifier.
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import numpy as np
import pytest

from llm_marl_envs.data import arithmetic
from llm_marl_envs.data.arithmetic import check_worked_solution, generate_problem, write_sample
from llm_marl_envs.data.arithmetic_templates import FRACTIONS, NAMES, PRONOUNS, TEMPLATES

SAMPLE_PATH = Path(arithmetic.__file__).resolve().parent / "samples" / "gsm8k_sample.jsonl"
NOTE_RE = re.compile(r"<<([^<>]*)>>")
DIFFICULTIES = (1, 2, 3, 4, 5)


def _rows() -> list[dict]:
    with SAMPLE_PATH.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _final(answer: str) -> int:
    return int(answer.rsplit("\n#### ", 1)[1])


# --- bundled sample --------------------------------------------------------------------


def test_sample_rows_are_valid_and_distinct() -> None:
    rows = _rows()
    assert len(rows) >= 200
    questions = [row["question"] for row in rows]
    assert len(set(questions)) == len(questions), "duplicate questions in the sample"
    for i, row in enumerate(rows):
        assert list(row) == ["question", "answer", "difficulty"], f"row {i}: keys {list(row)}"
        assert check_worked_solution(row["answer"]) == [], f"row {i}: {row}"
        n_notes = len(NOTE_RE.findall(row["answer"]))
        assert n_notes >= 1
        assert n_notes == row["difficulty"], f"row {i}: {n_notes} notes"
        assert _final(row["answer"]) >= 0


def test_sample_cycles_difficulties_1_to_4_evenly() -> None:
    rows = _rows()
    assert [row["difficulty"] for row in rows] == [i % 4 + 1 for i in range(len(rows))]


def test_sample_is_reproducible(tmp_path: Path) -> None:
    regenerated = tmp_path / "sample.jsonl"
    write_sample(regenerated, n=len(_rows()), seed=0)
    assert regenerated.read_bytes() == SAMPLE_PATH.read_bytes()


def test_write_sample_small_and_zero(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "s.jsonl"
    write_sample(path, n=7, seed=3)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["difficulty"] for r in rows] == [1, 2, 3, 4, 1, 2, 3]
    write_sample(path, n=0)
    assert path.read_text(encoding="utf-8") == ""
    with pytest.raises(ValueError):
        write_sample(path, n=-1)


# --- generator ---------------------------------------------------------------------------


def test_same_seed_same_problems_and_different_seeds_differ() -> None:
    def draw(seed: int) -> list[dict]:
        rng = np.random.default_rng(seed)
        return [generate_problem(rng, d) for d in DIFFICULTIES * 10]

    assert draw(42) == draw(42)
    assert draw(42) != draw(43)
    assert draw(0) != draw(1)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_difficulty_is_number_of_notes_and_solutions_verify(difficulty: int) -> None:
    rng = np.random.default_rng(difficulty)
    for _ in range(400):
        prob = generate_problem(rng, difficulty)
        assert set(prob) == {"question", "answer"}
        assert len(NOTE_RE.findall(prob["answer"])) == difficulty
        assert check_worked_solution(prob["answer"]) == [], prob
        assert re.search(r"\n#### \d+$", prob["answer"]), prob["answer"]
        assert prob["question"].endswith("?")
        assert "{" not in prob["question"] + prob["answer"], prob


def test_difficulty_one_uses_small_numbers_and_one_add_or_sub() -> None:
    rng = np.random.default_rng(11)
    for _ in range(500):
        prob = generate_problem(rng, 1)
        numbers = [int(x) for x in re.findall(r"\d+", prob["question"] + prob["answer"])]
        assert max(numbers) <= 20, prob
        (note,) = NOTE_RE.findall(prob["answer"])
        assert re.fullmatch(r"\d+[+-]\d+=\d+", note), note


def test_numpy_integer_difficulty_is_accepted() -> None:
    prob = generate_problem(np.random.default_rng(0), np.int64(3))
    assert len(NOTE_RE.findall(prob["answer"])) == 3


@pytest.mark.parametrize("bad", [0, 6, -1, 2.0, "2", None, True])
def test_bad_difficulty_raises_value_error(bad: object) -> None:
    with pytest.raises(ValueError, match="difficulty"):
        generate_problem(np.random.default_rng(0), bad)  # type: ignore[arg-type]


def test_generator_does_not_touch_global_rngs() -> None:
    random.seed(1234)
    np.random.seed(1234)
    py_state = random.getstate()
    np_state = np.random.get_state()
    rng = np.random.default_rng(5)
    for d in DIFFICULTIES:
        for _ in range(50):
            generate_problem(rng, d)
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert after[0] == np_state[0]
    np.testing.assert_array_equal(after[1], np_state[1])
    assert after[2:] == np_state[2:]


def _matches(template: str, text: str) -> bool:
    pattern = re.sub(r"\\\{[A-Za-z]+\\\}", ".+?", re.escape(template))
    return re.fullmatch(pattern, text) is not None


def test_every_template_and_slot_variant_is_used() -> None:
    """Every question of every slot of every template is asked (slot d at difficulty d).

    Slot-1 ``a*b`` variants are skipped: difficulty 1 only uses ``a+b``/``a-b``.
    """
    unused = {
        (t["id"], i, v[4])
        for t in TEMPLATES
        for i, slot in enumerate(t["steps"])
        for v in slot
        if v[0] != "a*b"
    }
    rng = np.random.default_rng(9)
    for n in range(6000):
        d = n % 5 + 1
        question = generate_problem(rng, d)["question"]
        for key in [k for k in unused if k[1] == d - 1]:
            if _matches(key[2], question.rsplit(". ", 1)[-1]):
                unused.discard(key)
    assert not unused


# --- template data ------------------------------------------------------------------------

_OPS = {"a+b", "a-b", "a*b", "+k", "-k", "*k", "/k", "%k", "frac", "k-"}
_COMMON_FIELDS = {"name", "friend", *PRONOUNS["f"]}


def test_template_data_is_well_formed() -> None:
    assert len(TEMPLATES) >= 20
    assert len({tpl["id"] for tpl in TEMPLATES}) == len(TEMPLATES)
    assert {g for _, g in NAMES} == set(PRONOUNS)
    assert len({n for n, _ in NAMES}) == len(NAMES)
    assert all(0 < n < m for n, m, _ in FRACTIONS)
    for tpl in TEMPLATES:
        slots = tpl["steps"]
        assert len(slots) == 5, tpl["id"]
        assert any(v[0] in ("a+b", "a-b") for v in slots[0]), tpl["id"]
        var_keys = [set(v) for v in tpl["vars"]]
        assert all(keys == var_keys[0] for keys in var_keys), tpl["id"]
        for i, slot in enumerate(slots):
            assert slot, (tpl["id"], i)
            for op, spec, *texts in slot:
                assert op in _OPS and op.startswith("a") == (i == 0), (tpl["id"], i, op)
                allowed = _COMMON_FIELDS | (var_keys[0] if var_keys else set())
                allowed |= {"a", "b"} if i == 0 else {"frac"} if op == "frac" else {"k"}
                for j, text in enumerate(texts):
                    fields = {f for _, f, _, _ in string.Formatter().parse(text) if f}
                    extra = {"calc"} if j == 1 else set()
                    assert fields <= allowed | extra, (tpl["id"], i, text, fields - allowed)
                    if j == 1:
                        assert "calc" in fields, (tpl["id"], i, text)
                assert texts[2].endswith("?") and texts[0].endswith("."), (tpl["id"], i)
                if op in ("/k", "%k"):
                    assert all(isinstance(k, int) and k > 1 for k in spec)
                elif op in ("+k", "-k", "k-") or (op == "*k" and isinstance(spec, tuple)):
                    assert 1 < spec[0] <= spec[1], (tpl["id"], i, spec)


# --- independent verifier -----------------------------------------------------------------

GOOD = (
    "Lena buys 3 + 4 = <<3+4=7>>7 pens.\n"
    "She packs them in pairs after adding one: (7 + 1) / 2 = <<(7+1)/2=4>>4 pairs.\n"
    "#### 4"
)


def test_verifier_accepts_a_correct_solution() -> None:
    assert check_worked_solution(GOOD) == []
    assert (
        check_worked_solution("Half is 5 * 0.5 = <<5*0.5=2.5>>2.5.\nTwice: <<2.5*2=5>>5\n#### 5")
        == []
    )


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Tom has <<3+4=8>>8 apples.\n#### 8", "evaluates to 7"),  # wrong note value
        ("Tom has <<3+4=7>>8 apples.\n#### 8", "number after '>>'"),  # text disagrees with note
        ("Tom has <<3+4=7>>7 apples.\n#### 9", "does not match the last note"),  # wrong final
        ("Tom has <<3+4=7>>7 apples.", "missing final answer line"),  # no final line
        ("Tom has <<3+4=7>>7.\n#### 7\n#### 7", "exactly one '####'"),  # two final lines
        ("Tom has <<3+4=7>>7.\n#### 7.5", "is not '#### <int>'"),  # non-int final
        ("Tom has <<1000+1000=2000>>2000.\n#### 2,000", "is not '#### <int>'"),  # comma
        ("#### 7\nTom has <<3+4=7>>7.", "not the last line"),  # final line misplaced
        ("Tom has 7 apples.\n#### 7", "no <<expr=value>>"),  # no notes
        ("So <<2**3=8>>8.\n#### 8", "not plain arithmetic"),  # power is not allowed
        ("So <<sqrt(16)=4>>4.\n#### 4", "not plain arithmetic"),  # function call
        ("So <<__import__('os')=0>>0.\n#### 0", "not plain arithmetic"),  # code
        ("So <<x+1=2>>2.\n#### 2", "not plain arithmetic"),  # variable
        ("So <<3+=3>>3.\n#### 3", "not plain arithmetic"),  # syntax error
        ("So <<4/0=0>>0.\n#### 0", "division by zero"),
        ("So <<3+4>>7.\n#### 7", "missing '='"),
        ("So <<3+4=seven>>7.\n#### 7", "not a number"),
        ("So <<3+4=7>> apples.\n#### 7", "no number right after"),
    ],
)
def test_verifier_catches_errors(answer: str, expected: str) -> None:
    errors = check_worked_solution(answer)
    assert errors, answer
    assert any(expected in e for e in errors), errors


def test_verifier_flags_a_corrupted_generated_solution() -> None:
    prob = generate_problem(np.random.default_rng(3), 4)
    lines = prob["answer"].split("\n")
    value = re.search(r">>(\d+)", lines[1]).group(1)
    lines[1] = lines[1].replace(f"={value}>>", f"={int(value) + 1}>>")
    assert check_worked_solution("\n".join(lines))


# --- command line --------------------------------------------------------------------------


def test_cli_show_and_write_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert arithmetic._main(["--show", "2", "--difficulty", "3", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("--- problem") == 2 and out.count("####") == 2
    path = tmp_path / "s.jsonl"
    assert arithmetic._main(["--write-sample", str(path), "--n", "8"]) == 0
    assert len(path.read_text(encoding="utf-8").splitlines()) == 8
    with pytest.raises(SystemExit):
        arithmetic._main(["--show", "1", "--difficulty", "9"])
    with pytest.raises(SystemExit):
        arithmetic._main([])
