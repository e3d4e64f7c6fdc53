"""Gaming days closed against the play that made them: a real controller and a real Redis whose
wall clock the test moves (the journal's times are Redis's), three gaming days in New York
from 06:00 with the spring daylight-saving change inside the second (23 hours), each day's
statement checked against a tally the test keeps of what it wagered and was paid and of the
meter money that follows; then the close is idempotent, verified, audited, reproduced from an
export, and refused for a day not ended, a tampered meter, a deleted entry and a different
statement of a closed day."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.actions import day_close as day_close_module
from controller.ctl.main import main as jackpotctl
from controller.domain.gaming_day import GamingDay
from controller.store import keys
from controller.store.redis_store import RedisStore
from controller.testing import RedisServer
from controller.testing.clock import ShiftedClock
from controller.web.floor import FloorView
from jackpot.errors import InvalidArgument, StoreUnavailable
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FULL_HOUSE,
    HIGH_CARD,
    PAIR,
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    TWO_PAIR,
    Floor,
    lockout,
    settle,
)

MICRO = 1_000_000
ZONE = ["--zone", "America/New_York", "--day-start", "6"]
KEY = Ed25519PrivateKey.generate()


def _ms(text: str) -> int:
    """``2026-03-08 09:30`` (UTC) in ms since the Unix epoch."""
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp()) * 1000


@pytest.fixture(scope="module")
def clock(tmp_path_factory: pytest.TempPathFactory) -> ShiftedClock:
    return ShiftedClock(tmp_path_factory.mktemp("clock"))


@pytest.fixture(scope="module")
def redis_server(
    tmp_path_factory: pytest.TempPathFactory, clock: ShiftedClock
) -> Iterator[RedisServer]:
    """This module's Redis runs on the test's clock (the conftest's fixture, overridden)."""
    with RedisServer(tmp_path_factory.mktemp("redis"), environment=clock.environment) as server:
        yield server


@pytest.fixture
def key_files(tmp_path: Path) -> tuple[Path, Path]:
    private = tmp_path / "checkpoint.key"
    private.write_bytes(
        KEY.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public = tmp_path / "checkpoint.pub"
    public.write_bytes(
        KEY.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


@dataclass
class Tally:
    """What the test wagered and was paid, and the meter money that follows from it, kept
    apart from the controller: $1 wagers, 15% to the meter and 5% to the reserve."""

    meter: int = RESET_CENTS * MICRO
    reserve: int = 0
    wagers: int = 0
    percent_cents: int = 0
    fixed_cents: int = 0
    seed: int = RESET_CENTS * MICRO  # the meter created on the first day: the operator's seed
    hits: int = 0
    days: dict[date, dict[str, int]] = field(default_factory=dict)

    def close(self, day: date) -> None:
        self.days[day] = {
            "wagers": self.wagers,
            "percent_cents": self.percent_cents,
            "fixed_cents": self.fixed_cents,
            "seed": self.seed,
            "hits": self.hits,
            "closing": self.meter + self.reserve,
        }
        self.wagers = self.percent_cents = self.fixed_cents = self.seed = self.hits = 0


async def _play(
    tables: pb_grpc.TableServiceAsyncStub, tally: Tally, round_id: int, hands: dict[int, str]
) -> None:
    await tables.Lockout(lockout("t1", round_id, list(hands)))
    tally.wagers += len(hands)
    tally.meter += len(hands) * 15 * MICRO
    tally.reserve += len(hands) * 5 * MICRO
    answer = await tables.Settle(settle("t1", round_id, hands))
    for result in answer.results:  # settlement order: seat N down to 1
        if result.award_kind == pb.AWARD_KIND_PERCENT_OF_METER:
            share = 100 if result.hand == "royal_flush" else 10
            amount = tally.meter // MICRO * share // 100
            assert result.amount_cents == amount
            tally.percent_cents += amount
            tally.hits += 1
            tally.meter -= amount * MICRO
            if share == 100:
                topup = RESET_CENTS * MICRO - tally.meter
                from_reserve = min(tally.reserve, topup)
                tally.reserve -= from_reserve
                tally.seed += topup - from_reserve
                tally.meter = RESET_CENTS * MICRO
        elif result.amount_cents:
            tally.fixed_cents += result.amount_cents


DAYS = {  # gaming day: when (UTC) its rounds are played, and their hands
    date(2026, 3, 6): ("2026-03-06 23:30", [{1: HIGH_CARD, 2: FULL_HOUSE}, {1: PAIR, 2: TWO_PAIR}]),
    # 05:30 EDT on the 8th, after the change at 07:00 UTC: still gaming day 7 March (23 h)
    date(2026, 3, 7): (
        "2026-03-08 09:30",
        [{1: STRAIGHT_FLUSH_HEARTS, 2: ROYAL_SPADES, 3: HIGH_CARD}, {1: HIGH_CARD}],
    ),
    date(2026, 3, 8): ("2026-03-08 10:01", [{1: PAIR, 2: HIGH_CARD, 3: FULL_HOUSE}]),
}


async def _play_days(
    clock: ShiftedClock, admin: pb_grpc.AdminServiceAsyncStub, tables: pb_grpc.TableServiceAsyncStub
) -> Tally:
    clock.set(_ms("2026-03-06 15:00"))
    await Floor(admin).create(reserve_rate="5")
    tally = Tally()
    round_id = 0
    for day, (when, rounds) in DAYS.items():
        clock.set(_ms(when))
        for hands in rounds:
            round_id += 1
            await _play(tables, tally, round_id, hands)
        tally.close(day)
    clock.set(_ms("2026-03-09 12:00"))  # every one of them ended
    return tally


async def ctl(argv: list[str]) -> int:
    """``jackpotctl`` in a thread (it runs its own event loop)."""
    return await asyncio.to_thread(jackpotctl, argv)


async def _close(
    capsys: pytest.CaptureFixture[str], redis_url: str, day: str, key: Path, *more: str
) -> tuple[int, str, str]:
    code = await ctl(
        ["day", "close", day, "--redis", redis_url, *ZONE, "--signing-key", str(key), *more]
    )
    out, err = capsys.readouterr()
    return code, out, err


async def test_three_gaming_days_balance_against_the_tally(
    clock: ShiftedClock,
    admin: pb_grpc.AdminServiceAsyncStub,
    tables: pb_grpc.TableServiceAsyncStub,
    redis_url: str,
    key_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tally = await _play_days(clock, admin, tables)
    private, public = key_files
    opening = 0  # the meter is created on the first day
    statements = {}
    for day in DAYS:
        code, out, err = await _close(
            capsys, redis_url, day.isoformat(), private, "--format", "json"
        )
        assert code == 0, err
        assert f"gaming day {day}" in err and "America/New_York" in err
        [document] = json.loads(out)
        statements[day] = document
        [meter] = document["meters"]
        expected = tally.days[day]
        assert document["hours"] == (23 if day == date(2026, 3, 7) else 24)
        assert meter["opening_microcents"] == opening
        assert meter["handle_count"] == expected["wagers"]
        assert meter["contributions_microcents"] == expected["wagers"] * 20 * MICRO
        assert meter["percent_cents"] == expected["percent_cents"]
        assert meter["seed_microcents"] == expected["seed"]
        assert meter["hits"] == expected["hits"]
        assert meter["closing_microcents"] == expected["closing"]
        [table] = document["tables"]
        assert table["fixed_cents"] == expected["fixed_cents"]
        assert table["wager_count"] == expected["wagers"]
        opening = expected["closing"]
    assert tally.days[date(2026, 3, 7)]["seed"] > 0  # the royal's reset took operator money
    assert tally.days[date(2026, 3, 7)]["hits"] == 2  # the straight flush and the royal
    # Closing again answers the same entry; the statement is the same.
    code, out, err = await _close(capsys, redis_url, "2026-03-07", private, "--format", "json")
    assert code == 0 and json.loads(out) == [statements[date(2026, 3, 7)]]
    assert "journaled as #" in err
    seq_said = err.splitlines()[-1].partition("journaled as ")[2]
    assert seq_said.startswith("#")
    # Verified, audited, and reproduced from an export alone.
    assert await ctl(["day", "verify", "2026-03-07", "--redis", redis_url,
                       "--checkpoint-key", str(public)]) == 0  # fmt: skip
    assert "OK" in capsys.readouterr().out
    assert (
        await ctl(["audit", "verify", "--redis", redis_url, "--checkpoint-key", str(public)]) == 0
    )
    assert "OK" in capsys.readouterr().out
    export = tmp_path / "export"
    assert await ctl(["journal", "export", "--redis", redis_url, "--dir", str(export)]) == 0
    capsys.readouterr()
    output = tmp_path / "day.json"
    assert await ctl(["day", "close", "2026-03-07", "--file", str(export), *ZONE,
                       "--format", "json", "--output", str(output)]) == 0  # fmt: skip
    assert "the export's journal closed it at #" in capsys.readouterr().err
    assert json.loads(output.read_text()) == [statements[date(2026, 3, 7)]]
    assert await ctl(["day", "verify", "2026-03-07", "--file", str(export),
                       "--checkpoint-key", str(public)]) == 0  # fmt: skip
    assert (
        await ctl(["audit", "verify", "--file", str(export), "--checkpoint-key", str(public)]) == 0
    )
    capsys.readouterr()
    # Restore carries the closed days: Redis lost everything, restored from the export, and
    # the close of a closed day still answers its entry.
    client = Redis.from_url(redis_url, decode_responses=True)
    try:
        await client.flushall()
        restore = ["restore", "--redis", redis_url, "--from", str(export), "--link-group", "floor"]
        code = await ctl([*restore, "--reason", "test", "--checkpoint-key", str(public)])
        assert code == 0, capsys.readouterr().err
        assert await client.hlen(keys.LinkGroupKeys("floor").days_closed) == 3
    finally:
        await client.aclose()
    capsys.readouterr()
    code, out, err = await _close(capsys, redis_url, "2026-03-07", private, "--format", "json")
    assert code == 0 and json.loads(out) == [statements[date(2026, 3, 7)]], err
    assert seq_said in err
    # CSV: one row per meter and table, then the total.
    assert await ctl(["day", "close", "2026-03-08", "--file", str(export), *ZONE,
                       "--format", "csv"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gaming_day,zone,link_group,line,")
    assert [line.split(",")[3] for line in lines[1:]] == ["meter", "table", "total"]
    # A report over a gaming day says which day, hours and zone it counted.
    assert await ctl(["report", "meters", "--redis", redis_url, "--day", "2026-03-07", *ZONE,
                       "--format", "json"]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert "gaming day 2026-03-07 (23 hours), from 06:00 in America/New_York" in err
    [row] = json.loads(out)
    assert row["handle_count"] == tally.days[date(2026, 3, 7)]["wagers"]


async def test_a_day_not_ended_a_tampered_meter_and_a_deleted_entry_are_refused(
    clock: ShiftedClock,
    admin: pb_grpc.AdminServiceAsyncStub,
    tables: pb_grpc.TableServiceAsyncStub,
    redis_url: str,
    key_files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    await _play_days(clock, admin, tables)
    private, _ = key_files
    # The floor view names each hit's gaming day: both of 05:30 EDT on 8 March are the 7th's.
    store = RedisStore.from_url(redis_url)
    try:
        view = await FloorView(store, GamingDay("America/New_York", 6)).snapshot()
        assert {(j["hand"], j["gaming_day"]) for j in view["pending"]} == {
            ("straight_flush", "2026-03-07"),
            ("royal_flush", "2026-03-07"),
        }
        assert all(not j["gaming_day"] for j in (await FloorView(store).snapshot())["pending"])
    finally:
        await store.close()
    client = Redis.from_url(redis_url, decode_responses=True)
    group = keys.LinkGroupKeys("floor")
    try:
        code, _, err = await _close(capsys, redis_url, "2026-03-09", private)
        assert code == 1 and "gaming day 2026-03-09 has not ended" in err
        await client.hincrby(group.meter("cs-main"), "value_microcents", 7)
        code, _, err = await _close(capsys, redis_url, "2026-03-06", private)
        assert code == 1
        assert "gaming day 2026-03-06 is not closed, it does not balance" in err
        assert "meter cs-main: its value is" in err and "(difference $0.00 +7u)" in err
        assert await client.hlen(group.days_closed) == 0  # nothing written
        await client.hincrby(group.meter("cs-main"), "value_microcents", -7)
        code, _, err = await _close(capsys, redis_url, "2026-03-06", private)
        assert code == 0, err
        # A different statement for the closed day (another definition of the day) is refused.
        chicago = ["--zone", "America/Chicago", "--day-start", "6"]
        code = await ctl(["day", "close", "2026-03-06", "--redis", redis_url, *chicago,
                          "--signing-key", str(private)])  # fmt: skip
        assert code == 1
        assert "was closed at journal #" in capsys.readouterr().err
        # A verify with another key is a difference.
        other = key_files[1].parent / "other.pub"
        other.write_bytes(
            Ed25519PrivateKey.generate()
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        assert await ctl(["day", "verify", "2026-03-06", "--redis", redis_url,
                           "--checkpoint-key", str(other)]) == 1  # fmt: skip
        assert "not by a key given" in capsys.readouterr().out
        # An entry deleted from the journal: the close names it.
        rows = await client.xrange(group.journal) or []
        [entry_id] = [str(i) for i, f in rows if (f or {}).get("seq") == "5"]
        await client.xdel(group.journal, entry_id)
        code, _, err = await _close(capsys, redis_url, "2026-03-07", private)
        assert code == 1 and "journal entry #5 is missing" in err
    finally:
        await client.aclose()


async def test_the_close_step_refuses_a_malformed_day_and_a_journal_that_moved_on(
    clock: ShiftedClock, admin: pb_grpc.AdminServiceAsyncStub, redis_url: str
) -> None:
    clock.set(_ms("2026-03-06 15:00"))
    await Floor(admin).create(tables=())
    clock.set(_ms("2026-03-09 12:00"))
    store = RedisStore.from_url(redis_url)
    try:
        seq = (await store.journal.audit_snapshot("floor")).seq
        ended = _ms("2026-03-07 11:00")

        def fields(head: int) -> list[object]:
            return ["ab" * 32, ended, head, "{}", "{}", "", "", "UTC", 0, head, "test"]

        with pytest.raises(InvalidArgument, match="a gaming day is YYYY-MM-DD"):
            await store.journal.close_day("floor", "7 March", fields(seq))
        with pytest.raises(StoreUnavailable, match="moved on"):
            await store.journal.close_day("floor", "2026-03-06", fields(seq - 1))
        assert await store.journal.days_closed("floor") == {}
        closed = await store.journal.close_day("floor", "2026-03-06", fields(seq))
        assert closed == seq + 1
        assert await store.journal.close_day("floor", "2026-03-06", fields(seq)) == closed
        assert await store.journal.days_closed("floor") == {"2026-03-06": (closed, "ab" * 32)}
    finally:
        await store.close()


async def test_a_close_while_play_goes_on_reads_only_the_new_entries_and_succeeds(
    clock: ShiftedClock,
    admin: pb_grpc.AdminServiceAsyncStub,
    tables: pb_grpc.TableServiceAsyncStub,
    redis_url: str,
    key_files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    tally = await _play_days(clock, admin, tables)
    private = serialization.load_pem_private_key(key_files[0].read_bytes(), password=None)
    assert isinstance(private, Ed25519PrivateKey)
    store = RedisStore.from_url(redis_url)
    step = store.journal.close_day
    rounds = iter(range(100, 103))

    async def busy_floor(group: str, day: str, fields: Sequence[Any]) -> int:
        round_id = next(rounds, None)
        if round_id is not None:  # a table plays between the read and the close step
            await _play(tables, Tally(), round_id, {1: HIGH_CARD})
        return await step(group, day, fields)

    store.journal.close_day = busy_floor  # type: ignore[method-assign,assignment]
    try:
        closed = await day_close_module.close(
            store, "floor", GamingDay("America/New_York", 6), date(2026, 3, 7), private, "test"
        )
    finally:
        await store.close()
    assert next(rounds, None) is None  # refused three times: the journal moved on
    [meter] = closed.document["meters"]
    assert meter["closing_microcents"] == tally.days[date(2026, 3, 7)]["closing"]
    public = ["--checkpoint-key", str(key_files[1])]
    assert await ctl(["day", "verify", "2026-03-07", "--redis", redis_url, *public]) == 0
    assert await ctl(["audit", "verify", "--redis", redis_url, *public]) == 0, capsys.readouterr()


async def test_a_day_does_not_open_from_an_altered_checkpoint(
    clock: ShiftedClock,
    admin: pb_grpc.AdminServiceAsyncStub,
    tables: pb_grpc.TableServiceAsyncStub,
    redis_url: str,
    key_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await _play_days(clock, admin, tables)
    private, _ = key_files
    export = str(tmp_path / "export")
    assert await ctl(["journal", "export", "--redis", redis_url, "--dir", export]) == 0
    trim = ["journal", "trim", "--redis", redis_url, "--retention-hours", "0"]
    assert await ctl([*trim, "--signing-key", str(private)]) == 0
    clock.set(_ms("2026-03-09 12:30"))
    await _play(tables, Tally(), 50, {1: HIGH_CARD})
    clock.set(_ms("2026-03-10 12:00"))
    client = Redis.from_url(redis_url, decode_responses=True)
    group = keys.LinkGroupKeys("floor")
    try:
        real = str(await client.hget(group.checkpoint, "value:cs-main"))
        # $5,000 more in the checkpoint and on the meter: the sums agree, the signature not
        await client.hset(group.checkpoint, "value:cs-main", str(int(real) + 500_000 * MICRO))
        await client.hincrby(group.meter("cs-main"), "value_microcents", 500_000 * MICRO)
        code, _, err = await _close(capsys, redis_url, "2026-03-09", private)
        assert code == 1 and "checkpoint" in err, err
        await client.hset(group.checkpoint, "value:cs-main", real)
        await client.hincrby(group.meter("cs-main"), "value_microcents", -500_000 * MICRO)
        code, _, err = await _close(capsys, redis_url, "2026-03-09", private)
        assert code == 0, err
    finally:
        await client.aclose()
