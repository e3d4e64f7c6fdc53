"""A restore brings back every piece of a link group's state, not only its money.

A group with maintenance entered, a pending and an approved adjustment, a retired meter and a
retired table, a round held by a chip count, a paid jackpot and a must-hit-by meter is
exported, Redis is flushed, and the restore gives each one back as it was: the retired ids
stay refused, the held round waits for its supervisor, the pending adjustment is still
approvable by a second operator, the audit verifies the continued chain, and the mystery meter
plays on under a fresh commitment (the export never held its secret).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.api import convert
from controller.domain import mystery
from controller.domain.config import MUST_HIT_BY, LinkGroupConfig, MeterConfig, TableConfig
from controller.domain.digests import lockout_fingerprint
from controller.domain.rounds import Wager
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify
from controller.store import keys
from controller.store.irregularities import Resolution
from controller.store.redis_store import RedisStore
from jackpot.errors import AlreadyExists, FailedPrecondition, JackpotError, NotFound
from jackpot.kinds import IrregularityKind
from jackpot.money import MICROCENTS_PER_CENT
from jackpot.v1 import jackpot_pb2 as pb
from tests.helpers import RESET_CENTS

GROUP = "hall"
MAIN, MYSTERY, SPARE = "hall-main", "hall-mystery", "hall-spare"
SPAN = 2_000  # cents between the mystery meter's reset and its must-hit-by amount
ALICE, BOB, CAROL = "alice", "bob", "carol"  # operators and a supervisor (certificate names)
KEY = Ed25519PrivateKey.generate()  # the checkpoint key a restore requires


def _table(table_id: str, meter_ids: list[str]) -> TableConfig:
    """A Caribbean Stud table whose $1 progressive wager feeds ``meter_ids``."""
    return convert.table_config(
        pb.Table(
            table_id=table_id,
            game="caribbean-stud",
            seats=7,
            link_group_id=GROUP,
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
    )


async def _lockout(store: RedisStore, table: TableConfig, round_id: int, cents: int) -> int:
    """Lock out seven wagers of ``cents``; answer how many mystery hits it made."""
    wagers = tuple(Wager(seat, "progressive", cents) for seat in range(1, 8))
    result = await store.rounds.lockout(table, round_id, wagers, lockout_fingerprint(wagers))
    return len(result.mystery_hits)


async def _group_state(redis: Redis) -> dict[str, object]:
    """Every key of the link group but the journal, the seq, the epoch and the secrets, as
    Redis holds it (rounds' TTLs aside)."""
    state: dict[str, object] = {}
    tag = keys.LinkGroupKeys(GROUP).tag
    async for key in redis.scan_iter(match=f"{keys.PREFIX}:{tag}:*"):
        kind = await redis.type(key)
        name = str(key).replace(tag, "")
        if name.split(":")[2] in ("journal", "seq", "epoch", "mystery"):
            continue
        if kind == "hash":
            state[name] = await redis.hgetall(key)
        elif kind == "set":
            state[name] = sorted(await redis.smembers(key))
        else:
            state[name] = await redis.get(key)
    return state


async def test_a_restore_brings_back_controls_irregularities_jackpots_and_mystery_meters(
    redis_url: str, redis_client: Redis, tmp_path: Path
) -> None:
    store = RedisStore.from_url(redis_url)
    try:
        await store.catalog.create_link_group(LinkGroupConfig(GROUP, "restore"), actor=ALICE)
        for config in (
            MeterConfig(MAIN, GROUP, "caribbean-stud", RESET_CENTS, 150_000),
            MeterConfig(SPARE, GROUP, "caribbean-stud", RESET_CENTS, 150_000),
            MeterConfig(
                MYSTERY,
                GROUP,
                "caribbean-stud",
                RESET_CENTS,
                500_000,
                100_000,
                kind=MUST_HIT_BY,
                must_hit_by_cents=RESET_CENTS + SPAN,
            ),
        ):
            await store.catalog.create_meter(config, actor=ALICE)
        table = await store.tables.register_table(_table("h1", [MAIN, MYSTERY]), actor=ALICE)
        gone = await store.tables.register_table(_table("h2", [MAIN]), actor=ALICE)
        # a mystery hit, approved and paid
        round_id = 0
        while True:
            round_id += 1
            if await _lockout(store, table, round_id, 10_000):
                break
        paid = (await store.jackpots.list_pending_jackpots(GROUP))[0]
        await store.jackpots.review_jackpot(
            paid.jackpot_id, approve=True, reviewer=CAROL, reviewer_cert="c", note="ok"
        )
        await store.jackpots.pay_jackpot(
            paid.jackpot_id, payer=BOB, payer_cert="b", note="cash", two_people=True
        )
        # a round held by a chip count that differs from the wagers accepted
        round_id += 1
        held = round_id
        await _lockout(store, table, held, 100)
        counted = await store.rounds.report_chip_count(table, held, 6)
        assert not counted.matched and counted.accepted == 7
        # maintenance: a meter and a table retired, two adjustments (one approved)
        await store.controls.enter_maintenance(GROUP, actor=ALICE, actor_cert="a", reason="swap")
        await store.controls.retire_meter(
            SPARE, MAIN, actor=ALICE, actor_cert="a", reason="unused", approval="ticket-1"
        )
        await store.controls.retire_table(gone, actor=ALICE, actor_cert="a", reason="removed")
        approved = await store.controls.request_adjustment(
            MAIN, 2_500, reason="short seed", reference="r1", actor=ALICE, actor_cert="a"
        )
        await store.controls.review_adjustment(
            approved.adjustment_id, approve=True, actor=BOB, actor_cert="b", note="checked"
        )
        waiting = await store.controls.request_adjustment(
            MAIN, -1_000, reason="over seed", reference="r2", actor=ALICE, actor_cert="a"
        )
        meter_before = await store.catalog.get_meter(MYSTERY)
        before = await _group_state(redis_client)
        secret_before = await redis_client.hget(keys.LinkGroupKeys(GROUP).mystery(MYSTERY), "salt")

        exported = await journal_export.export(store, tmp_path, GROUP)
        files = (tmp_path / GROUP / journal_export.SNAPSHOT_FILE).read_text()
        files += (tmp_path / GROUP / journal_export.JOURNAL_FILE).read_text()
        assert str(secret_before) not in files  # the export holds no secret
        snapshot = json.loads((tmp_path / GROUP / journal_export.SNAPSHOT_FILE).read_text())
        assert set(snapshot["retired_meters"]) == {SPARE}
        assert set(snapshot["retired_tables"]) == {"h2"}
        assert snapshot["pending_adjustments"] == [waiting.adjustment_id]
        assert snapshot["maintenance"]["state"] == "maintenance"
        await store.close()

        await redis_client.flushall()
        store = RedisStore.from_url(redis_url)
        seq = await journal_restore.restore(
            store, tmp_path, GROUP, checkpoint_key=KEY.public_key(), actor=ALICE, reason="lost"
        )
        assert seq == exported.last_seq + 1

        after = await _group_state(redis_client)
        for state in (before, after):  # the export marks itself; the rest is as before
            state.pop("jp::checkpoint", None)
            mystery_meter = state[f"jp::meter:{MYSTERY}"]
            assert isinstance(mystery_meter, dict)
            for name in ("mystery_cycle", "mystery_commitment"):  # a new cycle (below)
                mystery_meter.pop(name)
        assert after == before
        # the retired ids stay taken
        with pytest.raises(AlreadyExists, match="retired"):
            await store.catalog.create_meter(
                MeterConfig(SPARE, GROUP, "caribbean-stud", RESET_CENTS, 150_000), actor=ALICE
            )
        with pytest.raises(AlreadyExists, match="retired"):
            await store.tables.register_table(_table("h2", [MAIN]), actor=ALICE)
        assert (await store.controls.retired_table("h2")).table_id == "h2"
        # the jackpot is paid, the held round still held, the adjustment still approvable
        assert (await store.jackpots.get_jackpot(paid.jackpot_id)).status == "paid"
        assert (
            await store.irregularities.get_irregularity(table, held, IrregularityKind.CHIP_COUNT)
        ).status == ("open")
        with pytest.raises(FailedPrecondition):  # its requester cannot approve it
            await store.controls.review_adjustment(
                waiting.adjustment_id, approve=True, actor=ALICE, actor_cert="a", note="me"
            )
        decided = await store.controls.review_adjustment(
            waiting.adjustment_id, approve=True, actor=BOB, actor_cert="b", note="checked"
        )
        assert decided.status == "approved"
        confirmed = await store.controls.get_adjustment(approved.adjustment_id)
        assert confirmed.status == "approved" and confirmed.decided_by == BOB
        resolved = await store.irregularities.confirm_irregularity(
            table, held, Resolution(supervisor=CAROL, supervisor_cert="c", note="recounted")
        )
        assert resolved.status == "confirmed"
        # the maintenance was restored: progressive wagers are refused until it ends
        with pytest.raises(JackpotError, match="maintenance"):
            await _lockout(store, table, round_id + 1, 100)
        await store.controls.leave_maintenance(GROUP, actor=ALICE, actor_cert="a", reason="done")

        # the mystery meter abandoned its cycle and started the next one at the restore
        draws = [e async for e in store.journal.entries(GROUP) if e.type == "mystery_draw"]
        restart = draws[-1]
        assert restart.seq == seq + 1 and restart.fields["restart"] == "restore"
        assert restart.fields["abandoned_cycle"] == str(meter_before.mystery_cycle)
        assert restart.fields["abandoned_commitment"] == meter_before.mystery_commitment
        low = max(RESET_CENTS, meter_before.amount_microcents // MICROCENTS_PER_CENT)
        assert restart.fields["drawn_above_cents"] == str(low)
        meter = await store.catalog.get_meter(MYSTERY)
        assert meter.mystery_cycle == meter_before.mystery_cycle + 1
        assert meter.mystery_commitment == restart.fields["commitment"]
        assert meter.amount_microcents == meter_before.amount_microcents
        secret = await redis_client.hgetall(keys.LinkGroupKeys(GROUP).mystery(MYSTERY))
        assert low < int(secret["hit_cents"]) <= RESET_CENTS + SPAN
        assert mystery.verifies(
            int(secret["hit_cents"]), str(secret["salt"]), meter.mystery_commitment
        )
        # it plays on and hits under the new commitment; the audit verifies it all
        hits = 0
        while not hits:
            round_id += 1
            hits = await _lockout(store, table, round_id, 10_000)
        later = [
            e async for e in store.journal.entries(GROUP) if e.type == "mystery_hit" and e.seq > seq
        ]
        hit = later[0]
        assert hit.fields["commitment"] == restart.fields["commitment"]
        assert hit.fields["hit_cents"] == secret["hit_cents"]
        report = await verify(store)
        assert report.ok, report.differences[:5]
    finally:
        await store.close()


async def test_an_export_whose_records_disagree_is_refused_before_anything_is_written(
    redis_url: str, redis_client: Redis, tmp_path: Path
) -> None:
    store = RedisStore.from_url(redis_url)
    try:
        await store.catalog.create_link_group(LinkGroupConfig(GROUP, "restore"), actor=ALICE)
        await store.catalog.create_meter(
            MeterConfig(MAIN, GROUP, "caribbean-stud", RESET_CENTS, 150_000), actor=ALICE
        )
        waiting = await store.controls.request_adjustment(
            MAIN, 1_000, reason="seed", reference="r", actor=ALICE, actor_cert="a"
        )
        await journal_export.export(store, tmp_path, GROUP)
        path = tmp_path / GROUP / journal_export.SNAPSHOT_FILE
        good = path.read_text()
        changes: list[tuple[tuple[str, ...], object, str]] = [
            (("pending_adjustments",), [], "pending adjustments"),
            (("pending",), [f"{GROUP}:7:1"], "pending jackpots"),
            (("retired_meters", MAIN), "{}", "both in the group and retired"),
            (("maintenance", "state"), "repair", "maintenance state"),
            (("meters", MAIN, "kind"), MUST_HIT_BY, "no cycle commitment"),
        ]
        for where, value, message in changes:
            snapshot = json.loads(good)
            record = snapshot
            for name in where[:-1]:
                record = record[name]
            record[where[-1]] = value
            path.write_text(json.dumps(snapshot))
            with pytest.raises(journal_export.ExportError, match=message):
                journal_restore.read_export(tmp_path, GROUP)
        path.write_text(good)
        await redis_client.flushall()
        await journal_restore.restore(
            store, tmp_path, GROUP, checkpoint_key=KEY.public_key(), actor=ALICE, reason="lost"
        )
        with pytest.raises(NotFound):
            await store.controls.get_adjustment(f"{GROUP}:999")
        assert (await store.controls.get_adjustment(waiting.adjustment_id)).status == "requested"
    finally:
        await store.close()
