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

A position stops the link group only when the controller can verify it answered it: every
answer carries a mac over (table, epoch, seq) under the controller's position key, held
outside Redis (:func:`position_mac`; ``controller/security/position_key.py``). An unverifiable
position ahead of Redis refuses only the table that sent it, until a second table identity claims so
too (:func:`judge`; docs/journal.md, "Verified positions").

The same judgement runs in the Lua scripts (``_lib.lua``, ``epoch_verdict``), atomically with
each step; this module is the reference the controller uses outside the scripts (at start,
in its refresh loop, for ``GetTable``) and the tests check the Lua against.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field

from jackpot.errors import InvalidArgument

MAC_LENGTH = 64
_MAC = re.compile(f"[0-9a-f]{{{MAC_LENGTH}}}")
MAC_PERSON = b"jackpot pos v2"
"""The position mac's domain label (BLAKE2b's personalisation, at most 16 bytes): a mac of
this function is never a mac of anything else keyed with the same key."""
ACCEPT_ALL = "*"
"""A lineage cutoff meaning: any position of that epoch is accepted."""
MAX_EPOCH_ID_LENGTH = 64
_EPOCH_ID = re.compile(f"[A-Za-z0-9-]{{0,{MAX_EPOCH_ID_LENGTH}}}")


@dataclass(frozen=True, slots=True)
class JournalPosition:
    """Where a link group's journal stood when a step was acknowledged: its epoch id (""
    for a table that was never acknowledged anything) and sequence number (>= 0)."""

    epoch: str = ""
    seq: int = 0
    mac: str = field(default="", compare=False)
    """The controller's MAC over (table, epoch, seq) (:func:`position_mac`), as answered;
    "" from a controller without a position key. Not part of the position's identity."""
    verified: bool = field(default=False, compare=False)
    """Controller side only: the mac is this controller's for the calling table."""

    def __post_init__(self) -> None:
        if self.mac and not _MAC.fullmatch(self.mac):
            raise InvalidArgument(f"a position's mac is {MAC_LENGTH} hex digits or empty")
        if self.seq < 0:
            raise InvalidArgument(f"a journal sequence number is >= 0, not {self.seq}")
        if self.epoch and not _EPOCH_ID.fullmatch(self.epoch):
            raise InvalidArgument(
                f"an epoch id is at most {MAX_EPOCH_ID_LENGTH} ASCII letters, digits or '-'"
            )

    def later(self, other: JournalPosition) -> JournalPosition:
        """The position to keep after an answer at ``other``: a new epoch replaces the old;
        in the same epoch the higher sequence number wins."""
        if other.epoch != self.epoch:
            return other if other.epoch else self
        if self.seq != other.seq:
            return self if self.seq > other.seq else other
        return self if self.mac and not other.mac else other  # the same: keep a mac


def position_mac(key: bytes, table_id: str, epoch: str, seq: int) -> str:
    """The MAC a controller answers with a table's position: keyed BLAKE2b-256 (RFC 7693's
    keyed mode, a PRF like HMAC, in one C call) under its position key, personalised with
    :data:`MAC_PERSON`, over the table id, the epoch id and the seq, the first two
    length-prefixed (``7:table-1``...) so that no field can shift into another (64 hex
    digits)."""
    table, epoch_ = table_id.encode(), epoch.encode()
    message = b"%d:%b%d:%b%d" % (len(table), table, len(epoch_), epoch_, seq)
    return hashlib.blake2b(message, key=key, digest_size=32, person=MAC_PERSON).hexdigest()


def verified(key: bytes | None, table_id: str, known: JournalPosition) -> JournalPosition:
    """``known`` as sent by table ``table_id``, marked verified when its mac is the one this
    key gives (constant-time comparison); never verified without a key or a mac."""
    if key is None or not known.mac:
        return known
    expected = position_mac(key, table_id, known.epoch, known.seq)
    if not hmac.compare_digest(expected, known.mac):
        return known
    return JournalPosition(known.epoch, known.seq, known.mac, verified=True)


class PositionMacs:
    """A controller's macs for its tables' positions under one key, remembering the last it
    answered each table (at most :attr:`max_tables`): the position a table sends back is
    nearly always that one, verified then by a constant-time comparison instead of a second
    mac. Anything else is verified by computing its mac (:func:`verified`)."""

    max_tables = 10_000

    def __init__(self, key: bytes) -> None:
        self.key = key
        self._answered: dict[str, tuple[str, int, str]] = {}

    def sign(self, table_id: str, epoch: str, seq: int) -> str:
        """The mac of ``table_id``'s position ``(epoch, seq)``, remembered as its last."""
        mac = position_mac(self.key, table_id, epoch, seq)
        if len(self._answered) >= self.max_tables and table_id not in self._answered:
            self._answered.clear()  # a bound; verifying falls back to computing
        self._answered[table_id] = (epoch, seq, mac)
        return mac

    def verify(self, table_id: str, known: JournalPosition) -> JournalPosition:
        """``known`` as :func:`verified` gives it."""
        if not known.mac:
            return known
        answered = self._answered.get(table_id)
        if answered is None or answered[0] != known.epoch or answered[1] != known.seq:
            return verified(self.key, table_id, known)
        if not hmac.compare_digest(answered[2], known.mac):
            return known
        return JournalPosition(known.epoch, known.seq, known.mac, verified=True)


SERVE, REFUSE_TABLE, STOP_GROUP = "serve", "refuse table", "stop group"


def judge(
    known: JournalPosition, epoch: Epoch, seq: int, who: str, first_claim: str = ""
) -> tuple[str, str | None]:
    """What a table step does with ``who``'s position (``check_epoch`` in ``_lib.lua``):
    ``(SERVE, None)`` when Redis holds it; ``(STOP_GROUP, why)`` when it does not and the
    position is verified, or when another table (``first_claim``: the epoch record's
    ``unverified_claim``, "<epoch id> <who>") claimed so unverified in this epoch before;
    else ``(REFUSE_TABLE, why)``: only this table is refused, and it becomes the first
    claim when there was none (the epoch record's ``unverified_claim``, journaled as an
    ``unverified_claim`` entry: with the stop, the only writes a refused step makes)."""
    why = verdict(known, epoch, seq, who)
    if why is None:
        return SERVE, None
    if known.verified:
        return STOP_GROUP, why
    claim_epoch, _, first = first_claim.partition(" ")
    if claim_epoch != epoch.epoch_id or not first or first == who:
        return REFUSE_TABLE, why
    return STOP_GROUP, f"{why} (unverified, as {first} claimed before: two tables agree)"


def claimed_seq(known: JournalPosition) -> str:
    """A table's position's seq as the scripts take it (``_lib.lua``, ``check_epoch``): its
    digits, followed by ``!`` when the controller verified the table's mac over it."""
    return f"{known.seq}!" if known.verified else str(known.seq)


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
