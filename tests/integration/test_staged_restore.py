"""Staged changes and wound-down meters in the offline audit and the restore
(docs/staged-changes.md).

A link group with a change applied by a 100% award, one applied by a must-hit-by hit, one
cancelled, one still waiting and a wound-down meter is exported, Redis is flushed, and the
restore gives every meter back as it was, the waiting change included; the next hit applies
it, and the audit verifies the continued journal. An export whose meter holds a staged change
no entry staged, or whose journal applies a change other than the one staged, is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.domain.staged import StagedCheck
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.store.redis_store import RedisStore
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    RESET_CENTS,
    ROYAL_SPADES,
    Floor,
    lockout,
    progressive_table,
    settle,
)

KEY = Ed25519PrivateKey.generate()  # the checkpoint key a restore requires
NEXT_HIT, NEXT_RESET = pb.METER_CHANGE_AT_NEXT_HIT, pb.METER_CHANGE_AT_NEXT_RESET


def change(
    meter_id: str, at: pb.MeterChangeAt.ValueType, reset_cents: int
) -> pb.UpdateMeterRequest:
    return pb.UpdateMeterRequest(
        meter_id=meter_id, reset_cents=reset_cents, reason="Gazette 3.15.3", at=at
    )


async def _meters(redis: Redis) -> dict[str, dict[str, str]]:
    """Every meter hash of the group as Redis holds it, but a must-hit-by meter's cycle (a
    restore starts a new one) and its statistics counters (not rebuilt)."""
    group = keys.LinkGroupKeys("floor")
    found: dict[str, dict[str, str]] = {}
    for meter_id in ("cs-main", "cs-mystery", "cs-old"):
        fields = {str(k): str(v) for k, v in (await redis.hgetall(group.meter(meter_id))).items()}
        for name in ("mystery_cycle", "mystery_commitment"):
            fields.pop(name, None)
        found[meter_id] = fields
    return found


async def _play_until_a_mystery_hit(tables: pb_grpc.TableServiceAsyncStub, round_id: int) -> int:
    while True:
        round_id += 1
        answer = await tables.Lockout(lockout("t1", round_id, [1, 2, 3, 4, 5, 6, 7]))
        if answer.mystery_hits:
            return round_id


async def test_a_restore_carries_staged_applied_cancelled_and_wound_down_meters(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
    redis_url: str,
    controller: ControllerServer,
    tmp_path: Path,
) -> None:
    await Floor(admin).create(tables=())
    for meter_id, kind in (("cs-mystery", pb.METER_KIND_MUST_HIT_BY), ("cs-old", 0)):
        await admin.CreateMeter(
            pb.CreateMeterRequest(
                meter_id=meter_id,
                link_group_id="floor",
                game="caribbean-stud",
                reset_cents=RESET_CENTS,
                rate_of_progression_percent="50",
                kind=kind,  # type: ignore[arg-type]
                must_hit_by_cents=RESET_CENTS + 2_000 if kind else 0,
            )
        )
    table = progressive_table("t1", "floor", "cs-main")
    table.wagers[0].meter_ids.append("cs-mystery")
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    # applied by a 100% award, by a must-hit-by hit; one cancelled; one waiting
    await admin.UpdateMeter(change("cs-main", NEXT_RESET, RESET_CENTS + 1_000))
    await admin.UpdateMeter(change("cs-mystery", NEXT_HIT, RESET_CENTS + 500))
    round_id = await _play_until_a_mystery_hit(tables, 0)
    round_id += 1
    await tables.Lockout(lockout("t1", round_id, [1]))
    await tables.Settle(settle("t1", round_id, {1: ROYAL_SPADES}))
    await admin.UpdateMeter(change("cs-main", NEXT_HIT, RESET_CENTS + 2_000))
    await admin.CancelStagedMeterChange(
        pb.CancelStagedMeterChangeRequest(meter_id="cs-main", reason="withdrawn")
    )
    waiting = await admin.UpdateMeter(change("cs-main", NEXT_RESET, RESET_CENTS + 3_000))
    # a wound-down meter (in maintenance)
    await admin.EnterMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="end"))
    await admin.WindDownMeter(pb.WindDownMeterRequest(meter_id="cs-old", reason="link ends"))
    await admin.LeaveMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="done"))
    report = await verify(controller.store)
    assert report.ok, report.differences

    before = await _meters(redis_client)
    assert before["cs-main"]["staged_seq"] == str(waiting.staged_change.staged_seq)
    assert before["cs-old"]["rate_ppm"] == "0"
    await journal_export.export(controller.store, tmp_path, "floor")
    assert verify_export(tmp_path).ok
    path = tmp_path / "floor" / journal_export.SNAPSHOT_FILE
    good = path.read_text()
    # a staged change, a cancellation or a wind-down no entry made is refused
    for meter_id, name, value, message in (
        ("cs-mystery", "staged_change", '{"at":"hit"}', "staged_change"),
        ("cs-old", "staged_change", '{"at":"hit"}', "staged_change"),  # never staged
        ("cs-mystery", "staged_cancelled", "{}", "staged_cancelled"),  # never cancelled
        ("cs-main", "wound_down_seq", "5", "wound_down_seq"),  # never wound down
        ("cs-mystery", "staged_seq", "3", "staged_seq"),
        ("cs-main", "staged_seq", "2", "staged_seq"),
        ("cs-old", "wound_down_seq", "", "wound_down_seq"),
        ("cs-old", "rate_ppm", "500000", "rate_ppm"),
        ("cs-main", "reset_cents", str(RESET_CENTS), "reset_cents"),
    ):
        snapshot = json.loads(good)
        snapshot["meters"][meter_id][name] = value
        path.write_text(json.dumps(snapshot))
        with pytest.raises(journal_export.ExportError, match=message):
            journal_restore.read_export(tmp_path, "floor")
    path.write_text(good)

    await redis_client.flushall()
    store = RedisStore.from_url(redis_url)
    try:
        await journal_restore.restore(
            store, tmp_path, "floor", checkpoint_key=KEY.public_key(), actor="ops", reason="lost"
        )
        assert await _meters(redis_client) == before
        restored = await store.catalog.get_meter("cs-main")
        assert restored.staged_change is not None
        assert restored.staged_change.new_reset_cents == RESET_CENTS + 3_000
        report = await verify(store)
        assert report.ok, report.differences
    finally:
        await store.close()


def _entry(seq: int, kind: str, **fields: str) -> dict[str, str]:
    return {"seq": str(seq), "type": kind, "meter": "m", **fields}


STAGED = {"old_reset_cents": "1000000", "new_reset_cents": "1005000", "old_rate_ppm": "150000"}
STAGED |= {"new_rate_ppm": "150000", "old_reserve_rate_ppm": "0", "new_reserve_rate_ppm": "0"}
STAGED |= {"old_ceiling_cents": "0", "new_ceiling_cents": "0"}


def test_the_audit_names_a_staged_change_that_ends_otherwise_than_staged() -> None:
    good = [
        _entry(1, "meter_change_staged", **STAGED),
        _entry(2, "award"),
        _entry(3, "reset", reset_cents="1005000"),
        _entry(4, "meter_change_applied", staged_seq="1", hit_seq="2", **STAGED),
    ]
    check = StagedCheck("g")
    for fields in good:
        check.add(fields)
    assert check.problems == [] and check.applied == 1
    bad_cases = [
        ([*good[:2], _entry(3, "reset", reset_cents="1000000"), *good[3:]], "hit's reset"),
        ([*good[:3], {**good[3], "new_rate_ppm": "1"}], "another new_rate_ppm"),
        ([*good[:3], {**good[3], "staged_seq": "2"}], "but #1 waits"),
        ([*good, _entry(5, "meter_change_cancelled", staged_seq="1")], "none waits"),
        ([good[0], _entry(2, "meter_change_staged", **STAGED)], "while #1 waits"),
    ]
    for entries, text in bad_cases:
        check = StagedCheck("g")
        for fields in entries:
            check.add(fields)
        assert len(check.problems) == 1 and text in check.problems[0], check.problems
    # a change staged before a trimmed journal's first entry: its end is accepted
    check = StagedCheck("g")
    check.add(good[3])
    assert check.problems == []
