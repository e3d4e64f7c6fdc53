"""The journal's hash chain, recomputed: which entry of a journal is not the one written.

Every journal entry carries ``hash``, written by the script that wrote the entry, in the same
atomic step (``journal()`` in ``controller/store/scripts/_lib.lua``; docs/journal.md)::

    hash = SHA-256("jackpot-journal-v1" || ns(previous hash) || ns(name) || ns(value) || ...)

over the entry's fields but ``hash``, sorted by name in byte order, where ``ns(s)`` is the
netstring ``len(s) ":" s ","`` (lengths in bytes of UTF-8) and the hash is written as 64
lowercase hex digits. The first entry's previous hash is :data:`GENESIS`; after a trim the
chain goes on from the signed checkpoint's hash (:mod:`controller.checkpoint_signature`).
Every value is the decimal string Redis holds (amounts in microcents or cents), so the hash
is recomputed exactly from Redis or from an export.

:class:`ChainCheck` walks entries in order and names the first that breaks the chain or the
sequence (an entry edited, deleted, inserted or moved); the audit (online) and the export
check (offline) both use it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

GENESIS = "0" * 64
"""The previous hash of a journal's first entry."""

DOMAIN = b"jackpot-journal-v1"
"""What the hashed bytes start with (the encoding's version)."""

HASH_FIELD = "hash"


def _netstring(text: str) -> bytes:
    data = text.encode("utf-8")
    return b"%d:%s," % (len(data), data)


def canonical(previous: str, fields: Mapping[str, str]) -> bytes:
    """The bytes an entry's hash is taken of: ``fields`` (without ``hash``) chained to the
    ``previous`` entry's hash."""
    names = sorted((name for name in fields if name != HASH_FIELD), key=lambda n: n.encode())
    parts = [DOMAIN, _netstring(previous)]
    parts += [_netstring(name) + _netstring(fields[name]) for name in names]
    return b"".join(parts)


def entry_hash(previous: str, fields: Mapping[str, str]) -> str:
    """The hash an entry with ``fields`` written after ``previous`` carries (hex)."""
    return hashlib.sha256(canonical(previous, fields)).hexdigest()


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
