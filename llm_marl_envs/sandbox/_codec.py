"""Wire format between sandbox processes (stdlib only; the worker script loads this file).

Values cross process boundaries as JSON with tags, and only plain data of EXACT builtin
types survives: ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes`` and
``list``/``tuple``/``dict``/``set``/``frozenset`` of those. The decoder rebuilds fresh builtin
objects, so nothing the untrusted side sends can carry behaviour (``__eq__``, ``__bool__``,
subclasses) into the trusted test runner.

Frames are a 4-byte big-endian length followed by that many bytes.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

MAX_DEPTH = 100
BIG_INT_BITS = 8000  # beyond this, ints travel as hex (JSON int parsing has a digit limit)
_LEN = struct.Struct(">I")


class WireError(ValueError):
    """A value cannot be encoded, or a payload is not a well-formed encoding."""


def to_wire(value: Any, depth: int = 0) -> Any:
    """Encode ``value`` into a JSON-ready structure; exact builtin types only."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    t = type(value)
    if value is None or t is bool or t is str or t is float:
        return value
    if t is int:
        return value if value.bit_length() <= BIG_INT_BITS else {"i": hex(value)}
    if t is list:
        return [to_wire(v, depth + 1) for v in value]
    if t is tuple:
        return {"t": [to_wire(v, depth + 1) for v in value]}
    if t is dict:
        return {"d": [[to_wire(k, depth + 1), to_wire(v, depth + 1)] for k, v in value.items()]}
    if t is set:
        return {"s": [to_wire(v, depth + 1) for v in value]}
    if t is frozenset:
        return {"f": [to_wire(v, depth + 1) for v in value]}
    if t is bytes:
        return {"b": value.hex()}
    if t is complex:
        return {"c": [value.real, value.imag]}
    raise WireError(f"untrusted type {t.__module__}.{t.__qualname__}")


def _float(x: Any) -> float:
    if type(x) is float:
        return x
    if type(x) is int:
        return float(x)
    raise WireError("bad complex part")


def from_wire(data: Any, depth: int = 0) -> Any:
    """Decode what :func:`to_wire` produced (after JSON) into fresh builtin objects."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    t = type(data)
    if data is None or t is bool or t is str or t is float or t is int:
        return data
    if t is list:
        return [from_wire(v, depth + 1) for v in data]
    if t is not dict or len(data) != 1:
        raise WireError(f"malformed value of type {t.__name__}")
    ((tag, body),) = data.items()
    try:
        if tag == "i" and type(body) is str:
            return int(body, 16)
        if tag == "b" and type(body) is str:
            return bytes.fromhex(body)
        if tag == "c" and type(body) is list and len(body) == 2:
            return complex(_float(body[0]), _float(body[1]))
        if type(body) is not list:
            raise WireError("malformed container")
        if tag == "t":
            return tuple(from_wire(v, depth + 1) for v in body)
        if tag == "s":
            return {from_wire(v, depth + 1) for v in body}
        if tag == "f":
            return frozenset(from_wire(v, depth + 1) for v in body)
        if tag == "d":
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("malformed dict item")
                out[from_wire(pair[0], depth + 1)] = from_wire(pair[1], depth + 1)
            return out
    except (TypeError, ValueError, RecursionError) as error:  # unhashable key, bad hex, ...
        raise WireError(f"malformed value: {type(error).__name__}") from None
    raise WireError(f"unknown tag {tag!r}")


def dumps(value: Any) -> bytes:
    """Encode a value to bytes (raises :class:`WireError` for untrusted types)."""
    try:
        return json.dumps(to_wire(value), separators=(",", ":")).encode("ascii")
    except RecursionError:
        raise WireError("value nested too deeply") from None


def loads(payload: bytes) -> Any:
    """Decode bytes from :func:`dumps`; anything malformed raises :class:`WireError`."""
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError) as error:
        raise WireError(f"malformed payload: {type(error).__name__}") from None
    return from_wire(data)


def read_exact(fd: int, n: int) -> bytes:
    """Read exactly ``n`` bytes from ``fd`` (raises ``EOFError`` on a short read)."""
    parts: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def read_frame(fd: int, max_len: int = 1 << 28) -> bytes:
    """Read one length-prefixed frame."""
    (n,) = _LEN.unpack(read_exact(fd, 4))
    if n > max_len:
        raise WireError(f"frame of {n} bytes exceeds {max_len}")
    return read_exact(fd, n)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def frame(data: bytes) -> bytes:
    """Prefix ``data`` with its length."""
    return _LEN.pack(len(data)) + data


def unframe(buffer: bytearray) -> bytes | None:
    """Pop one complete frame off the front of ``buffer``, or return None if incomplete."""
    if len(buffer) < 4:
        return None
    (n,) = _LEN.unpack_from(buffer)
    if len(buffer) < 4 + n:
        return None
    data = bytes(buffer[4 : 4 + n])
    del buffer[: 4 + n]
    return data
