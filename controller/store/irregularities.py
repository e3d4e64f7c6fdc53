"""Recorded irregularities of rounds: a supervisor's confirmation and the reads of them.

A table reports an irregularity within its round's steps (:mod:`controller.store.rounds`);
what a supervisor decides of a round held by a chip count that differed, and the listing of
what was recorded, are here.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.domain.config import TableConfig
from controller.domain.records import Irregularity
from controller.store import codec, keys
from controller.store.catalog import Catalog
from controller.store.gateway import ScriptGateway
from jackpot.errors import CorruptRecord, NotFound
from jackpot.kinds import IrregularityKind


@dataclass(frozen=True, slots=True)
class Resolution:
    """A supervisor's resolution of a held round: who (certificate identity and its SHA-256)
    and why."""

    supervisor: str
    supervisor_cert: str
    note: str


class Irregularities:
    """The irregularity records of link groups (``store.irregularities``)."""

    def __init__(self, gateway: ScriptGateway, catalog: Catalog) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._decoded = gateway.decoded
        self._each = gateway.each
        self._catalog = catalog

    async def confirm_irregularity(
        self, table: TableConfig, round_id: int, resolution: Resolution
    ) -> Irregularity:
        """A supervisor confirms a round held by a chip count that differed: it settles with
        the wagers accepted at lockout (atomic, journaled with who and why)."""
        group = keys.LinkGroupKeys(table.link_group_id)
        round_key = group.round(table.table_id, round_id)
        raw = await self._run(
            self._scripts.resolve_irregularity,
            [round_key, group.journal, group.seq, group.irregularities],
            [
                table.table_id,
                round_id,
                resolution.supervisor,
                resolution.supervisor_cert,
                resolution.note,
            ],
        )
        return codec.irregularity(raw)

    async def get_irregularity(
        self, table: TableConfig, round_id: int, kind: IrregularityKind | str
    ) -> Irregularity:
        """One recorded irregularity; :class:`NotFound` if the round has none of ``kind``
        (an :class:`IrregularityKind`, or ``mystery_hit``: a supervisor's void of a round
        that won a must-hit-by jackpot)."""
        group = keys.LinkGroupKeys(table.link_group_id)
        irregularity_id = f"{table.table_id}:{round_id}:{kind}"
        raw = await self._read(self._client.hget(group.irregularities, irregularity_id))
        if raw is None:
            raise NotFound(f"round {round_id} of table {table.table_id} has no {kind} irregularity")
        return self._decoded(
            lambda: codec.irregularity(raw, name=irregularity_id, key=group.irregularities)
        )

    async def list_irregularities(
        self,
        link_group_id: str = "",
        *,
        status: str = "",
        table_id: str = "",
        skipped: list[CorruptRecord] | None = None,
    ) -> list[Irregularity]:
        """Every recorded irregularity of one link group or all, in journal order per link
        group, filtered by ``status`` and ``table_id`` (empty: any); a corrupt one is left
        out, reported and added to ``skipped``."""
        found: list[Irregularity] = []
        for group_id in await self._catalog.group_ids(link_group_id):
            group = keys.LinkGroupKeys(group_id)
            stored = await self._read(self._client.hgetall(group.irregularities))
            for record in self._each(
                lambda item: codec.irregularity(item[2], name=item[0], key=item[1]),
                ((name, group.irregularities, raw) for name, raw in sorted(stored.items())),
                skipped,
            ):
                if (not status or record.status == status) and (
                    not table_id or record.table_id == table_id
                ):
                    found.append(record)
        return sorted(found, key=lambda r: (r.link_group_id, r.journal_seq))
