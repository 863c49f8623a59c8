"""Argument checks shared by every constructor: one message style, one place.

Each check returns the value converted to its plain Python type, or raises with a message
that names the argument, what it must be, and what it got:

>>> check_int("size", 9, 5, 15)
9
>>> check_int("size", 20, 5, 15)
Traceback (most recent call last):
...
ValueError: size must be an int in [5, 15], got 20
>>> check_number("wall_density", "0.4", 0, 0.7)
Traceback (most recent call last):
...
llm_marl_envs.core.validation.ArgumentTypeError: wall_density must be a finite number in [0, 0.7], got str '0.4'

A value of the wrong type raises :class:`ArgumentTypeError`, which is a ``TypeError`` and a
``ValueError`` at once, so code that catches either keeps working. ``bool`` is never accepted
as a number (``True`` is an ``int`` to Python, never a size to a user).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["ArgumentTypeError", "check_bool", "check_choice", "check_int", "check_number"]


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type (both a ``TypeError`` and a ``ValueError``)."""


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" in [{low:g}, {high:g}]"
    if low is not None:
        return f" >= {low:g}"
    if high is not None:
        return f" <= {high:g}"
    return ""


def _got(value: Any) -> str:
    return (
        f"{type(value).__name__} {value!r}" if not isinstance(value, (int, float)) else repr(value)
    )


def check_int(
    name: str,
    value: Any,
    low: int | None = None,
    high: int | None = None,
    *,
    why: str = "",
    none_ok: bool = False,
) -> int | None:
    """``value`` as an ``int`` in ``[low, high]`` (either bound optional).

    ``why`` is appended to the message (a reason for the bound); ``none_ok`` lets ``None``
    through unchanged.
    """
    if value is None and none_ok:
        return None
    what = f"{'None or ' if none_ok else ''}an int{_bounds(low, high)}{why}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{name} must be {what}, got {_got(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


def check_number(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    positive: bool = False,
) -> float:
    """``value`` as a finite ``float`` in ``[low, high]``; ``positive`` also excludes 0."""
    what = ("a finite number > 0" if positive else "a finite number") + _bounds(low, high)
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ArgumentTypeError(f"{name} must be {what}, got {_got(value)}")
    if (
        not math.isfinite(value)
        or (positive and not value > 0)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a ``bool`` (numpy's included); anything else is an error, even 0 or 1."""
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be a bool, got {_got(value)}")
    return bool(value)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices``, else a ``ValueError`` listing them."""
    options = tuple(choices)
    try:
        ok = value in options
    except TypeError:  # unhashable or incomparable
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value
