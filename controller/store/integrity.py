"""What the audit asks of a link group's records: every one that does not read.

Each aggregate reports a corrupt record when a read meets it; this walks all of a link
group's records at once (through the aggregates that read them) so the audit names them all.
"""

from __future__ import annotations

from controller.store import codec, keys
from controller.store.catalog import Catalog
from controller.store.gateway import ScriptGateway
from controller.store.irregularities import Irregularities
from controller.store.jackpots import Jackpots
from controller.store.snapshots import split_round
from controller.store.tables import Tables
from jackpot.errors import CorruptRecord


class Integrity:
    """The audit's reads of corrupt records (``store.integrity``)."""

    def __init__(
        self,
        gateway: ScriptGateway,
        catalog: Catalog,
        tables: Tables,
        jackpots: Jackpots,
        irregularities: Irregularities,
    ) -> None:
        self._client = gateway.client
        self._read = gateway.read
        self._each = gateway.each
        self._reported = gateway.reported
        self._catalog = catalog
        self._tables = tables
        self._jackpots = jackpots
        self._irregularities = irregularities

    async def corrupt_records(self, link_group_id: str) -> list[CorruptRecord]:
        """Every record of a link group that does not read, each reported (the audit names
        them all): its meters, tables (read from Redis, not the cache), jackpots,
        irregularities, adjustments and the records of its open rounds."""
        group = keys.LinkGroupKeys(link_group_id)
        found: list[CorruptRecord] = []
        await self._catalog.list_meters(link_group_id, skipped=found)
        await self._jackpots.list_jackpots(link_group_id, skipped=found)
        await self._irregularities.list_irregularities(link_group_id, skipped=found)
        table_ids = sorted(await self._read(self._client.smembers(group.tables)))
        async with self._client.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                pipe.hmget(group.table(table_id), "config", "rev", "last_round", "last_round_ms")
            rows = await self._read(pipe.execute())
        for table_id, row in zip(table_ids, rows, strict=True):
            key = group.table(table_id)
            try:
                if row[0] is not None:
                    self._tables.stored_table(table_id, key, row[0])
                for field, value in zip(
                    ("rev", "last_round", "last_round_ms"), row[1:], strict=True
                ):
                    self._tables.table_int(table_id, key, field, value)
            except CorruptRecord as error:
                found.append(error)
        adjustments = await self._read(self._client.hgetall(group.adjustments))
        self._each(
            lambda item: codec.adjustment(item[2], key=item[1], name=item[0]),
            ((name, group.adjustments, raw) for name, raw in sorted(adjustments.items())),
            found,
        )
        open_rounds = sorted(await self._read(self._client.smembers(group.open_rounds)))
        for name in open_rounds:
            if not name.rpartition(":")[2].isdigit():
                continue  # not a round's name: the export and the audit's chain say more
            table_id, round_id = split_round(name)
            key = group.round(table_id, round_id)
            version, wagers = await self._read(self._client.hmget(key, "v", "wagers"))
            if wagers is None:
                continue
            where = f"{round_id} of table {table_id}"
            try:
                codec.locked_wagers(where, {"v": version, "wagers": wagers}, key)
            except CorruptRecord as error:
                found.append(self._reported(error))
        return found
