"""The store steps of meter and table controls: maintenance, meter updates and retirement,
two-person adjustments, table updates and retirement.

Each write is one script (``scripts/*.lua`` with ``_controls.lua``) over one link group's
keys, validating everything before its first write and journaling who (a certificate
identity, with the certificate's fingerprint) and why. A refused step changed nothing.
Amounts are cents, meter money microcents.
"""

from __future__ import annotations

import hashlib
import json

from controller.domain.config import MeterConfig, TableConfig
from controller.domain.mystery import new_seed
from controller.domain.records import Adjustment, MeterState, RetiredMeter
from controller.store import codec, keys
from controller.store.catalog import Catalog
from controller.store.gateway import ScriptGateway
from controller.store.tables import Tables
from jackpot.errors import FailedPrecondition, NotFound, StoreUnavailable

TABLE_SET_ATTEMPTS = 5
"""How often a retirement reads the group's tables again when one was added meanwhile."""


class Controls:
    """The control steps of the store (``store.controls``)."""

    def __init__(self, gateway: ScriptGateway, catalog: Catalog, tables: Tables) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._decoded = gateway.decoded
        self._each = gateway.each
        self._catalog = catalog
        self._tables = tables

    # ------------------------------------------------------------------ maintenance

    async def enter_maintenance(
        self, link_group_id: str, *, actor: str, actor_cert: str, reason: str
    ) -> int:
        """Take the link group into maintenance; answer the journal seq of the entry."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.enter_maintenance,
                [group.info, group.maintenance, group.journal, group.seq],
                [link_group_id, actor, actor_cert, reason],
            )
        )

    async def leave_maintenance(
        self, link_group_id: str, *, actor: str, actor_cert: str, reason: str
    ) -> int:
        """End the link group's maintenance; answer the journal seq of the entry."""
        await self._catalog.get_link_group(link_group_id)  # NotFound names an unknown group
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.leave_maintenance,
                [group.maintenance, group.journal, group.seq],
                [link_group_id, actor, actor_cert, reason],
            )
        )

    # ------------------------------------------------------------------ meters

    async def update_meter(
        self, old: MeterState, new: MeterConfig, *, actor: str, actor_cert: str, reason: str
    ) -> bool:
        """Give the meter ``new``'s parameters (validated by the caller against ``old``, the
        state it read); True when they changed, False when the meter already had them."""
        group = keys.LinkGroupKeys(old.link_group_id)
        before = (old.reset_cents, old.rate_ppm, old.reserve_rate_ppm, old.ceiling_cents)
        after = (new.reset_cents, new.rate_ppm, new.reserve_rate_ppm, new.ceiling_cents)
        answer = await self._run(
            self._scripts.update_meter,
            [
                group.meter(old.meter_id),
                group.maintenance,
                group.journal,
                group.seq,
                group.mystery(old.meter_id),
            ],
            [
                old.meter_id,
                old.link_group_id,
                *before,
                *after,
                actor,
                actor_cert,
                reason,
                new_seed(),
            ],
        )
        return bool(answer == "updated")

    async def stage_meter_change(
        self,
        old: MeterState,
        new: MeterConfig,
        *,
        at: str,
        actor: str,
        actor_cert: str,
        reason: str,
    ) -> tuple[bool, int]:
        """Stage ``new``'s parameters (validated by the caller as an immediate change's,
        against ``old``, the state it read) for the meter's next hit (``at="hit"``) or next
        reset (``"reset"``), applied by the step that pays it (docs/staged-changes.md);
        answers (True when staged now, False for a repeat of the same request) and the
        staging entry's journal seq."""
        group = keys.LinkGroupKeys(old.link_group_id)
        before = (old.reset_cents, old.rate_ppm, old.reserve_rate_ppm, old.ceiling_cents)
        after = (new.reset_cents, new.rate_ppm, new.reserve_rate_ppm, new.ceiling_cents)
        answer, seq = await self._run(
            self._scripts.stage_meter_change,
            [group.meter(old.meter_id), group.journal, group.seq],
            [old.meter_id, *before, *after, at, actor, actor_cert, reason],
        )
        return answer == "staged", int(seq)

    async def cancel_meter_change(
        self, meter_id: str, *, actor: str, actor_cert: str, reason: str, staged_seq: int = 0
    ) -> tuple[bool, int]:
        """Cancel the meter's staged change (``staged_seq``: the one the caller saw, 0: any);
        answers (True when cancelled now, False for a repeat) and the staging entry's seq."""
        link_group_id = await self._catalog.meter_link_group(meter_id)
        group = keys.LinkGroupKeys(link_group_id)
        answer, seq = await self._run(
            self._scripts.cancel_meter_change,
            [group.meter(meter_id), group.journal, group.seq],
            [meter_id, actor, actor_cert, reason, str(staged_seq) if staged_seq else ""],
        )
        return answer == "cancelled", int(seq or 0)

    async def wind_down_meter(
        self, meter_id: str, *, actor: str, actor_cert: str, reason: str
    ) -> tuple[bool, int]:
        """Wind the meter down: no contributions from now on, it stays until won or is
        retired into another meter (``wind_down_meter.lua``); answers (True when wound down
        now, False for a repeat) and the ``meter_wound_down`` entry's seq."""
        link_group_id = await self._catalog.meter_link_group(meter_id)
        group = keys.LinkGroupKeys(link_group_id)
        answer, seq = await self._run(
            self._scripts.wind_down_meter,
            [group.meter(meter_id), group.maintenance, group.journal, group.seq],
            [meter_id, link_group_id, actor, actor_cert, reason],
        )
        return answer == "wound_down", int(seq)

    async def retire_meter(
        self,
        meter_id: str,
        to_meter_id: str,
        *,
        actor: str,
        actor_cert: str,
        reason: str,
        approval: str,
    ) -> RetiredMeter:
        """Retire ``meter_id``, moving its money to ``to_meter_id`` of the same link group
        (``retire_meter.lua`` says how); refused across link groups (not one atomic step)."""
        link_group_id = await self._catalog.meter_link_group(meter_id)
        target_group = await self._catalog.meter_link_group(to_meter_id)
        if meter_id == to_meter_id:
            raise FailedPrecondition(f"meter {meter_id} cannot pass its money to itself")
        if target_group != link_group_id:
            raise FailedPrecondition(
                f"meter {to_meter_id} is in link group {target_group}, meter {meter_id} in "
                f"{link_group_id}: a retired meter's money moves within its link group only "
                "(two groups' keys are not one atomic step); retire it to a meter of "
                f"{link_group_id}"
            )
        group = keys.LinkGroupKeys(link_group_id)
        for _ in range(TABLE_SET_ATTEMPTS):
            table_ids = sorted(await self._read(self._client.smembers(group.tables)))
            try:
                raw = await self._run(
                    self._scripts.retire_meter,
                    [
                        group.meter(meter_id),
                        group.meter(to_meter_id),
                        group.meters,
                        group.maintenance,
                        group.journal,
                        group.seq,
                        group.retired_meters,
                        group.pending_adjustments,
                        group.adjustments,
                        group.tables,
                        *(group.table(table_id) for table_id in table_ids),
                    ],
                    [
                        meter_id,
                        to_meter_id,
                        link_group_id,
                        actor,
                        actor_cert,
                        reason,
                        approval,
                        json.dumps(table_ids),
                    ],
                )
            except StoreUnavailable as error:
                if "changed meanwhile" in str(error):
                    continue
                raise
            return codec.retired_meter(raw)
        raise StoreUnavailable(f"the tables of link group {link_group_id} kept changing; retry")

    async def retired_meter_ids(self, link_group_id: str) -> set[str]:
        """The ids of the link group's retired meters."""
        group = keys.LinkGroupKeys(link_group_id)
        return set(await self._read(self._client.hkeys(group.retired_meters)))

    # ------------------------------------------------------------------ adjustments

    async def request_adjustment(
        self,
        meter_id: str,
        amount_cents: int,
        *,
        reason: str,
        reference: str,
        actor: str,
        actor_cert: str,
        request_id: str = "",
    ) -> Adjustment:
        """Request that ``amount_cents`` (signed) be added to the meter: nothing moves until
        another operator approves it. Idempotent by ``request_id`` for ever (requested,
        approved or rejected): the same id with the same request answers the original
        adjustment, with another request :class:`IdempotencyConflict`. Without one, the id is
        derived from the requester and the content (:func:`adjustment_request_id`)."""
        link_group_id = await self._catalog.meter_link_group(meter_id)
        group = keys.LinkGroupKeys(link_group_id)
        request_id = request_id or adjustment_request_id(
            meter_id, amount_cents, reason=reason, reference=reference, actor=actor
        )
        raw = await self._run(
            self._scripts.request_adjustment,
            [
                group.meter(meter_id),
                group.adjustments,
                group.pending_adjustments,
                group.journal,
                group.seq,
                group.adjustment_requests,
            ],
            [
                meter_id,
                link_group_id,
                amount_cents,
                reason,
                reference,
                actor,
                actor_cert,
                request_id,
            ],
        )
        return codec.adjustment(raw)

    async def review_adjustment(
        self, adjustment_id: str, *, approve: bool, actor: str, actor_cert: str, note: str
    ) -> Adjustment:
        """Approve (applied at once) or reject a requested adjustment as ``actor``; an
        approval by its requester is refused."""
        requested = await self.get_adjustment(adjustment_id)
        group = keys.LinkGroupKeys(requested.link_group_id)
        raw = await self._run(
            self._scripts.review_adjustment,
            [
                group.adjustments,
                group.pending_adjustments,
                group.journal,
                group.seq,
                group.meter(requested.meter_id),
            ],
            [adjustment_id, "approved" if approve else "rejected", actor, actor_cert, note],
        )
        return codec.adjustment(raw)

    async def get_adjustment(self, adjustment_id: str) -> Adjustment:
        """One adjustment; :class:`NotFound` names an unknown id."""
        link_group_id, _, seq = adjustment_id.rpartition(":")
        if not link_group_id or not seq.isdigit():
            raise NotFound(f"adjustment {adjustment_id} does not exist (ids look like 'floor:17')")
        group = keys.LinkGroupKeys(link_group_id)
        raw = await self._read(self._client.hget(group.adjustments, adjustment_id))
        if raw is None:
            raise NotFound(f"adjustment {adjustment_id} does not exist")
        return self._decoded(
            lambda: codec.adjustment(raw, key=group.adjustments, name=adjustment_id)
        )

    async def list_adjustments(self, link_group_id: str = "", status: str = "") -> list[Adjustment]:
        """The adjustments of one link group or all, in journal order per group; ``status``
        filters (empty: any); a corrupt one is left out and reported."""
        found: list[Adjustment] = []
        for group_id in await self._catalog.group_ids(link_group_id):
            group = keys.LinkGroupKeys(group_id)
            stored = await self._read(self._client.hgetall(group.adjustments))
            for record in self._each(
                lambda item: codec.adjustment(item[2], key=item[1], name=item[0]),
                ((name, group.adjustments, raw) for name, raw in sorted(stored.items())),
                None,
            ):
                if not status or record.status == status:
                    found.append(record)
        return sorted(found, key=lambda a: (a.link_group_id, a.request_seq))

    # ------------------------------------------------------------------ tables

    async def update_table(
        self, table: TableConfig, *, actor: str, actor_cert: str, reason: str
    ) -> bool:
        """Give the registered table ``table``'s definition (same id, game and link group);
        True when it changed, False when it already had it."""
        group = keys.LinkGroupKeys(table.link_group_id)
        old = await self._read(self._client.hget(group.table(table.table_id), "config"))
        answer = await self._run(
            self._scripts.update_table,
            [
                group.table(table.table_id),
                group.maintenance,
                group.journal,
                group.seq,
                group.open_rounds,
                *(group.meter(meter_id) for meter_id in table.meter_ids),
            ],
            [
                table.table_id,
                codec.table_json(table),
                json.dumps(table.meter_ids),
                table.game,
                actor,
                actor_cert,
                reason,
                old or "",
                table.link_group_id,
            ],
        )
        self._tables.forget_table(table.table_id)
        return bool(answer == "updated")

    async def retired_table(self, table_id: str) -> TableConfig:
        """A retired table's last definition; :class:`NotFound` for a table never registered
        (or still registered: :meth:`Tables.get_table` answers that)."""
        link_group_id = await self._read(self._client.hget(keys.TABLE_INDEX, table_id))
        if link_group_id is None:
            raise NotFound(f"table {table_id} is not registered")
        group = keys.LinkGroupKeys(link_group_id)
        raw = await self._read(self._client.hget(group.table(table_id), "retired_config"))
        if raw is None:
            raise NotFound(f"table {table_id} is not registered")
        return codec.table_config(raw)

    async def retire_table(
        self, table: TableConfig, *, actor: str, actor_cert: str, reason: str
    ) -> int:
        """Retire the table (it leaves its link group); answer the journal seq."""
        group = keys.LinkGroupKeys(table.link_group_id)
        seq = await self._run(
            self._scripts.retire_table,
            [
                group.table(table.table_id),
                group.tables,
                group.maintenance,
                group.journal,
                group.seq,
                group.open_rounds,
            ],
            [table.table_id, actor, actor_cert, reason, table.link_group_id],
        )
        self._tables.forget_table(table.table_id)
        return int(seq)


def adjustment_request_id(
    meter_id: str, amount_cents: int, *, reason: str, reference: str, actor: str
) -> str:
    """The request id of an adjustment request that names none: ``content:<digest>`` of the
    requester and the request (a client's id cannot hold a ``:``, so the two never meet)."""
    content = json.dumps([meter_id, amount_cents, reason, reference, actor])
    return "content:" + hashlib.sha256(content.encode()).hexdigest()[:32]
