"""Reconciling a restored link group with its tables' outboxes (docs/journal.md,
"Reconciling tables after a restore").

Each table's steps that the restored state lacks are collected (``restore_collect.lua``),
requested as corrections, approved and applied one by one, then the reconciliation ends and
the group is served again; each is one script.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from controller.store import keys
from controller.store.gateway import ScriptGateway
from jackpot.epochs import JournalPosition


class Reconciliation:
    """The reconciliation steps of restored link groups (``store.reconciliation``)."""

    def __init__(
        self,
        gateway: ScriptGateway,
        *,
        round_retention_seconds: int,
    ) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._round_retention_seconds = round_retention_seconds

    async def collect(
        self,
        link_group_id: str,
        table_id: str,
        steps: Sequence[dict[str, Any]],
        *,
        actor: str,
        source: str,
        last: JournalPosition,
        max_steps: int,
    ) -> tuple[int, int, int]:
        """Keep the ``steps`` (controller/actions/reconcile.py) of ``table_id``'s outbox that the
        restored state lacks (``restore_collect.lua``); answer (missing, present, collected
        before)."""
        group = keys.LinkGroupKeys(link_group_id)
        missing, present, known = await self._run(
            self._scripts.restore_collect,
            [
                group.epoch,
                group.journal,
                group.seq,
                group.restore_steps,
                group.restore_tables,
                group.table(table_id),
                group.tables,
                group.restore_queue,
                *(group.round(table_id, int(step["round_id"])) for step in steps),
            ],
            [
                link_group_id,
                table_id,
                json.dumps(list(steps)),
                actor,
                source,
                last.epoch,
                last.seq,
                max_steps,
            ],
        )
        return int(missing), int(present), int(known)

    async def records(
        self, link_group_id: str
    ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], list[str], dict[str, str]]:
        """What the reconciliation of a restored link group stands at: its steps by id, the
        collected tables, the group's table ids and its epoch record's fields."""
        group = keys.LinkGroupKeys(link_group_id)
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.hgetall(group.restore_steps)
            pipe.hgetall(group.restore_tables)
            pipe.smembers(group.tables)
            pipe.hgetall(group.epoch)
            steps, tables, table_ids, epoch = await self._read(pipe.execute())
        return (
            {key: json.loads(raw) for key, raw in steps.items()},
            {key: json.loads(raw) for key, raw in tables.items()},
            sorted(table_ids),
            dict(epoch),
        )

    async def request(self, link_group_id: str, *, actor: str, actor_cert: str) -> int:
        """Request every missing step as a correction (``restore_request.lua``); answer how
        many this operator has requested."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.restore_request,
                [group.epoch, group.journal, group.seq, group.restore_steps],
                [link_group_id, actor, actor_cert],
            )
        )

    async def apply(
        self, link_group_id: str, step: dict[str, Any], *, actor: str, actor_cert: str
    ) -> dict[str, Any]:
        """Approve and apply one requested step (``restore_apply.lua``); answer its record."""
        group = keys.LinkGroupKeys(link_group_id)
        meter_ids = sorted(
            {str(move["meter_id"]) for move in step.get("moves") or []}
            | {str(a["meter_id"]) for a in step.get("awards") or [] if a.get("meter_id")}
        )
        table_id, round_id = str(step["table_id"]), int(step["round_id"])
        raw = await self._run(
            self._scripts.restore_apply,
            [
                group.epoch,
                group.journal,
                group.seq,
                group.restore_steps,
                group.round(table_id, round_id),
                group.table(table_id),
                group.open_rounds,
                group.jackpots,
                group.pending,
                group.restore_queue,
                group.irregularities,
                *(group.meter(meter_id) for meter_id in meter_ids),
            ],
            [
                link_group_id,
                step["id"],
                actor,
                actor_cert,
                json.dumps(meter_ids),
                self._round_retention_seconds,
            ],
        )
        record: dict[str, Any] = json.loads(raw)
        return record

    async def finish(self, link_group_id: str, *, actor: str, actor_cert: str) -> int:
        """End the reconciliation (``restore_finish.lua``); answer its journal seq."""
        group = keys.LinkGroupKeys(link_group_id)
        return int(
            await self._run(
                self._scripts.restore_finish,
                [
                    group.epoch,
                    group.journal,
                    group.seq,
                    group.restore_steps,
                    group.restore_tables,
                    group.tables,
                    group.restore_queue,
                ],
                [link_group_id, actor, actor_cert],
            )
        )
