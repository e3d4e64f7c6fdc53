"""A restore verifies, then writes: an edited export is refused and nothing is written.

Each test plays a pending royal flush at table t1 of link group ``floor`` (a second link
group ``annex`` stays live beside it), exports ``floor``, loses it from Redis, tampers with
the export as an attacker who can write the export directory would (the snapshot, and the
journal with its hashes written anew, ``journal_chain.entry_hash``) and restores. Each
tampering was restored by the restore before this one (and ``audit verify`` then said OK).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.domain.journal_chain import GENESIS, entry_hash
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.testing import TestPKI
from jackpot.cards import parse_cards
from jackpot.errors import AlreadyExists, InvalidConfiguration
from jackpot.kinds import WagerKind
from jackpot.money import MICROCENTS_PER_CENT
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    FLUSH_CLUBS,
    HIGH_CARD,
    ROYAL_SPADES,
    Floor,
    progressive_table,
    table_client,
)

GROUP, OTHER = "floor", "annex"
METER = "cs-main"
KEY = Ed25519PrivateKey.generate()
NOW_MS = 10**15  # every entry is older than it


class Files:
    """An export of ``floor`` to tamper with: its snapshot and journal lines."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.snapshot_path = directory / GROUP / journal_export.SNAPSHOT_FILE
        self.journal_path = directory / GROUP / journal_export.JOURNAL_FILE
        self.snapshot: dict[str, Any] = json.loads(self.snapshot_path.read_text())
        self.entries: list[dict[str, Any]] = [
            json.loads(line) for line in self.journal_path.read_text().splitlines()
        ]

    def entry(self, kind: str) -> dict[str, str]:
        """The fields of the first entry of type ``kind``."""
        fields: dict[str, str] = next(
            e["fields"] for e in self.entries if e["fields"]["type"] == kind
        )
        return fields

    def jackpot(self, jackpot_id: str) -> dict[str, Any]:
        record: dict[str, Any] = json.loads(self.snapshot["jackpots"][jackpot_id])
        return record

    def set_jackpot(self, record: dict[str, Any]) -> None:
        self.snapshot["jackpots"][record["jackpot_id"]] = json.dumps(record)

    def add_to_meter(self, microcents: int) -> None:
        meter = self.snapshot["meters"][METER]
        meter["value_microcents"] = str(int(meter["value_microcents"]) + microcents)

    def write(self, *, rechain: bool = False) -> None:
        """Write both files back; ``rechain``: every hash written anew from the first."""
        if rechain:
            previous = GENESIS
            for entry in self.entries:
                entry["fields"]["hash"] = previous = entry_hash(previous, entry["fields"])
        self.snapshot_path.write_text(json.dumps(self.snapshot, sort_keys=True))
        self.journal_path.write_text(
            "".join(json.dumps(e, sort_keys=True) + "\n" for e in self.entries)
        )


async def _play_a_royal_flush(port: int, pki: TestPKI, outbox: Path) -> str:
    """Round 1 at t1: seat 1 a royal flush (pending: 100% of the meter), seat 2 a flush (a
    fixed award, not held); answer the jackpot's id."""
    client = table_client(port, pki)
    agent = TableAgent("t1", client, Outbox(outbox, "t1"))
    agent.continue_after((await client.get_table("t1")).last_round_id)
    round_id = agent.new_round()
    await agent.lockout(
        round_id,
        [PlacedWager(1, WagerKind.PROGRESSIVE, 100), PlacedWager(2, WagerKind.PROGRESSIVE, 100)],
    )
    report = SettleReport(
        {1: parse_cards(ROYAL_SPADES.split()), 2: parse_cards(FLUSH_CLUBS.split())},
        dealer=parse_cards(HIGH_CARD.split()),
    )
    settlement = await agent.settle(round_id, report)
    await client.close()
    royal = next(award for award in settlement.awards if award.hand == "royal_flush")
    return str(royal.jackpot_id)


