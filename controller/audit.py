"""Recompute every meter and reserve from the journal and compare with the live values.

The journal is the record; meters are its projection (design.md invariant 2). For each link
group this checks that the journal's sequence numbers run 1, 2, 3, ... without a gap up to
the group's counter, that every meter's value and reserve equal the sums of their journal
deltas (seed, contributions, awards, resets, voids, rejections), and that the pending-jackpot
count of each meter matches the pending set. It reads Redis only, and may run while tables
play: meters are read at one instant (one read-only script) and the journal is summed up to
that instant's sequence number.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from controller.domain.money import MICROCENTS_PER_CENT, format_cents
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
    """Microcents for people: "$12.34", "$12.34 + 5 microcents", "-7 microcents"."""
    cents, rest = divmod(abs(microcents), MICROCENTS_PER_CENT)
    if not rest:
        return format_cents(cents if microcents >= 0 else -cents)
    text = f"{format_cents(cents)} + {rest} microcents" if cents else f"{rest} microcents"
    return f"-({text})" if microcents < 0 and cents else ("-" if microcents < 0 else "") + text


async def _audit_group(store: RedisStore, link_group_id: str, report: AuditReport) -> None:
    snapshot = await store.audit_snapshot(link_group_id)
    value: Counter[str] = Counter()
    reserve: Counter[str] = Counter()
    expected_seq = 0
    async for entry in store.journal(link_group_id):
        if entry.seq > snapshot.seq:
            break  # written after the snapshot: the next audit sees it
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
    if expected_seq != snapshot.seq:
        report.differences.append(
            f"{link_group_id}: sequence counter is {snapshot.seq}; the journal ends at "
            f"{expected_seq}"
        )
    pending_by_meter = Counter(snapshot.pending_jackpot_meters)
    for meter in snapshot.meters:
        report.meters += 1
        name = f"{link_group_id}/{meter.meter_id}"
        if meter.value_microcents != value[meter.meter_id]:
            report.differences.append(
                f"{name}: meter is {_money(meter.value_microcents)} but the journal sums to "
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
    for meter_id in sorted(set(value) - {meter.meter_id for meter in snapshot.meters}):
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
