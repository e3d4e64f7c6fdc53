"""The journal's hash chain, recomputed: which entry of a journal is not the one written.

Every journal entry carries ``hash``, written by the script that wrote the entry, in the same
atomic step (``journal()`` in ``controller/store/scripts/_lib.lua``; docs/journal.md)::

    hash = SHA-256(DOMAIN_BLOCK || field || field || ... || previous hash (32 bytes))

over the entry's fields but ``hash``: each field whose name has a tag in :data:`FIELD_TAGS`
as ``tag || len(value) || value``, in the order of the tags, then each other field as
``0 || len(name) || name || len(value) || value``, sorted by name in byte order. Names and
values are UTF-8 bytes and lengths are byte counts written as unsigned LEB128 (one byte below
128). The hash is written as 64 lowercase hex digits, and chained as the 32 bytes they stand
for. The first entry's previous hash is :data:`GENESIS`; after a trim the chain goes on from
the signed checkpoint's hash (:mod:`controller.journal.checkpoint_signature`). Every value is the
decimal string Redis holds (amounts in microcents or cents), so the hash is recomputed exactly
from Redis or from an export.

:class:`ChainCheck` walks entries in order and names the first that breaks the chain or the
sequence (an entry edited, deleted, inserted or moved); the audit (online) and the export
check (offline) both use it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

GENESIS = "0" * 64
"""The previous hash of a journal's first entry."""

DOMAIN_BLOCK = b"jackpot-journal-v2".ljust(64, b"\0")
"""What the hashed bytes start with: the encoding's name and version, padded with zero bytes
to one SHA-256 block, so that the scripts start from the state it leaves (``_lib.lua``
holds that state) and it costs them nothing."""

FIELD_TAGS: Mapping[str, int] = {
    "type": 1,
    "meter": 2,
    "table": 3,
    "round": 4,
    "wager": 5,
    "amount_cents": 6,
    "d_meter": 7,
    "d_reserve": 8,
    "seat": 9,
    "seq": 10,
    "on_dealer": 11,
    "hand": 12,
    "line": 13,
    "award": 14,
    "envy_for_seat": 15,
    "limited_from_cents": 16,
    "meter_before_cents": 17,
    "meter_after_cents": 18,
    "operator_seed_microcents": 19,
    "reset_cents": 20,
    "jackpot": 21,
    "payer": 22,
    "payer_cert": 23,
    "reviewer": 24,
    "reviewer_cert": 25,
    "note": 26,
    "reason": 27,
    "wagers": 28,
    "by": 29,
    "by_cert": 30,
    "link_group": 31,
    "description": 32,
    "epoch": 33,
    "previous_epoch": 34,
    "from_seq": 35,
    "source": 36,
    "stopped_because": 37,
    "game": 38,
    "rate_ppm": 39,
    "reserve_rate_ppm": 40,
    "ceiling_cents": 41,
    "config": 42,
    "previous_last_round": 43,
    "last_round": 44,
}
"""The one-byte tags that stand for field names in the hashed bytes (``CHAIN_TAGS`` in
``_lib.lua`` is the same table). A tag is never changed or reused, and a name gets one only
before any journal holds it: a name already journaled is hashed spelled out, forever."""

HASH_FIELD = "hash"

_HEX_DIGEST = re.compile("[0-9a-fA-F]{64}")


def _length(count: int) -> bytes:
    """``count`` as unsigned LEB128: 7 bits a byte, low first, the high bit meaning more."""
    out = bytearray()
    while count >= 0x80:
        out.append(0x80 | count & 0x7F)
        count >>= 7
    out.append(count)
    return bytes(out)


def _previous_bytes(previous: str) -> bytes:
    """The 32 bytes a previous hash is chained as: the digest its hex digits spell, or zeros
    when it spells none (an entry whose hash was removed or mangled; the check names it)."""
    return bytes.fromhex(previous) if _HEX_DIGEST.fullmatch(previous) else bytes(32)


