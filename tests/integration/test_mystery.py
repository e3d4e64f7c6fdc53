"""Must-hit-by mystery meters against real Redis (docs/mystery.md).

Over 10,000 cycles the hit points are uniform in (reset, must-hit-by] (chi-square on deciles,
p > 0.001), never above the cap, every revealed hit opens its commitment, and the journal, the
meters and ``audit verify`` agree. Through the real gRPC servicers, the current cycle's secret
(hit point and salt) appears in no API answer, no journal entry before its hit, no controller
log line, no export, and not on /metrics.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import urllib.request
from pathlib import Path

import pytest
from grpc import aio
from redis.asyncio import Redis

from controller.api import convert
from controller.domain import meter_money, mystery
from controller.domain.config import MUST_HIT_BY, LinkGroupConfig, MeterConfig, TableConfig
from controller.domain.digests import lockout_fingerprint
from controller.domain.meter_money import MeterBook
from controller.domain.rounds import Wager
from controller.journal.audit import verify, verify_export
from controller.journal.export import export
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.store.irregularities import Resolution
from controller.store.redis_store import RedisStore
from controller.testing import free_port
from jackpot.errors import InvalidConfiguration, RoundStateError
from jackpot.money import MICROCENTS_PER_CENT
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import RESET_CENTS, lockout

MICRO = MICROCENTS_PER_CENT
SPAN = 5_000  # cents between the reset and the must-hit-by amount in the gRPC test


def chi_square_survival(statistic: float, degrees: int) -> float:
    """P(X >= statistic) for X chi-square with ``degrees`` (a positive integer) degrees of
    freedom, exactly: Q(x; 1) = erfc(sqrt(x/2)), Q(x; 2) = exp(-x/2), and
    Q(x; k + 2) = Q(x; k) + (x/2)^(k/2) exp(-x/2) / Gamma(k/2 + 1)."""
    half = statistic / 2
    k = 2 if degrees % 2 == 0 else 1
    q = math.exp(-half) if k == 2 else math.erfc(math.sqrt(half))
    while k < degrees:
        if half > 0:
            q += math.exp((k / 2) * math.log(half) - half - math.lgamma(k / 2 + 1))
        k += 2
    return q


def test_the_chi_square_survival_function_matches_published_critical_values() -> None:
    # Critical values of the chi-square distribution (NIST/SEMATECH handbook, table 1.3.6.7.4)
    for statistic, degrees, p in [
        (16.919, 9, 0.05),
        (21.666, 9, 0.01),
        (27.877, 9, 0.001),
        (3.841, 1, 0.05),
        (18.307, 10, 0.05),
    ]:
        assert abs(chi_square_survival(statistic, degrees) - p) < 2e-4 * max(1, p * 100)
    assert chi_square_survival(0, 9) == pytest.approx(1)


async def _mystery_floor(store: RedisStore, group: str, span_cents: int) -> TableConfig:
    """A link group with a progressive meter and a must-hit-by meter fed by one table."""
    await store.catalog.create_link_group(LinkGroupConfig(group, "mystery"), actor="t")
    await store.catalog.create_meter(
        MeterConfig(f"{group}-main", group, "caribbean-stud", RESET_CENTS, 150_000), actor="t"
    )
    await store.catalog.create_meter(
        MeterConfig(
            f"{group}-mystery",
            group,
            "caribbean-stud",
            RESET_CENTS,
            500_000,
            100_000,
            kind=MUST_HIT_BY,
            must_hit_by_cents=RESET_CENTS + span_cents,
        ),
        actor="t",
    )
    table = convert.table_config(_table(f"{group}-t", group, [f"{group}-main", f"{group}-mystery"]))
    return await store.tables.register_table(table, actor="t")


def _table(table_id: str, group: str, meter_ids: list[str]) -> pb.Table:
    """A Caribbean Stud table whose $1 progressive wager feeds ``meter_ids``."""
    return pb.Table(
        table_id=table_id,
        game="caribbean-stud",
        seats=7,
        link_group_id=group,
        wagers=[
            pb.TableWager(
                kind=pb.WAGER_KIND_PROGRESSIVE,
                paytable="B",
                min_cents=100,
                max_cents=100,
                meter_ids=meter_ids,
            )
        ],
    )


async def _secret(redis: Redis, group: str, meter_id: str) -> tuple[int, str]:
    fields = await redis.hmget(keys.LinkGroupKeys(group).mystery(meter_id), "hit_cents", "salt")
    return int(str(fields[0])), str(fields[1])


async def test_ten_thousand_cycles_draw_uniform_hit_points_that_open_their_commitments(
    redis_url: str,
) -> None:
    span = 1_000  # cents: (reset, reset + $10]
    cycles = 10_000
    store = RedisStore.from_url(redis_url)
    try:
        group = "mh"
        table = await _mystery_floor(store, group, span)
        meter_id = f"{group}-mystery"
        hits: list[int] = []
        round_id = 0
        while len(hits) < cycles:
            round_id += 1
            # seven wagers of $10: 500 cents each to the mystery meter (50%)
            wagers = tuple(Wager(seat, "progressive", 1_000) for seat in range(1, 8))
            result = await store.rounds.lockout(
                table, round_id, wagers, lockout_fingerprint(wagers)
            )
            for hit in result.mystery_hits:
                assert hit.meter_id == meter_id and hit.amount_cents == hit.hit_cents
                assert RESET_CENTS < hit.hit_cents <= RESET_CENTS + span
                assert mystery.verifies(hit.hit_cents, hit.salt, hit.commitment)
                hits.append(hit.hit_cents)
            meter = await store.catalog.get_meter(meter_id)
            secret, _ = await _secret(store.client, group, meter_id)
            assert meter.amount_microcents < secret * MICRO  # below the hit point, always
        # the journal: each cycle committed before its hit, each hit opens that commitment
        committed: dict[int, str] = {}
        revealed = 0
        async for entry in store.journal.entries(group):
            if entry.type == "mystery_draw":
                committed[int(entry.fields["cycle"])] = entry.fields["commitment"]
            elif entry.type == "mystery_hit":
                cycle = int(entry.fields["cycle"])
                assert committed[cycle] == entry.fields["commitment"]
                assert mystery.verifies(
                    int(entry.fields["hit_cents"]), entry.fields["salt"], committed[cycle]
                )
                revealed += 1
        assert revealed == len(hits) and len(committed) == len(hits) + 1
        report = await verify(store)
        assert report.ok, report.differences[:5]
        # uniform: deciles of the hit point's offset above the reset (1..span)
        counts = [0] * 10
        for point in hits:
            counts[(point - RESET_CENTS - 1) * 10 // span] += 1
        expected = len(hits) / 10
        statistic = sum((count - expected) ** 2 / expected for count in counts)
        p = chi_square_survival(statistic, 9)
        assert p > 0.001, (counts, statistic, p)
        assert max(hits) <= RESET_CENTS + span and min(hits) > RESET_CENTS  # never above the cap
    finally:
        await store.close()


async def test_the_reference_model_moves_the_money_as_the_lua_does(redis_url: str) -> None:
    """Hits, resets from the reserve, the rest of a contribution starting the next cycle, a
    void of a round that hit, and the rejection of a mystery jackpot: to the microcent."""
    store = RedisStore.from_url(redis_url)
    try:
        group = "mm"
        table = await _mystery_floor(store, group, 2_000)
        meter_id = f"{group}-mystery"
        book = MeterBook.created(
            meter_id, reset_cents=RESET_CENTS, rate_ppm=500_000, reserve_rate_ppm=100_000
        )

        async def hit_point() -> int:
            secret, _ = await _secret(store.client, group, meter_id)
            return secret

        book.hit_cents = await hit_point()
        given_by_round: dict[int, list[meter_money.Contribution]] = {}
        lockout_seqs: dict[int, int] = {}
        awards: dict[str, meter_money.MysteryAward] = {}
        won_by_round: dict[int, list[str]] = {}
        for round_id, amounts in enumerate(
            [[700] * 7, [1_500, 300, 9_000], [50] * 7, [12_000], [800, 800], [5_000] * 4], 1
        ):
            wagers = tuple(Wager(s, "progressive", a) for s, a in enumerate(amounts, 1))
            result = await store.rounds.lockout(
                table, round_id, wagers, lockout_fingerprint(wagers)
            )
            # the model learns each next hit point from the journal's reveals, in order
            reveals = [h.hit_cents for h in result.mystery_hits]
            upcoming = iter([*reveals[1:], await hit_point()])
            given = [meter_money.contribute(book, a, upcoming.__next__) for a in amounts]
            assert [h.amount_cents for g in given for h in g.hits] == reveals
            stored = [
                (c.to_meter_microcents, c.to_reserve_microcents)
                for a in result.accepted
                for c in a.contributions
                if c.meter_id == meter_id
            ]
            assert stored == [(g.to_meter, g.to_reserve) for g in given]
            for hit, award in zip(
                result.mystery_hits, [h for g in given for h in g.hits], strict=True
            ):
                assert hit.meter_after_cents == award.after // MICRO
                awards[hit.jackpot_id] = award
                won_by_round.setdefault(round_id, []).append(hit.jackpot_id)
                book.last_hit_seq = hit.journal_seq
            given_by_round[round_id] = given
            lockout_seqs[round_id] = int(
                await store.client.hget(  # type: ignore[arg-type]
                    keys.LinkGroupKeys(group).round(table.table_id, round_id), "lockout_seq"
                )
            )
            state = await store.catalog.get_meter(meter_id)
            assert (state.amount_microcents, state.reserve_microcents) == (
                book.value,
                book.reserve,
            )
        assert len(awards) >= 3  # the amounts above make several hits
        # void the round with a $120 wager: it hit, so only a supervisor voids it, which
        # reverses its hits (to the reserve), and the meter stays at or above the reset
        supervisor = Resolution("jackpot://supervisor/s", "x", "misdeal")
        for round_id in (4, 6):
            with pytest.raises(RoundStateError, match="only a supervisor voids it"):
                await store.rounds.void_round(table, round_id, "misdeal", f"void-{round_id}")
            await store.rounds.void_round(
                table, round_id, "misdeal", f"void-{round_id}", resolution=supervisor
            )
            for jackpot_id in won_by_round.get(round_id, []):
                meter_money.reject_mystery(book, awards.pop(jackpot_id))
                voided = await store.jackpots.get_jackpot(jackpot_id)
                assert (voided.status, voided.void_reason) == ("voided", "misdeal")
            for g in given_by_round[round_id]:
                meter_money.void(book, g, lockout_seqs[round_id])
            state = await store.catalog.get_meter(meter_id)
            assert (state.amount_microcents, state.reserve_microcents) == (
                book.value,
                book.reserve,
            )
            assert state.amount_microcents >= RESET_CENTS * MICRO
        jackpot_id, award = next(iter(awards.items()))
        await store.jackpots.review_jackpot(
            jackpot_id,
            approve=False,
            reviewer="jackpot://supervisor/s",
            reviewer_cert="x",
            note="n",
        )
        meter_money.reject_mystery(book, award)
        state = await store.catalog.get_meter(meter_id)
        assert (state.amount_microcents, state.reserve_microcents) == (book.value, book.reserve)
        report = await verify(store)
        assert report.ok, report.differences
    finally:
        await store.close()


async def test_a_mystery_meter_is_refused_where_it_cannot_work(redis_url: str) -> None:
    with pytest.raises(InvalidConfiguration, match="must be above the reset amount"):
        MeterConfig("m", "g", "caribbean-stud", RESET_CENTS, 1, kind=MUST_HIT_BY)
    with pytest.raises(InvalidConfiguration, match="has no ceiling"):
        MeterConfig(
            "m",
            "g",
            "caribbean-stud",
            RESET_CENTS,
            1,
            ceiling_cents=RESET_CENTS + 5,
            kind=MUST_HIT_BY,
            must_hit_by_cents=RESET_CENTS + 10,
        )
    with pytest.raises(InvalidConfiguration, match="for a must_hit_by meter only"):
        MeterConfig("m", "g", "caribbean-stud", RESET_CENTS, 1, must_hit_by_cents=RESET_CENTS + 1)
    with pytest.raises(InvalidConfiguration, match="kind 'lucky'"):
        MeterConfig("m", "g", "caribbean-stud", RESET_CENTS, 1, kind="lucky")
    store = RedisStore.from_url(redis_url)
    try:
        await _mystery_floor(store, "mr", 100)
        only_mystery = convert.table_config(_table("mr-only", "mr", ["mr-mystery"]))
        with pytest.raises(InvalidConfiguration, match="from must-hit-by meter mr-mystery"):
            await store.tables.register_table(only_mystery, actor="t")
    finally:
        await store.close()


@pytest.fixture
def metrics_port() -> int | None:
    return free_port()


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


async def test_the_secret_is_in_no_answer_log_line_journal_entry_export_or_metric(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.DEBUG)
    store = RedisStore.from_url(controller.config.redis_url)
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="floor"))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-main",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="15",
        )
    )
    created = await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-mystery",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="50",
            kind=pb.METER_KIND_MUST_HIT_BY,
            must_hit_by_cents=RESET_CENTS + SPAN,
        )
    )
    assert created.kind == pb.METER_KIND_MUST_HIT_BY and created.mystery_cycle == 1
    table = _table("t1", "floor", ["cs-main", "cs-mystery"])
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    answers: list[str] = [str(created)]
    hits: list[pb.MysteryHit] = []
    seen_seq = 0
    round_id = 0
    while len(hits) < 3:
        round_id += 1
        secret, salt = await _secret(redis_client, "floor", "cs-mystery")
        reply = await tables.Lockout(lockout("t1", round_id, range(1, 8)))
        hits += reply.mystery_hits
        answers += [str(reply)]
        answers += [str(await admin.GetMeter(pb.GetMeterRequest(meter_id="cs-mystery")))]
        answers += [str(await admin.ListMeters(pb.ListMetersRequest()))]
        answers += [str(await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest()))]
        revealed = {(h.hit_cents, h.salt) for h in reply.mystery_hits}
        now_secret, now_salt = await _secret(redis_client, "floor", "cs-mystery")
        # the journal before the reveal: no entry holds the cycle's salt
        async for entry in store.journal.entries("floor"):
            if entry.seq <= seen_seq:
                continue
            seen_seq = entry.seq
            text = json.dumps(entry.fields)
            assert now_salt not in text
            if (secret, salt) not in revealed:
                assert salt not in text
        for text in answers:
            assert now_salt not in text
            assert not re.search(rf"\b{now_secret}\b", text) or now_secret in {
                h.hit_cents for h in hits
            }
    for hit in hits:
        assert mystery.verifies(hit.hit_cents, hit.salt, hit.commitment)
    secret, salt = await _secret(redis_client, "floor", "cs-mystery")
    await controller.check_state()
    metrics = await asyncio.to_thread(_scrape, controller.metrics_port)
    exported = tmp_path / "export"
    try:
        await export(store, exported, "floor")
        report = await verify(store)
    finally:
        await store.close()
    assert report.ok, report.differences
    assert verify_export(exported).ok
    files = "".join(path.read_text() for path in exported.rglob("*") if path.is_file())
    logs = "\n".join(record.getMessage() for record in caplog.records)
    earlier = {h.hit_cents for h in hits} | {RESET_CENTS + SPAN}
    for text in [*answers, metrics, files, logs, str(report)]:
        assert salt not in text
        assert secret in earlier or not re.search(rf"\b{secret}\b", text)
    with pytest.raises(aio.AioRpcError, match="must be above the reset amount"):
        await admin.CreateMeter(
            pb.CreateMeterRequest(
                meter_id="cs-bad",
                link_group_id="floor",
                game="caribbean-stud",
                reset_cents=RESET_CENTS,
                rate_of_progression_percent="5",
                kind=pb.METER_KIND_MUST_HIT_BY,
            )
        )
