"""Where the fuzz generators get their random decisions: Hypothesis in the suite, a seeded Random in hunts.

The generators only ask a `Chooser` for integers, picks from a list and yes/no answers. Under Hypothesis
every answer shrinks towards the simplest one (the low end of a range, the first option, "no"), so the
options are listed simplest first.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, TypeVar

from hypothesis import strategies as st

Option = TypeVar("Option")


class Chooser(Protocol):
    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""

    def choice(self, options: Sequence[Option]) -> Option:
        """One of the options (the first is the simplest)."""

    def chance(self, percent: int) -> bool:
        """True with about `percent`% probability; shrinks to False."""


class HypothesisChooser:
    """Draws through `st.data()`, so Hypothesis records, replays and shrinks every decision."""

    def __init__(self, data: st.DataObject) -> None:
        self._data = data

    def integer(self, lo: int, hi: int) -> int:
        return self._data.draw(st.integers(lo, hi))

    def choice(self, options: Sequence[Option]) -> Option:
        return self._data.draw(st.sampled_from(list(options)))

    def chance(self, percent: int) -> bool:
        return self._data.draw(st.integers(0, 99)) >= 100 - percent


class RandomChooser:
    """Plain pseudo-random decisions from a seed (for the long hunts of tests/fuzz/hunt.py)."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self._random.randint(lo, hi)

    def choice(self, options: Sequence[Option]) -> Option:
        return self._random.choice(list(options))

    def chance(self, percent: int) -> bool:
        return self._random.randrange(100) >= 100 - percent
