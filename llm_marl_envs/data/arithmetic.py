"""Procedural, seed-driven GSM8K-style arithmetic word problems.

Problems come from the story templates in
:mod:`llm_marl_envs.data.arithmetic_templates` (bakery, road trip, savings,
classroom, garden, basketball, reading, ...).  Each template is a chain of five
steps, each using the previous result; a problem of difficulty ``d`` uses the
first ``d``, so ``d`` is exactly the number of ``<<expr=value>>`` notes.

Difficulty levels:

1. One addition or subtraction; every number, answer included, is <= 20.
2. Two chained steps: an addition/subtraction, then usually a multiplication
   or an exact division.
3. Three steps; starting/added amounts up to about 1.5x larger; percentages
   and "fraction of" steps appear.
4. Four steps, amounts up to about 2x larger.
5. Five steps, amounts up to about 2.5x larger.

Divisions, percentages and fractions are always exact: the multiplicative
parameters are drawn first, the modulus each intermediate result must meet is
worked out backwards, then the additive parameters are chosen to meet it.
Every result is an integer in 2..50,000.  Only the ``numpy.random.Generator``
passed in is used (usually one ``rng.integers`` call per problem), so output is
reproducible and the global ``random``/``numpy.random`` states are untouched.
:func:`check_worked_solution` re-checks a worked solution independently.

Command line::

    python -m llm_marl_envs.data.arithmetic --write-sample PATH [--n 240] [--seed 0]
    python -m llm_marl_envs.data.arithmetic --show 5 --difficulty 3 [--seed 0]
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from os import PathLike
from pathlib import Path

import numpy as np

from llm_marl_envs.core.validation import check_int
from llm_marl_envs.data.arithmetic_templates import FRACTIONS, NAMES, PRONOUNS, TEMPLATES

__all__ = ["check_worked_solution", "generate_problem", "write_sample"]

MIN_DIFFICULTY = 1
MAX_DIFFICULTY = 5
_SCALE = (1.0, 1.0, 1.5, 2.0, 2.5)  # growth of additive ranges (hi >= 12) per difficulty
_CAP = 50_000  # largest intermediate/final value allowed
_BATCH = 32  # random integers drawn from the generator at a time
_MAX_TRIES = 1000
_FACTOR_TOKENS = {  # (previous value, parameter, numerator, denominator) -> expression tokens
    "*k": lambda v, k, n, m: [v, "*", k],
    "/k": lambda v, k, n, m: [v, "/", k],
    "%k": lambda v, k, n, m: [v, "*", k, "/", 100],
    "frac": lambda v, k, n, m: [v, "/", m] if n == 1 else [v, "*", n, "/", m],
}


class _Retry(Exception):
    """Raised when a draw cannot satisfy the constraints; the problem is redrawn."""


class _Draws:
    """Cheap integer draws taken in batches from a ``numpy.random.Generator``."""

    __slots__ = ("_buf", "_i", "_rng")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buf: list[int] = []
        self._i = 0

    def _next(self) -> int:
        if self._i >= len(self._buf):
            self._buf = self._rng.integers(0, 1 << 62, size=_BATCH).tolist()
            self._i = 0
        self._i += 1
        return self._buf[self._i - 1]

    def int(self, lo: int, hi: int) -> int:
        """Uniform integer in ``[lo, hi]`` (bias below 1e-15)."""
        return lo + self._next() % (hi - lo + 1)

    def pick(self, seq):
        """Uniform element of a non-empty sequence."""
        return seq[self._next() % len(seq)]


# (template, its five slots, its slot-1 variants allowed at difficulty 1);
# the template data itself is validated by tests/data/test_arithmetic.py.
_COMPILED = [
    (t, t["steps"], [v for v in t["steps"][0] if v[0] in ("a+b", "a-b")]) for t in TEMPLATES
]


def check_difficulty(difficulty: object) -> int:
    """Return ``difficulty`` as an int, or raise ``ValueError`` if it is invalid."""
    return check_int("difficulty", difficulty, MIN_DIFFICULTY, MAX_DIFFICULTY)


def _scaled(bounds: tuple[int, int], f: float) -> tuple[int, int]:
    lo, hi = bounds
    return (lo, int(hi * f)) if hi >= 12 else (lo, hi)


def _first_step(op: str, spec, r: int, d: int, f: float, dr: _Draws) -> tuple[int, int, int, list]:
    """Draw ``a`` and ``b`` for the opening step; the result is a multiple of ``r``."""
    (la, ha), (lb, hb) = spec
    if d == 1:  # every number <= 20 (r is 1 here)
        if op == "a+b":
            a = dr.int(min(la, 10, ha), min(ha, 15))
            b = dr.int(min(lb, hb, 20 - a), min(hb, 20 - a))
            return a, b, a + b, [a, "+", b]
        a = dr.int(min(la, 12), min(max(ha, 12), 20))
        b = dr.int(min(lb, hb, a - 2), min(hb, a - 2))
        return a, b, a - b, [a, "-", b]
    if op == "a*b":  # not scaled: the product already grows
        a = dr.int(la, ha)
        step = r // math.gcd(a, r)
        b = step * max(1, (dr.int(lb, hb) + step // 2) // step)
        if b > 2 * hb:
            raise _Retry
        return a, b, a * b, [a, "*", b]
    (la, ha), (lb, hb) = _scaled((la, ha), f), _scaled((lb, hb), f)
    if op == "a+b":
        a = dr.int(la, ha)
        b = dr.int(lb, hb)
        b += -(a + b) % r
        return a, b, a + b, [a, "+", b]
    if op == "a-b":
        b = dr.int(lb, hb)
        t = max(1, (dr.int(la, ha) - b) // r)
        out = max(t * r, 2)
    return out + b, b, out, [out + b, "-", b]


def _attempt(d: int, dr: _Draws) -> dict:
    """Build one problem of difficulty ``d`` or raise :class:`_Retry`."""
    tpl, slots, first = dr.pick(_COMPILED)
    name, gender = dr.pick(NAMES)
    friend = name
    while friend == name:
        friend = dr.pick(NAMES)[0]
    ctx = {"name": name, "friend": friend, **PRONOUNS[gender]}
    if tpl["vars"]:
        ctx.update(dr.pick(tpl["vars"]))
    f = _SCALE[d - 1] if tpl.get("scale", True) else 1.0
    variants = [dr.pick(first if d == 1 else slots[0])]
    variants += [dr.pick(slots[i]) for i in range(1, d)]

    # 1) draw the multiplicative parameters; 2) back-propagate divisibility needs.
    params: list = [None] * d
    factors: list = [None] * d  # (numerator, denominator) of each multiplicative step
    for i in range(1, d):
        op, spec = variants[i][0], variants[i][1]
        if op == "*k":
            k = dr.pick(spec) if isinstance(spec, list) else dr.int(*spec)
            params[i], factors[i] = k, (k, 1)
        elif op in ("/k", "%k"):
            k = dr.pick(spec)
            g = math.gcd(k, 100) if op == "%k" else 1
            params[i], factors[i] = k, ((k // g, 100 // g) if op == "%k" else (1, k))
        elif op == "frac":
            num, den, params[i] = dr.pick(FRACTIONS)
            factors[i] = (num, den)
    req = [1] * d  # req[i]: step i's result must be a multiple of req[i]
    for i in range(d - 1, 0, -1):
        if factors[i] is not None:
            num, den = factors[i]
            req[i - 1] = den * (req[i] // math.gcd(num, req[i]))

    # 3) walk forward, choosing additive parameters to meet each modulus.
    sentences, lines = [], []
    v = 0
    for i, (op, spec, sentence, line, _question) in enumerate(variants):
        r = req[i]
        if i == 0:
            ctx["a"], ctx["b"], v, toks = _first_step(op, spec, r, d, f, dr)
        elif factors[i] is not None:
            num, den = factors[i]
            ctx["frac" if op == "frac" else "k"] = params[i]
            toks = _FACTOR_TOKENS[op](v, params[i], num, den)
            v = v * num // den
        elif op == "+k":
            k = dr.int(*_scaled(spec, f))
            k += -(v + k) % r
            ctx["k"], toks, v = k, [v, "+", k], v + k
        elif op == "-k":
            lo, hi = _scaled(spec, f)
            t = (v - dr.int(lo, hi)) // r
            if t * r < 2:
                t = (v - lo) // r
                if t * r < 2:
                    raise _Retry
            ctx["k"], toks, v = v - t * r, [v, "-", v - t * r], t * r
        else:  # "k-"
            lo, hi = _scaled(spec, f)
            out = max(r * max(1, (dr.int(lo, hi) + r // 2) // r), 2)
            ctx["k"], toks, v = v + out, [v + out, "-", v], out
        if v < 2 or v > _CAP:
            raise _Retry
        note = "".join(map(str, toks))
        ctx["calc"] = f"{' '.join(map(str, toks))} = <<{note}={v}>>{v}"
        sentences.append(sentence.format_map(ctx))
        lines.append(line.format_map(ctx))
    sentences.append(variants[-1][4].format_map(ctx))
    lines.append(f"#### {v}")
    return {"question": " ".join(sentences), "answer": "\n".join(lines)}


def generate_problem(rng: np.random.Generator, difficulty: int = 2) -> dict:
    """Generate one GSM8K-style word problem with a worked solution.

    Args:
        rng: The random generator; the only source of randomness used.
        difficulty: Number of arithmetic steps, 1..5 (see the module docstring).

    Returns:
        ``{"question": str, "answer": str}``; ``answer`` has one line per step
        with a ``<<expr=value>>`` note and ends with ``#### <int>``.

    Raises:
        ValueError: If ``difficulty`` is not an int in 1..5.
    """
    d = check_difficulty(difficulty)
    dr = _Draws(rng)
    for _ in range(_MAX_TRIES):
        try:
            return _attempt(d, dr)
        except _Retry:
            continue
    raise RuntimeError(f"no difficulty-{d} problem in {_MAX_TRIES} tries")  # pragma: no cover


# --- independent verifier ---------------------------------------------------

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
_BINOPS[ast.Div] = operator.truediv
_NOTE_RE = re.compile(r"<<([^<>]*)>>")
_NUM_AFTER_RE = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")
_FINAL_RE = re.compile(r"####\s*(-?\d+)")


def _eval_node(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval_node(node.left), _eval_node(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ValueError("division by zero")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _eval_node(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    raise ValueError(f"{type(node).__name__} is not allowed")


def _safe_eval(expr: str) -> float:
    """Evaluate numbers, ``+ - * /`` and parentheses only (never ``eval``).

    Raises:
        ValueError: If ``expr`` is not plain arithmetic, divides by zero or overflows.
    """
    try:
        return float(_eval_node(ast.parse(expr.strip(), mode="eval").body))
    except SyntaxError as exc:
        raise ValueError(f"syntax error: {exc.msg}") from None
    except (OverflowError, RecursionError, MemoryError):
        raise ValueError("expression too large") from None


def _close(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)


def _check_note(answer: str, idx: int, match: re.Match) -> tuple[list[str], float | None]:
    """Check one ``<<expr=value>>`` note; return its errors and its value (None if unreadable)."""
    where = f"note {idx} <<{match.group(1)}>>"
    expr, eq, value_text = match.group(1).rpartition("=")
    if not eq:
        return [f"{where}: missing '=' between expression and value"], None
    try:
        value = float(value_text)
    except ValueError:
        return [f"{where}: value {value_text!r} is not a number"], None
    errors = []
    try:
        result = _safe_eval(expr)
        if not _close(result, value):
            errors.append(f"{where}: {expr} evaluates to {result:g}, not {value_text}")
    except ValueError as exc:
        errors.append(f"{where}: expression {expr!r} is not plain arithmetic ({exc})")
    after = _NUM_AFTER_RE.match(answer, match.end())
    if after is None:
        errors.append(f"{where}: no number right after '>>'")
    elif not _close(float(after.group()), value):
        errors.append(
            f"{where}: the number after '>>' is {after.group()}, but the note says {value_text}"
        )
    return errors, value


def check_worked_solution(answer: str) -> list[str]:
    """Check a GSM8K-style worked solution without knowing how it was made.

    Every ``<<expr=value>>`` note must hold (``expr`` evaluated by a small safe
    arithmetic evaluator, tolerance 1e-9), the number right after ``>>`` must
    equal ``value``, and there must be exactly one ``#### <int>`` line, the
    last line, equal to the value of the last note.

    Args:
        answer: The worked solution text.

    Returns:
        Readable error strings; an empty list means the solution is correct.
    """
    errors: list[str] = []
    last_value: float | None = None
    notes = list(_NOTE_RE.finditer(answer))
    if not notes:
        errors.append("no <<expr=value>> calculator notes found")
    for idx, match in enumerate(notes, 1):
        note_errors, last_value = _check_note(answer, idx, match)
        errors += note_errors
    lines = answer.rstrip("\n").split("\n")
    finals = [i for i, text in enumerate(lines) if text.lstrip().startswith("####")]
    if len(finals) != 1:
        errors.append(
            "missing final answer line '#### <int>'"
            if not finals
            else f"expected exactly one '####' line, found {len(finals)}"
        )
        return errors
    text = lines[finals[0]].strip()
    final = _FINAL_RE.fullmatch(text)
    if finals[0] != len(lines) - 1:
        errors.append("the '####' line is not the last line")
    if final is None:
        errors.append(f"final line {text!r} is not '#### <int>'")
    elif last_value is not None and not _close(float(final.group(1)), last_value):
        errors.append(
            f"final answer {final.group(1)} does not match the last note's value {last_value:g}"
        )
    return errors


# --- bundled sample and command line ----------------------------------------


def write_sample(path: str | PathLike, n: int = 240, seed: int = 0) -> None:
    """Write ``n`` distinct problems as JSON Lines (keys question, answer, difficulty).

    Row ``i`` has difficulty ``i % 4 + 1`` (1..4 cycled evenly); a question
    already written is skipped and redrawn.

    Args:
        path: Output file; parent folders are created.
        n: Number of rows.
        seed: Seed for ``numpy.random.default_rng``.

    Raises:
        ValueError: If ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = np.random.default_rng(seed)
    rows: list[str] = []
    seen: set[str] = set()
    for _ in range(100 * n + 100):
        if len(rows) == n:
            break
        d = len(rows) % 4 + 1
        prob = generate_problem(rng, d)
        if prob["question"] not in seen:
            seen.add(prob["question"])
            row = {"question": prob["question"], "answer": prob["answer"], "difficulty": d}
            rows.append(json.dumps(row, ensure_ascii=False) + "\n")
    else:  # pragma: no cover
        raise RuntimeError(f"could not draw {n} distinct problems")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(rows), encoding="utf-8", newline="\n")


def _main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m llm_marl_envs.data.arithmetic", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--write-sample", metavar="PATH", help="write a JSON Lines sample to PATH")
    parser.add_argument("--n", type=int, default=240, help="rows for --write-sample (default 240)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--show", type=int, metavar="N", help="print N problems")
    parser.add_argument(
        "--difficulty", type=int, default=2, help="difficulty 1..5 for --show (default 2)"
    )
    args = parser.parse_args(argv)
    if args.write_sample is None and args.show is None:
        parser.error("give --write-sample PATH and/or --show N")
    if args.write_sample is not None:
        write_sample(args.write_sample, n=args.n, seed=args.seed)
        print(f"wrote {args.n} problems to {args.write_sample}")
    if args.show is not None:
        rng = np.random.default_rng(args.seed)
        try:
            problems = [generate_problem(rng, args.difficulty) for _ in range(args.show)]
        except ValueError as exc:
            parser.error(str(exc))
        for i, prob in enumerate(problems, 1):
            print(f"--- problem {i} (difficulty {args.difficulty}) ---")
            print(prob["question"], prob["answer"], sep="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
