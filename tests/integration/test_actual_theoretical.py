"""Actual against theoretical through a real controller and Redis: ten rounds at a Caribbean
Stud table (progressive $1 on seats 1-3, bonus $5 on seat 1), a full house, a royal flush, a
straight flush, a voided round and a repeated settlement. The report (from Redis and from an
export), its gaming-day windows and refusals, and the metrics the alert reads, each against a
tally made here by hand."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import AsyncIterator
from datetime import timedelta
from fractions import Fraction
from pathlib import Path

import pytest

from controller.ctl.main import main as jackpotctl
from controller.domain.actual_theoretical import compare
from controller.domain.gaming_day import GamingDay
from controller.journal import export as journal_export
from controller.runtime.server import ControllerServer
from controller.store.redis_store import RedisStore
from controller.testing import free_port
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FULL_HOUSE,
    HIGH_CARD,
    PAIR,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Floor,
    progressive_table,
    settle,
)

NOTHING = "2D 3C 7H 9D JC"
MICRO = 1_000_000
HANDS = 2_598_960
ROUNDS = 10
VOIDED = 9


@pytest.fixture
def metrics_port() -> int | None:
    return free_port()


def hands(round_id: int) -> dict[int, str]:
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
    floor = Floor(admin)
    await floor.create(reserve_rate="5", tables=())
    table = progressive_table("t1", "floor", "cs-main")
    table.wagers.append(
        pb.TableWager(kind=pb.WAGER_KIND_BONUS, paytable="A", min_cents=500, max_cents=10_000)
    )
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    for round_id in range(1, ROUNDS + 1):
        await tables.Lockout(wagers(round_id))
        if round_id == VOIDED:
            await tables.VoidRound(
                pb.VoidRoundRequest(table_id="t1", round_id=round_id, reason="misdeal")
            )
        else:
            await tables.Settle(settle("t1", round_id, hands(round_id)))
    await tables.Settle(settle("t1", ROUNDS, hands(ROUNDS)))  # a retry: counted once
    return floor


# By hand: 9 rounds stood, so 27 progressive wagers ($27) and 9 bonus wagers ($45). Paytable B
# of the progressive wager pays the full house 100 for 1 ($100); the royal flush and the
# straight flush are paid from the meter (100%: $10,001.80; 10%: $1,000.13). Bonus paytable A
# pays the full house 50 to 1 on $5 ($255). Each $1 progressive wager gives 15 cents to the
# meter and 5 to the reserve.
PROGRESSIVE_FIXED_PAID = 10_000
METER_PAID = 1_000_180 + 100_013
BONUS_FIXED_PAID = 25_500


async def test_the_comparison_equals_the_hand_tally(played: Floor, store: RedisStore) -> None:
    entries = await store.journal.window("floor", 0, 0, 10_000)
    result = {c.wager: c for c in compare([(entries, await store.tables.list_tables("floor"))])}
    progressive, bonus = result["progressive"], result["bonus"]
    assert (progressive.game, progressive.paytable, progressive.tables) == (
        "caribbean-stud",
        "B",
        ("t1",),
    )
    assert (progressive.wagers, progressive.wagered_cents) == (27, 2_700)
    assert (bonus.wagers, bonus.wagered_cents) == (9, 4_500)
    hits = {line.line: line.hits.observed for line in progressive.lines}
    assert hits == {
        "royal_flush": 1,
        "straight_flush": 1,
        "four_of_a_kind": 0,
        "full_house": 1,
        "flush": 0,
        "straight": 0,
        "three_of_a_kind": 0,
        "two_pair": 0,
    }
    assert progressive.fixed_paid.observed == PROGRESSIVE_FIXED_PAID
    assert progressive.meter_paid_cents == METER_PAID
    assert progressive.contributed_microcents == 27 * 20 * MICRO
    assert bonus.fixed_paid.observed == BONUS_FIXED_PAID and bonus.meter_paid_cents == 0
    # The theory: the full house is 3,744 of the 2,598,960 hands.
    full_house = {line.line: line for line in progressive.lines}["full_house"]
    assert full_house.hits.expected == 27 * Fraction(3_744, HANDS)
    royal = {line.line: line for line in progressive.lines}["royal_flush"]
    assert royal.hits.expected == 27 * Fraction(4, HANDS)
    # one royal flush in 27 wagers is far outside any band; so few expected, only the band counts
    assert not royal.hits.inside and royal.few_expected and progressive.flagged


async def test_the_report_from_redis_and_from_an_export(
    played: Floor,
    store: RedisStore,
    redis_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def ctl(*argv: str) -> int:
        return await asyncio.to_thread(jackpotctl, ["report", "theoretical", *argv])

    assert await ctl("--redis", redis_url, "--format", "json") == 0
    document = json.loads(capsys.readouterr().out)
    by_wager = {c["wager"]: c for c in document["comparisons"]}
    progressive = by_wager["progressive"]
    assert progressive["wagers"] == 27 and progressive["wagered_cents"] == 2_700
    assert progressive["fixed_paid_cents"]["observed"] == PROGRESSIVE_FIXED_PAID
    assert progressive["meter_paid_cents"] == METER_PAID
    assert progressive["flagged"] is True
    full_house = {line["line"]: line for line in progressive["lines"]}["full_house"]
    assert full_house["probability"] == str(Fraction(3_744, HANDS))
    assert full_house["hits"]["observed"] == 1
    assert full_house["hits"]["expected"] == str(27 * Fraction(3_744, HANDS))
    assert document["confidence_percent"] == "99"

    await journal_export.export(store, tmp_path / "export", "floor")
    assert await ctl("--file", str(tmp_path / "export"), "--format", "json") == 0
    assert json.loads(capsys.readouterr().out) == document

    assert await ctl("--redis", redis_url, "--format", "csv") == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("game,wager,paytable,line,award,probability,wagers")
    assert "caribbean-stud,bonus,A,(fixed return cents),,,9,4500,25500," in rows[1]

    assert await ctl("--redis", redis_url) == 0
    text = capsys.readouterr().out
    assert "caribbean-stud / progressive / paytable B (tables t1): 27 wagers, $27.00" in text
    assert "OUTSIDE" in text and "few expected: only the band counts" in text
    assert "meter lines paid $11,001.93" in text


async def test_gaming_day_windows(
    played: Floor, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    async def wagers_in(*argv: str) -> tuple[str, dict[str, int]]:
        code = await asyncio.to_thread(
            jackpotctl, ["report", "theoretical", "--redis", redis_url, "--format", "json", *argv]
        )
        assert code == 0
        document = json.loads(capsys.readouterr().out)
        return document["window"], {c["wager"]: c["wagers"] for c in document["comparisons"]}

    now_ms = int(time.time() * 1000)
    new_york = GamingDay("America/New_York", 6)
    today = new_york.day_of(now_ms)
    window, counts = await wagers_in(
        "--day", str(today), "--zone", "America/New_York", "--day-start", "6"
    )
    assert window.startswith(f"gaming day {today} (")
    assert "from 06:00 in America/New_York" in window
    assert counts == {"bonus": 9, "progressive": 27}
    month = f"{today.year:04d}-{today.month:02d}"
    window, counts = await wagers_in(
        "--month", month, "--zone", "America/New_York", "--day-start", "6"
    )
    assert window.startswith(f"the gaming days of {month}") and counts["progressive"] == 27
    # the gaming day before holds no wagers: no rows
    _, counts = await wagers_in(
        "--day",
        str(today - timedelta(days=1)),
        "--zone",
        "America/New_York",
        "--day-start",
        "6",
    )
    assert counts == {}


NEW_YORK = ["--zone", "America/New_York", "--day-start", "6"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--day", "2026-11-01", "--since", "2026-11-01"], "give one of --day, --month"),
        (["--month", "2026-13", *NEW_YORK], "month 13 is not 1 to 12"),
        (["--month", "November", *NEW_YORK], "a month is YYYY-MM"),
        (["--day", "2026-02-30", *NEW_YORK], "a gaming day is YYYY-MM-DD"),
        (["--day", "2026-11-01"], "no gaming day given"),
        (["--day", "2026-11-01", "--zone", "Mars/Olympus", "--day-start", "6"], "IANA zone"),
        (["--day", "2026-11-01", "--zone", "UTC", "--day-start", "24"], "0 to 23"),
        (["--since", "2026-11-02", "--until", "2026-11-01"], "--until must be after --since"),
    ],
)
async def test_bad_windows_are_refused(
    played: Floor,
    redis_url: str,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    words: str,
) -> None:
    code = await asyncio.to_thread(
        jackpotctl, ["report", "theoretical", "--redis", redis_url, *argv]
    )
    assert code != 0
    captured = capsys.readouterr()
    assert words in captured.err and captured.out == ""


def scrape(port: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            found[f"{sample.name}{{{labels}}}"] = sample.value
    return found


async def test_the_metrics_the_alert_reads(played: Floor, controller: ControllerServer) -> None:
    found = await asyncio.to_thread(scrape, controller.metrics_port)
    group = 'game="caribbean-stud",link_group="floor"'

    def series(name: str, wager: str, paytable: str, line: str = "") -> float:
        labels = group.split(",")
        if line:
            labels.append(f'line="{line}"')
        labels += [f'paytable="{paytable}"', f'wager="{wager}"']
        return found[f"{name}{{{','.join(sorted(labels))}}}"]

    # the retried settlement is not counted again; the voided round was never settled
    assert series("jackpot_theoretical_wagers_total", "progressive", "B") == 27
    assert series("jackpot_theoretical_wagers_total", "bonus", "A") == 9
    hits = "jackpot_theoretical_hits_total"
    assert series(hits, "progressive", "B", "full_house") == 1
    assert series(hits, "progressive", "B", "royal_flush") == 1
    assert series(hits, "progressive", "B", "straight_flush") == 1
    assert series(hits, "progressive", "B", "flush") == 0  # exists from zero
    assert series(hits, "bonus", "A", "full_house") == 1
    assert series(hits, "bonus", "A", "pair_of_tens_or_better") == 0
    probability = "jackpot_theoretical_line_probability"
    assert series(probability, "progressive", "B", "full_house") == 3_744 / HANDS
    assert series(probability, "bonus", "A", "pair_of_tens_or_better") == float(
        Fraction(1_098_240 * 5 // 13, HANDS)
    )


@pytest.mark.parametrize(
    ("kind", "argv", "flags"),
    [
        ("handle", ["--confidence", "99"], "--confidence"),
    ],
)
async def test_the_other_reports_refuse_its_options(
    played: Floor,
    redis_url: str,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    argv: list[str],
    flags: str,
) -> None:
    """They would ignore them and print the whole journal as if it were that day."""
    code = await asyncio.to_thread(jackpotctl, ["report", kind, "--redis", redis_url, *argv])
    assert code != 0
    captured = capsys.readouterr()
    assert f"{flags}: only report theoretical reads them, not report {kind}" in captured.err
    assert captured.out == ""
