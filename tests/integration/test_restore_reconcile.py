"""No id means two things, nothing is paid twice: a restore from an older export, the tables'
later answers reconciled from their outboxes (docs/journal.md, "Numbering across a restore"
and "Reconciling tables after a restore").

The attack on main: rounds are played, the journal exported, more rounds played (a royal
flush settled, its jackpot approved and paid), Redis lost and restored from the export. The
settled round came back open and was settled again, its jackpot paid twice, and the
restored journal handed out the same sequence numbers (and jackpot ids ``<group>:<seq>``)
as the lost one.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.actions import reconcile
from controller.ctl.main import main as jackpotctl
from controller.domain.journal_chain import ChainCheck, entry_hash
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.testing import TestPKI
from jackpot.cards import parse_cards
from jackpot.errors import FailedPrecondition, InvalidArgument, NotFound
from jackpot.kinds import WagerKind
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.client import ControllerRefused, ControllerUnreachable
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    HIGH_CARD,
    PAIR,
    ROYAL_SPADES,
    SUPERVISOR,
    TWO_PAIR,
    Channels,
    Floor,
    expect_refusal,
    journal,
    table_client,
)

GROUP = "floor"
KEY = Ed25519PrivateKey.generate()  # the trims' checkpoint key a restore is given
ALICE = "jackpot://operator/alice"
BOB = "jackpot://operator/bob"
WAGERS = [PlacedWager(1, WagerKind.PROGRESSIVE, 100), PlacedWager(2, WagerKind.PROGRESSIVE, 100)]


def cards(seat1: str, seat2: str) -> SettleReport:
    return SettleReport(
        {1: parse_cards(seat1.split()), 2: parse_cards(seat2.split())},
        dealer=parse_cards(HIGH_CARD.split()),
    )


async def meter_of(redis_client: Redis) -> tuple[int, int]:
    fields = await redis_client.hgetall(keys.LinkGroupKeys(GROUP).meter("cs-main"))
    return int(fields["value_microcents"]), int(fields["reserve_microcents"])


async def jackpots(redis_client: Redis) -> dict[str, Any]:
    raw = await redis_client.hgetall(keys.LinkGroupKeys(GROUP).jackpots)
    return {str(jackpot_id): json.loads(record) for jackpot_id, record in raw.items()}


async def approve_and_pay(port: int, pki: TestPKI, jackpot_id: str) -> None:
    channels = Channels(f"127.0.0.1:{port}", pki)
    try:
        supervisor = pb_grpc.AdminServiceStub(channels(*SUPERVISOR))
        await supervisor.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=jackpot_id, note="ok"))
        cage = pb_grpc.AdminServiceStub(channels("cashier", "cage-1"))
        await cage.RecordJackpotPaid(
            pb.RecordJackpotPaidRequest(jackpot_id=jackpot_id, note="cage receipt 1")
        )
    finally:
        await channels.close()


def ctl(redis_url: str, action: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "controller.ctl.main", "restore", action]
    return subprocess.run(
        [*command, "--redis", redis_url, "--link-group", GROUP],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_a_restore_from_an_older_export_pays_nothing_twice_and_reuses_no_id(
    controller: ControllerServer,
    floor: Floor,
    pki: TestPKI,
    redis_client: Redis,
    redis_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    outbox = Outbox(tmp_path / "agent", "t1")
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, outbox)
    agent.continue_after((await client.get_table("t1")).last_round_id)
    # Round 1: a royal flush, its jackpot approved and paid; round 2 locked out.
    await agent.lockout(agent.new_round(), WAGERS)
    first = await agent.settle(1, cards(ROYAL_SPADES, PAIR))
    await approve_and_pay(controller.port, pki, first.awards[0].jackpot_id)
    await agent.lockout(agent.new_round(), WAGERS)
    exported = await journal_export.export(controller.store, tmp_path / "export", GROUP)
    exported_seq, lost_epoch = exported.last_seq, client.known.epoch
    # After the export: round 2's royal flush settled, approved and paid; round 3 played;
    # round 4 locked out and voided.
    hit = (await agent.settle(2, cards(PAIR, ROYAL_SPADES))).awards[0]
    await approve_and_pay(controller.port, pki, hit.jackpot_id)
    await agent.lockout(agent.new_round(), WAGERS)
    await agent.settle(3, cards(PAIR, TWO_PAIR))
    await agent.lockout(agent.new_round(), WAGERS)
    await agent.void(4, "misdeal")
    answered_meter = await meter_of(redis_client)
    lost = {int(fields["seq"]): fields for _, fields in await journal(redis_client)}
    lost_ids = set(await jackpots(redis_client))
    last_answered = outbox.last_position().seq
    assert last_answered > exported_seq

    outbox.compact()  # the agent restarted meanwhile: compaction keeps the answers

    # Total loss, restore from the older export, numbering above what the outbox holds.
    await redis_client.flushall()
    await controller.check_state()
    outboxes = reconcile.outboxes([outbox.path])
    above = reconcile.seq_above(outboxes, exported_seq)
    assert above == last_answered + reconcile.SEQ_MARGIN
    restored_seq = await journal_restore.restore(
        controller.store,
        tmp_path / "export",
        GROUP,
        actor=ALICE,
        reason="lost",
        seq_above=above,
        checkpoint_key=KEY.public_key(),
    )
    assert restored_seq == above + 1
    await controller.check_state()

    # Until reconciled, every table is refused with the restore and the command to run, and
    # a settlement of round 2 (settled and paid before the loss) is not settled again.
    retry = table_client(controller.port, pki, retry_for_s=0.3)
    retry.known = outbox.last_position()
    with pytest.raises(ControllerUnreachable, match="jackpotctl restore collect"):
        await retry.settle("t1", 2, cards(PAIR, ROYAL_SPADES))
    assert set(await jackpots(redis_client)) == {first.awards[0].jackpot_id}

    # The outbox reports exactly what the restored state lacks.
    with pytest.raises(FailedPrecondition, match="outboxes of tables t1"):
        await reconcile.finish(controller.store, GROUP, actor=ALICE)
    collected = await reconcile.collect(controller.store, GROUP, outboxes[0], actor=ALICE)
    assert (collected.missing, collected.present) == (5, 0)
    again = await reconcile.collect(controller.store, GROUP, outboxes[0], actor=ALICE)
    assert (again.missing, again.collected_before) == (0, 5)  # a retry changes nothing
    status = await reconcile.status(controller.store, GROUP)
    assert [(s["round_id"], s["phase"]) for s in status.waiting] == [
        (2, "settle"),
        (3, "lockout"),
        (3, "settle"),
        (4, "lockout"),
        (4, "void"),
    ]
    assert all(exported_seq < s["seq"] <= last_answered for s in status.steps)
    assert status.uncollected == [] and "jackpotctl restore" in status.stopped
    lines = [reconcile.describe(step) for step in status.steps]
    assert f"(jackpot {hit.jackpot_id})" in lines[0] and "missing" in lines[0]

    listed = ctl(redis_url, "status")
    assert listed.returncode == 0, listed.stderr
    assert "5 of 5 steps to apply" in listed.stdout and hit.jackpot_id in listed.stdout

    # Two people: requested by one operator, approved by another.
    channels = Channels(f"127.0.0.1:{controller.port}", pki)
    bob = pb_grpc.AdminServiceStub(channels("operator", "bob"))
    this_group = pb.RestoreStepsRequest(link_group_id=GROUP)
    await expect_refusal(
        bob.ApproveRestoreCorrections(this_group),
        grpc.StatusCode.FAILED_PRECONDITION,
        "not requested yet",
    )
    requested = ctl(redis_url, "request")  # this OS user on this host
    assert requested.returncode == 0 and "5 steps requested" in requested.stdout
    assert ctl(redis_url, "request").returncode == 0  # a retry
    alone = ctl(redis_url, "approve")  # the same person cannot approve
    assert alone.returncode == 1 and "second, different operator" in alone.stderr
    alice = pb_grpc.AdminServiceStub(channels("operator", "alice"))
    await expect_refusal(
        alice.FinishRestore(this_group), grpc.StatusCode.FAILED_PRECONDITION, "not applied yet"
    )
    auditor = pb_grpc.AdminServiceStub(channels("auditor", "lab"))
    await expect_refusal(  # an auditor reads, never applies
        auditor.ApproveRestoreCorrections(this_group),
        grpc.StatusCode.PERMISSION_DENIED,
        "it is for: operator",
    )
    applied = await bob.ApproveRestoreCorrections(this_group)  # a second identity
    assert [step.status for step in applied.steps] == ["applied"] * 5
    assert {step.approved_by for step in applied.steps} == {"jackpot://operator/bob"}
    finished = await alice.FinishRestore(this_group)
    assert finished.finished_seq > restored_seq and finished.stopped == ""
    await channels.close()
    address = ["--controller", f"127.0.0.1:{controller.port}", *pki.client_args("auditor", "lab")]
    assert (
        await asyncio.to_thread(jackpotctl, [*address, "restore", "status", "--link-group", GROUP])
        == 0
    )
    assert "0 of 5 steps to apply" in capsys.readouterr().out

    # The meter holds exactly what the table was last answered; round 2's jackpot is held
    # once, under the id the table was answered, with the amount it was answered.
    assert await meter_of(redis_client) == answered_meter
    held = await jackpots(redis_client)
    assert set(held) == {first.awards[0].jackpot_id, hit.jackpot_id}
    assert int(held[hit.jackpot_id]["amount_cents"]) == hit.amount_cents
    assert held[hit.jackpot_id]["round_id"] == "2" and held[hit.jackpot_id]["seat"] == 2
    assert held[hit.jackpot_id]["cards"] == ROYAL_SPADES  # the slip, as the table reported

    # No sequence number or jackpot id names two things: every entry after the export is
    # numbered above everything the lost journal issued.
    entries = await journal(redis_client)
    new = {int(fields["seq"]): fields for _, fields in entries if int(fields["seq"]) > exported_seq}
    assert min(new) == restored_seq and not set(new) & set(lost)
    assert max(lost) < restored_seq
    restored = new[restored_seq]
    assert (restored["type"], restored["numbered_after"]) == ("restored", str(above))
    handle = [e for e in new.values() if e["type"] == "wagers_accepted"]
    assert [(e["round"], e["count:progressive"], e["corrects"][:1]) for e in handle] == [
        ("3", "2", lost_epoch[:1]),
        ("4", "2", lost_epoch[:1]),
    ]  # the handle of the corrected lockouts, for the reports
    award = next(e for e in new.values() if e["type"] == "award")
    assert award["corrects"] == f"{lost_epoch}:{hit.journal_seq}"
    assert lost_ids >= set(held)  # the ids are the lost ones, never a new one for them

    # The round is never settled again; the table plays on in the restored lineage.
    with pytest.raises(ControllerRefused, match="already settled with other cards"):
        await agent.client.settle("t1", 2, cards(PAIR, ROYAL_SPADES))
    assert set(await jackpots(redis_client)) == set(held)
    info = await agent.client.get_table("t1")
    assert info.last_round_id == 4
    agent.continue_after(info.last_round_id)
    assert agent.new_round() == 5
    await agent.lockout(5, WAGERS)
    assert agent.client.known.epoch not in ("", lost_epoch)
    await client.close()
    await retry.close()

    # Its approval and payment were lost with Redis: a supervisor validates the slip again
    # and the cage records the payment it made (its receipt) - one jackpot, one payment.
    await approve_and_pay(controller.port, pki, hit.jackpot_id)
    payments = [
        fields
        for _, fields in await journal(redis_client)
        if fields["type"] == "jackpot_paid" and int(fields["seq"]) > exported_seq
    ]
    assert [p["jackpot"] for p in payments] == [hit.jackpot_id]

    report = await verify(controller.store)
    assert report.ok, report.differences
    # An export of the reconciled group, across the restore's jump, passes offline too.
    await journal_export.export(controller.store, tmp_path / "after", GROUP)
    offline = verify_export(tmp_path / "after")
    assert offline.ok, offline.differences
    # A trim across the jump signs on (trim_journal.lua accepts the recorded gap too).
    key = Ed25519PrivateKey.generate()
    trimmed = await journal_export.trim(controller.store, GROUP, before_ms=10**15, signing_key=key)
    assert trimmed > 0 and (await controller.store.journal.checkpoint(GROUP)).seq > restored_seq
    trimmed_report = await verify(controller.store, key.public_key())
    assert trimmed_report.ok, trimmed_report.differences
    # Lost again: that export, with the jump and the corrections, restores (each corrected
    # jackpot rebuilt from the entry that made it again).
    await redis_client.flushall()
    await controller.check_state()
    await journal_restore.restore(
        controller.store,
        tmp_path / "after",
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor=ALICE,
        reason="lost again",
    )
    assert set(await jackpots(redis_client)) == set(held)
    second = await verify(controller.store)
    assert second.ok, second.differences


async def test_a_collected_answer_above_the_restores_numbering_is_refused(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    """A restore numbered without the tables' outboxes cannot promise unique ids above the
    export: an outbox answered beyond it is refused with what to do."""
    outbox = Outbox(tmp_path / "agent", "t1")
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, outbox)
    agent.continue_after((await client.get_table("t1")).last_round_id)
    await agent.lockout(agent.new_round(), WAGERS)
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    await agent.settle(1, cards(ROYAL_SPADES, PAIR))
    await client.close()
    await redis_client.flushall()
    await controller.check_state()
    await journal_restore.restore(
        controller.store,
        tmp_path / "export",
        GROUP,
        actor=ALICE,
        reason="x",
        checkpoint_key=KEY.public_key(),
    )
    with pytest.raises(InvalidArgument, match="where this restore numbered on from"):
        await reconcile.collect(
            controller.store, GROUP, reconcile.read_outbox(outbox.path), actor=ALICE
        )
    with pytest.raises(NotFound, match="no missing step"):
        await reconcile.request(controller.store, GROUP, actor=ALICE)
    # The table ahead is refused, and told what to run.
    late = table_client(controller.port, pki, retry_for_s=0.3)
    late.known = outbox.last_position()
    with pytest.raises(ControllerUnreachable, match="jackpotctl restore collect"):
        await late.get_table("t1")
    await late.close()


def test_the_audit_accepts_the_recorded_jump_and_no_other_gap() -> None:
    def chained(entries: list[dict[str, str]]) -> list[dict[str, str]]:
        previous = "0" * 64
        out = []
        for fields in entries:
            fields = {**fields, "hash": entry_hash(previous, fields)}
            previous = fields["hash"]
            out.append(fields)
        return out

    def problems(entries: list[dict[str, str]]) -> list[str]:
        check = ChainCheck()
        for number, fields in enumerate(chained(entries)):
            check.add(f"{number}-0", fields)
        return check.problems

    base = [{"seq": "1", "type": "contribution"}, {"seq": "2", "type": "contribution"}]
    jump = {"seq": "1001", "type": "restored", "from_seq": "2", "numbered_after": "1000"}
    assert problems([*base, jump, {"seq": "1002", "type": "x"}]) == []
    # A gap anywhere else, or one the restored entry does not record, is named.
    assert "missing" in problems([*base, {"seq": "1001", "type": "restored", "from_seq": "2"}])[0]
    assert "missing" in problems([*base, {**jump, "from_seq": "1"}])[0]
    assert "missing" in problems([*base, {**jump, "type": "award"}])[0]
    assert "missing" in problems([*base, jump, {"seq": "1003", "type": "x"}])[0]
    assert "missing" in problems([*base, {**jump, "seq": "1002"}])[0]


async def lose_after_export(
    controller: ControllerServer, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> tuple[Outbox, int, Any]:
    """Round 1 locked out and exported; then its royal flush settled and round 2 locked out;
    then Redis lost. Answers the outbox, the export's seq and the hit."""
    outbox = Outbox(tmp_path / "agent", "t1")
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, outbox)
    agent.continue_after((await client.get_table("t1")).last_round_id)
    await agent.lockout(agent.new_round(), WAGERS)
    exported = await journal_export.export(controller.store, tmp_path / "export", GROUP)
    hit = (await agent.settle(1, cards(ROYAL_SPADES, PAIR))).awards[0]
    await agent.lockout(agent.new_round(), WAGERS)
    await client.close()
    await redis_client.flushall()
    await controller.check_state()
    return outbox, exported.last_seq, hit


