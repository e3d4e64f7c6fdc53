"""Epochs: the identity of a link group's state in Redis, so that lost state is never served.

A link group's **epoch record** is created once, with the link group (a restore writes a new
one, last), and carries a random id. Every
journal position handed to a table is ``(epoch id, journal seq)``; the table keeps the last
one it was acknowledged and sends it with every report. Redis holds everything the table
was told only when the epoch is the same and Redis's journal has reached that sequence
number. When it has not - Redis restarted empty, was restored from an older backup, or is
another installation's - the link group is **stopped**: every table report is refused
(UNAVAILABLE, so tables keep their reports) until an operator restores the state or, having
reconciled what was lost, resumes the link group, which starts a new epoch.

A new epoch names its ancestors in its **lineage**, each with the last sequence number of
it that the new state holds (a restore from an export at #S: ``old:S``), or ``*`` when an
operator accepted everything a table may hold of it (``jackpotctl link-groups resume``).
A table that knows an ancestor is then judged against that cutoff, and adopts the new epoch
from the next answer.

The same judgement runs in the Lua scripts (``_lib.lua``, ``epoch_verdict``), atomically with
each step; this module is the reference the controller uses outside the scripts (at start,
in its refresh loop, for ``GetTable``) and the tests check the Lua against.
"""

from __future__ import annotations

from dataclasses import dataclass

from jackpot.errors import InvalidArgument

ACCEPT_ALL = "*"
"""A lineage cutoff meaning: any position of that epoch is accepted."""
MAX_EPOCH_ID_LENGTH = 64


@dataclass(frozen=True, slots=True)
class JournalPosition:
    """Where a link group's journal stood when a step was acknowledged: its epoch id (""
    for a table that was never acknowledged anything) and sequence number (>= 0)."""

    epoch: str = ""
    seq: int = 0

    def __post_init__(self) -> None:
        if self.seq < 0:
            raise InvalidArgument(f"a journal sequence number is >= 0, not {self.seq}")
        if len(self.epoch) > MAX_EPOCH_ID_LENGTH or not all(
            c.isalnum() or c == "-" for c in self.epoch
        ):
            raise InvalidArgument(
                f"an epoch id is at most {MAX_EPOCH_ID_LENGTH} letters, digits or '-'"
            )

    def later(self, other: JournalPosition) -> JournalPosition:
        """The position to keep after an answer at ``other``: a new epoch replaces the old;
        in the same epoch the higher sequence number wins."""
        if other.epoch != self.epoch:
            return other if other.epoch else self
        return self if self.seq >= other.seq else other


NO_POSITION = JournalPosition()
"""What a caller that was never acknowledged anything (a new table, an operator) knows."""


@dataclass(frozen=True, slots=True)
class Epoch:
    """A link group's epoch record: its id, ancestors ``(id, cutoff seq or None for all)``,
    and why it is stopped ("" while it serves)."""

    epoch_id: str
    lineage: tuple[tuple[str, int | None], ...] = ()
    stopped: str = ""

    @classmethod
    def from_fields(cls, epoch_id: str, lineage: str, stopped: str) -> Epoch:
        """Decode the stored fields (lineage ``"id:cutoff,id:*"``)."""
        ancestors: list[tuple[str, int | None]] = []
        for item in filter(None, lineage.split(",")):
            ancestor, _, cutoff = item.partition(":")
            ancestors.append((ancestor, None if cutoff == ACCEPT_ALL else int(cutoff)))
        return cls(epoch_id, tuple(ancestors), stopped)


def lineage_text(ancestors: tuple[tuple[str, int | None], ...]) -> str:
    """Encode a lineage as stored: ``"id:cutoff,id:*"``."""
    return ",".join(
        f"{ancestor}:{ACCEPT_ALL if cutoff is None else cutoff}" for ancestor, cutoff in ancestors
    )


def verdict(known: JournalPosition, epoch: Epoch, seq: int, who: str) -> str | None:
    """None when Redis's state (``epoch`` at journal ``seq``) holds everything ``who`` was
    acknowledged (``known``); otherwise why not, for the operator who must act."""
    if not known.epoch:
        return None
    if known.epoch == epoch.epoch_id:
        if known.seq <= seq:
            return None
        return (
            f"{who} was acknowledged journal #{known.seq} but Redis's journal ends at #{seq}: "
            "Redis lost acknowledged steps (restarted without its data, or restored from an "
            "older copy)"
        )
    for ancestor, cutoff in epoch.lineage:
        if ancestor == known.epoch:
            if cutoff is None or known.seq <= cutoff:
                return None
            return (
                f"{who} was acknowledged journal #{known.seq} of epoch {known.epoch}, but "
                f"Redis's state holds that epoch only up to #{cutoff} (restored from there): "
                "reconcile its answers after that (jackpotctl restore collect --outbox FILE, "
                "then jackpotctl restore status)"
            )
    return (
        f"{who} knows epoch {known.epoch} but Redis holds epoch {epoch.epoch_id}: Redis's "
        "state was replaced or created anew, and what the table was acknowledged is not in it"
    )
