"""Regulator reports against a hand-computed scenario: ten rounds at a Caribbean Stud table with
the progressive wager ($1, 15% to the meter, 5% to the reserve) and the bonus wager ($5, feeding
no meter), a full house, a royal flush, a straight flush and a voided round. Every figure is
asserted to the cent, and the meter report's totals equal the meter the audit recomputes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from fractions import Fraction

import pytest

from controller.api import convert
from controller.ctl.jackpots import slip_lines
from controller.ctl.main import main as jackpotctl
from controller.domain import reports
from controller.domain.odds import paytable_odds
from controller.domain.paytables import CARIBBEAN_STUD_PROGRESSIVE
from controller.domain.records import JournalEntry
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store.redis_store import RedisStore
from jackpot.errors import InvalidArgument
from jackpot.results import METER_AFTER
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FULL_HOUSE,
    HIGH_CARD,
    PAIR,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Floor,
    lockout,
    progressive_table,
    settle,
)

NOTHING = "2D 3C 7H 9D JC"  # jack high: pays on neither wager
MICRO = 1_000_000
SEED = 1_000_000  # cents: the meter starts at its $10,000 reset


def hands(round_id: int) -> dict[int, str]:
    """Seat 1 holds the bonus wager too; round 2 a full house at seat 1, round 4 a royal
    flush at seat 2, round 7 a straight flush at seat 3."""
    seat1, seat2, seat3 = HIGH_CARD, PAIR, NOTHING
    if round_id == 2:
        seat1 = FULL_HOUSE
    if round_id == 4:
        seat2 = ROYAL_SPADES
    if round_id == 7:
        seat3 = STRAIGHT_FLUSH_HEARTS
    return {1: seat1, 2: seat2, 3: seat3}


def wagers(round_id: int) -> pb.LockoutRequest:
    progressive = [
        pb.Wager(seat=seat, kind=pb.WAGER_KIND_PROGRESSIVE, amount_cents=100) for seat in (1, 2, 3)
    ]
    bonus = pb.Wager(seat=1, kind=pb.WAGER_KIND_BONUS, amount_cents=500)
    return pb.LockoutRequest(table_id="t1", round_id=round_id, wagers=[*progressive, bonus])


@pytest.fixture
async def store(controller: ControllerServer, redis_url: str) -> AsyncIterator[RedisStore]:
    store = RedisStore.from_url(redis_url)
    yield store
    await store.close()


@pytest.fixture
async def played(
    admin: pb_grpc.AdminServiceAsyncStub, tables: pb_grpc.TableServiceAsyncStub
) -> Floor:
    """The scenario: rounds 1 to 10, round 9 voided after its lockout."""
    floor = Floor(admin)
    await floor.create(reserve_rate="5", tables=())
    table = progressive_table("t1", "floor", "cs-main")
    table.wagers.append(
        pb.TableWager(kind=pb.WAGER_KIND_BONUS, paytable="A", min_cents=500, max_cents=10_000)
    )
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    for round_id in range(1, 11):
        await tables.Lockout(wagers(round_id))
        if round_id == 9:
            await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=9, reason="misdeal"))
        else:
            await tables.Settle(settle("t1", round_id, hands(round_id)))
    return floor


# Hand-computed. Each $1 progressive wager: 15 cents to the meter, 5 to the reserve.
# Rounds 1-3: 9 wagers, meter 1,000,135, reserve 45. Round 4: 1,000,180 and 60; the royal
# flush wins it all (1,000,180), the reset to 1,000,000 takes the reserve's 60 and 999,940 of
# operator seed. Rounds 5-7: 1,000,135 and 45; the straight flush wins 10%, 100,013 (rounded
# down), leaving 900,122. Round 8: 900,167 and 60. Round 9 adds 45 and 15, and its void takes
# them back. Round 10: 900,212 and 75.
ROYAL, STRAIGHT_FLUSH = 1_000_180, 100_013
FINAL_METER, FINAL_RESERVE = 900_212, 75
FULL_HOUSE_PROGRESSIVE = 100 * 100  # 100 for 1 on $1
FULL_HOUSE_BONUS = 50 * 500 + 500  # 50 to 1 on $5, the wager back


async def test_meter_report_equals_the_hand_computed_scenario(
    played: Floor, store: RedisStore
) -> None:
    entries = await store.journal.window("floor", 0, 0, 10_000)
    [line] = reports.meter_report(
        entries, await store.catalog.list_meters("floor"), await store.tables.list_tables("floor")
    )
    assert (line.meter_id, line.game) == ("cs-main", "caribbean-stud")
    assert (line.handle_count, line.handle_cents) == (27, 2_700)
    assert line.to_meter_microcents == 30 * 15 * MICRO
    assert line.to_reserve_microcents == 30 * 5 * MICRO
    assert line.overflow_microcents == 0
    assert line.voided_count == 3
    assert (line.voided_meter_microcents, line.voided_reserve_microcents) == (
        -45 * MICRO,
        -15 * MICRO,
    )
    assert (line.hits, line.percent_wins_cents) == (2, ROYAL + STRAIGHT_FLUSH)
    assert (line.rejected_hits, line.rejected_meter_microcents) == (0, 0)
    assert line.reset_microcents == SEED * MICRO
    assert line.reset_from_reserve_microcents == 60 * MICRO
    assert line.operator_seed_microcents == 999_940 * MICRO
    assert line.other_microcents == {"meter_created": SEED * MICRO}
    assert (line.amount_microcents, line.reserve_microcents) == (
        FINAL_METER * MICRO,
        FINAL_RESERVE * MICRO,
    )
    assert (line.cumulative_hits, line.cumulative_paid_cents) == (2, ROYAL + STRAIGHT_FLUSH)
    assert line.hit_frequency == Fraction(2, 27)
    # Paytable B pays from the meter on a royal flush (4 hands) and a straight flush (36) of
    # the 2,598,960 five-card hands.
    assert line.expected_hit_frequency == Fraction(40, 2_598_960)

    # The report's totals are the audit's recomputation: the journal sums to the meter.
    assert (await verify(store)).ok
    assert line.net_meter_microcents == line.amount_microcents
    assert line.net_reserve_microcents == line.reserve_microcents
    movements = (
        line.to_meter_microcents
        + line.voided_meter_microcents
        - line.percent_wins_cents * MICRO
        + line.reset_microcents
        + sum(line.other_microcents.values())
    )
    assert movements == line.net_meter_microcents
    reserve_movements = (
        line.to_reserve_microcents
        + line.overflow_microcents
        + line.voided_reserve_microcents
        - line.reset_from_reserve_microcents
    )
    assert reserve_movements == line.net_reserve_microcents


async def test_handle_report_counts_every_wager_kind(played: Floor, store: RedisStore) -> None:
    entries = await store.journal.window("floor", 0, 0, 10_000)
    report = reports.handle_report(entries, await store.tables.list_tables("floor"))
    bonus, progressive = report.lines
    assert report.earlier_voids == []
    assert (bonus.table_id, bonus.game, bonus.wager) == ("t1", "caribbean-stud", "bonus")
    assert (bonus.accepted_count, bonus.accepted_cents) == (10, 5_000)
    assert (bonus.voided_count, bonus.voided_cents) == (1, 500)
    assert (bonus.count, bonus.cents) == (9, 4_500)
    assert (bonus.fixed_wins, bonus.fixed_cents) == (1, FULL_HOUSE_BONUS)
    assert (bonus.percent_wins, bonus.percent_cents) == (0, 0)
    assert bonus.hit_frequency == Fraction(1, 9)
    assert (progressive.accepted_count, progressive.accepted_cents) == (30, 3_000)
    assert (progressive.voided_count, progressive.voided_cents) == (3, 300)
    assert (progressive.count, progressive.cents) == (27, 2_700)
    assert (progressive.percent_wins, progressive.percent_cents) == (2, ROYAL + STRAIGHT_FLUSH)
    assert (progressive.fixed_wins, progressive.fixed_cents) == (1, FULL_HOUSE_PROGRESSIVE)
    assert progressive.wins_cents == ROYAL + STRAIGHT_FLUSH + FULL_HOUSE_PROGRESSIVE
    assert progressive.hit_frequency == Fraction(3, 27)
    table = (await store.tables.list_tables("floor"))[0]
    expected = paytable_odds(
        CARIBBEAN_STUD_PROGRESSIVE["B"],
        table.game_rules.wager("progressive").line_counts(),
        meter_cents=0,
        wager_cents=1,
    ).hit_frequency
    assert progressive.expected_hit_frequency == expected
    assert (report.total_count, report.total_cents) == (36, 7_200)


async def test_hits_and_changes(played: Floor, store: RedisStore) -> None:
    entries = await store.journal.window("floor", 0, 0, 10_000)
    straight, royal = reports.hit_report(entries)
    assert (straight.round_id, straight.seat, straight.hand) == ("7", "3", "straight_flush")
    assert (straight.amount_cents, straight.meter_before_cents, straight.meter_after_cents) == (
        STRAIGHT_FLUSH,
        1_000_135,
        900_122,
    )
    assert (royal.round_id, royal.seat, royal.amount_cents) == ("4", "2", ROYAL)
    assert not royal.rejected and straight.seq > royal.seq
    assert reports.hit_report(entries, limit=1) == [straight]
    changes = reports.change_report(entries)
    assert [c.type for c in changes] == ["link_group_created", "meter_created", "table_registered"]
    assert changes[1].d_meter_microcents == SEED * MICRO
    assert changes[2].fields["table"] == "t1" and "hash" not in changes[2].fields


async def test_meter_after_is_one_fact_in_the_hit_report_and_the_slip(
    played: Floor, store: RedisStore, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 100% award's "meter after" is the meter after the award and its reset, in
    ``report hits`` as on the hand-pay slip (it was $0.00 in the report, the reset on the slip);
    both say so."""
    entries = await store.journal.window("floor", 0, 0, 10_000)
    straight, royal = reports.hit_report(entries)
    for hit in (straight, royal):
        slip = await store.jackpots.get_jackpot(f"floor:{hit.seq}")
        assert (hit.meter_before_cents, hit.meter_after_cents) == (
            slip.meter_before_cents,
            slip.meter_after_cents,
        )
    assert royal.meter_after_cents == SEED  # reset to $10,000.00
    argv = ["report", "hits", "--redis", redis_url]
    assert await asyncio.to_thread(jackpotctl, argv) == 0
    out = capsys.readouterr().out
    assert f"METER BEFORE -> {METER_AFTER.upper()}" in out
    assert "-> $10,000.00" in out and "-> $0.00" not in out
    lines = slip_lines(convert.jackpot(await store.jackpots.get_jackpot(f"floor:{royal.seq}")))
    assert any(line.endswith(f"-> $10,000.00 ({METER_AFTER})") for line in lines), lines


