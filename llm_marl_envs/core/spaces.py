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


class FreeText(Text):
    """A text space holding any Python ``str`` with ``min_length <= len <= max_length``.

    Unlike :class:`gymnasium.spaces.Text`, membership does not depend on a charset: every
    Unicode string of admissible length is contained, the empty string included (the default
    ``min_length`` is 0). ``sample()`` draws printable text from :data:`SAMPLE_CHARSET`
    (vectorised, a few microseconds for short strings).

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
