"""The store steps of staged table changes (docs/staged-changes.md): a table's new definition
staged for the next hit (or reset) of a meter it feeds, applied by the step that pays that hit
(``scripts/_staged_tables.lua``, called from ``settle.lua``), cancelled before it.

Each write is one script over one link group's keys (``stage_table_change.lua``,
``cancel_table_change.lua``), validating everything before its first write and journaling
who (a certificate identity, with its fingerprint) and why. A refused step changed nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from controller.domain.config import TableConfig
from controller.domain.staged_tables import AT, StagedTableChange
from controller.store import codec, keys
from controller.store.scripts import script_source
from jackpot.errors import FailedPrecondition, NotFound

if TYPE_CHECKING:
    from controller.store.redis_store import RedisStore


def staged_table_change(raw: str | None, seq: str | None) -> StagedTableChange | None:
    """The record stored in a table's ``staged_change`` (None: none waits); ValueError when it
    does not read."""
    if raw is None:
        return None
    record = json.loads(raw)
    if not isinstance(record, dict) or record.get("at") not in AT:
        raise ValueError("a staged table change is not a record")
    return StagedTableChange(
        at=str(record["at"]),
        staged_seq=int(seq or 0),
        meter_id=str(record["meter"]),
        table=codec.table_config(str(record["config"])),
        by=str(record.get("by", "")),
        reason=str(record.get("reason", "")),
    )


class StagedTables:
    """The staged table change steps of one :class:`RedisStore`."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._stage = store.client.register_script(script_source("stage_table_change"))
        self._cancel = store.client.register_script(script_source("cancel_table_change"))

    async def staged(self, table: TableConfig) -> tuple[TableConfig, StagedTableChange | None]:
        """``table``'s definition as Redis holds it now (a hit may have applied a staged
        change since this process cached it) and the change staged for it (None: none)."""
        key = keys.LinkGroupKeys(table.link_group_id).table(table.table_id)
        raw_config, raw, seq = await self._store._read(
            self._store.client.hmget(key, "config", "staged_change", "staged_seq")
        )
        try:
            current = codec.table_config(raw_config) if raw_config is not None else table
            return current, staged_table_change(raw, seq)
        except (ValueError, KeyError, TypeError) as error:
            raise FailedPrecondition(
                f"the change staged for table {table.table_id} does not read: {error}"
            ) from None

    async def stage(
        self,
        old: TableConfig,
        new: TableConfig,
        *,
        meter_id: str,
        at: str,
        actor: str,
        actor_cert: str,
        reason: str,
    ) -> tuple[bool, int]:
        """Stage ``new`` (validated by the caller as an immediate update's, against ``old``,
        the definition it read) for the next hit or reset of ``meter_id``, a meter ``old``
        feeds; answers (True when staged now, False for a repeat) and the entry's seq."""
        group = keys.LinkGroupKeys(old.link_group_id)
        key = group.table(old.table_id)
        stored = await self._store._read(self._store.client.hget(key, "config"))
        if stored is None:
            raise NotFound(f"table {old.table_id} is not registered")
        if codec.table_config(stored) != old:
            raise FailedPrecondition(
                f"table {old.table_id} was changed by someone else meanwhile; look at it "
                "again (jackpotctl tables list) and repeat the change"
            )
        answer, seq = await self._store._run(
            self._stage,
            [
                key,
                group.meter(meter_id),
                group.journal,
                group.seq,
                *(group.meter(m) for m in new.meter_ids),
            ],
            [
                old.table_id,
                codec.table_json(new),
                stored,
                json.dumps(new.meter_ids),
                new.game,
                meter_id,
                at,
                actor,
                actor_cert,
                reason,
            ],
        )
        return answer == "staged", int(seq)

    async def cancel(
        self,
        table: TableConfig,
        *,
        actor: str,
        actor_cert: str,
        reason: str,
        staged_seq: int = 0,
    ) -> tuple[bool, int]:
        """Cancel the table's staged change (``staged_seq``: the one the caller saw, 0: any);
        answers (True when cancelled now, False for a repeat) and the staging entry's seq."""
        group = keys.LinkGroupKeys(table.link_group_id)
        key = group.table(table.table_id)
        raw = await self._store._read(self._store.client.hget(key, "staged_change"))
        meter_id = ""
        if raw is not None:
            try:
                meter_id = str(json.loads(raw)["meter"])
            except (ValueError, KeyError, TypeError):
                meter_id = ""
        answer, seq = await self._store._run(
            self._cancel,
            [key, group.meter(meter_id), group.journal, group.seq],
            [
                table.table_id,
                actor,
                actor_cert,
                reason,
                str(staged_seq) if staged_seq else "",
                meter_id,
            ],
        )
        return answer == "cancelled", int(seq or 0)
