"""Must-hit-by mystery meters under attack (issue 20, item 1; docs/mystery.md).

Real Redis, a real controller over mutual TLS with the test PKI's certificates. Each attack
is bounded in rounds and time; each test also plays the honest case beside it (an ordinary
void of a round that did not hit, a lowering adjustment, a valid reset change).
"""

from __future__ import annotations

import asyncio
import urllib.request

import grpc
import pytest
from grpc import aio
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from controller.ctl.jackpots import slip_lines
from controller.domain.submission import parse_submission
from controller.journal.audit import verify
from controller.runtime.rules_file import apply
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.store.redis_store import RedisStore
from controller.store.scripts import prelude_source
from controller.testing import free_port
from jackpot.errors import InvalidConfiguration
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import PAIR, RESET_CENTS, SUPERVISOR, Channels, lockout, settle
from tests.unit.test_submission import _with_mystery

SPAN = 2_000  # cents between the reset and the must-hit-by amount
MAX_ROUNDS = 200  # every loop below is bounded: a $0.50 contribution a round crosses $20 soon
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def metrics_port() -> int | None:
    return free_port()


async def _mystery_floor(
    admin: pb_grpc.AdminServiceAsyncStub, span_cents: int = SPAN, group: str = "floor"
) -> None:
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id=group))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-main",
            link_group_id=group,
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="15",
        )
    )
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-mystery",
            link_group_id=group,
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="50",
            reserve_rate_percent="10",
            kind=pb.METER_KIND_MUST_HIT_BY,
            must_hit_by_cents=RESET_CENTS + span_cents,
        )
    )
    await admin.RegisterTable(
        pb.RegisterTableRequest(
            table=pb.Table(
                table_id="t1",
                game="caribbean-stud",
                seats=7,
                link_group_id=group,
                wagers=[
                    pb.TableWager(
                        kind=pb.WAGER_KIND_PROGRESSIVE,
                        paytable="B",
                        min_cents=100,
                        max_cents=100,
                        meter_ids=["cs-main", "cs-mystery"],
                    )
                ],
            )
        )
    )


async def _meter(admin: pb_grpc.AdminServiceAsyncStub, meter_id: str = "cs-mystery") -> pb.Meter:
    return await admin.GetMeter(pb.GetMeterRequest(meter_id=meter_id))


async def _secret(redis: Redis, meter_id: str = "cs-mystery") -> int:
    return int(await redis.hget(keys.LinkGroupKeys("floor").mystery(meter_id), "hit_cents"))  # type: ignore[arg-type]


