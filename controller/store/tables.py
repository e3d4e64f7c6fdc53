"""The tables of a Redis: registering one, its cached definition, its rounds' bookkeeping.

A table's definition is cached here with its revision (:attr:`Tables.revisions`): an
operator's update (in maintenance) raises the revision in Redis, and a lockout made with the
cached one is refused and forgets it, so the retry reads it again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from controller.domain.config import MUST_HIT_BY, TableConfig
from controller.store import codec, keys
from controller.store.catalog import Catalog
from controller.store.gateway import ScriptGateway
from jackpot.errors import CorruptRecord, InvalidConfiguration, NotFound
from jackpot.kinds import AwardKind

MAX_REBASE_ROUND_ID = 2**52
"""The highest round an operator may rebase a table to (far below the 2**53 the scripts
compare exactly, so a rebased table always has room to play)."""


class Tables:
    """Registered tables and their cached definitions (``store.tables``)."""

    def __init__(self, gateway: ScriptGateway, catalog: Catalog) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._decoded = gateway.decoded
        self._catalog = catalog
        self._tables: dict[str, TableConfig] = {}
        self.revisions: dict[str, int] = {}
        """The revision of each cached definition (read, never written, by the rounds)."""

    async def register_table(self, table: TableConfig, *, actor: str) -> TableConfig:
        """Register a table in its meters' link group; idempotent for the same definition."""
        for meter_id in table.meter_ids:
            meter_group = await self._catalog.meter_link_group(meter_id)
            if meter_group != table.link_group_id:
                raise InvalidConfiguration(
                    f"meter {meter_id} is in link group {meter_group}, not "
                    f"{table.link_group_id}; all of a table's meters are in its link group"
                )
        group = keys.LinkGroupKeys(table.link_group_id)
        await self.check_percent_meters(group, table)
        key = group.table(table.table_id)
        stored, rev = await self._read(self._client.hmget(key, "config", "rev"))
        if stored is not None and self.stored_table(table.table_id, key, stored) == table:
            # The same definition (read through the codec: of any schema version it reads).
            self._remember_table(table, self.table_int(table.table_id, key, "rev", rev))
            return table
        async with self._catalog.claim(
            keys.TABLE_INDEX, table.table_id, table.link_group_id, "table"
        ):
            await self._run(
                self._scripts.register_table,
                [
                    group.table(table.table_id),
                    group.tables,
                    group.journal,
                    group.seq,
                    *(group.meter(meter_id) for meter_id in table.meter_ids),
                ],
                [
                    table.table_id,
                    codec.table_json(table),
                    json.dumps(table.meter_ids),
                    table.game,
                    actor,
                ],
            )
        self._remember_table(table, 0)
        return table

    async def check_percent_meters(self, group: keys.LinkGroupKeys, table: TableConfig) -> None:
        """Refuse a "P% of meter" line paying from a must-hit-by meter (it pays its hit only)."""
        for offer in table.wagers:
            for line, rule in offer.paytable.lines:
                if rule.kind is not AwardKind.PERCENT_OF_METER:
                    continue
                meter_id = offer.meter_of(rule)
                kind = await self._read(self._client.hget(group.meter(meter_id), "kind"))
                if kind == MUST_HIT_BY:
                    raise InvalidConfiguration(
                        f"table {table.table_id} {offer.wager} wager: {line} pays {rule.text} "
                        f"from must-hit-by meter {meter_id}, which pays only its mystery hit"
                    )

    def _remember_table(self, table: TableConfig, rev: int) -> None:
        self._tables[table.table_id] = table
        self.revisions[table.table_id] = rev

    def forget_table(self, table_id: str) -> None:
        """Drop a cached definition: the next :meth:`get_table` reads it from Redis."""
        self._tables.pop(table_id, None)
        self.revisions.pop(table_id, None)

    async def get_table(self, table_id: str) -> TableConfig:
        """A registered table; :class:`NotFound` (naming a retired one). Cached with its
        revision: an operator's update (in maintenance) raises the revision in Redis, and the
        next lockout with the cached one is refused and forgets it (so do a settlement and a
        void of a round locked out with another revision, see
        :mod:`controller.store.rounds`)."""
        cached = self._tables.get(table_id)
        if cached is not None:
            return cached
        link_group_id = await self._read(self._client.hget(keys.TABLE_INDEX, table_id))
        if link_group_id is None:
            raise NotFound(f"table {table_id} is not registered")
        group = keys.LinkGroupKeys(link_group_id)
        key = group.table(table_id)
        raw, rev, retired = await self._read(
            self._client.hmget(key, "config", "rev", "retired_seq")
        )
        if raw is None:
            if retired is not None:
                raise NotFound(f"table {table_id} was retired (journal #{retired})")
            raise NotFound(f"table {table_id} is not registered")
        table = self.stored_table(table_id, key, raw)
        self._remember_table(table, self.table_int(table_id, key, "rev", rev))
        return table

    def stored_table(self, table_id: str, key: str, raw: str) -> TableConfig:
        """A table's stored definition (a corrupt one reported and raised)."""
        return self._decoded(lambda: codec.table_config(raw, key=key, name=table_id))

    def table_int(self, table_id: str, key: str, field: str, value: str | None) -> int:
        """An integer field of a table's record (0: missing; a corrupt one reported and
        raised)."""

        def decode() -> int:
            with codec.reading("table", table_id, key):
                return codec.integer(field, value) if value is not None else 0

        return self._decoded(decode)

    async def last_round(self, table: TableConfig) -> int:
        """The table's last locked-out round id (0: none yet)."""
        group = keys.LinkGroupKeys(table.link_group_id)
        key = group.table(table.table_id)
        last = await self._read(self._client.hget(key, "last_round"))
        return self.table_int(table.table_id, key, "last_round", last)

    async def rebase_table_rounds(
        self, table: TableConfig, last_round_id: int, *, reason: str, actor: str
    ) -> tuple[int, int]:
        """Move the table's last round forward to ``last_round_id`` (journaled with ``actor``
        and ``reason``); the same rebase again changes nothing. Returns (before, after)."""
        group = keys.LinkGroupKeys(table.link_group_id)
        before, after, _ = await self._run(
            self._scripts.rebase_table_rounds,
            [group.table(table.table_id), group.journal, group.seq],
            [table.table_id, last_round_id, reason, actor, MAX_REBASE_ROUND_ID],
        )
        return int(before), int(after)

    async def list_tables(
        self, link_group_id: str = "", *, skipped: list[CorruptRecord] | None = None
    ) -> list[TableConfig]:
        """The tables of one link group, or of all of them, ordered by id; a corrupt one is
        left out, reported and added to ``skipped``."""
        ids: list[str] = []
        for group_id in await self._catalog.group_ids(link_group_id):
            ids += await self._read(self._client.smembers(keys.LinkGroupKeys(group_id).tables))
        found: list[TableConfig] = []
        for table_id in sorted(ids):
            try:
                found.append(await self.get_table(table_id))
            except CorruptRecord as error:  # reported by get_table
                if skipped is not None:
                    skipped.append(error)
        return found

    async def record_tables_heard(self, heard: Mapping[str, int]) -> None:
        """Record when tables' agents were last heard from (``{table_id: ms}``); a time
        never goes back (another replica may have heard a table later). Nothing is written
        to a Redis without the installation record (a controller creates nothing there)."""
        if not heard or not await self._read(self._client.exists(keys.INSTALLATION)):
            return
        known = await self._read(self._client.hmget(keys.TABLE_SEEN, list(heard)))
        later: dict[Any, Any] = {
            table_id: at_ms
            for (table_id, at_ms), old in zip(heard.items(), known, strict=True)
            if not (old and str(old).isdigit() and int(old) >= at_ms)
        }
        if later:
            await self._read(self._client.hset(keys.TABLE_SEEN, mapping=later))

    async def tables_heard(self, table_ids: Sequence[str]) -> dict[str, int]:
        """When each of ``table_ids``' agents was last heard from (ms); absent: never, or a
        value that does not read (it is no jackpot state: ignored, overwritten at the next
        call)."""
        if not table_ids:
            return {}
        found = await self._read(self._client.hmget(keys.TABLE_SEEN, list(table_ids)))
        return {
            table_id: int(value)
            for table_id, value in zip(table_ids, found, strict=True)
            if value is not None and str(value).isdigit() and len(str(value)) < 16
        }

    async def last_rounds(
        self,
        link_group_id: str,
        table_ids: Sequence[str],
        *,
        skipped: list[CorruptRecord] | None = None,
    ) -> dict[str, tuple[int, int]]:
        """Each of ``table_ids``' latest round locked out: ``{table_id: (round_id,
        locked_out_at_ms)}`` (Redis's clock, written by the lockout script beside the round
        id); a table that has locked out no round since it was registered is absent, and so
        is one whose fields do not read (reported, added to ``skipped``). One pipelined read
        of the tables' own records (one slot: the link group's)."""
        group = keys.LinkGroupKeys(link_group_id)
        async with self._client.pipeline(transaction=False) as pipe:
            for table_id in table_ids:
                pipe.hmget(group.table(table_id), "last_round", "last_round_ms")
            rows = await self._read(pipe.execute())
        last: dict[str, tuple[int, int]] = {}
        for table_id, (round_id, at_ms) in zip(table_ids, rows, strict=True):
            if round_id or at_ms:
                try:
                    key = group.table(table_id)
                    read = (
                        self.table_int(table_id, key, "last_round", round_id),
                        self.table_int(table_id, key, "last_round_ms", at_ms),
                    )
                    if all(read):
                        last[table_id] = read
                except CorruptRecord as error:  # reported
                    if skipped is not None:
                        skipped.append(error)
        return last