async def _lose(redis: Redis, link_group_id: str) -> None:
    """Redis loses one link group (its shard's data) and nothing else, in one step: deleted
    key by key, the controller's state check could meet a group half gone (its epoch record
    still there) and stop it, writing keys the scan had passed."""
    tag = keys.LinkGroupKeys(link_group_id).tag
    group_keys = [key async for key in redis.scan_iter(match=f"{keys.PREFIX}:{tag}:*")]
    lost = redis.pipeline(transaction=True)
    if group_keys:
        lost.delete(*group_keys)
    lost.srem(keys.LINK_GROUPS, link_group_id)
    for index in (keys.TABLE_INDEX, keys.METER_INDEX):
        owned = [k for k, v in (await redis.hgetall(index)).items() if v == link_group_id]
        if owned:
            lost.hdel(index, *owned)
    await lost.execute()


async def _group_keys(redis: Redis, link_group_id: str) -> list[str]:
    tag = keys.LinkGroupKeys(link_group_id).tag
    return [str(key) async for key in redis.scan_iter(match=f"{keys.PREFIX}:{tag}:*")]


@pytest.fixture
async def exported(
    controller: ControllerServer,
    floor: Floor,
    admin: pb_grpc.AdminServiceAsyncStub,
    pki: TestPKI,
    tmp_path: Path,
    redis_client: Redis,
) -> tuple[Files, str]:
    """``floor`` with a pending royal flush, exported and lost; ``annex`` live."""
    await Floor(admin, link_group_id=OTHER, meter_id="annex-main").create(tables=("a1",))
    jackpot_id = await _play_a_royal_flush(controller.port, pki, tmp_path / "agent")
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    return Files(tmp_path / "export"), jackpot_id


async def _refused(controller: ControllerServer, files: Files, redis: Redis, match: str) -> None:
    """The restore of the export is refused with ``match`` and writes nothing."""
    with pytest.raises((journal_export.ExportError, AlreadyExists), match=match):
        await journal_restore.restore(
            controller.store,
            files.directory,
            GROUP,
            checkpoint_key=KEY.public_key(),
            actor="operator",
            reason="volume lost",
        )
    assert await _group_keys(redis, GROUP) == []
    assert await redis.hget(keys.TABLE_INDEX, "a1") in (None, OTHER)  # annex's, if it is
    assert await redis.hget(keys.TABLE_INDEX, "t1") is None