async def _refused(call: object, code: grpc.StatusCode, text: str) -> None:
    with pytest.raises(aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    assert caught.value.code() == code, caught.value.details()
    assert text in (caught.value.details() or ""), caught.value.details()


async def _maintenance(admin: pb_grpc.AdminServiceAsyncStub, enter: bool) -> None:
    request = pb.MaintenanceRequest(link_group_id="floor", reason="mystery change")
    await (admin.EnterMaintenance(request) if enter else admin.LeaveMaintenance(request))


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


async def test_a_table_cannot_keep_a_mystery_hit_by_voiding_its_round(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    redis_client: Redis,
) -> None:
    """The attack: lock out, read mystery_hits, void the round anyway. The table's void of a
    round that won is refused and changes nothing; honest voids of rounds that did not hit
    pass; a supervisor's void reverses the hit, on the jackpot, its slip and the journal."""
    await _mystery_floor(admin)
    supervisor = pb_grpc.AdminServiceStub(channels(*SUPERVISOR))
    hit_round, hit_wagers, ordinary_voids = 0, 0, 0
    for round_id in range(1, MAX_ROUNDS):
        # Odd rounds: one wager, voided when it did not hit (an ordinary void: accepted). The
        # hit point is drawn at random, so the first round may hit (1 in 40 here), and then
        # no ordinary void comes before it.
        seats = range(1, 2) if round_id % 2 else range(1, 8)
        reply = await tables.Lockout(lockout("t1", round_id, seats))
        if reply.mystery_hits:
            hit_round, hit_wagers = round_id, len(seats)
            break
        if round_id % 2:
            await tables.VoidRound(
                pb.VoidRoundRequest(table_id="t1", round_id=round_id, reason="misdeal")
            )
            ordinary_voids += 1
    assert hit_round
    hit = reply.mystery_hits[0]
    before = await _meter(admin)
    await _refused(
        tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=hit_round, reason="misdeal")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "only a supervisor voids it",
    )
    await _refused(
        tables.ReportIrregularity(
            pb.ReportIrregularityRequest(
                table_id="t1", round_id=hit_round, kind=pb.IRREGULARITY_KIND_MISDEAL
            )
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "only a supervisor voids it",
    )
    assert await _meter(admin) == before
    jackpot = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=hit.jackpot_id))
    assert jackpot.status == "pending"

    record = await supervisor.ResolveIrregularity(
        pb.ResolveIrregularityRequest(
            table_id="t1",
            round_id=hit_round,
            decision=pb.IRREGULARITY_DECISION_VOID,
            note="shoe jam after no more bets",
        )
    )
    assert (record.kind, record.status) == ("mystery_hit", "voided")
    jackpot = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=hit.jackpot_id))
    assert jackpot.status == "voided"
    assert jackpot.reviewed_by == "jackpot://supervisor/floor-supervisor"
    assert "won a must-hit-by jackpot" in jackpot.void_reason and jackpot.voided_seq > 0
    assert jackpot.note == "shoe jam after no more bets"
    slip = "\n".join(slip_lines(jackpot))
    assert f"jackpot {hit.jackpot_id} (voided)" in slip
    assert "voided       " in slip and "by jackpot://supervisor/floor-supervisor" in slip
    assert f"round void   journal #{jackpot.voided_seq}: the round won a must-hit-by" in slip
    assert hit.jackpot_id not in {
        j.jackpot_id
        for j in (await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())).jackpots
    }
    after = await _meter(admin)
    assert after.amount_cents < RESET_CENTS + SPAN
    await _refused(
        supervisor.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=hit.jackpot_id, note="x")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "",
    )
    # the round stays voided; the table plays on
    await tables.Lockout(lockout("t1", hit_round + 1, range(1, 8)))
    store = RedisStore.from_url(controller.config.redis_url)
    try:
        kinds = [e.fields.get("type") async for e in store.journal.entries("floor")]
        report = await verify(store)
    finally:
        await store.close()
    assert "jackpot_voided" in kinds
    assert report.ok, report.differences
    await controller.check_state()
    metrics = await asyncio.to_thread(_scrape, controller.metrics_port)
    voided = ordinary_voids + hit_wagers
    assert f'jackpot_void_wagers_total{{table="t1"}} {voided}.0' in metrics
    assert (
        f'jackpot_voided_mystery_hits_total{{meter="cs-mystery"}} {len(reply.mystery_hits)}.0'
        in metrics
    ), [line for line in metrics.splitlines() if "voided" in line]


