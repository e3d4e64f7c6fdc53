"""Staged table changes over real gRPC and Redis (docs/staged-changes.md): a table's new
definition staged for the next hit (or reset) of a meter it feeds waits, visible in
``ListTables``, ``GetTable``, ``tables list``, the meter report and the floor view, while the
tables play on; the settlement that pays that hit applies it in its own step, exactly once
(also under concurrent hits), journaled; a round in flight keeps the definition it was locked
out with (the change is dropped, with why, rather than mixed into it); a table changed or
retired since drops it too; a cancelled change never applies; a table's own certificate
cannot stage. The audit follows it all, and an export holding a staged table change no entry
made is refused by the restore."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from grpc import aio
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.domain.staged_tables import TableStagedCheck
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.store.redis_store import RedisStore
from controller.testing import TestPKI
from controller.web.floor import FloorView
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    progressive_table,
    settle,
)

NEXT_HIT, NEXT_RESET = pb.METER_CHANGE_AT_NEXT_HIT, pb.METER_CHANGE_AT_NEXT_RESET
FAILED = grpc.StatusCode.FAILED_PRECONDITION
KEY = Ed25519PrivateKey.generate()  # the checkpoint key a restore requires


async def audited(controller: ControllerServer) -> None:
    report = await verify(controller.store)
    assert report.ok, report.differences


def staged(
    table_id: str = "t1", at: pb.MeterChangeAt.ValueType = NEXT_RESET, **change: object
) -> pb.UpdateTableRequest:
    """UpdateTable staged at ``at`` of cs-main: by default paytable C instead of B."""
    table = progressive_table(table_id, "floor", "cs-main", str(change.get("paytable", "C")))
    table.seats = int(str(change.get("seats", 7)))
    return pb.UpdateTableRequest(
        table=table, reason="new paytable after the jackpot", at=at, at_meter_id="cs-main"
    )


async def table_of(admin: pb_grpc.AdminServiceAsyncStub, table_id: str) -> pb.Table:
    listed = await admin.ListTables(pb.ListTablesRequest(link_group_id="floor"))
    (table,) = [t for t in listed.tables if t.table_id == table_id]
    return table


def of_type(rows: list[tuple[str, dict[str, str]]], kind: str) -> list[dict[str, str]]:
    return [fields for _, fields in rows if fields["type"] == kind]


async def locked(tables: pb_grpc.TableServiceAsyncStub, request: pb.LockoutRequest) -> None:
    """A lockout, once more after the refusal that tells a controller holding a changed
    table's old definition to read it again (UNAVAILABLE, "retry")."""
    try:
        await tables.Lockout(request)
    except aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.UNAVAILABLE, error.details()
        assert "was changed by an operator" in (error.details() or "")
        await tables.Lockout(request)


async def test_a_table_change_staged_for_the_next_reset_is_applied_once_by_the_hit(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    answer = await admin.UpdateTable(staged())  # in play: no maintenance needed
    change = answer.staged_change
    assert (change.at, change.meter_id) == (NEXT_RESET, "cs-main") and change.staged_seq > 0
    assert change.wagers[0].paytable == "C" and change.by.endswith("/ops")
    assert answer.wagers[0].paytable == "B"  # not yet
    assert (await admin.UpdateTable(staged())).staged_change == change  # a retry: the same
    assert (await table_of(admin, "t1")).staged_change == change
    await expect_refusal(
        admin.UpdateTable(staged(seats=6)),
        FAILED,
        f"table t1 already has a change staged (journal #{change.staged_seq}); cancel it",
    )
    # a 10% hit does not reset the meter: the change waits on; round 1 settles under B
    await tables.Settle(settle("t1", 1, {1: STRAIGHT_FLUSH_HEARTS}, folded=[2]))
    assert (await table_of(admin, "t1")).staged_change == change
    # the 100% award of round 2 (locked out under B) applies it in the settlement's step
    await tables.Lockout(lockout("t1", 2, [1]))
    settled = await tables.Settle(settle("t1", 2, {1: ROYAL_SPADES}))
    assert settled.results[0].meter_after_cents == (await floor.meter()).reset_cents
    now = await table_of(admin, "t1")
    assert now.wagers[0].paytable == "C" and not now.HasField("staged_change")
    rows = await journal(redis_client)
    (applied,) = of_type(rows, "table_change_applied")
    (award,) = [f for f in of_type(rows, "award") if f["round"] == "2"]
    assert applied["staged_seq"] == str(change.staged_seq)
    assert (applied["table"], applied["at_meter"], applied["round"]) == ("t1", "cs-main", "2")
    assert int(applied["seq"]) > int(award["seq"])  # in the same step, after the award
    # round 3 locks out wholly under C (the old definition is refused, read again)
    await locked(tables, lockout("t1", 3, [1]))
    await tables.Settle(settle("t1", 3, {1: ROYAL_SPADES}))
    assert len(of_type(await journal(redis_client), "table_change_applied")) == 1  # once
    await audited(controller)


async def test_a_round_in_flight_at_the_hit_keeps_its_definition_and_the_change_drops(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await floor.register("t2")
    await tables.Lockout(lockout("t2", 1, [1]))  # in flight under paytable B
    change = (await admin.UpdateTable(staged("t2", at=NEXT_HIT))).staged_change
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))  # the hit, at another table
    (dropped,) = of_type(await journal(redis_client), "table_change_dropped")
    assert dropped["staged_seq"] == str(change.staged_seq) and dropped["table"] == "t2"
    assert dropped["reason"].startswith("dropped: round 1 of table t2 was in flight")
    t2 = await table_of(admin, "t2")
    assert t2.wagers[0].paytable == "B" and not t2.HasField("staged_change")
    await tables.Settle(settle("t2", 1, {1: ROYAL_SPADES}))  # settles under B, as locked out
    assert not of_type(await journal(redis_client), "table_change_applied")
    await audited(controller)


