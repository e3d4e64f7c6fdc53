"""What the ``jackpotctl report`` kinds share: the bound on the journal one report reads, and
its tables' text (columns aligned, frequencies as "1 in N", microcents)."""

from __future__ import annotations

from fractions import Fraction

from jackpot.money import MICROCENTS_PER_CENT, format_cents

MAX_WINDOW_ENTRIES = 500_000
"""The most journal entries one report reads per link group (about a week of a busy floor):
a longer window is refused with a request to shorten it."""


def aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows of cells, columns aligned, the first row the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def one_in(value: Fraction | None) -> str:
    """A frequency for people: "1 in 649,740" (rounded to a whole number), "0", or "-"."""
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"1 in {round(1 / value):,}"


def microcents(amount: int) -> str:
    """Microcents for people: dollars and cents, and the microcents below a cent if any."""
    cents, rest = divmod(abs(amount), MICROCENTS_PER_CENT)
    text = format_cents(cents) + (f" +{rest}u" if rest else "")
    return f"-{text}" if amount < 0 else text