async def test_update_meter_keeps_reset_below_the_hit_point_and_no_ceiling(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
) -> None:
    await _mystery_floor(admin)
    await _maintenance(admin, enter=True)
    for update, text in (
        (
            pb.UpdateMeterRequest(
                meter_id="cs-mystery", reset_cents=RESET_CENTS + SPAN + 100_000, reason="r"
            ),
            "must be above the reset amount",
        ),
        (
            pb.UpdateMeterRequest(
                meter_id="cs-mystery", reset_cents=RESET_CENTS + SPAN, reason="r"
            ),
            "must be above the reset amount",
        ),
        (
            pb.UpdateMeterRequest(
                meter_id="cs-mystery", ceiling_cents=RESET_CENTS + 700, reason="r"
            ),
            "has no ceiling",
        ),
    ):
        before = await _meter(admin)
        await _refused(admin.UpdateMeter(update), grpc.StatusCode.INVALID_ARGUMENT, text)
        assert await _meter(admin) == before
    # the scripts refuse it too, whatever a caller validated
    store = RedisStore.from_url(controller.config.redis_url)
    try:
        old = await store.catalog.get_meter("cs-mystery")
        group = keys.LinkGroupKeys("floor")
        argv = ["cs-mystery", "floor", old.reset_cents, old.rate_ppm, old.reserve_rate_ppm, 0]
        meter_keys = [
            group.meter("cs-mystery"),
            group.maintenance,
            group.journal,
            group.seq,
            group.mystery("cs-mystery"),
        ]
        for new, text in (
            ([RESET_CENTS + SPAN + 1, old.rate_ppm, old.reserve_rate_ppm, 0], "must be below"),
            ([old.reset_cents, old.rate_ppm, old.reserve_rate_ppm, RESET_CENTS + 5], "no ceiling"),
        ):
            with pytest.raises(InvalidConfiguration, match=text):
                await store.gateway.run(
                    store.gateway.scripts.update_meter,
                    meter_keys,
                    [*argv, *new, "a", "c", "r", "0" * 64],
                )
        # an honest reset change: a new cycle drawn above the new reset, committed
        hit_before = await _secret(redis_client)
        new_reset = RESET_CENTS + SPAN - 10
        updated = await admin.UpdateMeter(
            pb.UpdateMeterRequest(meter_id="cs-mystery", reset_cents=new_reset, reason="r")
        )
        assert (
            updated.mystery_cycle == 2 and updated.mystery_commitment != before.mystery_commitment
        )
        hit = await _secret(redis_client)
        assert max(new_reset, updated.amount_cents) < hit <= RESET_CENTS + SPAN
        draws = [
            e.fields
            async for e in store.journal.entries("floor")
            if e.fields.get("type") == "mystery_draw"
        ]
        assert draws[-1]["restart"] == "update" and draws[-1]["abandoned_cycle"] == "1"
        assert str(hit_before) not in str(draws)
        await _maintenance(admin, enter=False)
        for round_id in range(1, 30):  # it hits within (reset, must-hit-by], never loops
            reply = await tables.Lockout(lockout("t1", round_id, range(1, 8)))
            if reply.mystery_hits:
                break
        assert reply.mystery_hits and reply.mystery_hits[0].hit_cents == hit
        report = await verify(store)
        assert report.ok, report.differences
    finally:
        await store.close()


async def test_an_adjustment_or_a_transfer_never_raises_a_must_hit_by_meter(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
) -> None:
    """The attack: two operators add $5,000 to a $20-span meter; the next $1 wager won 2-6
    hits. Now a raise is refused at the request (and at the approval); a lowering passes; a
    retired meter's money goes to a must-hit-by meter's reserve, not its amount."""
    await _mystery_floor(admin)
    bob = pb_grpc.AdminServiceStub(channels("operator", "bob"))
    before = await _meter(admin)
    await _refused(
        admin.RequestAdjustment(
            pb.RequestAdjustmentRequest(
                meter_id="cs-mystery", amount_cents=500_000, reason="x", reference="y"
            )
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "only its players' contributions raise it",
    )
    assert await _meter(admin) == before
    lowered = await admin.RequestAdjustment(
        pb.RequestAdjustmentRequest(
            meter_id="cs-mystery", amount_cents=-100, reason="x", reference="y"
        )
    )
    await bob.ApproveAdjustment(
        pb.ReviewAdjustmentRequest(adjustment_id=lowered.adjustment_id, note="ok")
    )
    assert (await _meter(admin)).amount_cents == before.amount_cents - 100
    # a retired meter's transfer: to the reserve of the must-hit-by meter
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-old",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="15",
        )
    )
    await admin.RequestAdjustment(
        pb.RequestAdjustmentRequest(
            meter_id="cs-old", amount_cents=500_000, reason="x", reference="z"
        )
    )
    pending = (await admin.ListAdjustments(pb.ListAdjustmentsRequest())).adjustments
    old_raise = next(a for a in pending if a.meter_id == "cs-old" and a.status == "requested")
    await bob.ApproveAdjustment(
        pb.ReviewAdjustmentRequest(adjustment_id=old_raise.adjustment_id, note="ok")
    )
    mystery_before = await _meter(admin)
    await _maintenance(admin, enter=True)
    await admin.RetireMeter(
        pb.RetireMeterRequest(meter_id="cs-old", to_meter_id="cs-mystery", reason="r", approval="a")
    )
    await _maintenance(admin, enter=False)
    after = await _meter(admin)
    assert after.amount_cents == mystery_before.amount_cents
    assert after.reserve_cents == mystery_before.reserve_cents + 500_000
    reply = await tables.Lockout(lockout("t1", 1, [1]))
    assert len(reply.mystery_hits) <= 1  # a $1 wager contributes $0.50: one hit at most