async def test_the_honest_export_restores_as_one_step_naming_who_why_and_what(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, jackpot_id = exported
    seq = await journal_restore.restore(
        controller.store,
        files.directory,
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="jackpotctl restore (ann@host)",
        reason="volume lost",
    )
    restored = [e async for e in controller.store.journal.entries(GROUP) if e.type == "restored"]
    assert [e.seq for e in restored] == [seq]
    fields = restored[0].fields
    assert fields["by"] == "jackpotctl restore (ann@host)" and fields["reason"] == "volume lost"
    assert " sha256:" in fields["source"] and "checkpoint-key:" in fields["source"]
    assert (await controller.store.jackpots.get_jackpot(jackpot_id)).status == "pending"
    report = await verify(controller.store, KEY.public_key())
    assert report.ok, report.differences


async def test_a_restore_needs_the_checkpoint_key(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, _ = exported
    with pytest.raises(InvalidConfiguration, match="--checkpoint-key"):
        await journal_restore.restore(
            controller.store,
            files.directory,
            GROUP,
            checkpoint_key=None,  # type: ignore[arg-type]
            actor="operator",
            reason="volume lost",
        )
    assert await _group_keys(redis_client, GROUP) == []


async def test_a_pending_royal_flush_edited_to_approved_at_ten_times_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, jackpot_id = exported
    record = files.jackpot(jackpot_id)
    amount = int(record["amount_cents"])
    # The snapshot alone: approved, ten times the amount, out of the pending set.
    record |= {"status": "approved", "reviewed_by": "jackpot://supervisor/mallory"}
    record["amount_cents"] = str(10 * amount)
    files.set_jackpot(record)
    files.snapshot["pending"] = []
    files.snapshot["meters"][METER]["pending_jackpots"] = "0"
    files.write()
    await _refused(controller, files, redis_client, f"jackpot {jackpot_id}: its amount_cents")
    record["amount_cents"] = str(amount)
    files.set_jackpot(record)
    files.write()
    await _refused(controller, files, redis_client, f"jackpot {jackpot_id}: its status")
    # The journal's award too, its hashes written anew: the award takes another amount.
    record["amount_cents"] = str(10 * amount)
    files.set_jackpot(record)
    award = files.entry("award")
    award["amount_cents"] = str(10 * amount)
    files.write(rechain=True)
    assert verify_export(files.directory, KEY.public_key(), GROUP).ok  # the chain holds
    await _refused(controller, files, redis_client, "awards .* cents but takes")
    # ... and what it took, and the meter after it, and the meter's sums.
    taken = 9 * amount * MICROCENTS_PER_CENT
    award["d_meter"] = str(int(award["d_meter"]) - taken)
    award["meter_after_cents"] = str(int(award["meter_before_cents"]) - 10 * amount)
    files.add_to_meter(-taken)
    files.write(rechain=True)
    assert verify_export(files.directory, KEY.public_key(), GROUP).ok
    await _refused(controller, files, redis_client, "more than the meter's")


async def test_an_invented_approved_jackpot_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, jackpot_id = exported
    real = files.jackpot(jackpot_id)
    contribution = files.entry("contribution")["seq"]
    for invented_id in (f"{GROUP}:{contribution}", f"{GROUP}:{10**6}"):
        files.snapshot["jackpots"] = {jackpot_id: json.dumps(real)}
        invented = real | {
            "jackpot_id": invented_id,
            "journal_seq": invented_id.rpartition(":")[2],
            "amount_cents": "25000000",
            "status": "approved",
            "reviewed_by": "jackpot://supervisor/mallory",
        }
        files.set_jackpot(invented)
        files.write()
        await _refused(
            controller, files, redis_client, f"jackpot {invented_id}: no journal entry made it"
        )
    # Dressed as the flush's fixed award (an entry that made an award, paid at the table).
    fixed = files.entry("fixed_award")
    files.snapshot["jackpots"] = {jackpot_id: json.dumps(real)}
    files.set_jackpot(
        real
        | {
            "jackpot_id": f"{GROUP}:{fixed['seq']}",
            "journal_seq": fixed["seq"],
            "meter_id": "",
            "seat": int(fixed["seat"]),
            "hand": fixed["hand"],
            "line": fixed["line"],
            "award_text": fixed["award"],
            "amount_cents": "25000000",
            "meter_before_cents": "0",
            "meter_after_cents": "0",
            "status": "approved",
        }
        | {"reset_topup_microcents": None, "reset_from_reserve_microcents": None}
    )
    files.write()
    await _refused(controller, files, redis_client, "paid at the table, never held")


async def test_a_meter_raised_by_twenty_thousand_dollars_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, _ = exported
    raised = 2_000_000 * MICROCENTS_PER_CENT
    files.add_to_meter(raised)
    files.write()
    await _refused(controller, files, redis_client, "the offline audit of its export found")
    # The sums fudged: a contribution gives the $20,000, its hashes written anew.
    contribution = files.entry("contribution")
    contribution["d_meter"] = str(int(contribution["d_meter"]) + raised)
    files.write(rechain=True)
    assert verify_export(files.directory, KEY.public_key(), GROUP).ok
    await _refused(controller, files, redis_client, "where meter cs-main's rates give")


async def test_a_forged_paytable_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, _ = exported
    table = files.snapshot["tables"]["t1"]
    config = json.loads(table["config"])
    config["wagers"][0]["paytable"] = "A"
    table["config"] = json.dumps(config, sort_keys=True, separators=(",", ":"))
    files.write()
    await _refused(controller, files, redis_client, "table t1: its config is")


async def test_an_export_naming_another_link_groups_table_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    """The whole forgery: annex's table a1 registered in floor's journal (an entry appended,
    its hash chained, the snapshot's seq moved on) with floor's meter: every check of the
    export itself passes; the table index says a1 is annex's."""
    files, _ = exported
    t1 = files.snapshot["tables"]["t1"]
    config = json.loads(t1["config"]) | {"table_id": "a1"}
    forged = json.dumps(config, sort_keys=True, separators=(",", ":"))
    last = files.entries[-1]
    seq = int(last["fields"]["seq"]) + 1
    files.entries.append(
        {
            "seq": seq,
            "id": f"{int(last['id'].partition('-')[0]) + 1}-0",
            "time_ms": last["time_ms"] + 1,
            "fields": {
                "seq": str(seq),
                "type": "table_registered",
                "meter": "",
                "d_meter": "0",
                "d_reserve": "0",
                "table": "a1",
                "config": forged,
                "by": "jackpot://operator/mallory",
            },
        }
    )
    files.snapshot["seq"] = str(seq)
    files.snapshot["tables"]["a1"] = {"config": forged, "last_round": "0"}
    files.write(rechain=True)
    assert verify_export(files.directory, KEY.public_key(), GROUP).ok
    journal_restore.read_export(files.directory, GROUP)  # consistent in itself
    await _refused(controller, files, redis_client, "names table a1, which belongs to link group")


async def test_a_trimmed_export_cannot_restore_what_it_cannot_rebuild(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    """A first export of a trimmed journal holds no entry that made the meter, the table or
    the pending jackpot: refused; the directory the exports appended to restores."""
    await _play_a_royal_flush(controller.port, pki, tmp_path / "agent")
    await journal_export.export(controller.store, tmp_path / "whole", GROUP)
    await journal_export.trim(controller.store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    await journal_export.export(controller.store, tmp_path / "whole", GROUP)
    await journal_export.export(controller.store, tmp_path / "trimmed", GROUP)
    assert (tmp_path / "trimmed" / GROUP / journal_export.CHAIN_START_FILE).exists()
    await _lose(redis_client, GROUP)
    with pytest.raises(journal_export.ExportError, match="was made before journal entry #"):
        await journal_restore.restore(
            controller.store,
            tmp_path / "trimmed",
            GROUP,
            checkpoint_key=KEY.public_key(),
            actor="operator",
            reason="volume lost",
        )
    assert await _group_keys(redis_client, GROUP) == []
    with pytest.raises(journal_export.ExportError, match="is signed by key"):
        await journal_restore.restore(
            controller.store,
            tmp_path / "whole",
            GROUP,
            checkpoint_key=Ed25519PrivateKey.generate().public_key(),
            actor="operator",
            reason="volume lost",
        )
    await journal_restore.restore(
        controller.store,
        tmp_path / "whole",
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="operator",
        reason="volume lost",
    )
    report = await verify(controller.store, KEY.public_key())
    assert report.ok, report.differences


async def test_a_meters_definition_edited_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, _ = exported
    files.snapshot["meters"][METER]["rate_ppm"] = "900000"
    files.write()
    await _refused(controller, files, redis_client, "meter cs-main: its rate_ppm is '900000'")


async def test_a_reviewer_or_payer_edited_is_refused(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    store = controller.store
    jackpot_id = await _play_a_royal_flush(controller.port, pki, tmp_path / "agent")
    await store.jackpots.review_jackpot(
        jackpot_id, approve=True, reviewer="jackpot://supervisor/ann", reviewer_cert="a", note="ok"
    )
    await store.jackpots.pay_jackpot(
        jackpot_id, payer="jackpot://cage/bob", payer_cert="b", note="cash", two_people=True
    )
    await journal_export.export(store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    good = files.jackpot(jackpot_id)
    for name, value in (("reviewed_by", "jackpot://supervisor/mallory"), ("paid_by", "")):
        files.set_jackpot(good | {name: value})
        files.write()
        await _refused(controller, files, redis_client, f"jackpot {jackpot_id}: its {name}")
    # Paid back to approved (to be paid again): the payment entry says paid.
    files.set_jackpot(good | {"status": "approved", "paid_by": ""})
    files.write()
    await _refused(controller, files, redis_client, f"jackpot {jackpot_id}: its status")


async def test_an_adjustment_edited_or_invented_is_refused(
    controller: ControllerServer, floor: Floor, tmp_path: Path, redis_client: Redis
) -> None:
    store = controller.store
    waiting = await store.controls.request_adjustment(
        METER, 1_000, reason="short seed", reference="r1", actor="ann", actor_cert="a"
    )
    await journal_export.export(store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    good = json.loads(files.snapshot["adjustments"][waiting.adjustment_id])
    files.snapshot["adjustments"][waiting.adjustment_id] = json.dumps(
        good | {"amount_cents": "2000000"}
    )
    files.write()
    await _refused(
        controller, files, redis_client, f"adjustment {waiting.adjustment_id}: its amount_cents"
    )
    invented = f"{GROUP}:{files.entry('meter_created')['seq']}"
    files.snapshot["adjustments"] = {
        waiting.adjustment_id: json.dumps(good),
        invented: json.dumps(good | {"adjustment_id": invented, "status": "rejected"}),
    }
    files.write()
    await _refused(controller, files, redis_client, f"adjustment {invented}: no journal entry")


async def test_an_open_round_with_other_wagers_or_a_settled_round_reopened_is_refused(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    """An open round's record is what its settlement pays on: its wagers must be the ones
    accepted, and a round an award settled is not open."""
    await _play_a_royal_flush(controller.port, pki, tmp_path / "agent")
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, Outbox(tmp_path / "agent", "t1"))
    agent.continue_after((await client.get_table("t1")).last_round_id)
    open_round = agent.new_round()
    await agent.lockout(open_round, [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
    await client.close()
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    name = f"t1:{open_round}"
    good = dict(files.snapshot["rounds"][name])
    wagers = json.loads(good["wagers"])
    files.snapshot["rounds"][name] = good | {
        "wagers": json.dumps([*wagers, wagers[0] | {"seat": 3}])
    }
    files.write()
    await _refused(controller, files, redis_client, f"round {name} holds 2 wagers of 200 cents")
    files.snapshot["rounds"] = {name: good, f"t1:{open_round - 1}": good}
    files.write()
    await _refused(controller, files, redis_client, f"round t1:{open_round - 1} is exported open")


async def test_a_paytable_rewritten_in_the_registration_too_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    """Two pair paid 100% of the meter: the table's definition and the journal entry that
    registered it both rewritten, the hashes chained anew. The regulation prints paytable B,
    and a registration never rewrites a printed paytable."""
    files, _ = exported

    def forged(raw: str) -> str:
        config = json.loads(raw)
        lines = config["wagers"][0]["paytable"]["lines"]
        for line in lines:
            if line[0] == "two_pair":
                line[1] = "100% of meter"
        return json.dumps(config, sort_keys=True, separators=(",", ":"))

    registered = files.entry("table_registered")
    registered["config"] = forged(registered["config"])
    table = files.snapshot["tables"]["t1"]
    table["config"] = forged(table["config"])
    assert table["config"] == registered["config"]
    files.write(rechain=True)
    assert verify_export(files.directory, KEY.public_key(), GROUP).ok
    await _refused(controller, files, redis_client, "lines cannot be changed")


async def test_a_fixed_award_rewritten_to_two_hundred_fifty_thousand_dollars_is_refused(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    """The flush's fixed award rewritten in the journal (hashes chained anew) and held as an
    approved jackpot in the snapshot: paytable B pays a flush far less on a $1 wager."""
    files, jackpot_id = exported
    fixed = files.entry("fixed_award")
    fixed["amount_cents"] = "25000000"
    real = files.jackpot(jackpot_id)
    files.set_jackpot(
        real
        | {
            "jackpot_id": f"{GROUP}:{fixed['seq']}",
            "journal_seq": fixed["seq"],
            "meter_id": "",
            "seat": int(fixed["seat"]),
            "hand": fixed["hand"],
            "line": fixed["line"],
            "award_text": fixed["award"],
            "amount_cents": "25000000",
            "meter_before_cents": "0",
            "meter_after_cents": "0",
            "status": "approved",
            "reset_topup_microcents": None,
            "reset_from_reserve_microcents": None,
        }
    )
    files.write(rechain=True)
    assert verify_export(files.directory, KEY.public_key(), GROUP).ok
    await _refused(controller, files, redis_client, "pays at most")


async def test_an_unreadable_field_is_a_refusal_not_a_crash(
    controller: ControllerServer, exported: tuple[Files, str], redis_client: Redis
) -> None:
    files, _ = exported
    files.entry("contribution")["amount_cents"] = "one dollar"
    files.write(rechain=True)
    await _refused(controller, files, redis_client, "cannot be read")


async def test_held_fixed_awards_restore_and_one_left_out_is_refused(
    controller: ControllerServer,
    floor: Floor,
    admin: pb_grpc.AdminServiceAsyncStub,
    pki: TestPKI,
    tmp_path: Path,
    redis_client: Redis,
) -> None:
    """A table whose every fixed award waits for validation (threshold $0): the flush's
    jackpot is restored; an export without it is refused (the award entry made it)."""
    table = progressive_table("t2", GROUP, METER)
    table.validation_threshold_cents = 0
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    client = table_client(controller.port, pki, "t2")
    agent = TableAgent("t2", client, Outbox(tmp_path / "agent", "t2"))
    agent.continue_after((await client.get_table("t2")).last_round_id)
    round_id = agent.new_round()
    await agent.lockout(round_id, [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
    settled = await agent.settle(
        round_id,
        SettleReport({1: parse_cards(FLUSH_CLUBS.split())}, dealer=parse_cards(HIGH_CARD.split())),
    )
    await client.close()
    jackpot_id = str(settled.awards[0].jackpot_id)
    assert jackpot_id
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    good = json.dumps(files.snapshot)
    del files.snapshot["jackpots"][jackpot_id]
    files.snapshot["pending"] = []
    files.write()
    await _refused(controller, files, redis_client, f"made jackpot {jackpot_id}, which the")
    files.snapshot = json.loads(good)
    files.write()
    await journal_restore.restore(
        controller.store,
        files.directory,
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="operator",
        reason="volume lost",
    )
    assert (await controller.store.jackpots.get_jackpot(jackpot_id)).status == "pending"


async def test_a_maintenance_edited_is_refused(
    controller: ControllerServer, floor: Floor, tmp_path: Path, redis_client: Redis
) -> None:
    store = controller.store
    await store.controls.enter_maintenance(GROUP, actor="ann", actor_cert="a", reason="swap")
    await journal_export.export(store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    files.snapshot["maintenance"]["state"] = "play"
    files.write()
    await _refused(controller, files, redis_client, "maintenance of floor: its state is 'play'")


async def test_a_rejected_royal_flush_restores_and_its_refund_edited_is_refused(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    """A rejection gives the award back to the meter less its reset's top-up
    (review_jackpot.lua): the honest export restores; a rejection entry that gives back
    more (the meter raised to match, the hashes chained anew) is refused."""
    store = controller.store
    jackpot_id = await _play_a_royal_flush(controller.port, pki, tmp_path / "agent")
    await store.jackpots.review_jackpot(
        jackpot_id, approve=False, reviewer="jackpot://supervisor/ann", reviewer_cert="a", note="no"
    )
    await journal_export.export(store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    good = (json.dumps(files.snapshot), [json.dumps(e) for e in files.entries])
    rejected = files.entry("jackpot_rejected")
    rejected["d_meter"] = str(int(rejected["d_meter"]) + 2_000_000 * MICROCENTS_PER_CENT)
    files.add_to_meter(2_000_000 * MICROCENTS_PER_CENT)
    files.write(rechain=True)
    assert verify_export(files.directory, KEY.public_key(), GROUP).ok
    await _refused(controller, files, redis_client, "not what it should")
    files.snapshot, files.entries = json.loads(good[0]), [json.loads(e) for e in good[1]]
    files.write()
    await journal_restore.restore(
        store,
        files.directory,
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="operator",
        reason="volume lost",
    )
    assert (await store.jackpots.get_jackpot(jackpot_id)).status == "rejected"
    report = await verify(store, KEY.public_key())
    assert report.ok, report.differences


async def test_a_restore_follows_a_key_handover_and_refuses_data_at_seq_0(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    """Trimmed with KEY, handed over to a new key that trims again: the restore given only
    KEY follows the handover. A checkpoint at seq 0 that carries a sum is refused."""
    store = controller.store
    new_key = Ed25519PrivateKey.generate()
    export = tmp_path / "export"
    await _play_a_royal_flush(controller.port, pki, tmp_path / "agent")
    await journal_export.export(store, export, GROUP)
    await journal_export.trim(store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    await journal_export.rotate_key(
        store, GROUP, signing_key=KEY, new_signing_key=new_key, actor="operator"
    )
    await journal_export.export(store, export, GROUP)
    await journal_export.trim(store, GROUP, before_ms=NOW_MS, signing_key=new_key)
    await journal_export.export(store, export, GROUP)
    await _lose(redis_client, GROUP)
    files = Files(export)
    good = json.dumps(files.snapshot)
    files.snapshot["checkpoint"] = {"seq": "0", f"value:{METER}": "5000000000"}
    files.add_to_meter(5_000_000_000)
    files.write()
    await _refused(controller, files, redis_client, "checkpoint")
    files.snapshot = json.loads(good)
    files.write()
    await journal_restore.restore(
        store, export, GROUP, checkpoint_key=KEY.public_key(), actor="operator", reason="lost"
    )
    report = await verify(store, KEY.public_key())
    assert report.ok, report.differences


async def test_a_head_kept_from_earlier_catches_a_consistent_rewrite(
    controller: ControllerServer, floor: Floor, tmp_path: Path, redis_client: Redis
) -> None:
    """A rewrite every other check accepts (an adjustment's reason, in the journal and the
    snapshot alike, the hashes chained anew) is caught only by a head kept elsewhere."""
    store = controller.store
    waiting = await store.controls.request_adjustment(
        METER, 1_000, reason="short seed", reference="r1", actor="ann", actor_cert="a"
    )
    await journal_export.export(store, tmp_path / "export", GROUP)
    await _lose(redis_client, GROUP)
    files = Files(tmp_path / "export")
    head = (int(files.entries[-1]["seq"]), str(files.entries[-1]["fields"]["hash"]))
    files.entry("adjustment_requested")["reason"] = "mallory's reason"
    record = json.loads(files.snapshot["adjustments"][waiting.adjustment_id])
    files.snapshot["adjustments"][waiting.adjustment_id] = json.dumps(
        record | {"reason": "mallory's reason"}
    )
    files.write(rechain=True)
    journal_restore.read_export(files.directory, GROUP)  # every other check passes
    with pytest.raises(journal_export.ExportError, match="differs from the export's"):
        await journal_restore.restore(
            store,
            files.directory,
            GROUP,
            checkpoint_key=KEY.public_key(),
            actor="operator",
            reason="volume lost",
            expect_head=head,
        )
    assert await _group_keys(redis_client, GROUP) == []
    with pytest.raises(journal_export.ExportError, match="after the export's last entry"):
        await journal_restore.restore(
            store,
            files.directory,
            GROUP,
            checkpoint_key=KEY.public_key(),
            actor="operator",
            reason="volume lost",
            expect_head=(head[0] + 1, head[1]),
        )
