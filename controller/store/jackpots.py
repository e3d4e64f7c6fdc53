"""Jackpots: the pending list, a jackpot's record, and its review, witness and payment.

A hit is recorded by the settlement that pays it (:mod:`controller.store.rounds`); each
decision after it is one script, journaled with who (a certificate identity and its
fingerprint) and why.
"""

from __future__ import annotations

from controller.domain.payout_compliance import PaymentCompliance
from controller.domain.records import Jackpot
from controller.store import codec, keys
from controller.store.catalog import Catalog
from controller.store.gateway import ScriptGateway
from jackpot.errors import CorruptRecord, NotFound


class Jackpots:
    """The jackpots of link groups (``store.jackpots``)."""

    def __init__(self, gateway: ScriptGateway, catalog: Catalog) -> None:
        self._client = gateway.client
        self._scripts = gateway.scripts
        self._run = gateway.run
        self._read = gateway.read
        self._decoded = gateway.decoded
        self._each = gateway.each
        self._catalog = catalog

    async def list_pending_jackpots(
        self, link_group_id: str = "", *, skipped: list[CorruptRecord] | None = None
    ) -> list[Jackpot]:
        """Jackpots waiting for validation, in journal order; a corrupt one is left out,
        reported and added to ``skipped``."""
        groups = await self._catalog.group_ids(link_group_id)
        found: list[Jackpot] = []
        for group_id in groups:
            group = keys.LinkGroupKeys(group_id)
            ids = sorted(await self._read(self._client.smembers(group.pending)))
            if ids:
                raws = await self._read(self._client.hmget(group.jackpots, ids))
                found += self._each(
                    lambda item: codec.jackpot(item[2], key=item[1], name=item[0]),
                    (
                        (i, group.jackpots, raw)
                        for i, raw in zip(ids, raws, strict=True)
                        if raw is not None
                    ),
                    skipped,
                )
        return sorted(found, key=lambda j: (j.link_group_id, j.journal_seq))

    async def list_jackpots(
        self,
        link_group_id: str = "",
        *,
        status: str = "",
        table_id: str = "",
        from_ms: int = 0,
        to_ms: int = 0,
        skipped: list[CorruptRecord] | None = None,
    ) -> list[Jackpot]:
        """Every jackpot (any status) of one link group or all, in journal order per link
        group, filtered: ``status``, ``table_id`` (empty: any), hit at or after ``from_ms`` and
        before ``to_ms`` (ms since the Unix epoch; 0: unbounded); a corrupt one is left out,
        reported and added to ``skipped``."""
        found: list[Jackpot] = []
        for group_id in await self._catalog.group_ids(link_group_id):
            key = keys.LinkGroupKeys(group_id).jackpots
            stored = await self._read(self._client.hgetall(key))
            for record in self._each(
                lambda item: codec.jackpot(item[2], key=item[1], name=item[0]),
                ((name, key, raw) for name, raw in sorted(stored.items())),
                skipped,
            ):
                if (
                    (not status or record.status == status)
                    and (not table_id or record.table_id == table_id)
                    and record.hit_at_ms >= from_ms
                    and (not to_ms or record.hit_at_ms < to_ms)
                ):
                    found.append(record)
        return sorted(found, key=lambda j: (j.link_group_id, j.journal_seq))

    async def get_jackpot(self, jackpot_id: str) -> Jackpot:
        """One jackpot and its slip; :class:`NotFound` names an unknown id,
        :class:`CorruptRecord` one whose record does not read."""
        raw = await self._jackpot_raw(jackpot_id)
        key = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0]).jackpots
        return self._decoded(lambda: codec.jackpot(raw, key=key, name=jackpot_id))

    async def _jackpot_raw(self, jackpot_id: str) -> str:
        link_group_id, _, seq = jackpot_id.rpartition(":")
        if not link_group_id or not seq.isdigit():
            raise NotFound(f"jackpot {jackpot_id} does not exist (ids look like 'group:17')")
        group = keys.LinkGroupKeys(link_group_id)
        raw = await self._read(self._client.hget(group.jackpots, jackpot_id))
        if raw is None:
            raise NotFound(f"jackpot {jackpot_id} does not exist")
        return str(raw)

    async def review_jackpot(
        self, jackpot_id: str, *, approve: bool, reviewer: str, reviewer_cert: str, note: str
    ) -> Jackpot:
        """Approve or reject a pending jackpot as ``reviewer`` (a certificate identity, with
        its fingerprint ``reviewer_cert``); the same reviewer repeating the same decision
        changes nothing, any other review of a decided jackpot is refused."""
        meter_id = (await self.get_jackpot(jackpot_id)).meter_id
        group = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0])
        decided = await self._run(
            self._scripts.review_jackpot,
            [group.jackpots, group.pending, group.journal, group.seq]
            + ([group.meter(meter_id)] if meter_id else []),
            [jackpot_id, "approved" if approve else "rejected", reviewer, note, reviewer_cert],
        )
        return codec.jackpot(decided)

    async def pay_jackpot(
        self,
        jackpot_id: str,
        *,
        payer: str,
        payer_cert: str,
        note: str,
        two_people: bool,
        compliance: PaymentCompliance | None = None,
    ) -> Jackpot:
        """Record that an approved jackpot was paid, by ``payer`` (a certificate identity,
        with its fingerprint ``payer_cert``); with ``two_people`` the payer may not be the
        approver nor its witness. The same payer again changes nothing; a jackpot not
        approved, or paid by another, is refused (:class:`FailedPrecondition`).
        ``compliance``: the payout policy, what it requires of this jackpot and what the
        payer gave (docs/payout-compliance.md); what is missing is refused
        (:class:`FailedPrecondition` naming each thing)."""
        await self.get_jackpot(jackpot_id)  # NotFound: unknown; CorruptRecord: unreadable
        group = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0])
        paid = await self._run(
            self._scripts.pay_jackpot,
            [group.jackpots, group.journal, group.seq],
            [jackpot_id, payer, payer_cert, note, "two_people" if two_people else ""]
            + (compliance.arguments() if compliance else []),
        )
        return codec.jackpot(paid)

    async def witness_jackpot(
        self, jackpot_id: str, *, witness: str, witness_cert: str, note: str
    ) -> Jackpot:
        """Record that ``witness`` (a certificate identity, with its fingerprint
        ``witness_cert``) witnessed the hand-pay of an approved jackpot, before its payment
        (docs/payout-compliance.md). The same witness again changes nothing; another witness
        once one is recorded, or a jackpot not approved, is refused
        (:class:`FailedPrecondition`)."""
        await self.get_jackpot(jackpot_id)  # NotFound: unknown; CorruptRecord: unreadable
        group = keys.LinkGroupKeys(jackpot_id.rpartition(":")[0])
        witnessed = await self._run(
            self._scripts.witness_jackpot,
            [group.jackpots, group.journal, group.seq],
            [jackpot_id, witness, witness_cert, note],
        )
        return codec.jackpot(witnessed)
