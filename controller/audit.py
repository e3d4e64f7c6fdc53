"""Recompute every meter and reserve from the journal and compare with the live values.

The journal is the record; meters are its projection (design.md invariant 2). For each link
group this checks that the journal's sequence numbers run 1, 2, 3, ... without a gap up to
the group's counter, that every meter's value and reserve equal the sums of their journal
deltas (seed, contributions, awards, resets, voids, rejections), and that the pending-jackpot
count of each meter matches the pending set. It reads Redis only, and may run while tables
play: meters are read at one instant (one read-only script) and the journal is summed up to
that instant's sequence number.

A trimmed journal (``jackpotctl journal trim``) starts after its checkpoint: what the
trimmed entries summed to per meter, written in the same atomic step as the trim. The sums
then start from the checkpoint, and the journal must continue at the checkpoint's sequence
number plus one. The trimmed entries themselves are in the exports, where
``jackpotctl journal verify-export`` checks them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from controller.domain.records import LinkGroupSnapshot
from controller.store.redis_store import RedisStore
from jackpot.money import MICROCENTS_PER_CENT, format_cents


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


TRIM_RACES = 5
"""How many times a link group is audited again when a trim ran between its snapshot and the
journal's first entry."""


async def _audit_group(store: RedisStore, link_group_id: str, report: AuditReport) -> None:
    for _ in range(TRIM_RACES):
        group_report = AuditReport()
        if await _audit_once(store, link_group_id, group_report):
            report.meters += group_report.meters
            report.entries += group_report.entries
            report.differences += group_report.differences
            return
    report.differences.append(f"{link_group_id}: trimmed while audited {TRIM_RACES} times")


async def _audit_once(store: RedisStore, link_group_id: str, report: AuditReport) -> bool:
    """Audit one link group; False when a trim raced with it (audit it again)."""
    snapshot = await store.audit_snapshot(link_group_id)
    checkpoint = snapshot.checkpoint
    value: Counter[str] = Counter(checkpoint.value_microcents)
    reserve: Counter[str] = Counter(checkpoint.reserve_microcents)
    expected_seq = checkpoint.seq
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
    retired = await store.controls.retired_meter_ids(link_group_id)
    _compare_meters(link_group_id, snapshot, value, reserve, retired, report)
    # Entries trimmed after the snapshot was read look missing: audit the group again.
    return not report.differences or await store.checkpoint_seq(link_group_id) == checkpoint.seq


def _compare_meters(
    link_group_id: str,
    snapshot: LinkGroupSnapshot,
    value: Counter[str],
    reserve: Counter[str],
    retired: set[str],
    report: AuditReport,
) -> None:
    """Each meter's value, reserve and pending count against the journal's sums; a retired
    meter's entries (its ``meter_retired`` entry took all it held) sum to zero."""
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
        if meter_id in retired:
            if value[meter_id] or reserve[meter_id]:
                report.differences.append(
                    f"{link_group_id}/{meter_id}: retired, but the journal sums to "
                    f"{_money(value[meter_id])}, reserve {_money(reserve[meter_id])} (not zero)"
                )
            continue
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