async def test_an_outbox_cannot_bring_an_id_the_restored_journal_may_issue(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    outbox, exported_seq, hit = await lose_after_export(controller, pki, redis_client, tmp_path)
    above = reconcile.seq_above(reconcile.outboxes([outbox.path]), exported_seq)
    await journal_restore.restore(
        controller.store,
        tmp_path / "export",
        GROUP,
        actor=ALICE,
        reason="x",
        seq_above=above,
        checkpoint_key=KEY.public_key(),
    )
    text = outbox.path.read_text()
    forged = f"{GROUP}:{above + 5}"  # an id the restored journal will issue
    outbox.path.write_text(
        text.replace(f'"{hit.jackpot_id}"', f'"{forged}"').replace(
            f'"journal_seq": {hit.journal_seq}', f'"journal_seq": {above + 5}'
        )
    )
    with pytest.raises(InvalidArgument, match="that the lost journal cannot have made"):
        await reconcile.collect(
            controller.store, GROUP, reconcile.read_outbox(outbox.path), actor=ALICE
        )
    outbox.path.write_text(text.replace(f'"{hit.jackpot_id}"', f'"{GROUP}:1"'))  # before #S
    with pytest.raises(InvalidArgument, match="cannot have made"):
        await reconcile.collect(
            controller.store, GROUP, reconcile.read_outbox(outbox.path), actor=ALICE
        )
    assert (await reconcile.status(controller.store, GROUP)).steps == []


async def test_corrections_apply_in_the_lost_journals_order_only(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    outbox, exported_seq, hit = await lose_after_export(controller, pki, redis_client, tmp_path)
    outboxes = reconcile.outboxes([outbox.path])
    await journal_restore.restore(
        controller.store,
        tmp_path / "export",
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor=ALICE,
        reason="x",
        seq_above=reconcile.seq_above(outboxes, exported_seq),
    )
    await reconcile.collect(controller.store, GROUP, outboxes[0], actor=ALICE)
    await reconcile.request(controller.store, GROUP, actor=ALICE)
    settle, lockout = (await reconcile.status(controller.store, GROUP)).waiting
    assert (settle["phase"], lockout["phase"]) == ("settle", "lockout")
    before = await meter_of(redis_client)
    with pytest.raises(FailedPrecondition, match="apply it first"):
        await controller.store.reconciliation.apply(GROUP, lockout, actor=BOB, actor_cert="")
    assert await meter_of(redis_client) == before  # a refusal changes nothing
    await controller.store.reconciliation.apply(GROUP, settle, actor=BOB, actor_cert="")
    again = await controller.store.reconciliation.apply(GROUP, settle, actor=BOB, actor_cert="")
    assert again["status"] == "applied"  # a retry of the same approval: its answer again
    await controller.store.reconciliation.apply(GROUP, lockout, actor=BOB, actor_cert="")
    assert set(await jackpots(redis_client)) == {hit.jackpot_id}
    await reconcile.finish(controller.store, GROUP, actor=ALICE)
    report = await verify(controller.store)
    assert report.ok, report.differences


def test_the_command_line_restores_with_the_outboxes(
    redis_url: str, tmp_path: Path, outbox_after_loss: tuple[Path, Path]
) -> None:
    export, outbox = outbox_after_loss
    public = tmp_path / "checkpoint.pub"
    public.write_bytes(
        KEY.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    restored = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.ctl.main",
            "restore",
            "--redis",
            redis_url,
            "--from",
            str(export),
            "--link-group",
            GROUP,
            "--reason",
            "volume lost",
            "--outbox",
            str(outbox),
            "--checkpoint-key",
            str(public),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert restored.returncode == 0, restored.stderr
    assert "table t1: 2 missing steps collected" in restored.stdout
    assert "numbered on after" in restored.stdout
    listed = ctl(redis_url, "status")
    assert "2 of 2 steps to apply" in listed.stdout, listed.stdout
    command = [sys.executable, "-m", "controller.ctl.main", "restore", "collect"]
    again = subprocess.run(
        [*command, "--redis", redis_url, "--link-group", GROUP, "--outbox", str(outbox)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    assert "0 missing steps kept, 0 already in the restored state, 2 collected before" in (
        again.stdout
    )


@pytest.fixture
async def outbox_after_loss(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> tuple[Path, Path]:
    outbox, _, _ = await lose_after_export(controller, pki, redis_client, tmp_path)
    return tmp_path / "export", outbox.path


async def test_a_held_round_settled_after_the_export_is_resolved_by_its_correction(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    """Round 1 was held by a chip count that differed when exported; a supervisor confirmed
    it and the table settled it before the loss. The correction settles it and records the
    lost resolution, so the round is neither held nor open afterwards."""
    outbox = Outbox(tmp_path / "agent", "t1")
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, outbox)
    agent.continue_after((await client.get_table("t1")).last_round_id)
    await agent.lockout(agent.new_round(), WAGERS)
    await agent.report_chip_count(1, 1)  # two wagers accepted, one chip counted: held
    exported = await journal_export.export(controller.store, tmp_path / "export", GROUP)
    channels = Channels(f"127.0.0.1:{controller.port}", pki)
    await pb_grpc.AdminServiceStub(channels(*SUPERVISOR)).ResolveIrregularity(
        pb.ResolveIrregularityRequest(
            table_id="t1", round_id=1, decision=pb.IRREGULARITY_DECISION_CONFIRM, note="recount"
        )
    )
    await channels.close()
    await agent.settle(1, cards(PAIR, TWO_PAIR))
    await client.close()
    await redis_client.flushall()
    await controller.check_state()
    outboxes = reconcile.outboxes([outbox.path])
    await journal_restore.restore(
        controller.store,
        tmp_path / "export",
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor=ALICE,
        reason="x",
        seq_above=reconcile.seq_above(outboxes, exported.last_seq),
    )
    assert (await reconcile.collect(controller.store, GROUP, outboxes[0], actor=ALICE)).missing == 1
    await reconcile.request(controller.store, GROUP, actor=ALICE)
    await reconcile.approve(controller.store, GROUP, actor=BOB)
    await reconcile.finish(controller.store, GROUP, actor=ALICE)
    raw = await redis_client.hget(keys.LinkGroupKeys(GROUP).irregularities, "t1:1:chip_count")
    assert raw is not None
    held = json.loads(raw)
    assert (held["status"], held["resolved_by"]) == ("confirmed", BOB)
    group = keys.LinkGroupKeys(GROUP)
    assert await redis_client.hget(group.round("t1", 1), "state") == "settled"
    assert not await redis_client.smembers(group.open_rounds)
    report = await verify(controller.store)
    assert report.ok, report.differences
