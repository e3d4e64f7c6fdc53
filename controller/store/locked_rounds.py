"""What this process locked out and has not settled yet, so a Settle plans without a read.

A Settle plans against the wagers its round was locked out with. This process remembers the
wagers and the lockout fingerprint of each lockout it answered, keyed by (table, round), and
forgets them once the round is settled or voided, or when it holds :data:`DEFAULT_CAPACITY`
rounds (the oldest first). A round it does not remember (another replica or worker answered
the lockout, a restart, an eviction) is read from Redis.

A remembered round can never pay wrongly: the settle script compares the lockout
fingerprint the plan was made against with the round's own and refuses a mismatch, changing
nothing; the caller then reads the round from Redis and plans again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from controller.domain.rounds import Wager

DEFAULT_CAPACITY = 10_000
"""Rounds remembered at most: far more than the tables of a casino have locked out at once."""


@dataclass(frozen=True, slots=True)
class LockedRound:
    """A locked-out round as a settlement plans against it. ``remembered``: from this
    process's memory of its own lockout rather than read from Redis."""

    wagers: tuple[Wager, ...]
    lockout_fingerprint: str
    remembered: bool = False


class LockedRounds:
    """A bounded memory of (table id, round id) -> :class:`LockedRound` (one event loop's:
    not shared between threads)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._capacity = capacity
        self._rounds: OrderedDict[tuple[str, int], LockedRound] = OrderedDict()

    def __len__(self) -> int:
        return len(self._rounds)

    def remember(self, table_id: str, round_id: int, wagers: tuple[Wager, ...], fp: str) -> None:
        """Keep a lockout this process answered (forgetting the oldest beyond capacity)."""
        key = (table_id, round_id)
        self._rounds[key] = LockedRound(wagers, fp, remembered=True)
        self._rounds.move_to_end(key)
        while len(self._rounds) > self._capacity:
            self._rounds.popitem(last=False)

    def recall(self, table_id: str, round_id: int) -> LockedRound | None:
        """The remembered lockout of the round, or None."""
        return self._rounds.get((table_id, round_id))

    def forget(self, table_id: str, round_id: int) -> None:
        """Drop the round (settled, voided, or found stale); nothing if it is not kept."""
        self._rounds.pop((table_id, round_id), None)
