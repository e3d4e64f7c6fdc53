"""A link group's state as one export, and its restore into a Redis that lost it.

The export is one read-only script (``export_snapshot.lua``) at one instant; the restore
writes every key back, then the epoch record last (:meth:`Snapshots.restore_epoch`): until
then the group is not served. What the tables' outboxes hold beyond the export is
reconciled afterwards (:mod:`controller.store.reconciliation`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from controller.domain.mystery import new_seed as mystery_seed
from controller.store import codec, keys
from controller.store.catalog import Catalog
from controller.store.epochs import new_epoch_id
from controller.store.gateway import ScriptGateway
from jackpot.errors import AlreadyExists, NotFound, StoreUnavailable

SNAPSHOT_HASHES = (
    "info",
    "checkpoint",
    "counters",
    "jackpots",
    "irregularities",
    "maintenance",
    "adjustments",
    "retired_meters",
    "days_closed",
    "corrections",
)
"""The link group's hashes an export carries and a restore writes back whole: each is the
name of the snapshot's field and of the :class:`keys.LinkGroupKeys` property."""
SNAPSHOT_SETS = ("pending", "pending_adjustments")
"""The link group's sets an export carries (as lists) and a restore writes back whole."""


class Snapshots:
    """Export and restore of link groups (``store.snapshots``)."""

    def __init__(
        self,
        gateway: ScriptGateway,
        catalog: Catalog,
        *,
        round_retention_seconds: int,
    ) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._catalog = catalog
        self._round_retention_seconds = round_retention_seconds

    async def export_snapshot(self, link_group_id: str, attempts: int = 5) -> dict[str, Any]:
        """Everything of a link group a restore needs besides the journal, at one instant
        (one read-only script; read again if the meters, tables or open rounds changed
        meanwhile, even to sets of the same sizes), with the installation record: every
        per-group key that is state (``export_snapshot.lua`` names them), never a
        must-hit-by meter's secret. Amounts stay the decimal strings Redis holds."""
        group = keys.LinkGroupKeys(link_group_id)
        for _ in range(attempts):
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.smembers(group.meters)
                pipe.smembers(group.tables)
                pipe.smembers(group.open_rounds)
                pipe.hgetall(keys.TABLE_INDEX)
                meter_set, table_set, open_set, table_index = await self._read(pipe.execute())
            meter_ids, table_ids, open_ids = sorted(meter_set), sorted(table_set), sorted(open_set)
            other_table_ids = sorted(
                table_id
                for table_id, owner in table_index.items()
                if owner == link_group_id and table_id not in table_set
            )
            round_keys = [group.round(*split_round(name)) for name in open_ids]
            raw = await self._run(
                self._scripts.export_snapshot,
                [
                    group.info,
                    group.epoch,
                    group.seq,
                    group.checkpoint,
                    group.meters,
                    group.tables,
                    group.jackpots,
                    group.pending,
                    group.counters,
                    group.open_rounds,
                    group.irregularities,
                    group.maintenance,
                    group.adjustments,
                    group.pending_adjustments,
                    group.retired_meters,
                    group.days_closed,
                    group.corrections,
                    *(group.meter(meter_id) for meter_id in meter_ids),
                    *(group.table(table_id) for table_id in table_ids),
                    *round_keys,
                    *(group.table(table_id) for table_id in other_table_ids),
                ],
                [
                    json.dumps(meter_ids),
                    json.dumps(table_ids),
                    json.dumps(open_ids),
                    json.dumps(other_table_ids),
                ],
                confirm=False,
            )
            snapshot: dict[str, Any] = json.loads(raw)
            if snapshot.pop("same_sets"):
                if not snapshot["info"]:
                    raise NotFound(f"link group {link_group_id} does not exist")
                snapshot["link_group_id"] = link_group_id
                snapshot["installation"] = await self._catalog.installation() or {}
                for name in (
                    "meters",
                    "tables",
                    "epoch",
                    "rounds",
                    "retired_tables",
                    *SNAPSHOT_HASHES,
                ):
                    if not isinstance(snapshot.get(name), dict):  # cjson: {} is []
                        snapshot[name] = {}
                for name in SNAPSHOT_SETS:
                    if not isinstance(snapshot.get(name), list):
                        snapshot[name] = []
                return snapshot
        raise StoreUnavailable(f"link group {link_group_id} kept changing; export it again")

    async def restore_state(
        self, snapshot: dict[str, Any], entries: Sequence[dict[str, Any]], chunk: int = 500
    ) -> None:
        """Write a link group's exported state and journal entries (after its checkpoint)
        into a Redis that lost it - every key but the epoch record, which
        :meth:`restore_epoch` writes last (until then tables are refused: no epoch), and
        the must-hit-by meters' secrets, which it draws anew. An export written before a
        kind of state existed restores it empty. The caller checked the export
        (:mod:`controller.journal.restore`); this refuses, before writing anything, a group
        that has an epoch here and an export naming another link group's table or meter."""
        link_group_id = snapshot["link_group_id"]
        group = keys.LinkGroupKeys(link_group_id)
        retired_tables: dict[str, Any] = snapshot.get("retired_tables") or {}
        if await self._read(self._client.exists(group.epoch)):
            raise AlreadyExists(
                f"link group {link_group_id} has state in this Redis; restore only into a Redis "
                "that lost it"
            )
        await self._refuse_others_ids(snapshot)
        async with self._client.pipeline(transaction=True) as pipe:
            # Without an epoch record the group is not served: what is there is a restore
            # that was interrupted (the epoch record is written last), replaced whole.
            pipe.delete(
                group.journal,
                group.seq,
                group.meters,
                group.tables,
                group.open_rounds,
                group.adjustment_requests,
                *(getattr(group, name) for name in (*SNAPSHOT_HASHES, *SNAPSHOT_SETS)),
                *(group.meter(meter_id) for meter_id in snapshot["meters"]),
                *(group.mystery(meter_id) for meter_id in snapshot["meters"]),
                *(group.table(table_id) for table_id in (*snapshot["tables"], *retired_tables)),
            )
            _queue_group_records(pipe, group, snapshot)
            for meter_id, fields in snapshot["meters"].items():
                pipe.hset(group.meter(meter_id), mapping=fields)
                pipe.sadd(group.meters, meter_id)
            for table_id, fields in snapshot["tables"].items():
                pipe.hset(group.table(table_id), mapping=fields)
                pipe.sadd(group.tables, table_id)
            for table_id, fields in retired_tables.items():  # not in the tables set
                pipe.hset(group.table(table_id), mapping=fields)
            for name, fields in (snapshot.get("rounds") or {}).items():
                if fields:  # a round locked out and not finished: it can be settled or voided
                    round_key = group.round(*split_round(name))
                    pipe.hset(round_key, mapping=fields)
                    pipe.expire(round_key, self._round_retention_seconds)
                    pipe.sadd(group.open_rounds, name)
            await self._read(pipe.execute())
        for start in range(0, len(entries), chunk):
            async with self._client.pipeline(transaction=False) as pipe:
                for entry in entries[start : start + chunk]:
                    pipe.xadd(group.journal, entry["fields"], id=entry["id"])
                await self._read(pipe.execute())
        await self._read(self._client.set(group.seq, int(snapshot["seq"])))

    async def _refuse_others_ids(self, snapshot: dict[str, Any]) -> None:
        """Refuse (:class:`AlreadyExists`, nothing written) an export naming a table or meter
        (live or retired) that the global index gives to another link group: its restore
        would point that group's table or meter at the export's records."""
        link_group_id = snapshot["link_group_id"]
        for what, index, ids in (
            (
                "table",
                keys.TABLE_INDEX,
                [*snapshot["tables"], *(snapshot.get("retired_tables") or {})],
            ),
            (
                "meter",
                keys.METER_INDEX,
                [*snapshot["meters"], *(snapshot.get("retired_meters") or {})],
            ),
        ):
            if not ids:
                continue
            owners = await self._read(self._client.hmget(index, ids))
            for item_id, owner in zip(ids, owners, strict=True):
                if owner is not None and owner != link_group_id:
                    raise AlreadyExists(
                        f"the export of link group {link_group_id} names {what} {item_id}, "
                        f"which belongs to link group {owner}: a restore never takes a {what} "
                        "of another link group (nothing was written)"
                    )

    async def restore_epoch(
        self,
        snapshot: dict[str, Any],
        *,
        actor: str,
        reason: str,
        source: str,
        seq_above: int = 0,
    ) -> int:
        """Make the restored link group a state again (a new epoch, journaled; each
        must-hit-by meter starts a new cycle, ``restore_epoch.lua``), then put it back in
        the global indexes (its retired meters and tables too: their ids stay taken) and the
        installation record; answer the journal seq of the ``restored`` entry.

        ``seq_above``: the highest journal sequence number the lost state may have issued
        (the tables' outboxes, :func:`controller.actions.reconcile.seq_above`). Above the export's,
        the journal continues after it (the ``restored`` entry records the jump) and the
        group starts stopped until its tables are reconciled (docs/journal.md, "Reconciling
        tables after a restore")."""
        link_group_id = snapshot["link_group_id"]
        group = keys.LinkGroupKeys(link_group_id)
        epoch = snapshot["epoch"]
        mystery_ids = sorted(
            meter_id
            for meter_id, fields in snapshot["meters"].items()
            if fields.get("kind") == "must_hit_by"
        )
        seq = int(
            await self._run(
                self._scripts.restore_epoch,
                [
                    group.epoch,
                    group.journal,
                    group.seq,
                    *(
                        key
                        for meter_id in mystery_ids
                        for key in (group.meter(meter_id), group.mystery(meter_id))
                    ),
                ],
                [
                    link_group_id,
                    new_epoch_id(),
                    epoch.get("id", ""),
                    epoch.get("lineage", ""),
                    int(snapshot["seq"]),
                    actor,
                    reason,
                    source,
                    json.dumps(mystery_ids),
                    mystery_seed(),
                    max(int(snapshot["seq"]), seq_above),
                ],
            )
        )
        installation = snapshot.get("installation") or {}
        if installation.get("id"):
            if await self._read(self._client.hsetnx(keys.INSTALLATION, "id", installation["id"])):
                rest = {k: v for k, v in installation.items() if k != "id"}
                if rest:
                    await self._read(self._client.hset(keys.INSTALLATION, mapping=rest))
        else:
            await self._catalog.ensure_installation(actor)
        await self._read(self._client.sadd(keys.LINK_GROUPS, link_group_id))
        for meter_id in (*snapshot["meters"], *(snapshot.get("retired_meters") or {})):
            await self._read(self._client.hset(keys.METER_INDEX, meter_id, link_group_id))
        for table_id in (*snapshot["tables"], *(snapshot.get("retired_tables") or {})):
            await self._read(self._client.hset(keys.TABLE_INDEX, table_id, link_group_id))
        return seq


def _queue_group_records(pipe: Any, group: keys.LinkGroupKeys, snapshot: dict[str, Any]) -> None:
    """Queue the writes of the snapshot's group-wide hashes and sets (an empty one is no key)."""
    for name in SNAPSHOT_HASHES:
        if snapshot.get(name):
            pipe.hset(getattr(group, name), mapping=snapshot[name])
    for name in SNAPSHOT_SETS:
        if snapshot.get(name):
            pipe.sadd(getattr(group, name), *snapshot[name])
    # Each adjustment names its request id: the index of requests is rebuilt from them (a
    # retry of a request made before the loss is still that adjustment).
    requests = {
        record.request_id: record.adjustment_id
        for record in map(codec.adjustment, (snapshot.get("adjustments") or {}).values())
        if record.request_id
    }
    if requests:
        pipe.hset(group.adjustment_requests, mapping=requests)


def split_round(name: str) -> tuple[str, int]:
    """``<table>:<round>`` of the open-rounds set -> (table id, round id)."""
    table_id, _, round_id = name.rpartition(":")
    return table_id, int(round_id)