async def test_a_window_holds_only_its_entries(played: Floor, store: RedisStore) -> None:
    entries = await store.journal.window("floor", 0, 0, 10_000)
    cut = reports.entry_ms(entries[len(entries) // 2])
    before = await store.journal.window("floor", 0, cut, 10_000)
    after = await store.journal.window("floor", cut, 0, 10_000)
    assert before + after == entries
    assert all(reports.entry_ms(e) < cut for e in before)
    with pytest.raises(InvalidArgument, match="more than 5 entries"):
        await store.journal.window("floor", 0, 0, 5)
    with pytest.raises(InvalidArgument, match="--to must be after --from"):
        await store.journal.window("floor", cut, cut, 10)


async def test_jackpotctl_report(
    played: Floor, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def ctl(*argv: str) -> int:
        return await asyncio.to_thread(jackpotctl, ["report", *argv, "--redis", redis_url])

    assert await ctl("meters", "--format", "json") == 0
    [meter] = json.loads(capsys.readouterr().out)
    assert meter["link_group_id"] == "floor" and meter["meter_id"] == "cs-main"
    assert meter["amount_microcents"] == FINAL_METER * MICRO
    assert meter["percent_wins_cents"] == ROYAL + STRAIGHT_FLUSH
    assert meter["hit_frequency"] == "2/27"
    assert meter["other:meter_created_microcents"] == SEED * MICRO

    assert await ctl("meters") == 0
    out = capsys.readouterr().out
    assert "floor/cs-main" in out and "$9,002.12" in out and "1 in 64,974" in out

    assert await ctl("handle", "--format", "csv", "--table", "t1") == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("link_group_id,table_id,game,wager,accepted_count")
    assert rows[1].startswith("floor,t1,caribbean-stud,bonus,10,5000,1,500,")

    assert await ctl("hits") == 0
    out = capsys.readouterr().out
    assert "straight flush" in out and "$1,001.80" not in out and "$10,001.80" in out
    assert "straight_flush" not in out  # hand names in words where people read them

    assert await ctl("changes", "--to", "2000-01-01") == 0
    assert capsys.readouterr().out == "no changes in that window\n"

    assert await ctl("handle", "--link-group", "nowhere") == 1
    assert "nowhere" in capsys.readouterr().err


def test_an_unknown_change_appears_with_its_fields() -> None:
    entry = JournalEntry(
        "1700000000000-0",
        7,
        "meter_retired",
        "cs-old",
        -5 * MICRO,
        0,
        {
            "seq": "7",
            "type": "meter_retired",
            "meter": "cs-old",
            "d_meter": "-5000000",
            "d_reserve": "0",
            "to": "cs-main",
            "approval": "RS-12",
            "hash": "ab",
        },
    )
    [change] = reports.change_report([entry])
    assert change.type == "meter_retired" and change.at_ms == 1_700_000_000_000
    assert change.fields == {"approval": "RS-12", "to": "cs-main"}
    assert change.d_meter_microcents == -5 * MICRO


async def test_overflow_above_the_ceiling(
    admin: pb_grpc.AdminServiceAsyncStub, tables: pb_grpc.TableServiceAsyncStub, store: RedisStore
) -> None:
    """A ceiling 20 cents above the reset: three $1 wagers give 15 + 5 cents to the meter and
    10 + 15 cents of overflow, which goes to the reserve."""
    await Floor(admin).create(ceiling_cents=SEED + 20)
    await tables.Lockout(lockout("t1", 1, [1, 2, 3]))
    entries = await store.journal.window("floor", 0, 0, 100)
    [line] = reports.meter_report(
        entries, await store.catalog.list_meters("floor"), await store.tables.list_tables("floor")
    )
    assert line.to_meter_microcents == 20 * MICRO
    assert line.overflow_microcents == 25 * MICRO
    assert line.to_reserve_microcents == 0
    assert line.net_reserve_microcents == line.reserve_microcents == 25 * MICRO
    assert line.amount_microcents == (SEED + 20) * MICRO
