"""Free-text spaces and observations for language-model agents.

Gymnasium's :class:`~gymnasium.spaces.Text` is built for short alphanumeric strings: it
rejects the empty string, spaces, punctuation and anything outside its charset. Language
models produce arbitrary Unicode, so :class:`FreeText` accepts *any* ``str`` up to
``max_length`` characters, while still being a ``Text`` so that tools which dispatch on the
space type keep working.

PettingZoo's ``api_test`` compares ``observation.dtype`` with the space's dtype, which a plain
``str`` does not have. :class:`TextObservation` is a ``str`` subclass that carries that dtype;
everywhere else it behaves exactly like the string it holds (``==``, slicing, ``json.dumps``,
regular expressions, tokenizers).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Text

__all__ = ["FreeText", "TextObservation", "SAMPLE_CHARSET"]

# Characters that ``FreeText.sample`` draws from: printable ASCII, whitespace, and a handful of
# non-ASCII characters that LLM output really contains (accents, CJK, emoji, the replacement
# character that byte-level tokenizers emit for broken UTF-8).
SAMPLE_CHARSET: str = (
    string.ascii_letters
    + string.digits
    + string.punctuation
    + " \n\t"
    + "éèüñçßøåæœ—–‘’“”…€£°±×÷µ"
    + "αβγδλπΩЖжЯ中文字日本語한국어"
    + "😀🎬🤖✓\ufffd"
)

_STR_DTYPE = np.dtype(str)


class TextObservation(str):
    """A ``str`` that also exposes ``dtype``, as numpy-minded checkers expect.

    >>> obs = TextObservation("Question: 2 + 2?")
    >>> obs == "Question: 2 + 2?", obs.dtype.kind
    (True, 'U')
    """

    __slots__ = ()
    dtype = _STR_DTYPE


class _UnicodeText(Text):
    """Where FreeText's vector-env functions are registered (see ``_register_vector_support``).

    Gymnasium iterates a batched ``Tuple`` of spaces element-wise only when the exact type of
    every subspace has an ``iterate`` of its own; registering on this base class gives
    FreeText an ``iterate`` (found through the class hierarchy, as SuperSuit calls it on the
    unbatched space) without changing how a ``Tuple`` of FreeText spaces is iterated.
    """


class FreeText(_UnicodeText):
    """A text space holding any Python ``str`` with ``min_length <= len <= max_length``.

    Unlike :class:`gymnasium.spaces.Text`, membership does not depend on a charset: every
    Unicode string of admissible length is contained, the empty string included (the default
    ``min_length`` is 0). ``sample()`` draws printable text from :data:`SAMPLE_CHARSET`
    (vectorised, a few microseconds for short strings). Text has no numeric vector form:
    Gymnasium's ``flatten_space``, ``flatdim``, ``flatten`` and ``unflatten`` (so
    ``FlattenObservation``) raise a one-line ``ValueError`` on a FreeText space.

    Args:
        max_length: Maximum number of characters (inclusive).
        min_length: Minimum number of characters (inclusive), 0 by default.
        sample_max_length: Upper bound on the length of *sampled* strings (defaults to
            ``max_length``). Useful to keep random-policy tests fast with a large ``max_length``.
        seed: Seed of the space's own sampling RNG.

    >>> space = FreeText(8)
    >>> space.contains(""), space.contains("日本語 ok!"), space.contains("x" * 9)
    (True, True, False)
    """

    def __init__(
        self,
        max_length: int,
        *,
        min_length: int = 0,
        sample_max_length: int | None = None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)
        if sample_max_length is None:
            sample_max_length = self.max_length
        if not self.min_length <= sample_max_length <= self.max_length:
            raise ValueError(
                f"sample_max_length must lie in [{self.min_length}, {self.max_length}], "
                f"got {sample_max_length}"
            )
        self.sample_max_length = int(sample_max_length)
        self._codepoints = np.array([ord(c) for c in self.character_list], dtype=np.uint32)

    def contains(self, x: Any) -> bool:
        """Return True for any ``str`` of admissible length, whatever its characters."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Draw a random printable string.

        With no argument the length is uniform in ``[min_length, sample_max_length]`` and
        characters are uniform over :data:`SAMPLE_CHARSET`. ``mask`` / ``probability``
        follow :meth:`gymnasium.spaces.Text.sample`.
        """
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        length = int(self.np_random.integers(self.min_length, self.sample_max_length + 1))
        idx = self.np_random.integers(0, len(self._codepoints), size=length)
        return self._codepoints[idx].tobytes().decode("utf-32-le")

    @property
    def is_np_flattenable(self) -> bool:
        """Arbitrary Unicode has no fixed-size integer encoding, so the space cannot be flattened."""
        return False

    def __repr__(self) -> str:
        return f"FreeText(min_length={self.min_length}, max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FreeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )


# --------------------------------------------------------------------------- vector envs
# Gymnasium's vector environments batch, split and share observations through singledispatch
# functions keyed on the space type. ``Text`` has no ``iterate`` (SuperSuit's vector envs need
# it), and its shared memory stores charset indices, so any character outside the charset
# raises. FreeText registers its own: a batch is a tuple of str, and shared memory holds each
# string as its length followed by its code points (int32), so any Unicode text fits,
# lone surrogates included; reading it gives a live view whose copies are tuples of str.
class _SharedTexts(np.ndarray):
    """A live, read-only view of the strings in a FreeText shared-memory block.

    Gymnasium's ``AsyncVectorEnv`` and SuperSuit's multi-process vector env read their shared
    observations once and hand out that object, or a copy of it, after every step, as they do
    numpy views; the strings are therefore decoded on access. It is a numpy array of the
    block's int32 rows (length, then code points) because SuperSuit copies only arrays, tuples
    and dicts, but as a Python sequence it holds ``str``: ``len``, indexing, iteration, ``in``
    and ``==`` see the texts, and ``copy()`` / ``copy.copy`` / ``copy.deepcopy`` / pickling give
    a plain ``tuple`` of the current strings (what ``SyncVectorEnv`` returns). Numpy functions
    (``np.asarray``) see the int32 rows.
    """

    def __new__(cls, rows: np.ndarray) -> _SharedTexts:
        view = rows.view(cls)
        view.flags.writeable = False
        return view

    def _text(self, index: int) -> str:
        row = np.ndarray.__getitem__(self.view(np.ndarray), index)
        return row[1 : 1 + int(row[0])].tobytes().decode("utf-32-le", "surrogatepass")

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self._text(i) for i in range(len(self))[index])
        if isinstance(index, (int, np.integer)):
            return self._text(int(index))
        raise TypeError(f"shared texts are indexed by int or slice, not {type(index).__name__}")

    def __iter__(self) -> Any:
        return (self._text(i) for i in range(len(self)))

    __contains__ = Sequence.__contains__
    __reversed__ = Sequence.__reversed__
    index = Sequence.index
    count = Sequence.count

    def __bool__(self) -> bool:
        return len(self) > 0

    def tolist(self) -> list[str]:  # type: ignore[override]
        return list(self)

    def copy(self, order: str = "C") -> tuple[str, ...]:  # type: ignore[override]
        return tuple(self)

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: Any = None) -> tuple[str, ...]:
        return tuple(self)

    def __reduce__(self) -> Any:
        return (tuple, (tuple(self),))

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self.__reduce__()

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        if isinstance(other, (Sequence, np.ndarray)) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(tuple(self))

    __str__ = __repr__


Sequence.register(_SharedTexts)


def _refuse_flattening(space: FreeText, *_: Any, **__: Any) -> Any:
    """Gymnasium's flattening of a ``Text`` space would give a vector of ``max_length`` charset
    indices (a million int32 for an observation) and raise ``KeyError`` on any other
    character; a FreeText space refuses instead, naming what to do with text."""
    raise ValueError(
        f"{space!r} holds free text, which has no numeric vector form, so Gymnasium cannot "
        "flatten it (FlattenObservation, flatten_space, flatdim, flatten): give the "
        "observation string to a tokenizer or a language-model policy instead "
        "(docs/integrations.md, 'Gymnasium: one agent learns')"
    )


def _register_flattening_refusal() -> None:
    from gymnasium.spaces import utils as space_utils

    for function in (
        space_utils.flatdim,
        space_utils.flatten_space,
        space_utils.flatten,
        space_utils.unflatten,
    ):
        function.register(FreeText)(_refuse_flattening)


def _register_vector_support() -> None:
    from gymnasium.vector import utils as vector_utils

    @vector_utils.iterate.register(_UnicodeText)
    def _iterate(space: FreeText, items: Any) -> Any:
        return iter(items)

    @vector_utils.create_shared_memory.register(FreeText)
    def _create(space: FreeText, n: int = 1, ctx: Any = None) -> Any:
        import multiprocessing

        return (ctx or multiprocessing).Array("i", n * (space.max_length + 1))

    def _rows(space: FreeText, shared_memory: Any) -> np.ndarray:
        flat = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
        return flat.reshape(-1, space.max_length + 1)

    @vector_utils.write_to_shared_memory.register(FreeText)
    def _write(space: FreeText, index: int, value: str, shared_memory: Any) -> None:
        codes = np.frombuffer(str(value).encode("utf-32-le", "surrogatepass"), dtype=np.int32)
        if len(codes) > space.max_length:
            raise ValueError(f"{len(codes)} characters do not fit {space!r}")
        row = _rows(space, shared_memory)[index]
        row[0] = len(codes)
        row[1 : 1 + len(codes)] = codes

    @vector_utils.read_from_shared_memory.register(FreeText)
    def _read(space: FreeText, shared_memory: Any, n: int = 1) -> _SharedTexts:
        return _SharedTexts(_rows(space, shared_memory)[:n])


_register_vector_support()
_register_flattening_refusal()
