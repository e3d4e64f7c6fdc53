"""Restore carries corrections of a settled round: the records and the jackpots they made are
rebuilt from their journal entries, and an edited, invented or dropped one is refused."""

from __future__ import annotations

import json
from pathlib import Path

from redis.asyncio import Redis

from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ControllerServer
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import FLUSH_CLUBS, HIGH_CARD, ROYAL_SPADES, Channels, Floor
from tests.integration.test_corrections import ANN, PAIR_KEYED, SUE, ask, play, review, stub
from tests.integration.test_restore_verifies import GROUP, KEY, Files, _lose, _refused


async def _corrected(
    tables: pb_grpc.TableServiceAsyncStub, channels: Channels
) -> tuple[pb.Correction, pb.Correction]:
    """Round 1: a missed royal, corrected and applied (a pending jackpot); round 2: a flush
    keyed as a pair, its correction pending."""
    ann, sue = stub(channels, ANN), stub(channels, SUE)
    await play(tables, 1, {1: "AS KS QS JS 9D"})
    applied = await sue.ApproveCorrection(
        review((await ann.RequestCorrection(ask(1, {1: ROYAL_SPADES}))).correction_id)
    )
    await play(tables, 2, {3: PAIR_KEYED, 5: HIGH_CARD})
    pending = await ann.RequestCorrection(ask(2, {3: FLUSH_CLUBS, 5: HIGH_CARD}))
    return applied, pending


async def test_corrections_restore_and_an_edited_one_is_refused(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
    redis_client: Redis,
    tmp_path: Path,
) -> None:
    applied, pending = await _corrected(tables, channels)
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    report = verify_export(tmp_path / "export", KEY.public_key())
    assert report.ok, report.differences
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    good = dict(files.snapshot["corrections"])
    record = json.loads(good[pending.correction_id])
    files.snapshot["corrections"][pending.correction_id] = json.dumps(
        record | {"pay_cents": "500000"}
    )
    files.write()
    await _refused(
        controller, files, redis_client, f"correction {pending.correction_id}: its pay_cents"
    )
    files.snapshot["corrections"] = {applied.correction_id: good[applied.correction_id]}
    files.write()
    await _refused(controller, files, redis_client, f"correction {pending.correction_id}, which")
    invented = f"{GROUP}:{files.entry('meter_created')['seq']}"
    files.snapshot["corrections"] = good | {
        invented: json.dumps(record | {"correction_id": invented})
    }
    files.write()
    await _refused(controller, files, redis_client, f"correction {invented}: no journal entry")
    (jackpot_id,) = applied.jackpot_ids
    files.snapshot["corrections"] = good
    jackpot = files.jackpot(jackpot_id)
    files.set_jackpot(jackpot | {"amount_cents": str(int(jackpot["amount_cents"]) + 1)})
    files.write()
    await _refused(controller, files, redis_client, f"jackpot {jackpot_id}: its amount_cents")

    files.set_jackpot(jackpot)
    files.write()
    await journal_restore.restore(
        controller.store,
        files.directory,
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="operator",
        reason="volume lost",
    )
    report = await verify(controller.store, KEY.public_key())
    assert report.ok, report.differences
    listed = await stub(channels, SUE).ListCorrections(pb.ListCorrectionsRequest())
    assert [(c.correction_id, c.status) for c in listed.corrections] == [
        (applied.correction_id, "approved"),
        (pending.correction_id, "requested"),
    ]
    restored = await stub(channels, SUE).GetJackpot(pb.GetJackpotRequest(jackpot_id=jackpot_id))
    assert restored.status == "pending" and str(restored.amount_cents) == jackpot["amount_cents"]
