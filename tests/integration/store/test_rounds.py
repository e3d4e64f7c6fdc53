"""The rounds: lockout, settlement and void, each answered once and replayed after; this
process's memory of its lockouts; a definition changed under a lockout; a seeded irregularity."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.domain.digests import lockout_fingerprint, void_fingerprint
from controller.store import keys
from controller.store.redis_store import RedisStore
from jackpot.errors import RoundStateError, StoreUnavailable
from jackpot.irregularities import irregularity_rule
from jackpot.kinds import IrregularityEffect, IrregularityKind
from jackpot.money import MICROCENTS_PER_CENT
from jackpot.results import SeatOutcome
from tests.integration.store.conftest import (
    GROUP,
    METER,
    NOTHING,
    NOTHING_TOO,
    RESET_CENTS,
    ROYAL,
    WAGER_CENTS,
    play,
    wagers,
)

RESET_MICROCENTS = RESET_CENTS * MICROCENTS_PER_CENT


async def test_a_lockout_is_applied_once_and_remembered_until_settled(
    store: RedisStore, table: TableConfig
) -> None:
    placed = wagers(1, 2)
    fp = lockout_fingerprint(placed)
    first = await store.rounds.lockout(table, 1, placed, fp)
    again = await store.rounds.lockout(table, 1, placed, fp)
    assert not first.replayed and again.replayed and again.meters == first.meters
    [meter] = first.meters
    assert meter.amount_microcents == RESET_MICROCENTS + 2 * WAGER_CENTS * 150_000
    remembered = await store.rounds.locked_round(table, 1)
    read = await store.rounds.locked_round(table, 1, fresh=True)
    assert remembered is not None and remembered.remembered
    assert read is not None and not read.remembered
    assert read.wagers == remembered.wagers == placed and read.lockout_fingerprint == fp
    assert await store.rounds.locked_round(table, 2) is None  # never locked out


async def test_a_settlement_pays_once_and_is_replayed(
    store: RedisStore, table: TableConfig
) -> None:
    settled = await play(store, table, 1, ROYAL, NOTHING)
    by_seat = {result.seat: result for result in settled.results}
    royal, nothing = by_seat[1], by_seat[2]
    assert royal.outcome is SeatOutcome.PAID and royal.jackpot_id
    assert nothing.outcome is not SeatOutcome.PAID
    assert len(store.rounds._locked) == 0  # a settled round is forgotten
    locked = await store.rounds.locked_round(table, 1)
    assert locked is not None and not locked.remembered  # read from Redis now
    replay = await play(store, table, 1, ROYAL, NOTHING)
    assert replay.replayed and replay.results == settled.results


async def test_a_void_gives_the_contributions_back(store: RedisStore, table: TableConfig) -> None:
    placed = wagers(1)
    await store.rounds.lockout(table, 1, placed, lockout_fingerprint(placed))
    voided = await store.rounds.void_round(table, 1, "misdeal", void_fingerprint("misdeal"))
    assert [w.seat for w in voided.reversed] == [1]
    assert [m.amount_microcents for m in voided.meters] == [RESET_MICROCENTS]
    again = await store.rounds.void_round(table, 1, "misdeal", void_fingerprint("misdeal"))
    assert again.replayed
    with pytest.raises(RoundStateError):
        await play(store, table, 1, NOTHING)


async def test_a_definition_changed_under_a_lockout_is_read_again(
    store: RedisStore, table: TableConfig
) -> None:
    """The lockout script refuses a revision other than the cached one (retryable); the
    rounds forget the table's definition, so the retry reads it with its new revision."""
    await store.client.hset(keys.LinkGroupKeys(GROUP).table("t1"), "rev", 2)
    placed = wagers(1)
    with pytest.raises(StoreUnavailable, match="retry"):
        await store.rounds.lockout(table, 1, placed, lockout_fingerprint(placed))
    fresh = await store.tables.get_table("t1")
    assert fresh is not table and store.tables.revisions["t1"] == 2
    applied = await store.rounds.lockout(fresh, 1, placed, lockout_fingerprint(placed))
    assert not applied.replayed and [m.meter_id for m in applied.meters] == [METER]


async def test_a_chip_count_that_differs_holds_the_round(
    store: RedisStore, table: TableConfig
) -> None:
    placed = wagers(1, 2)
    await store.rounds.lockout(table, 1, placed, lockout_fingerprint(placed))
    counted = await store.rounds.report_chip_count(table, 1, 2)
    assert counted.matched and counted.accepted == 2
    await store.rounds.lockout(table, 2, placed, lockout_fingerprint(placed))
    held = await store.rounds.report_chip_count(table, 2, 3)
    assert not held.matched and (held.chips, held.accepted) == (3, 2)
    with pytest.raises(RoundStateError):
        await play(store, table, 2, NOTHING, NOTHING_TOO)


async def test_a_seeded_irregularity_that_voids_voids_in_the_same_step(
    store: RedisStore, table: TableConfig
) -> None:
    placed = wagers(1)
    await store.rounds.lockout(table, 1, placed, lockout_fingerprint(placed))
    rule = irregularity_rule(table.game, IrregularityKind.MISDEAL)
    assert rule.effect is IrregularityEffect.VOID
    reported = await store.rounds.report_irregularity(table, 1, IrregularityKind.MISDEAL, rule)
    assert reported.kind is IrregularityKind.MISDEAL and [w.seat for w in reported.reversed] == [1]
    [recorded] = await store.irregularities.list_irregularities(GROUP)
    assert (recorded.table_id, recorded.round_id, recorded.kind) == ("t1", 1, "misdeal")
