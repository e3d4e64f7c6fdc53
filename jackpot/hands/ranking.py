"""What every game's hand categories share: an order, and a name for the wire."""

from __future__ import annotations

from enum import IntEnum
from typing import Self


class Category(IntEnum):
    """Base of a game's hand categories, ordered low (0) to high.

    ``label`` is the name used on the wire, in metrics and in the journal (``royal_flush``,
    ``mini_royal``, ``five_aces``).
    """

    @property
    def label(self) -> str:
        """The category's name in lower case with underscores."""
        return self._name_.lower()  # the member's own attribute: ``name`` is a property

    @classmethod
    def from_label(cls, label: str) -> Self:
        """Inverse of :attr:`label`; raises :class:`KeyError` for an unknown label."""
        return cls[label.upper()]
