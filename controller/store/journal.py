"""A link group's journal in Redis: its entries, its position, its checkpoint and its trim.

Reads walk the journal stream in batches; an entry that does not read is
:class:`CorruptRecord` (or, for the audit, yielded with its problem). The writes here (the
export mark, a trim into a signed checkpoint, a key handover, a gaming day's statement) are
one script each.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from controller.domain.records import Checkpoint, JournalEntry, LinkGroupSnapshot
from controller.store import codec, keys
from controller.store.gateway import ScriptGateway
from jackpot.errors import CorruptRecord, InvalidArgument, StoreUnavailable


class Journal:
    """The journals of link groups (``store.journal``)."""

    def __init__(self, gateway: ScriptGateway) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._reported = gateway.reported

    async def audit_snapshot(self, link_group_id: str, attempts: int = 5) -> LinkGroupSnapshot:
        """One consistent instant of a link group: journal position, meters, pending jackpots.

        Read by one read-only script; retried if a meter was created between listing the
        meters and reading them.
        """
        group = keys.LinkGroupKeys(link_group_id)
        for _ in range(attempts):
            ids = sorted(await self._read(self._client.smembers(group.meters)))
            raw = await self._run(
                self._scripts.audit_snapshot,
                [
                    group.seq,
                    group.meters,
                    group.pending,
                    group.jackpots,
                    group.checkpoint,
                    *(group.meter(meter_id) for meter_id in ids),
                    group.journal,
                ],
                ids,
                confirm=False,  # read-only: nothing to wait for
            )
            snapshot = codec.link_group_snapshot(
                raw, {meter_id: group.meter(meter_id) for meter_id in ids}, group.jackpots
            )
            if snapshot.meters_unchanged:
                return snapshot
        raise StoreUnavailable(f"link group {link_group_id} kept changing; audit it again")

    async def entries(
        self,
        link_group_id: str,
        batch: int = 1000,
        *,
        start: str = "-",
        end: str = "+",
        unreadable: bool = False,
    ) -> AsyncIterator[JournalEntry]:
        """Every journal entry of a link group, oldest first (or those with stream ids from
        ``start`` to ``end``, both inclusive). An entry whose sequence number or deltas do
        not read raises :class:`CorruptRecord`; with ``unreadable`` (the audit) it is yielded
        with zero deltas and its ``problem``, and the walk goes on."""
        stream = keys.LinkGroupKeys(link_group_id).journal
        while True:
            rows = await self._read(self._client.xrange(stream, start, end, count=batch))
            for entry_id, fields in rows:
                try:
                    entry = JournalEntry(
                        entry_id=entry_id,
                        seq=codec.integer("seq", fields.get("seq")),
                        type=fields.get("type", ""),
                        meter_id=fields.get("meter", ""),
                        delta_meter_microcents=codec.integer("d_meter", fields.get("d_meter")),
                        delta_reserve_microcents=codec.integer(
                            "d_reserve", fields.get("d_reserve")
                        ),
                        fields=dict(fields),
                    )
                except ValueError as error:
                    corrupt = CorruptRecord("journal entry", entry_id, stream, str(error))
                    if not unreadable:
                        raise self._reported(corrupt) from None
                    self._reported(corrupt)
                    entry = JournalEntry(
                        entry_id,
                        0,
                        fields.get("type", ""),
                        fields.get("meter", ""),
                        0,
                        0,
                        dict(fields),
                        problem=str(corrupt),
                    )
                yield entry
            if len(rows) < batch:
                return
            start = "(" + rows[-1][0]

    async def window(
        self, link_group_id: str, from_ms: int, to_ms: int, limit: int, batch: int = 1000
    ) -> list[JournalEntry]:
        """The journal entries Redis wrote from ``from_ms`` (inclusive) to ``to_ms``
        (exclusive; 0: up to now), milliseconds since the Unix epoch, oldest first. A window
        of more than ``limit`` entries is refused (:class:`InvalidArgument`: narrow it), so a
        report never holds an unbounded journal in memory."""
        if from_ms < 0 or to_ms < 0 or (to_ms and to_ms <= from_ms):
            raise InvalidArgument(
                f"the window from {from_ms} to {to_ms} ms is empty or negative; --to must be "
                "after --from"
            )
        end = str(to_ms - 1) if to_ms else "+"
        entries: list[JournalEntry] = []
        async for entry in self.entries(link_group_id, batch, start=str(from_ms), end=end):
            if len(entries) == limit:
                raise InvalidArgument(
                    f"the journal of link group {link_group_id} holds more than {limit} entries "
                    "in that window; ask for a shorter one"
                )
            entries.append(entry)
        return entries

    async def checkpoint(self, link_group_id: str) -> Checkpoint:
        """The link group's checkpoint: where its journal was trimmed and exported."""
        group = keys.LinkGroupKeys(link_group_id)
        return codec.checkpoint(await self._read(self._client.hgetall(group.checkpoint)))

    async def counters(self, link_group_id: str) -> dict[str, int]:
        """The link group's event counters (see :attr:`keys.LinkGroupKeys.counters`)."""
        group = keys.LinkGroupKeys(link_group_id)
        fields = await self._read(self._client.hgetall(group.counters))
        return {name: int(value) for name, value in fields.items()}

    async def checkpoint_seq(self, link_group_id: str) -> int:
        """The last journal sequence number trimmed (0: none)."""
        return (await self.checkpoint(link_group_id)).seq

    async def length(self, link_group_id: str) -> int:
        """How many entries the journal stream holds now."""
        return int(await self._read(self._client.xlen(keys.LinkGroupKeys(link_group_id).journal)))

    async def seq(self, link_group_id: str) -> int:
        """The link group's last journal sequence number (0: none)."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(await self._read(self._client.get(group.seq)) or 0)

    async def mark_exported(self, link_group_id: str, seq: int) -> int:
        """Record that the journal up to ``seq`` is exported; answer the exported seq."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.mark_exported,
                [group.checkpoint, group.seq],
                [seq, int(time.time() * 1000)],
            )
        )

    async def close_day(self, link_group_id: str, day: str, fields: Sequence[Any]) -> int:
        """Journal a gaming day's statement once (``close_day.lua``: ``fields`` are its
        ARGV from the digest on); answer its ``day_closed`` entry's seq. The same digest
        again answers the same seq; another digest for a closed day is refused."""
        group = keys.LinkGroupKeys(link_group_id)
        reply = await self._run(
            self._scripts.close_day,
            [group.days_closed, group.journal, group.seq],
            [day, *fields],
        )
        return int(reply)

    async def days_closed(self, link_group_id: str) -> dict[str, tuple[int, str]]:
        """The link group's closed gaming days: day -> (seq of its entry, digest)."""
        group = keys.LinkGroupKeys(link_group_id)
        held = await self._read(self._client.hgetall(group.days_closed))
        closed = {}
        for day, value in held.items():
            seq, _, digest = str(value).partition(" ")
            closed[str(day)] = (int(seq), digest)
        return closed

    async def trim(
        self, link_group_id: str, before_ms: int, previous_seq: int, count: int, new: Checkpoint
    ) -> int:
        """Trim the oldest ``count`` entries (each exported and written before ``before_ms``,
        ms since the epoch) into the signed checkpoint ``new``, atomically, if the checkpoint
        is still at ``previous_seq`` and the entries lead exactly to ``new`` (else
        :class:`FailedPrecondition`, nothing trimmed); answer how many were trimmed."""
        group = keys.LinkGroupKeys(link_group_id)
        sums = {f"value:{meter}": str(sum_) for meter, sum_ in new.value_microcents.items()}
        sums |= {f"reserve:{meter}": str(sum_) for meter, sum_ in new.reserve_microcents.items()}
        return int(
            await self._run(
                self._scripts.trim_journal,
                [group.journal, group.checkpoint, group.epoch],
                [
                    before_ms,
                    count,
                    previous_seq,
                    new.seq,
                    new.hash,
                    json.dumps(sums),
                    new.signature,
                    new.signed_by,
                    new.epoch,
                    new.signed_exported_seq,
                    new.key_handovers,
                    new.signed_handovers,
                    new.signed_as,
                ],
            )
        )

    async def rotate_checkpoint_key(
        self,
        link_group_id: str,
        previous: Checkpoint,
        new: Checkpoint,
        *,
        handover: str,
        entry_seq: int,
        from_key: str,
        actor: str,
    ) -> int:
        """Apply a key handover (docs/journal.md "Key handling"): the journal entry
        ``checkpoint_key_rotated`` #``entry_seq`` carrying ``handover`` (JSON, signed by the
        old key ``from_key``) and the checkpoint ``new`` (its handovers, and at a trimmed
        position its new key's signature), atomically, if the checkpoint is still
        ``previous`` and the journal's next entry is #``entry_seq`` (else
        :class:`FailedPrecondition`, nothing written); answer the entry's sequence number."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.rotate_checkpoint_key,
                [group.journal, group.seq, group.checkpoint, group.epoch],
                [
                    previous.seq,
                    previous.key_handovers,
                    new.epoch,
                    entry_seq,
                    new.key_handovers,
                    handover,
                    from_key,
                    new.signed_by,
                    actor,
                    new.signature if new.seq else "",
                    new.signed_exported_seq,
                    new.signed_as,
                    new.signed_handovers,
                ],
            )
        )