async def test_the_overshoot_pays_exactly_the_cap_and_the_draw_refuses_an_empty_span(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
) -> None:
    """A span of one cent: the hit point is the must-hit-by amount. Every $1 wager carries
    the meter past it by 49 cents of its 50: each contribution hits at exactly the cap, the
    rest starts the next cycle, and the meter is never at or above the cap after a step."""
    await _mystery_floor(admin, span_cents=1)
    cap = RESET_CENTS + 1
    assert await _secret(redis_client) == cap
    for round_id in range(1, 6):
        reply = await tables.Lockout(lockout("t1", round_id, range(1, 8)))
        assert reply.mystery_hits and {h.amount_cents for h in reply.mystery_hits} == {cap}
        meter = await _meter(admin)
        assert meter.amount_cents < cap
    # the dealer finds no irregularity after all: the round that won settles as any round
    await _refused(
        tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "only a supervisor voids it",
    )
    settled = await tables.Settle(settle("t1", 1, {1: PAIR}, folded=range(2, 8)))
    assert settled.round_id == 1
    draw = (
        prelude_source()
        + "\nreturn mystery_draw(ARGV[1], 'm', 1, tonumber(ARGV[2]), tonumber(ARGV[3]))"
    )
    for reset, must_hit_by in ((cap, cap), (cap + 1, cap), (cap, cap + 2**48)):
        with pytest.raises(ResponseError, match="no hit point of must-hit-by meter m lies in"):
            await redis_client.eval(draw, 0, "0" * 64, reset, must_hit_by)
    assert await redis_client.eval(draw, 0, "0" * 64, cap - 1, cap) == cap


async def test_a_rules_submission_creates_its_must_hit_by_meter(redis_url: str) -> None:
    """Declared in the Rules Submission, a must-hit-by meter is created as one (cycle 1, a
    committed hit point in (reset, must-hit-by]), not as a progressive meter."""
    store = RedisStore.from_url(redis_url)
    try:
        await apply(store, parse_submission(_with_mystery()))
        meter = await store.catalog.get_meter("cs-mystery")
        assert (meter.kind, meter.must_hit_by_cents, meter.ceiling_cents) == (
            "must_hit_by",
            1_250_000,
            0,
        )
        secret = keys.LinkGroupKeys("floor").mystery("cs-mystery")
        hit = int(str(await store.client.hget(secret, "hit_cents")))
        assert meter.reset_cents < hit <= meter.must_hit_by_cents
        await apply(store, parse_submission(_with_mystery()))  # at every start: idempotent
        assert (
            await store.catalog.get_meter("cs-mystery")
        ).mystery_commitment == meter.mystery_commitment
    finally:
        await store.close()


async def test_a_supervisor_voiding_a_held_round_that_won_reverses_its_hits(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
) -> None:
    """A round that won and whose chip count then differed: the supervisor's void of the held
    round reverses its hits too."""
    await _mystery_floor(admin, span_cents=1)  # every round hits
    supervisor = pb_grpc.AdminServiceStub(channels(*SUPERVISOR))
    reply = await tables.Lockout(lockout("t1", 1, range(1, 8)))
    assert reply.mystery_hits
    counted = await tables.ReportChipCount(
        pb.ReportChipCountRequest(table_id="t1", round_id=1, chips=6)
    )
    assert not counted.matched
    record = await supervisor.ResolveIrregularity(
        pb.ResolveIrregularityRequest(
            table_id="t1", round_id=1, decision=pb.IRREGULARITY_DECISION_VOID, note="one chip short"
        )
    )
    assert (record.kind, record.status) == ("chip_count", "voided")
    for hit in reply.mystery_hits:
        jackpot = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=hit.jackpot_id))
        assert jackpot.status == "voided" and "chip count differed" in jackpot.void_reason
    assert not (await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())).jackpots
    store = RedisStore.from_url(controller.config.redis_url)
    try:
        report = await verify(store)
    finally:
        await store.close()
    assert report.ok, report.differences
