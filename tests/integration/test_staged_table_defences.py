"""Staged table changes (docs/staged-changes.md) at their edges: a settlement retried after it
applied its table's change, the definition answered and updated after a hit applied one, the
audit of a change no entry staged, the checks an update shares with a registration, a change
waiting for a meter retired since, and a correction of a round played before a change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc import aio
from grpc_status import rpc_status
from redis.asyncio import Redis

from controller.api import convert
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import codec, keys
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FLUSH_CLUBS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Channels,
    Floor,
    journal,
    lockout,
    progressive_table,
    settle,
)

NEXT_HIT, NEXT_RESET = pb.METER_CHANGE_AT_NEXT_HIT, pb.METER_CHANGE_AT_NEXT_RESET
DEALER = "2D 3H 4S 7C 9S"


def staged(
    paytable: str = "C", at: pb.MeterChangeAt.ValueType = NEXT_RESET
) -> pb.UpdateTableRequest:
    table = progressive_table("t1", "floor", "cs-main", paytable)
    return pb.UpdateTableRequest(table=table, reason="new paytable", at=at, at_meter_id="cs-main")


async def test_a_retry_of_the_settlement_that_applied_a_table_change_is_answered(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
) -> None:
    """The settlement that applies t1's own change loses its answer; the table retries it
    against a controller that reads t1 from Redis (restarted, another replica): the retry
    replays the answer (the round is settled: its revision is not checked again)."""
    await admin.UpdateTable(staged())
    await tables.Lockout(lockout("t1", 1, [1]))
    request = settle("t1", 1, {1: ROYAL_SPADES})
    first = await tables.Settle(request)
    controller.store.tables.forget_table("t1")  # as a restarted controller or another replica
    for _ in range(3):  # the table's retries
        try:
            again = await tables.Settle(request)
            break
        except grpc.aio.AioRpcError as error:
            last = error
    else:
        raise AssertionError(f"the retry is refused for ever: {last.code()} {last.details()}")
    assert list(again.results) == list(first.results)


async def test_get_table_after_a_hit_applied_a_change_answers_the_new_definition(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
) -> None:
    """After the hit applied t1's change (paytable C), the table asks for its definition:
    GetTable answers the one Redis holds (C), not the old one this process cached."""
    await admin.UpdateTable(staged())
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    listed = await admin.ListTables(pb.ListTablesRequest(link_group_id="floor"))
    assert [t.wagers[0].paytable for t in listed.tables] == ["C"]  # Redis holds C
    got = await tables.GetTable(pb.GetTableRequest(table_id="t1"))
    assert got.table.wagers[0].paytable == "C"


async def test_a_change_staged_after_a_hit_applied_one_is_accepted(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
) -> None:
    """After the hit applied t1's change (B -> C), the operator stages C -> B, built on the
    definition ListTables shows: accepted (UpdateTable reads the table fresh, not from a
    cache a hit made stale)."""
    await admin.UpdateTable(staged())
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    answer = await admin.UpdateTable(staged("B", NEXT_HIT))
    assert answer.wagers[0].paytable == "C"
    assert answer.staged_change.wagers[0].paytable == "B"


async def test_the_audit_names_a_table_change_applied_that_no_entry_staged(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    """Redis tampered with: t1 holds a staged change (paytable C) no journal entry staged
    and cs-main lists it. The next hit applies it (journaled table_change_applied naming a
    staging entry that does not exist); the audit, following the journal from t1's
    registration, names that entry."""
    group = keys.LinkGroupKeys("floor")
    old = await redis_client.hget(group.table("t1"), "config")
    game = await redis_client.hget(group.meter("cs-main"), "game")
    new = codec.table_json(convert.table_config(progressive_table("t1", "floor", "cs-main", "C")))
    record = {
        "meter": "cs-main",
        "at": "hit",
        "old_config": old.decode() if isinstance(old, bytes) else old,
        "config": new,
        "game": game.decode() if isinstance(game, bytes) else game,
        "meters": ["cs-main"],
        "by": "nobody",
        "reason": "forged",
    }
    await redis_client.hset(
        group.table("t1"), mapping={"staged_change": json.dumps(record), "staged_seq": "1"}
    )
    await redis_client.hset(group.meter("cs-main"), "staged_tables", '["t1"]')
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    rows = await journal(redis_client)
    assert [f["type"] for _, f in rows if f["type"].startswith("table_change")] == [
        "table_change_applied"
    ]  # the forged change was applied
    assert not [f for _, f in rows if f["type"] == "table_change_staged"]
    report = await verify(controller.store)
    assert not report.ok, "the audit accepts a table change applied that no entry staged"
    assert any("t1" in d and "table_change_applied" in d for d in report.differences)


async def test_a_table_change_not_at_a_meter_of_the_table_names_the_field(
    admin: pb_grpc.AdminServiceAsyncStub, floor: Floor
) -> None:
    """at_meter_id naming a meter t1 does not feed is refused INVALID_ARGUMENT, its
    BadRequest naming the field at_meter_id (as every other refusal of the request does)."""
    request = staged(at=NEXT_HIT)
    request.at_meter_id = "cs-other"
    with pytest.raises(aio.AioRpcError) as caught:
        await admin.UpdateTable(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(cast(grpc.Call, caught.value))
    assert status is not None
    fields = []
    for item in status.details:
        if item.TypeName() == error_details_pb2.BadRequest.DESCRIPTOR.full_name:
            bad = error_details_pb2.BadRequest()
            item.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
    assert fields == ["at_meter_id"], caught.value.details()


async def test_a_staged_change_paying_a_percentage_from_a_must_hit_by_meter_is_refused(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    """RegisterTable refuses a "P% of meter" line paying from a must-hit-by meter (it pays
    only its mystery hit); so is a staged change (and an immediate update): with the mystery
    meter first, paytable B's "100% of meter" royal would pay the whole must-hit-by meter
    once the change is applied."""
    reset = 1_000_000
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-mystery",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=reset,
            rate_of_progression_percent="50",
            kind=pb.METER_KIND_MUST_HIT_BY,
            must_hit_by_cents=reset + 100_000,
        )
    )
    request = staged("B", NEXT_HIT)
    del request.table.wagers[0].meter_ids[:]
    request.table.wagers[0].meter_ids.extend(["cs-mystery", "cs-main"])
    with pytest.raises(aio.AioRpcError) as caught:
        await admin.UpdateTable(request)
    assert "from must-hit-by meter cs-mystery" in (caught.value.details() or "")


async def test_a_change_waiting_for_a_meter_retired_since_is_cancelled_and_restored(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
    tmp_path: Path,
) -> None:
    """A legitimate sequence: t1's change waits for cs-main's next hit; in maintenance t1 is
    updated (immediately) to feed cs-two instead and cs-main is retired into cs-two (neither
    is refused while the change waits); the operator then cancels the orphaned change. The
    audit accepts the journal and the export reads back: the restore's replay of the
    cancellation changes no retired meter."""
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-two",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=1_000_000,
            rate_of_progression_percent="15",
        )
    )
    await admin.UpdateTable(staged("C", NEXT_HIT))
    maintenance = pb.MaintenanceRequest(link_group_id="floor", reason="move t1 to cs-two")
    await admin.EnterMaintenance(maintenance)
    await admin.UpdateTable(
        pb.UpdateTableRequest(
            table=progressive_table("t1", "floor", "cs-two", "B"), reason="feeds cs-two"
        )
    )
    await admin.RetireMeter(
        pb.RetireMeterRequest(
            meter_id="cs-main", to_meter_id="cs-two", reason="link ends", approval="PGCB 1"
        )
    )
    await admin.LeaveMaintenance(maintenance)
    waiting = await admin.ListTables(pb.ListTablesRequest(link_group_id="floor"))
    assert waiting.tables[0].staged_change.meter_id == "cs-main"  # waits for a retired meter
    await admin.CancelStagedTableChange(
        pb.CancelStagedTableChangeRequest(table_id="t1", reason="its meter was retired")
    )
    report = await verify(controller.store)
    assert report.ok, report.differences
    await journal_export.export(controller.store, tmp_path, "floor")
    journal_restore.read_export(tmp_path, "floor")  # not refused (ExportError)


async def test_a_correction_after_a_hit_applied_a_change_uses_the_definition_played(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
) -> None:
    """Round 1 of t1 is played and settled under paytable B (a flush keyed as a pair: paid
    nothing); then a hit at t2 applies t1's staged change (paytable C) and t1 plays round 2.
    A supervisor corrects round 1 to the flush: it is computed under B, the definition the
    round was played under (flush 50 for 1: $50 due), not under the table's definition now,
    C (40 for 1: $40)."""
    await floor.register("t2")
    await admin.UpdateTable(staged("C", NEXT_HIT))
    await tables.Lockout(lockout("t1", 1, [3]))
    await tables.Settle(settle("t1", 1, {3: "3C 5C 8C JC JD"}, dealer=DEALER))
    await tables.Lockout(lockout("t2", 1, [1]))
    await tables.Settle(settle("t2", 1, {1: STRAIGHT_FLUSH_HEARTS}))  # applies t1's change
    listed = await admin.ListTables(pb.ListTablesRequest(link_group_id="floor"))
    assert [t.wagers[0].paytable for t in listed.tables if t.table_id == "t1"] == ["C"]
    # t1 plays on: its lockout with the old definition is refused once, then under C
    with pytest.raises(aio.AioRpcError) as caught:
        await tables.Lockout(lockout("t1", 2, [3]))
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    await tables.Lockout(lockout("t1", 2, [3]))
    await tables.Settle(settle("t1", 2, {3: "3C 5C 8C JC JD"}, dealer=DEALER))
    ann = pb_grpc.AdminServiceStub(channels("supervisor", "ann"))
    request = pb.RequestCorrectionRequest(
        table_id="t1",
        round_id=1,
        seats=[pb.SeatCards(seat=3, cards=FLUSH_CLUBS.split())],
        dealer_cards=DEALER.split(),
        reason="wrong card keyed",
        same_wagers=True,
    )
    requested = await ann.RequestCorrection(request)
    assert (requested.pay_cents, requested.recover_cents) == (5_000, 0)


async def test_a_correction_of_a_round_played_before_two_changes_is_refused(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
) -> None:
    """Round 1 of t1 is played under paytable B; the operator then changes t1 twice (B -> C
    -> B): the definition before the last change is kept, not the one round 1 was played
    under, so its correction is refused, naming why and what to do instead."""
    await tables.Lockout(lockout("t1", 1, [3]))
    await tables.Settle(settle("t1", 1, {3: "3C 5C 8C JC JD"}, dealer=DEALER))
    maintenance = pb.MaintenanceRequest(link_group_id="floor", reason="paytables")
    await admin.EnterMaintenance(maintenance)
    for paytable in ("C", "B"):
        await admin.UpdateTable(
            pb.UpdateTableRequest(
                table=progressive_table("t1", "floor", "cs-main", paytable), reason="paytable"
            )
        )
    await admin.LeaveMaintenance(maintenance)
    ann = pb_grpc.AdminServiceStub(channels("supervisor", "ann"))
    request = pb.RequestCorrectionRequest(
        table_id="t1",
        round_id=1,
        seats=[pb.SeatCards(seat=3, cards=FLUSH_CLUBS.split())],
        dealer_cards=DEALER.split(),
        reason="wrong card keyed",
        same_wagers=True,
    )
    with pytest.raises(aio.AioRpcError) as caught:
        await ann.RequestCorrection(request)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert caught.value.details() == (
        "table t1's definition changed since round 1 was played (rev 0 -> 2): correct it with "
        "a meter adjustment"
    )


async def test_the_definition_a_table_keeps_for_corrections_is_restored_as_the_journal_made_it(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
    tmp_path: Path,
) -> None:
    """After a hit applied t1's change (B -> C), t1 keeps B as the definition before (for a
    correction of a round played under it); the export reads back, and one whose table holds
    another definition before than the journal's (it would price a correction) is refused."""
    await admin.UpdateTable(staged("C", NEXT_HIT))
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    await journal_export.export(controller.store, tmp_path, "floor")
    journal_restore.read_export(tmp_path, "floor")
    path = tmp_path / "floor" / journal_export.SNAPSHOT_FILE
    snapshot = json.loads(path.read_text())
    held = snapshot["tables"]["t1"]
    assert held["prev_rev"] == "0" and held["rev"] == "1"
    assert json.loads(held["prev_config"])["wagers"][0]["paytable"]["name"] == "B"
    held["prev_config"] = held["config"]
    path.write_text(json.dumps(snapshot))
    with pytest.raises(journal_export.ExportError, match="prev_config"):
        journal_restore.read_export(tmp_path, "floor")