async def test_a_table_changed_since_drops_and_a_cancelled_change_never_applies(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    change = (await admin.UpdateTable(staged())).staged_change
    await admin.EnterMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="x"))
    now = progressive_table("t1", "floor", "cs-main", "A")
    await admin.UpdateTable(pb.UpdateTableRequest(table=now, reason="paytable A now"))
    await admin.LeaveMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="x"))
    await locked(tables, lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    (dropped,) = of_type(await journal(redis_client), "table_change_dropped")
    assert dropped["staged_seq"] == str(change.staged_seq)
    assert "was changed since the change was staged" in dropped["reason"]
    assert (await table_of(admin, "t1")).wagers[0].paytable == "A"

    change = (await admin.UpdateTable(staged())).staged_change
    cancel = pb.CancelStagedTableChangeRequest(table_id="t1", reason="withdrawn")
    await expect_refusal(
        admin.CancelStagedTableChange(
            pb.CancelStagedTableChangeRequest(
                table_id="t1", reason="x", staged_seq=change.staged_seq + 9
            )
        ),
        FAILED,
        f"is journal #{change.staged_seq}",
    )
    answer = await admin.CancelStagedTableChange(cancel)
    assert not answer.HasField("staged_change") and answer.wagers[0].paytable == "A"
    assert await admin.CancelStagedTableChange(cancel) == answer  # a retry: the same answer
    await tables.Lockout(lockout("t1", 2, [1]))
    await tables.Settle(settle("t1", 2, {1: ROYAL_SPADES}))
    rows = await journal(redis_client)
    (cancelled,) = of_type(rows, "table_change_cancelled")
    assert cancelled["staged_seq"] == str(change.staged_seq)
    assert not of_type(rows, "table_change_applied")
    assert (await table_of(admin, "t1")).wagers[0].paytable == "A"
    await audited(controller)


async def test_a_table_cannot_stage_or_cancel_a_change(
    channels: Channels, floor: Floor, pki: TestPKI
) -> None:
    as_table = pb_grpc.AdminServiceStub(channels("table", "t1"))
    await expect_refusal(as_table.UpdateTable(staged()), grpc.StatusCode.PERMISSION_DENIED, "")
    await expect_refusal(
        as_table.CancelStagedTableChange(
            pb.CancelStagedTableChangeRequest(table_id="t1", reason="x")
        ),
        grpc.StatusCode.PERMISSION_DENIED,
        "",
    )


async def _tables_and_meter(redis: Redis) -> dict[str, dict[str, str]]:
    group = keys.LinkGroupKeys("floor")
    found = {
        name: {str(k): str(v) for k, v in (await redis.hgetall(key)).items()}
        for name, key in (
            ("t1", group.table("t1")),
            ("t2", group.table("t2")),
            ("cs-main", group.meter("cs-main")),
        )
    }
    for name in ("last_round_ms",):  # the table's clock of its last lockout: not rebuilt
        for fields in found.values():
            fields.pop(name, None)
    return found


async def test_the_audit_and_a_restore_follow_staged_table_changes(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    redis_url: str,
    controller: ControllerServer,
    tmp_path: Path,
) -> None:
    await floor.register("t2")
    await admin.UpdateTable(staged("t1"))  # applied by the royal flush below
    await admin.UpdateTable(staged("t2", paytable="A"))
    await admin.CancelStagedTableChange(
        pb.CancelStagedTableChangeRequest(table_id="t2", reason="withdrawn")
    )
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    waiting = (await admin.UpdateTable(staged("t2", paytable="C"))).staged_change
    await audited(controller)

    before = await _tables_and_meter(redis_client)
    assert before["cs-main"]["staged_tables"] == '["t2"]'
    assert before["t2"]["staged_seq"] == str(waiting.staged_seq)
    await journal_export.export(controller.store, tmp_path, "floor")
    assert verify_export(tmp_path).ok
    path = tmp_path / "floor" / journal_export.SNAPSHOT_FILE
    good = path.read_text()
    # a staged table change no entry staged (or another than staged) is refused
    for kind, record_id, name, value in (
        ("tables", "t1", "staged_change", json.dumps({"at": "hit", "meter": "cs-main"})),
        ("tables", "t1", "staged_seq", "3"),
        ("tables", "t2", "staged_seq", str(waiting.staged_seq + 1)),
        (
            "tables",
            "t2",
            "staged_change",
            before["t2"]["staged_change"].replace("new paytable", "a paytable"),
        ),
        ("meters", "cs-main", "staged_tables", '["t1","t2"]'),
        ("tables", "t1", "staged_cancelled", '{"by":"x"}'),
    ):
        snapshot = json.loads(good)
        snapshot[kind][record_id][name] = value
        path.write_text(json.dumps(snapshot))
        with pytest.raises(journal_export.ExportError, match=name):
            journal_restore.read_export(tmp_path, "floor")
    path.write_text(good)

    await redis_client.flushall()
    store = RedisStore.from_url(redis_url)
    try:
        await journal_restore.restore(
            store, tmp_path, "floor", checkpoint_key=KEY.public_key(), actor="ops", reason="lost"
        )
        assert await _tables_and_meter(redis_client) == before
        report = await verify(store)
        assert report.ok, report.differences
    finally:
        await store.close()


def test_the_audit_names_a_table_change_that_ends_otherwise_than_staged() -> None:
    staged_fields = {"table": "t", "at_meter": "m", "at": "reset", "old_config": "a"}
    staged_fields |= {"config": "b"}
    good = [
        {"seq": "1", "type": "table_registered", "table": "t", "config": "a"},
        {"seq": "2", "type": "table_change_staged", **staged_fields},
        {"seq": "3", "type": "award", "meter": "m", "round": "9"},
        {"seq": "4", "type": "reset", "meter": "m"},
        {"seq": "5", "type": "table_change_applied", "staged_seq": "2", "hit_seq": "3"}
        | {"round": "9", **staged_fields},
    ]
    check = TableStagedCheck("g")
    for fields in good:
        check.add(fields)
    assert check.problems == [] and check.applied == 1
    bad_cases = [
        ([*good[:4], {**good[4], "config": "c"}], "another config"),
        ([*good[:4], {**good[4], "staged_seq": "1"}], "but #2 waits"),
        ([*good[:4], {**good[4], "hit_seq": "4"}], "no award of its meter"),
        ([*good[:3], good[4]], "did not reset the meter"),
        ([good[0], {**good[1], "old_config": "z"}], "another definition"),
        ([*good, {"seq": "6", "type": "table_change_cancelled", "table": "t"}], "none waits"),
        ([*good[:2], {**good[1], "seq": "3"}], "while #2 waits"),
    ]
    for entries, text in bad_cases:
        check = TableStagedCheck("g")
        for fields in entries:
            check.add(fields)
        assert len(check.problems) == 1 and text in check.problems[0], check.problems


async def test_tables_update_at_and_cancel_staged_on_the_command_line(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    operator = ["--controller", f"127.0.0.1:{controller.port}", *pki.client_args("operator", "ops")]

    async def ctl(*argv: str) -> int:
        return await asyncio.to_thread(jackpotctl, [*operator, *argv])

    update = ["tables", "update", "t1", "--paytable", "C", "--reason", "after the jackpot"]
    assert await ctl(*update, "--at", "next-reset") == 0
    out = capsys.readouterr().out
    assert out.startswith("table change staged: t1: caribbean-stud, 7 seats (floor); ")
    assert "progressive B $1.00 -> cs-main; staged for the next reset of cs-main (journal #" in out
    assert "after the jackpot): caribbean-stud, 7 seats (floor); progressive C" in out
    assert await ctl("tables", "list") == 0
    assert "staged for the next reset of cs-main" in capsys.readouterr().out
    assert await ctl("meters", "list") == 0
    assert "; table t1's change waits for its next reset (journal #" in capsys.readouterr().out
    got = await tables.GetTable(pb.GetTableRequest(table_id="t1"))  # the table sees it too
    assert got.table.staged_change.wagers[0].paytable == "C"
    assert got.table.wagers[0].paytable == "B"
    assert await ctl("tables", "cancel-staged", "t1", "--reason", "withdrawn") == 0
    assert capsys.readouterr().out.strip() == "table t1: no change staged"
    assert await ctl("tables", "list") == 0
    assert "staged" not in capsys.readouterr().out


async def test_a_staged_table_change_shows_on_the_floor_view_and_in_the_meter_report(
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
    redis_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    view = FloorView(controller.store)
    (table,) = (await view.snapshot())["tables"]
    assert table["change"] == ""
    seq = (await admin.UpdateTable(staged())).staged_change.staged_seq
    view.forget()
    snapshot = await view.snapshot()
    (table,) = snapshot["tables"]
    expected = (
        f"at the next reset of meter cs-main (journal #{seq}): 7 seats, wagers progressive C, "
        "meters cs-main; staged by jackpot://operator/ops: new paytable after the jackpot"
    )
    assert table["change"] == expected
    (meter,) = snapshot["meters"]
    assert meter["change"] == f"table t1 {expected}"  # the meter whose hit applies it
    argv = ["report", "meters", "--redis", redis_url, "--format", "json"]
    assert await asyncio.to_thread(jackpotctl, argv) == 0
    (line,) = json.loads(capsys.readouterr().out)
    assert line["staged_change"] == f"table t1 {expected}"


async def test_concurrent_hits_end_a_staged_table_change_exactly_once(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    ids = ["t1", "t2", "t3", "t4"]
    for table_id in ids[1:]:
        await floor.register(table_id)
    for table_id in ids:
        await tables.Lockout(lockout(table_id, 1, [1]))
    change = (await admin.UpdateTable(staged("t1", at=NEXT_HIT))).staged_change
    rev_before = await redis_client.hget(keys.LinkGroupKeys("floor").table("t1"), "rev")
    await asyncio.gather(*(tables.Settle(settle(t, 1, {1: ROYAL_SPADES})) for t in ids))
    rows = await journal(redis_client)
    ends = [f for _, f in rows if f["type"] in ("table_change_applied", "table_change_dropped")]
    (end,) = ends  # four hits, one end
    assert end["staged_seq"] == str(change.staged_seq)
    rev_after = await redis_client.hget(keys.LinkGroupKeys("floor").table("t1"), "rev")
    paytable = (await table_of(admin, "t1")).wagers[0].paytable
    if end["type"] == "table_change_applied":  # t1's own settlement came first
        assert end["hit_table"] == "t1" and paytable == "C"
        assert int(rev_after or 0) == int(rev_before or 0) + 1
    else:  # another table's hit, while t1's round was in flight: t1 keeps B
        assert "round 1 of table t1 was in flight" in end["reason"] and paytable == "B"
        assert rev_after == rev_before
    assert not (await table_of(admin, "t1")).HasField("staged_change")
    await audited(controller)


async def test_a_change_of_a_table_retired_meanwhile_is_dropped_and_exported(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
    tmp_path: Path,
) -> None:
    await floor.register("t2")
    await admin.UpdateTable(staged("t2"))
    await admin.EnterMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="x"))
    await admin.RetireTable(pb.RetireTableRequest(table_id="t2", reason="off the floor"))
    await admin.LeaveMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="x"))
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    (dropped,) = of_type(await journal(redis_client), "table_change_dropped")
    assert dropped["reason"] == "dropped: table t2 was retired"
    meter_key = keys.LinkGroupKeys("floor").meter("cs-main")
    assert await redis_client.hget(meter_key, "staged_tables") is None
    await audited(controller)
    await journal_export.export(controller.store, tmp_path, "floor")
    assert verify_export(tmp_path).ok
    journal_restore.read_export(tmp_path, "floor")  # the restore's checks accept it
