"""Recompute every meter and reserve from the journal and compare with the live values.

The journal is the record; meters are its projection (design.md invariant 2). For each link
group this checks that the journal's sequence numbers run 1, 2, 3, ... without a gap up to
the group's counter, that every meter's value and reserve equal the sums of their journal
deltas (seed, contributions, awards, resets, voids, rejections), and that the pending-jackpot
count of each meter matches the pending set. It reads Redis only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from controller.domain.money import format_cents
from controller.store import keys
from controller.store.redis_store import RedisStore


@dataclass
class AuditReport:
    """What the audit found; ``ok`` when there is no difference."""

    link_groups: int = 0
    meters: int = 0
    entries: int = 0
    differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every value matched."""
        return not self.differences


def _money(microcents: int) -> str:
    cents, rest = divmod(microcents, 1_000_000)
    return format_cents(cents) + (f" + {rest} microcents" if rest else "")


async def _audit_group(store: RedisStore, link_group_id: str, report: AuditReport) -> None:
    value: Counter[str] = Counter()
    reserve: Counter[str] = Counter()
    expected_seq = 0
    async for entry in store.journal(link_group_id):
        expected_seq += 1
        report.entries += 1
        if entry.seq != expected_seq:
            report.differences.append(
                f"{link_group_id}: journal entry {entry.entry_id} has seq {entry.seq}, "
                f"expected {expected_seq} (an entry is missing or out of order)"
            )
            expected_seq = entry.seq
        if entry.meter_id:
            value[entry.meter_id] += entry.delta_meter_microcents
            reserve[entry.meter_id] += entry.delta_reserve_microcents
    counter = await store.client.get(keys.LinkGroupKeys(link_group_id).seq)
    if int(counter or 0) != expected_seq:
        report.differences.append(
            f"{link_group_id}: sequence counter is {counter!s}; the journal ends at {expected_seq}"
        )
    pending = await store.list_pending_jackpots(link_group_id)
    pending_by_meter = Counter(jackpot.meter_id for jackpot in pending)
    live = await store.list_meters(link_group_id)
    for meter in live:
        report.meters += 1
        name = f"{link_group_id}/{meter.meter_id}"
        if meter.amount_microcents != value[meter.meter_id]:
            report.differences.append(
                f"{name}: meter is {_money(meter.amount_microcents)} but the journal sums to "
                f"{_money(value[meter.meter_id])}"
            )
        if meter.reserve_microcents != reserve[meter.meter_id]:
            report.differences.append(
                f"{name}: reserve is {_money(meter.reserve_microcents)} but the journal sums "
                f"to {_money(reserve[meter.meter_id])}"
            )
        if meter.pending_jackpots != pending_by_meter[meter.meter_id]:
            report.differences.append(
                f"{name}: meter counts {meter.pending_jackpots} pending jackpots but "
                f"{pending_by_meter[meter.meter_id]} are pending"
            )
    for meter_id in sorted(set(value) - {meter.meter_id for meter in live}):
        report.differences.append(
            f"{link_group_id}/{meter_id}: in the journal but no such meter exists"
        )


async def verify(store: RedisStore) -> AuditReport:
    """Audit every link group of the store."""
    report = AuditReport()
    for group in await store.list_link_groups():
        report.link_groups += 1
        await _audit_group(store, group.link_group_id, report)
    return report
