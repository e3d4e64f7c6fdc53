"""Payout compliance through real gRPC, real certificates and a real Redis: the slip states
what a jackpot's hand-pay requires; ``RecordJackpotPaid`` is refused, naming what is missing,
until the tax-form reference and the witness (another identity of a witnessing role, by its
own certificate) are given; both are journaled, idempotent, checked by the audit and carried
by an export and restore (docs/payout-compliance.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.domain import reports
from controller.domain.payout_compliance import OKLAHOMA, PRESETS, US_DEFAULT
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ServerConfig
from controller.store import keys
from controller.store.redis_store import RedisStore
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FULL_HOUSE,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    settle,
    snapshot,
)

CAGE = "jackpot://cashier/cage-1"
WITNESS = "jackpot://supervisor/night-shift"
FAILED = grpc.StatusCode.FAILED_PRECONDITION
KEY = Ed25519PrivateKey.generate()
JACKPOTS = keys.LinkGroupKeys("floor").jackpots


@pytest.fixture
def preset() -> str:
    return US_DEFAULT


@pytest.fixture
def server_config(server_config: ServerConfig, preset: str) -> ServerConfig:
    # us-default is what a configuration that names no policy gets (the conftest's asks none)
    default = ServerConfig().payout_compliance
    assert default is PRESETS[US_DEFAULT]
    policy = default if preset == US_DEFAULT else PRESETS[preset]
    return replace(server_config, payout_compliance=policy)


def stub(channels: Channels, role: str, name: str) -> pb_grpc.AdminServiceAsyncStub:
    return pb_grpc.AdminServiceStub(channels(role, name))


def paid(jackpot_id: str, ref: str = "", override: str = "") -> pb.RecordJackpotPaidRequest:
    return pb.RecordJackpotPaidRequest(
        jackpot_id=jackpot_id, note="cage receipt 7", tax_form_ref=ref, tax_form_override=override
    )


def witness(jackpot_id: str) -> pb.WitnessJackpotPaymentRequest:
    return pb.WitnessJackpotPaymentRequest(jackpot_id=jackpot_id, note="present at the cage")


async def hits(tables: pb_grpc.TableServiceAsyncStub) -> tuple[str, str]:
    """A royal flush (100% of a $10,000+ meter) at seat 2 and, next round, a straight flush
    (10% of the meter, about $1,000) at seat 3; both on $1 wagers."""
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    first = await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: FULL_HOUSE}))
    await tables.Lockout(lockout("t1", 2, [3]))
    second = await tables.Settle(settle("t1", 2, {3: STRAIGHT_FLUSH_HEARTS}))
    royal = next(r for r in first.results if r.seat == 2)
    sf = next(r for r in second.results if r.seat == 3)
    return royal.jackpot_id, sf.jackpot_id


async def approved(
    admin: pb_grpc.AdminServiceAsyncStub, tables: pb_grpc.TableServiceAsyncStub
) -> tuple[str, str]:
    royal, sf = await hits(tables)
    for jackpot_id in (royal, sf):
        await admin.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=jackpot_id, note="ok"))
    return royal, sf


async def test_the_slip_states_what_is_required(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub, floor: Floor
) -> None:
    royal_id, sf_id = await hits(tables)
    royal = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=royal_id))
    assert royal.amount_cents >= 1_000_000 and royal.wager_cents == 100
    assert (royal.payout_compliance, royal.tax_form_required, royal.witness_required) == (
        US_DEFAULT,
        True,
        True,
    )
    assert "and >= 300x the $1.00 wager" in royal.tax_form_reason
    assert royal.witness_reason.endswith(">= $1,200.00")
    sf = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=sf_id))
    assert 60_000 <= sf.amount_cents < 120_000
    assert (sf.tax_form_required, sf.witness_required) == (True, False)
    assert sf.witness_reason.endswith("< $1,200.00")
    listed = await admin.ListJackpots(pb.ListJackpotsRequest())
    assert [(j.jackpot_id, j.witness_required) for j in listed.jackpots] == [
        (royal_id, True),
        (sf_id, False),
    ]


async def test_paid_is_refused_until_the_reference_and_the_witness_are_given(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    royal, _ = await approved(admin, tables)
    cage = stub(channels, "cashier", "cage-1")
    before = await snapshot(redis_client)
    # neither: both named in one message
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await cage.RecordJackpotPaid(paid(royal))
    assert caught.value.code() == FAILED
    details = caught.value.details() or ""
    assert "missing the W-2G tax-form reference" in details and "a witness" in details
    # the reference alone: the witness still missing, and only it
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await cage.RecordJackpotPaid(paid(royal, "W2G-2025-0001"))
    assert caught.value.code() == FAILED
    details = caught.value.details() or ""
    assert "a witness" in details and "tax-form reference" not in details
    # a malformed reference (patron data) is refused before anything
    await expect_refusal(
        cage.RecordJackpotPaid(paid(royal, "John Smith 12 Main St")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "never the patron's personal data",
    )
    await expect_refusal(
        cage.RecordJackpotPaid(paid(royal, "W2G-1", "and an override")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "not both",
    )
    assert await snapshot(redis_client) == before


async def test_the_payer_is_not_its_own_witness(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    royal, _ = await approved(admin, tables)
    cage = stub(channels, "cashier", "cage-1")
    witnessed = await cage.WitnessJackpotPayment(witness(royal))
    assert witnessed.witnessed_by == CAGE and witnessed.status == "approved"
    before = await snapshot(redis_client)
    await expect_refusal(
        cage.RecordJackpotPaid(paid(royal, "W2G-2025-0001")),
        FAILED,
        "the payer is not its own witness",
    )
    assert await snapshot(redis_client) == before
    # another cashier pays it, with cage-1 as the witness
    done = await stub(channels, "cashier", "cage-2").RecordJackpotPaid(paid(royal, "W2G-2025-0001"))
    assert (done.status, done.witnessed_by, done.paid_by) == (
        "paid",
        CAGE,
        "jackpot://cashier/cage-2",
    )


@pytest.mark.parametrize(
    ("role", "name"), [("auditor", "audit"), ("operator", "ops"), ("table", "t1"), ("display", "d")]
)
async def test_a_witness_of_another_role_is_refused(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    role: str,
    name: str,
) -> None:
    royal, _ = await approved(admin, tables)
    before = await snapshot(redis_client)
    await expect_refusal(
        stub(channels, role, name).WitnessJackpotPayment(witness(royal)),
        grpc.StatusCode.PERMISSION_DENIED,
        "it is for: cashier, supervisor",
    )
    assert await snapshot(redis_client) == before


async def test_a_pending_jackpot_is_not_witnessed(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    royal, _ = await hits(tables)
    before = await snapshot(redis_client)
    await expect_refusal(
        stub(channels, "supervisor", "night-shift").WitnessJackpotPayment(witness(royal)),
        FAILED,
        "awaits a supervisor's validation",
    )
    assert await snapshot(redis_client) == before


async def test_paid_with_both_journaled_idempotent_audited_and_restored(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    redis_url: str,
    tmp_path: Path,
) -> None:
    royal, sf = await approved(admin, tables)
    cage = stub(channels, "cashier", "cage-1")
    night = stub(channels, "supervisor", "night-shift")
    witnessed = await night.WitnessJackpotPayment(witness(royal))
    assert (witnessed.witnessed_by, witnessed.witness_note) == (WITNESS, "present at the cage")
    assert len(witnessed.witnessed_by_cert) == 64 and witnessed.witnessed_at_ms > 0
    assert await night.WitnessJackpotPayment(witness(royal)) == witnessed  # a retry
    await expect_refusal(
        stub(channels, "cashier", "cage-2").WitnessJackpotPayment(witness(royal)),
        FAILED,
        f"already witnessed by {WITNESS}",
    )
    done = await cage.RecordJackpotPaid(paid(royal, "W2G-2025-0001"))
    assert (done.status, done.tax_form_ref, done.witnessed_by, done.paid_by) == (
        "paid",
        "W2G-2025-0001",
        WITNESS,
        CAGE,
    )
    assert (done.payout_compliance, done.tax_form_required, done.witness_required) == (
        US_DEFAULT,
        True,
        True,
    )
    # the straight flush needs no witness: its reference suffices
    sf_done = await cage.RecordJackpotPaid(paid(sf, "W2G-2025-0002"))
    assert (sf_done.status, sf_done.witnessed_by, sf_done.witness_required) == ("paid", "", False)

    # the same payment again changes nothing; with another reference it is refused
    before = await snapshot(redis_client)
    assert await cage.RecordJackpotPaid(paid(royal, "W2G-2025-0001")) == done
    await expect_refusal(
        cage.RecordJackpotPaid(paid(royal, "W2G-2025-9999")),
        FAILED,
        "with tax-form reference 'W2G-2025-0001'",
    )
    await expect_refusal(night.WitnessJackpotPayment(witness(sf)), FAILED, "already paid")
    assert await snapshot(redis_client) == before

    entries = [fields for _, fields in await journal(redis_client)]
    seen = [e for e in entries if e["type"] == "jackpot_witnessed"]
    assert [(e["jackpot"], e["witness"], e["d_meter"]) for e in seen] == [(royal, WITNESS, "0")]
    payment = next(e for e in entries if e["type"] == "jackpot_paid" and e["jackpot"] == royal)
    assert (payment["tax_form_ref"], payment["witness"], payment["witness_seq"]) == (
        "W2G-2025-0001",
        WITNESS,
        seen[0]["seq"],
    )
    assert (payment["compliance"], payment["tax_form_required"], payment["witness_required"]) == (
        US_DEFAULT,
        "1",
        "1",
    )

    store = RedisStore.from_url(redis_url)
    try:
        report = await verify(store)
        assert report.ok, report.differences[:5]
        # the hit report names the reference and the witness; a witness is play, no change
        window = await store.journal.window("floor", 0, 0, 1000)
        royal_hit = next(h for h in reports.hit_report(window) if f"floor:{h.seq}" == royal)
        assert (royal_hit.tax_form_ref, royal_hit.witnessed_by) == ("W2G-2025-0001", WITNESS)
        assert all(c.type != "jackpot_witnessed" for c in reports.change_report(window))
        # an export and restore carry the witness and the reference
        before_records = await redis_client.hgetall(JACKPOTS)
        await journal_export.export(store, tmp_path, "floor")
        await redis_client.flushall()
        await journal_restore.restore(
            store, tmp_path, "floor", checkpoint_key=KEY.public_key(), actor="ops", reason="lost"
        )
        assert await redis_client.hgetall(JACKPOTS) == before_records
        restored = await store.jackpots.get_jackpot(royal)
        assert (restored.witnessed_by, restored.tax_form_ref) == (WITNESS, "W2G-2025-0001")
        report = await verify(store)
        assert report.ok, report.differences[:5]
    finally:
        await store.close()


async def test_a_restore_refuses_a_witness_no_entry_recorded(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_url: str,
    tmp_path: Path,
) -> None:
    royal, sf = await approved(admin, tables)
    await stub(channels, "cashier", "cage-1").RecordJackpotPaid(paid(sf, "W2G-2025-0002"))
    store = RedisStore.from_url(redis_url)
    try:
        await journal_export.export(store, tmp_path, "floor")
    finally:
        await store.close()
    path = tmp_path / "floor" / journal_export.SNAPSHOT_FILE
    good = path.read_text()
    for jackpot_id, field, value, message in (
        (royal, "witnessed_by", WITNESS, "its witnessed_by is"),
        (sf, "tax_form_ref", "W2G-FORGED", "its tax_form_ref is"),
        (sf, "witness_required", True, "its witness_required is"),
    ):
        exported = json.loads(good)
        record = exported["jackpots"][jackpot_id]
        decoded = json.loads(record) if isinstance(record, str) else record
        decoded[field] = value
        exported["jackpots"][jackpot_id] = (
            json.dumps(decoded) if isinstance(record, str) else decoded
        )
        path.write_text(json.dumps(exported))
        with pytest.raises(journal_export.ExportError, match=message):
            journal_restore.read_export(tmp_path, "floor")


async def test_the_audit_names_a_payment_without_its_tax_form(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    redis_url: str,
    tmp_path: Path,
) -> None:
    """An export whose journal was edited so that a payment lacks its reference: besides
    the broken chain, the offline audit names the payment and what it lacks."""
    _, sf = await approved(admin, tables)
    await stub(channels, "cashier", "cage-1").RecordJackpotPaid(paid(sf, "W2G-2025-0002"))
    store = RedisStore.from_url(redis_url)
    try:
        await journal_export.export(store, tmp_path, "floor")
    finally:
        await store.close()
    path = tmp_path / "floor" / journal_export.JOURNAL_FILE
    lines = path.read_text().splitlines()
    rewritten = []
    for line in lines:
        entry = json.loads(line)
        if entry["fields"].get("type") == "jackpot_paid":
            entry["fields"]["tax_form_ref"] = ""
        rewritten.append(json.dumps(entry))
    path.write_text("\n".join(rewritten) + "\n")
    report = verify_export(tmp_path, KEY.public_key())
    assert any("was paid without the tax form its policy requires" in d for d in report.differences)


@pytest.mark.parametrize("preset", [US_DEFAULT, OKLAHOMA])
async def test_an_override_only_where_the_policy_allows_it(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    redis_url: str,
    preset: str,
) -> None:
    _, sf = await approved(admin, tables)
    cage = stub(channels, "cashier", "cage-1")
    slip = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=sf))
    assert slip.tax_form_overridable is (preset == US_DEFAULT)
    request = paid(sf, override="the patron's form was filed by the poker room")
    if preset == OKLAHOMA:
        before = await snapshot(redis_client)
        await expect_refusal(
            cage.RecordJackpotPaid(request), FAILED, "under oklahoma the tax-form prompt is not"
        )
        assert await snapshot(redis_client) == before
        return
    done = await cage.RecordJackpotPaid(request)
    assert (done.status, done.tax_form_ref, done.tax_form_override) == (
        "paid",
        "",
        "the patron's form was filed by the poker room",
    )
    store = RedisStore.from_url(redis_url)
    try:
        report = await verify(store)
        assert report.ok, report.differences[:5]
    finally:
        await store.close()