def canonical(previous: str, fields: Mapping[str, str]) -> bytes:
    """The bytes an entry's hash is taken of: ``fields`` (without ``hash``) chained to the
    ``previous`` entry's hash (hex)."""
    known = sorted(
        (FIELD_TAGS[name], value) for name, value in fields.items() if name in FIELD_TAGS
    )
    other = sorted(
        (name.encode(), value)
        for name, value in fields.items()
        if name not in FIELD_TAGS and name != HASH_FIELD
    )
    parts = [DOMAIN_BLOCK]
    for tag, value in known:
        data = value.encode()
        parts += [bytes((tag,)), _length(len(data)), data]
    for name, value in other:
        data = value.encode()
        parts += [b"\0", _length(len(name)), name, _length(len(data)), data]
    parts.append(_previous_bytes(previous))
    return b"".join(parts)


def entry_hash(previous: str, fields: Mapping[str, str]) -> str:
    """The hash an entry with ``fields`` written after ``previous`` carries (hex)."""
    return hashlib.sha256(canonical(previous, fields)).hexdigest()


def numbered_after(fields: Mapping[str, str], last_seq: int) -> int:
    """The sequence number the entry ``fields`` following #``last_seq`` is due after: a
    ``restored`` entry whose ``from_seq`` is ``last_seq`` numbers on after its
    ``numbered_after`` (the highest sequence number the lost state may have issued,
    docs/journal.md "Numbering across a restore"): that one recorded gap is accepted, no
    other. Any other entry: ``last_seq``."""
    if fields.get("type") != "restored" or fields.get("from_seq") != str(last_seq):
        return last_seq
    raw = fields.get("numbered_after", "")
    return int(raw) if raw.isdigit() and int(raw) > last_seq else last_seq


@dataclass
class ChainCheck:
    """Walk a journal's entries in order from ``start_seq`` (the checkpoint's sequence number,
    0 for none) whose hash is ``start_hash``; :meth:`add` each entry, then :meth:`finish`.

    ``problems`` lists every break found, first the first; each names the entry by its
    sequence number. After a break the walk goes on from the entry as recorded, so one
    edited entry is named once, not every entry after it.
    """

    start_seq: int = 0
    start_hash: str = GENESIS
    problems: list[str] = field(default_factory=list)
    last_seq: int = field(init=False)
    last_hash: str = field(init=False)
    entries: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.last_seq, self.last_hash = self.start_seq, self.start_hash

    def add(self, entry_id: str, fields: Mapping[str, str]) -> None:
        """Check the next entry (``entry_id`` its stream id, for the messages)."""
        self.entries += 1
        raw_seq = fields.get("seq", "")
        where = f"journal entry #{raw_seq} (stream id {entry_id})"
        if not raw_seq.isdigit():
            self.problems.append(f"{where} has no valid sequence number: inserted or altered")
            return
        seq, due = int(raw_seq), self.last_seq + 1
        due = numbered_after(fields, self.last_seq) + 1  # a restore's recorded jump, or none
        recorded = fields.get(HASH_FIELD, "")
        if seq != due:
            self.problems.append(self._out_of_sequence(where, seq, due))
        elif entry_hash(self.last_hash, fields) != recorded:
            self.problems.append(
                f"{where} does not match its hash: it was altered, inserted, or the entry "
                f"before it (#{self.last_seq}) is not the one it was written after"
                if recorded
                else f"{where} carries no hash: it was not written by the journal"
            )
        if seq > self.last_seq:
            self.last_seq, self.last_hash = seq, recorded

    def _out_of_sequence(self, where: str, seq: int, due: int) -> str:
        if seq > due:
            missing = f"#{due}" if seq == due + 1 else f"#{due}..#{seq - 1}"
            return (
                f"journal entry {missing} is missing: the journal goes from #{self.last_seq} "
                f"to {where} (deleted, or trimmed without a checkpoint)"
            )
        return (
            f"{where} comes after #{self.last_seq}, where #{due} was due: inserted or "
            "moved out of order"
        )

    def finish(self, end_seq: int) -> None:
        """The journal should end at ``end_seq`` (the sequence counter, or the export's)."""
        if self.last_seq < end_seq:
            due = self.last_seq + 1
            missing = f"#{due}" if end_seq == due else f"#{due}..#{end_seq}"
            self.problems.append(
                f"journal entry {missing} is missing: the journal ends at #{self.last_seq} "
                f"but the sequence counter is at #{end_seq}"
            )

    @property
    def ok(self) -> bool:
        """True when no entry broke the chain."""
        return not self.problems
