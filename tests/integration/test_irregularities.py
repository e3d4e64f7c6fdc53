"""Irregularities and chip-count reconciliation (§ 639a.8(b)): a dealer's count that differs
from the accepted Progressive Payout Wagers holds the round - its settlement refused with a
message the dealer can act on - until a supervisor confirms or voids it; the seeded
irregularities void the round with their section journaled; every step is one journaled
script, repeated without effect, and counted in Redis for the metrics."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.testing import TestPKI
from jackpot.kinds import IrregularityKind, WagerKind
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.client import ControllerRefused
from table_agent.deck import parse_deck_cards
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.table import RoundState, TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    FULL_HOUSE,
    OPERATOR,
    RESET_CENTS,
    ROYAL_SPADES,
    SUPERVISOR,
    THREE_SEVENS,
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    settle,
    snapshot,
    table_client,
)

FLOOR_SUPERVISOR = f"jackpot://{SUPERVISOR[0]}/{SUPERVISOR[1]}"
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


async def ctl(*argv: str) -> int:
    return await asyncio.to_thread(jackpotctl, list(argv))


def supervisor(channels: Channels) -> pb_grpc.AdminServiceAsyncStub:
    return pb_grpc.AdminServiceStub(channels(*SUPERVISOR))


def count(table_id: str, round_id: int, chips: int) -> pb.ReportChipCountRequest:
    return pb.ReportChipCountRequest(table_id=table_id, round_id=round_id, chips=chips)


def resolve(
    round_id: int, decision: int, note: str = "recounted on camera"
) -> pb.ResolveIrregularityRequest:
    return pb.ResolveIrregularityRequest(
        table_id="t1",
        round_id=round_id,
        decision=pb.IrregularityDecision.ValueType(decision),
        note=note,
    )


async def counters(redis_client: Redis) -> dict[str, str]:
    fields = await redis_client.hgetall(keys.LinkGroupKeys("floor").counters)
    return {str(name): str(value) for name, value in fields.items()}


async def test_a_count_that_differs_holds_the_round_until_a_supervisor_confirms(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
    redis_client: Redis,
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    counted = await tables.ReportChipCount(count("t1", 1, 1))
    assert (counted.chips, counted.accepted, counted.matched) == (1, 2, False)
    assert (await counters(redis_client))["irregularities|chip_count"] == "1"

    before = await snapshot(redis_client)
    cards = settle("t1", 1, {2: ROYAL_SPADES, 6: FULL_HOUSE})
    await expect_refusal(tables.Settle(cards), PRECONDITION, "call a supervisor")
    await expect_refusal(
        tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal")),
        PRECONDITION,
        "call a supervisor",
    )
    assert await snapshot(redis_client) == before  # refusals change nothing

    (held,) = (
        await supervisor(channels).ListIrregularities(pb.ListIrregularitiesRequest(status="open"))
    ).irregularities
    assert (held.table_id, held.round_id, held.kind, held.effect) == ("t1", 1, "chip_count", "held")
    assert (held.chips, held.accepted, held.section) == (1, 2, "§ 639a.8(b)")
    assert held.reported_at_ms > 0 and held.resolved_by == ""

    confirmed = await supervisor(channels).ResolveIrregularity(
        resolve(1, pb.IRREGULARITY_DECISION_CONFIRM)
    )
    assert (confirmed.status, confirmed.resolved_by) == ("confirmed", FLOOR_SUPERVISOR)
    assert confirmed.note == "recounted on camera" and confirmed.resolved_at_ms > 0
    again = await supervisor(channels).ResolveIrregularity(
        resolve(1, pb.IRREGULARITY_DECISION_CONFIRM)
    )
    assert again == confirmed  # the same supervisor again: unchanged

    settled = await tables.Settle(cards)
    royal = next(r for r in settled.results if r.seat == 2)
    assert royal.amount_cents == royal.meter_before_cents > RESET_CENTS

    entries = [fields for _, fields in await journal(redis_client)]
    chip = next(e for e in entries if e["type"] == "chip_count")
    assert (chip["chips"], chip["accepted"], chip["matched"]) == ("1", "2", "false")
    resolved = next(e for e in entries if e["type"] == "irregularity_resolved")
    assert (resolved["decision"], resolved["supervisor"]) == ("confirm", FLOOR_SUPERVISOR)
    assert resolved["note"] == "recounted on camera"
    assert (await verify(controller.store)).ok
    await controller.check_state()
    assert controller.metrics.counted.value("irregularities", "chip_count") == 1


async def test_a_supervisor_voids_a_held_round(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
    redis_client: Redis,
) -> None:
    before = (await floor.meter()).amount_microcents
    await tables.Lockout(lockout("t1", 1, [1, 2, 3]))
    await tables.ReportChipCount(count("t1", 1, 4))
    voided = await supervisor(channels).ResolveIrregularity(
        resolve(1, pb.IRREGULARITY_DECISION_VOID, "a fourth chip was a player's late bet")
    )
    assert (voided.status, voided.resolved_by) == ("voided", FLOOR_SUPERVISOR)
    assert (await floor.meter()).amount_microcents == before  # contributions taken back
    await expect_refusal(
        tables.Settle(settle("t1", 1, {1: ROYAL_SPADES, 2: FULL_HOUSE, 3: THREE_SEVENS})),
        PRECONDITION,
        "was voided",
    )
    await expect_refusal(
        supervisor(channels).ResolveIrregularity(resolve(1, pb.IRREGULARITY_DECISION_CONFIRM)),
        PRECONDITION,
        "already voided",
    )
    entries = [fields for _, fields in await journal(redis_client)]
    assert [e["decision"] for e in entries if e["type"] == "irregularity_resolved"] == ["void"]
    assert sum(e["type"] == "void" for e in entries) == 3
    assert (await verify(controller.store)).ok


async def test_a_count_is_reported_once_and_before_settlement(
    tables: pb_grpc.TableServiceAsyncStub, channels: Channels, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    first = await tables.ReportChipCount(count("t1", 1, 2))
    assert first.matched and first.accepted == 2
    assert await tables.ReportChipCount(count("t1", 1, 2)) == first  # a retry: the same answer
    await expect_refusal(tables.ReportChipCount(count("t1", 1, 3)), PRECONDITION, "counted once")
    await expect_refusal(
        supervisor(channels).ResolveIrregularity(resolve(1, pb.IRREGULARITY_DECISION_CONFIRM)),
        PRECONDITION,
        "nothing to confirm",
    )
    await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: FULL_HOUSE}))
    await tables.Lockout(lockout("t1", 2, [4]))
    await tables.Settle(settle("t1", 2, {4: FULL_HOUSE}))
    await expect_refusal(tables.ReportChipCount(count("t1", 2, 1)), PRECONDITION, "settled")
    await expect_refusal(tables.ReportChipCount(count("t1", 3, 1)), PRECONDITION, "never locked")
    assert "irregularities|chip_count" not in await counters(redis_client)


async def test_only_a_supervisor_resolves_and_says_why(
    tables: pb_grpc.TableServiceAsyncStub, channels: Channels, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [2]))
    await tables.ReportChipCount(count("t1", 1, 0))
    operator = pb_grpc.AdminServiceStub(channels(*OPERATOR))
    await expect_refusal(
        operator.ResolveIrregularity(resolve(1, pb.IRREGULARITY_DECISION_CONFIRM)),
        grpc.StatusCode.PERMISSION_DENIED,
        "supervisor",
    )
    await expect_refusal(
        supervisor(channels).ResolveIrregularity(resolve(1, pb.IRREGULARITY_DECISION_VOID, "")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "note",
    )
    await expect_refusal(
        supervisor(channels).ResolveIrregularity(resolve(1, 0)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "confirm or void",
    )
    table = pb_grpc.TableServiceStub(channels("table", "t1"))
    await expect_refusal(
        table.ReportChipCount(count("t2", 1, 0)), grpc.StatusCode.PERMISSION_DENIED, "own table"
    )


async def test_a_seeded_irregularity_voids_the_round_with_its_section(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
    redis_client: Redis,
) -> None:
    before = (await floor.meter()).amount_microcents
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    request = pb.ReportIrregularityRequest(
        table_id="t1", round_id=1, kind=pb.IRREGULARITY_KIND_DEALER_CARD_EXPOSED
    )
    answer = await tables.ReportIrregularity(request)
    assert (answer.effect, answer.section) == ("void", "§ 639a.13(d)")
    assert answer.kind == pb.IRREGULARITY_KIND_DEALER_CARD_EXPOSED and len(answer.reversed) == 2
    assert "all wagers returned" in answer.reason
    assert (await floor.meter()).amount_microcents == before
    assert await tables.ReportIrregularity(request) == answer  # a retry: the same answer
    entries = [fields for _, fields in await journal(redis_client)]
    (seeded,) = [e for e in entries if e["type"] == "irregularity"]
    assert (seeded["kind"], seeded["effect"], seeded["section"]) == (
        "dealer_card_exposed",
        "void",
        "§ 639a.13(d)",
    )
    assert (await counters(redis_client))["irregularities|dealer_card_exposed"] == "1"
    await expect_refusal(
        tables.ReportIrregularity(
            pb.ReportIrregularityRequest(
                table_id="t1", round_id=1, kind=pb.IRREGULARITY_KIND_SHOE_JAM
            )
        ),
        PRECONDITION,
        "already voided",
    )
    assert (await verify(controller.store)).ok


async def test_irregularities_the_rules_do_not_give_are_refused(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [2]))
    before = await snapshot(redis_client)
    for kind, text in (
        (pb.IRREGULARITY_KIND_CHIP_COUNT, "ReportChipCount"),
        (pb.IRREGULARITY_KIND_UNSPECIFIED, "not an irregularity kind"),
    ):
        await expect_refusal(
            tables.ReportIrregularity(
                pb.ReportIrregularityRequest(table_id="t1", round_id=1, kind=kind)
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            text,
        )
    assert await snapshot(redis_client) == before


async def test_the_agent_reports_through_its_outbox(
    controller: ControllerServer, floor: Floor, channels: Channels, pki: TestPKI, tmp_path: Path
) -> None:
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, Outbox(tmp_path, "t1"))
    wagers = [PlacedWager(seat, WagerKind.PROGRESSIVE, 100) for seat in (2, 6)]
    round_id = agent.new_round()
    await agent.lockout(round_id, wagers)
    counted = await agent.report_chip_count(round_id, 3)
    assert not counted.matched and round_id in agent.held
    report = SettleReport(
        hands={2: parse_deck_cards(ROYAL_SPADES.split()), 6: parse_deck_cards(FULL_HOUSE.split())}
    )
    with pytest.raises(ControllerRefused, match="call a supervisor"):
        await agent.settle(round_id, report)
    assert agent.states[round_id] is RoundState.LOCKED  # to be settled once resolved
    await supervisor(channels).ResolveIrregularity(
        resolve(round_id, pb.IRREGULARITY_DECISION_CONFIRM)
    )
    settled = await agent.settle(round_id, report)
    assert settled.awards and agent.states[round_id] is RoundState.SETTLED

    second = agent.new_round()
    await agent.lockout(second, wagers)
    misdeal = await agent.report_irregularity(second, IrregularityKind.MISDEAL)
    assert misdeal.voided and agent.states[second] is RoundState.VOIDED
    assert misdeal.section == "§ 639a.8(h), § 639a.9(f), § 639a.10(f)"
    assert misdeal.reversed_microcents == 2 * 15 * 1_000_000
    assert agent.outbox is not None
    assert agent.outbox.unfinished_rounds() == [] and agent.outbox.pending() == []
    assert agent.reports[("chip_count", "acknowledged")] == 1
    assert agent.reports[("irregularity", "acknowledged")] == 1
    await client.close()


async def test_jackpotctl_lists_and_resolves_irregularities(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    address = ["--controller", f"127.0.0.1:{controller.port}"]
    floor_supervisor = [*address, *pki.client_args(*SUPERVISOR)]
    auditor = [*address, *pki.client_args("auditor", "lab")]
    for round_id in (1, 2):
        await tables.Lockout(lockout("t1", round_id, [2, 6]))
        await tables.ReportChipCount(count("t1", round_id, 3))

    assert await ctl(*auditor, "irregularities", "list", "--status", "open") == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split() == [
        "TABLE", "ROUND", "KIND", "STATUS", "REPORTED", "(UTC)", "WHAT", "SECTION", "BY"
    ]  # fmt: skip
    assert len(listed) == 3 and "3 chips for 2 wagers" in listed[1] and "§ 639a.8(b)" in listed[1]

    assert await ctl(*auditor, "irregularities", "confirm", "t1", "1", "--note", "ok") == 1
    assert "may not call ResolveIrregularity" in capsys.readouterr().err
    confirm = ["irregularities", "confirm", "t1", "1", "--note", "recounted: 2 chips"]
    assert await ctl(*floor_supervisor, *confirm) == 0
    out = capsys.readouterr().out
    assert f"confirmed by {FLOOR_SUPERVISOR}" in out and '"recounted: 2 chips"' in out
    assert await ctl(*floor_supervisor, "irregularities", "void", "t1", "2", "--note", "x") == 0
    assert "voided" in capsys.readouterr().out

    assert await ctl(*auditor, "irregularities", "list", "--format", "csv") == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["round_id"], r["status"]) for r in rows] == [("1", "confirmed"), ("2", "voided")]
    assert await ctl(*auditor, "irregularities", "list", "--status", "open") == 0
    assert capsys.readouterr().out.strip() == "no open irregularities"
    await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: FULL_HOUSE}))


async def test_an_irregularity_record_of_another_version_is_never_guessed(
    tables: pb_grpc.TableServiceAsyncStub, channels: Channels, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [2]))
    await tables.ReportChipCount(count("t1", 1, 0))
    held = keys.LinkGroupKeys("floor").irregularities
    record = json.loads(str(await redis_client.hget(held, "t1:1:chip_count")))
    await redis_client.hset(held, "t1:1:chip_count", json.dumps({**record, "v": 2}))
    unavailable = grpc.StatusCode.UNAVAILABLE
    await expect_refusal(
        supervisor(channels).ListIrregularities(pb.ListIrregularitiesRequest()),
        unavailable,
        "has schema version 2",
    )
    await expect_refusal(
        supervisor(channels).ResolveIrregularity(resolve(1, pb.IRREGULARITY_DECISION_CONFIRM)),
        unavailable,
        "schema version 2",
    )
