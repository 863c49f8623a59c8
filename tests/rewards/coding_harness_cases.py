"""Joint answers that tell the authors' harness from the sandbox's (``test_coding_harness.py``).

Issue 32: the MAGRPO authors' ``execution_reward_aux`` runs the program in its own process and
scores the answers as generated; CoopCoding-v1 reads an answer as an env action (clipped to
``max_action_length``, control characters dropped) and the sandbox kills a program at a
timeout. These variants, built on HumanEval problems with their canonical solutions (split
into ``aux`` and a main that calls it), reach each place where that can matter:

* **as written** (``ENV_KINDS``): answers over 8,192 characters (a long comment in aux, a long
  docstring in main, prose after the code); form feed, vertical tab, NUL, NEL and other control
  characters in code, comments and strings; a lone surrogate in a comment; CRLF line ends;
* **state after a timeout**: a main that hangs on its K-th call (state in a default argument,
  so that their extraction keeps it), hangs on every third call, or catches the timeout once
  and returns; a memoising main;
* **stdout**: printing a lone surrogate from main or aux (caught or not; to stderr), printing
  other Unicode;
* **numpy** imported inside main (a value converted back to builtins, or returned as is);
* **differences kept on purpose** (``DOCUMENTED``): a result with a rigged ``__eq__`` or of a
  ``list`` subclass, a ``SystemExit``, a loop that catches every ``BaseException``, and a lone
  surrogate in the code (their function raises ``UnicodeEncodeError`` printing it);
* controls: ``__main__`` blocks, imports inside functions, recursion.

Hanging variants sleep (``time.sleep``) or spin; either is cut by any timeout, so the counts of
timeouts, which the score depends on, do not depend on the limit. The expected totals were
computed by the authors' released ``execution_reward_aux`` in its own process (one fork per
case, stdout a strict UTF-8 stream, as on a UTF-8 terminal) outside this repository; the test
data stores them by case id with a hash of the built inputs (:func:`digest`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator

from coding_parity_cases import _signature

SEED = 32
#: Problems per kind (hanging kinds cost their runner 10 s per timeout: fewer of them).
PER_KIND, PER_SLOW_KIND = 12, 5
#: Kinds where the answer as written differs from the env action of CoopCoding-v1.
ENV_KINDS = (
    "long_aux_comment",
    "long_main_docstring",
    "long_prose_after",
    "formfeed_body",
    "formfeed_def",
    "vtab_body",
    "nul_comment",
    "nel_line",
    "ctrl_in_string",
    "surrogate_comment",
    "crlf",
)
#: Kinds whose outcome depends on the timeout: the parity test runs them with a short one.
SLOW_KINDS = (
    "hang_call_1",
    "hang_call_2",
    "hang_call_3_spin",
    "hang_every_third",
    "swallow_once",
    "catch_base_loop",
)
#: Differences kept on purpose (security and liveness; ``docs/magrpo_parity.md``).
DOCUMENTED = ("rigged_eq", "list_subclass", "system_exit", "catch_base_loop", "surrogate_comment")

_FILLER = "# " + "the helper keeps the work of the main function small " * 2


def _long_comment(indent: str, chars: int = 9000) -> str:
    lines, total = [], 0
    while total < chars:
        lines.append(indent + _FILLER)
        total += len(lines[-1]) + 1
    return "\n".join(lines) + "\n"


def _body(head: str, lines: list[str]) -> str:
    return head + "\n" + "".join(f"    {line}\n" for line in lines)


def _variants(problem: dict) -> Iterator[tuple[str, str, str]]:
    """``(kind, aux answer, main answer)`` for one problem with a solution."""
    prompt, entry = problem["prompt"], problem["entry_point"]
    head, names = _signature(prompt, entry)
    call = f"aux({', '.join(names)})"
    stateful = head.replace("):", f"{', ' if names else ''}_calls=[0]):", 1)
    aux = (prompt + problem["canonical_solution"]).replace(f"def {entry}(", "def aux(", 1)
    real = _body(
        head, [f"result = {call}", "if result is None:", "    return result", "return result"]
    )
    body = ["result = " + call, "return result"]

    # --- as written
    yield "long_aux_comment", aux.rstrip("\n") + "\n" + _long_comment("    "), real
    doc = '    """' + ("Calls the helper and returns what it returns. " * 200) + '"""\n'
    yield "long_main_docstring", aux, head + "\n" + doc + real.split("\n", 1)[1]
    prose = "\n\n" + "This function calls the helper and returns its result unchanged.\n" * 150
    yield "long_prose_after", aux, f"```python\n{real}```" + prose
    yield "formfeed_body", aux, _body(head, ["\x0c" + body[0], body[1]])
    yield "formfeed_def", aux.replace("def aux(", "\x0cdef aux(", 1), real
    yield "vtab_body", aux, _body(head, ["\x0b" + body[0], body[1]])
    yield "nul_comment", aux, _body(head, ["# checked\x00", *body])
    yield "nel_line", aux, _body(head, [body[0], "\x85", body[1]])
    yield "ctrl_in_string", aux, _body(head, ['_tag = "\x01\x1b[0m\x7f"', *body])
    yield "surrogate_comment", aux, _body(head, ["# \ud83d", *body])
    yield "crlf", aux.replace("\n", "\r\n"), real.replace("\n", "\r\n")

    # --- state after a timeout
    def hang_on(condition: str, wait: str = "time.sleep(3600)") -> str:
        return _body(
            stateful,
            ["import time", "_calls[0] += 1", f"if {condition}:", f"    {wait}", *body],
        )

    yield "hang_call_1", aux, hang_on("_calls[0] == 1")
    yield "hang_call_2", aux, hang_on("_calls[0] == 2")
    yield "hang_call_3_spin", aux, hang_on("_calls[0] == 3", "while True: pass")
    yield "hang_every_third", aux, hang_on("_calls[0] % 3 == 0")
    swallow = [
        "import time",
        "_calls[0] += 1",
        "if _calls[0] == 1:",
        "    try:",
        "        time.sleep(3600)",
        "    except Exception:",
        "        pass",
        *body,
    ]
    yield "swallow_once", aux, _body(stateful, swallow)
    memo = head.replace("):", f"{', ' if names else ''}_memo={{}}):", 1)
    key = f"repr(({', '.join(names)},))"
    yield (
        "memoised",
        aux,
        _body(
            memo,
            [
                f"key = {key}",
                "if key not in _memo:",
                f"    _memo[key] = {call}",
                "return _memo[key]",
            ],
        ),
    )
    catch_all = [
        "import time",
        "while True:",
        "    try:",
        "        time.sleep(3600)",
        "    except BaseException:",
        "        pass",
        *body,
    ]
    yield "catch_base_loop", aux, _body(head, catch_all)

    # --- stdout
    yield "print_surrogate_main", aux, _body(head, ['print("value \\ud83d")', *body])
    printing_aux = aux.replace(":\n", ':\n    print("\\udfff")\n', 1)
    yield "print_surrogate_aux", printing_aux, real
    caught = ["try:", '    print("\\ud800")', "except Exception:", "    pass", *body]
    yield "print_surrogate_caught", aux, _body(head, caught)
    stderr = ["import sys", 'sys.stderr.write("\\ud83d\\n")', *body]
    yield "stderr_surrogate", aux, _body(head, stderr)
    yield "print_unicode", aux, _body(head, ['print("r\u00e9sultat \u2713 \U0001f600")', *body])

    # --- numpy
    numpy_lines = ["import numpy as np", f"result = np.array({call}, dtype=object).tolist()"]
    yield "numpy_tolist", aux, _body(head, [*numpy_lines, "return result"])
    yield "numpy_unused", aux, _body(head, ["import numpy as np", "_ = np.zeros(1)", *body])

    # --- kept on purpose
    rigged = 'type("Anything", (), {"__eq__": lambda self, other: True})'
    yield "rigged_eq", aux, _body(head, [f"_ = {call}", f"return {rigged}()"])
    subclass = 'type("Items", (list,), {})(result) if type(result) is list else result'
    yield "list_subclass", aux, _body(head, [f"result = {call}", f"return {subclass}"])
    yield "system_exit", aux, _body(head, [f"_ = {call}", "raise SystemExit(0)", "return _"])

    # --- controls
    yield "main_block", aux, real + f'\n\nif __name__ == "__main__":\n    print({entry})\n'
    yield "import_inside", aux, _body(head, ["import itertools", "import collections", *body])
    recursion = ["def depth(n):", "    return 0 if n == 0 else 1 + depth(n - 1)", "depth(400)"]
    yield "recursion_400", aux, _body(head, [*recursion, *body])
    deep = ["def depth(n):", "    return 0 if n == 0 else 1 + depth(n - 1)", "depth(5000)"]
    yield "recursion_5000", aux, _body(head, [*deep, *body])


def build_cases(humaneval: list[dict]) -> list[dict]:
    """All cases: ``id`` (``humaneval/task_id/kind``), ``kind``, ``prompt``, ``test``,
    ``entry_point``, ``aux``, ``main``; the problems of each kind drawn with :data:`SEED`."""
    usable = [p for p in humaneval if _signature(p["prompt"], p["entry_point"]) is not None]
    by_kind: dict[str, list[dict]] = {}
    for problem in usable:
        for kind, aux, main in _variants(problem):
            case = {
                "id": f"humaneval/{problem['task_id']}/{kind}",
                "kind": kind,
                "prompt": problem["prompt"],
                "test": problem["test"],
                "entry_point": problem["entry_point"],
                "aux": aux,
                "main": main,
            }
            by_kind.setdefault(kind, []).append(case)
    rng = random.Random(SEED)
    out = []
    for kind, cases in by_kind.items():
        n = PER_SLOW_KIND if kind in SLOW_KINDS else PER_KIND
        out += sorted(rng.sample(cases, min(n, len(cases))), key=lambda c: c["id"])
    return out


def digest(case: dict) -> str:
    """SHA-256 of one case's inputs (JSON with ASCII escapes: the answers hold lone surrogates)."""
    keys = ("prompt", "test", "entry_point", "aux", "main")
    return hashlib.sha256(json.dumps([case[k] for k in keys]).encode("ascii")).hexdigest()[:16]
