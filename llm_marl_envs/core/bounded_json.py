"""JSON from an untrusted file, parsed within stated bounds: a one-line refusal, never a crash.

Byte limits alone do not bound what parsing costs: a few megabytes of ``[]`` or ``{"":0}``
parse into millions of Python objects, a 100,000-deep array ends the standard parser in a
``RecursionError``, a 400-digit integer parses fine and then overflows the first float
comparison, and ``NaN`` / ``Infinity`` are accepted by :func:`json.loads` although JSON has no
such values. :func:`loads` parses one JSON text (a file or one line of a JSONL file) and
refuses, with a :class:`BoundsError` naming ``where``:

* text that is not UTF-8 JSON;
* nesting deeper than ``max_depth`` (the standard parser's own recursion limit is caught too);
* more than ``max_values`` values (every object, array, key, string, number, true, false and
  null counts one);
* an integer beyond 64 bits, a float that is not finite (``1e999``), and
  ``NaN`` / ``Infinity``;
* a string (or key) holding a lone surrogate (``"\\ud800"``): valid JSON escapes, but no UTF-8
  text, so the record could never be written again (the message names the string's place,
  as ``messages[0].content``).

The text is parsed once by the standard library's C parser; its values are then counted by an
iterative walk that stops at the first bound passed, so a refused text costs one parse of at
most its byte limit (the caller's) and a text within the bounds is returned as parsed.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["BoundsError", "MAX_INT", "count", "loads"]

#: The largest integer magnitude a JSON value may hold here (64 bits: a secret seed is unsigned).
MAX_INT = 2**64 - 1
_MAX_INT_DIGITS = len(str(MAX_INT)) + 1  # a sign, then at most 20 digits


class BoundsError(ValueError):
    """A JSON text that is malformed or passes a bound (the message names where)."""


def _int(where: str):
    def parse(text: str) -> int:
        if len(text) > _MAX_INT_DIGITS or abs(value := int(text)) > MAX_INT:
            raise BoundsError(f"{where}: an integer beyond 64 bits ({text[:24]}...)")
        return value

    return parse


def _float(where: str):
    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise BoundsError(f"{where}: a number too large to be finite ({text[:24]})")
        return value

    return parse


def _constant(where: str):
    def parse(text: str) -> Any:
        raise BoundsError(f"{where}: {text} is not a JSON value")

    return parse


def loads(data: bytes | str, where: str, *, max_values: int, max_depth: int) -> Any:
    """``data`` parsed as JSON, or a :class:`BoundsError` (one line, naming ``where``) when it
    is malformed or passes a bound (module docstring)."""
    try:
        value = json.loads(
            data,
            parse_int=_int(where),
            parse_float=_float(where),
            parse_constant=_constant(where),
        )
    except BoundsError:
        raise
    except RecursionError:
        raise BoundsError(f"{where}: nested deeper than {max_depth} levels") from None
    except UnicodeDecodeError:
        raise BoundsError(f"{where}: not UTF-8 text") from None
    except ValueError as error:
        raise BoundsError(f"{where}: not JSON ({str(error)[:80]})") from None
    count(value, where, max_values=max_values, max_depth=max_depth)
    return value


def count(value: Any, where: str, *, max_values: int, max_depth: int) -> int:
    """The number of values in ``value`` (module docstring), or a :class:`BoundsError` as soon
    as it passes ``max_values`` or nests deeper than ``max_depth``. Iterative: no recursion."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        total += 1
        if total > max_values:
            raise BoundsError(f"{where}: more than {max_values:,} JSON values")
        if depth > max_depth:
            raise BoundsError(f"{where}: nested deeper than {max_depth} levels")
        if isinstance(item, str):
            _text(item, value, where)
        elif isinstance(item, dict):
            total += len(item)  # the keys
            if total > max_values:
                raise BoundsError(f"{where}: more than {max_values:,} JSON values")
            for key in item:
                _text(key, value, where)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return total


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(text: str, whole: Any, where: str) -> None:
    if not _utf8(text):
        raise BoundsError(
            f"{where}: {_place(whole) or 'a string'} holds a lone surrogate (not UTF-8 text)"
        )


def _place(whole: Any) -> str:
    """Where in ``whole`` the first string (or key) that is not UTF-8 is, as
    ``messages[0].content`` ("" for the top level). Walked only once a bad string is found."""
    stack: list[tuple[Any, str]] = [(whole, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and not _utf8(item):
            return path
        if isinstance(item, dict):
            for key, inner in item.items():
                here = f"{path}.{key}" if path else str(key)
                if not _utf8(key):
                    return f"a key of {path}" if path else "a key"
                stack.append((inner, here))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}[{i}]") for i, inner in enumerate(item))
    return ""
