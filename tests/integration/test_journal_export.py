"""Journal export, trim from a checkpoint, and restore of a link group Redis lost."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.domain.journal_chain import GENESIS, entry_hash
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.store.redis_store import RedisStore
from controller.testing import TestPKI
from jackpot.cards import parse_cards
from jackpot.errors import AlreadyExists
from jackpot.kinds import WagerKind
from table_agent.client import ControllerUnreachable
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    HIGH_CARD,
    PAIR,
    ROYAL_SPADES,
    Floor,
    controller_config,
    journal,
    table_client,
)

GROUP = "floor"
NOW_MS = 10**15  # far in the future: every entry is older than it
KEY = Ed25519PrivateKey.generate()  # signs the trims' checkpoints


async def play(port: int, pki: TestPKI, outbox: Outbox, rounds: int) -> TableAgent:
    """Simulated rounds at t1 (voids included) with a durable outbox."""
    client = table_client(port, pki)
    agent = TableAgent("t1", client, outbox)
    agent.continue_after((await client.get_table("t1")).last_round_id)
    await TableSimulator(agent, SimulationConfig(void_percent=20)).run(rounds)
    await client.close()
    return agent


async def audit_ok(store: RedisStore) -> int:
    report = await verify(store, KEY.public_key())
    assert report.ok, report.differences
    return report.entries


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rechain(entries: list[dict[str, Any]]) -> None:
    """Write every entry's hash anew, as someone who edited the file might."""
    previous = GENESIS
    for entry in entries:
        entry["fields"]["hash"] = previous = entry_hash(previous, entry["fields"])


async def test_export_appends_every_entry_once_and_trim_keeps_the_audit_whole(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    store = controller.store
    await play(controller.port, pki, Outbox(tmp_path / "agent", "t1"), 12)
    first = await journal_export.export(store, tmp_path / "export", GROUP)
    journal_file = tmp_path / "export" / GROUP / journal_export.JOURNAL_FILE
    exported = lines(journal_file)
    assert [line["seq"] for line in exported] == list(range(1, first.last_seq + 1))
    assert all(isinstance(line["time_ms"], int) and line["fields"] for line in exported)
    assert exported[0]["fields"]["type"] == "link_group_created"

    await play(controller.port, pki, Outbox(tmp_path / "agent", "t1"), 5)
    second = await journal_export.export(store, tmp_path / "export", GROUP)
    assert second.first_seq == first.last_seq + 1
    assert [line["seq"] for line in lines(journal_file)] == list(range(1, second.last_seq + 1))
    again = await journal_export.export(store, tmp_path / "export", GROUP)
    assert again.count == 0 and again.last_seq == second.last_seq

    await play(controller.port, pki, Outbox(tmp_path / "agent", "t1"), 4)  # not exported
    total = int(str(await redis_client.get(keys.LinkGroupKeys(GROUP).seq)))
    # A retention window longer than the entries' age trims nothing.
    assert await journal_export.trim(store, GROUP, before_ms=0, signing_key=KEY) == 0
    trimmed = await journal_export.trim(store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    assert trimmed == second.last_seq  # exactly what was exported, never more
    checkpoint = await store.journal.checkpoint(GROUP)
    assert checkpoint.seq == checkpoint.exported_seq == second.last_seq
    remaining = await journal(redis_client)
    assert [int(fields["seq"]) for _, fields in remaining] == list(
        range(second.last_seq + 1, total + 1)
    )
    assert await audit_ok(store) == total - second.last_seq
    await play(controller.port, pki, Outbox(tmp_path / "agent", "t1"), 3)
    await audit_ok(store)


async def test_the_audit_notices_a_checkpoint_that_does_not_add_up(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    await play(controller.port, pki, Outbox(tmp_path, "t1"), 5)
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    await journal_export.trim(controller.store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    await redis_client.hincrby(keys.LinkGroupKeys(GROUP).checkpoint, "value:cs-main", 1)
    report = await verify(controller.store, KEY.public_key())
    assert len(report.differences) == 2, report.differences
    assert report.differences[0].startswith(f"{GROUP}: the checkpoint at journal #")
    assert report.differences[0].endswith("does not match its signature: it was altered or forged")
    assert report.differences[1].startswith(f"{GROUP}/cs-main: meter is ")
    assert "+ 1 microcents" in report.differences[1]


async def test_an_audit_while_the_journal_is_trimmed_stays_clean(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path
) -> None:
    store = controller.store
    for _ in range(4):
        await play(controller.port, pki, Outbox(tmp_path, "t1"), 3)
        await journal_export.export(store, tmp_path / "export", GROUP)

        async def trim_slowly() -> None:
            while await journal_export.trim_step(
                store, GROUP, before_ms=NOW_MS, signing_key=KEY, batch=3
            ):
                await asyncio.sleep(0)

        audits = [asyncio.create_task(verify(store, KEY.public_key())) for _ in range(3)]
        await trim_slowly()
        for report in await asyncio.gather(*audits):
            assert report.ok, report.differences


async def test_restore_brings_a_lost_link_group_back_and_tables_ahead_of_it_stop_it(
    redis_url: str, redis_client: Redis, pki: TestPKI, tmp_path: Path
) -> None:
    server = ControllerServer(controller_config(redis_url, pki))
    await server.start()
    from tests.helpers import connect

    async with connect(f"127.0.0.1:{server.port}", pki) as (_, admin):
        await Floor(admin).create()
    outbox = Outbox(tmp_path / "agent", "t1")
    await play(server.port, pki, outbox, 10)
    done = await journal_export.export(server.store, tmp_path / "export", GROUP)
    before = await server.store.catalog.list_meters(GROUP)
    pending = await server.store.jackpots.list_pending_jackpots(GROUP)
    at_export = outbox.last_position()
    await play(server.port, pki, outbox, 3)  # acknowledged, then lost with Redis
    await server.stop(grace_s=1)
    await redis_client.flushall()

    # The controller starts, but serves nothing and creates nothing.
    again = ControllerServer(controller_config(redis_url, pki))
    await again.start()
    try:
        assert again.guard.nothing_to_serve() or not again.guard.known()
        seq = await journal_restore.restore(
            again.store,
            tmp_path / "export",
            GROUP,
            checkpoint_key=KEY.public_key(),
            actor="test",
            reason="volume lost",
        )
        assert seq == done.last_seq + 1
        restored = (await journal(redis_client))[-1][1]
        assert restored["type"] == "restored" and restored["from_seq"] == str(done.last_seq)
        assert restored["source"].endswith(tuple("0123456789abcdef"))
        assert await again.store.catalog.list_meters(GROUP) == before
        assert await again.store.jackpots.list_pending_jackpots(GROUP) == pending
        await audit_ok(again.store)
        await again.check_state()
        assert not again.guard.problems

        # A table that knows only what the export holds plays on, in the new epoch.
        behind = table_client(again.port, pki)
        behind.known = at_export
        info = await behind.get_table("t1")
        assert behind.known.epoch != at_export.epoch and info.last_round_id > 0
        await behind.close()
        # The table itself was acknowledged three rounds more: the link group stops.
        client = table_client(again.port, pki, retry_for_s=0.5)
        client.known = outbox.last_position()
        with pytest.raises(ControllerUnreachable, match="only up to #"):
            await client.get_table("t1")
        await client.close()
        with pytest.raises(AlreadyExists, match="restore only into a Redis that lost it"):
            await journal_restore.restore(
                again.store,
                tmp_path / "export",
                GROUP,
                checkpoint_key=KEY.public_key(),
                actor="test",
                reason="twice",
            )
    finally:
        await again.stop(grace_s=1)
    assert at_export.seq <= done.last_seq < outbox.last_position().seq


async def test_an_export_that_does_not_add_up_is_never_restored(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path
) -> None:
    await play(controller.port, pki, Outbox(tmp_path, "t1"), 4)
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    path = tmp_path / "export" / GROUP / journal_export.JOURNAL_FILE
    entries = lines(path)
    contribution = next(e for e in entries if e["fields"]["type"] == "contribution")
    contribution["fields"]["d_meter"] = str(int(contribution["fields"]["d_meter"]) + 1)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    edited = f"altered: journal entry #{contribution['seq']} .* does not match its hash"
    with pytest.raises(journal_export.ExportError, match=edited):
        journal_restore.read_export(tmp_path / "export", GROUP)
    rechain(entries)  # the hashes written anew after the edit: the sums still tell
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    with pytest.raises(journal_export.ExportError, match="inconsistent: meter cs-main"):
        journal_restore.read_export(tmp_path / "export", GROUP)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries if e is not contribution))
    with pytest.raises(journal_export.ExportError, match="lacks journal entries"):
        journal_restore.read_export(tmp_path / "export", GROUP)


def test_the_commands_export_trim_and_refuse_clearly(redis_url: str, tmp_path: Path) -> None:
    """jackpotctl journal export / trim and restore as processes: output and exit codes."""
    ctl = [sys.executable, "-m", "controller.ctl.main"]
    empty = subprocess.run(
        [*ctl, "journal", "export", "--redis", redis_url, "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert empty.returncode == 0, empty.stderr
    bad = subprocess.run(
        [
            *ctl,
            "journal",
            "trim",
            "--redis",
            redis_url,
            "--retention-hours",
            "-1",
            "--signing-key",
            str(tmp_path / "checkpoint.key"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "--retention-hours must be 0 to" in bad.stderr
    restore = [
        *ctl,
        "restore",
        "--redis",
        redis_url,
        "--from",
        str(tmp_path),
        "--link-group",
        "ghost",
        "--reason",
        "test",
    ]
    keyless = subprocess.run(restore, capture_output=True, text=True, timeout=60)
    assert keyless.returncode == 1 and "restore needs --checkpoint-key FILE" in keyless.stderr
    public = tmp_path / "checkpoint.pub"
    public.write_bytes(
        KEY.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    missing = subprocess.run(
        [*restore, "--checkpoint-key", str(public)], capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 1 and "will not restore ghost" in missing.stderr
    assert "cannot read" in missing.stderr
    head = subprocess.run(
        [*restore, "--checkpoint-key", str(public), "--expect-head", "7:abc"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert head.returncode == 2 and "--expect-head takes [GROUP:]SEQ:HASH" in head.stderr


async def test_an_export_never_appends_another_history(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    """Redis put back from an older copy writes new entries under sequence numbers the export
    already has: the export refuses (and marks nothing exported, so nothing is trimmed)."""
    await play(controller.port, pki, Outbox(tmp_path, "t1"), 3)
    done = await journal_export.export(controller.store, tmp_path / "export", GROUP)
    group = keys.LinkGroupKeys(GROUP)
    rows: Any = await redis_client.xrevrange(group.journal, count=1)
    last_id, fields = rows[0]
    await redis_client.xdel(group.journal, last_id)
    await redis_client.xadd(group.journal, {**fields, "type": "other_history"})
    before = await controller.store.journal.checkpoint(GROUP)
    with pytest.raises(journal_export.ExportError, match="holds another history"):
        await journal_export.export(controller.store, tmp_path / "export", GROUP)
    assert await controller.store.journal.checkpoint(GROUP) == before
    assert before.exported_seq == done.last_seq


async def test_a_round_open_at_the_export_can_be_settled_after_a_restore(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    """The export carries the records of rounds locked out and not yet finished, so a table
    settles its round after Redis lost its data and was restored."""
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, Outbox(tmp_path, "t1"))
    agent.continue_after((await client.get_table("t1")).last_round_id)
    round_id = agent.new_round()
    await agent.lockout(
        round_id,
        [PlacedWager(1, WagerKind.PROGRESSIVE, 100), PlacedWager(2, WagerKind.PROGRESSIVE, 100)],
    )
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    await redis_client.flushall()
    await controller.check_state()
    await journal_restore.restore(
        controller.store,
        tmp_path / "export",
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="test",
        reason="volume lost",
    )
    await controller.check_state()
    assert not controller.guard.problems
    report = SettleReport(
        {1: parse_cards(ROYAL_SPADES.split()), 2: parse_cards(PAIR.split())},
        dealer=parse_cards(HIGH_CARD.split()),
    )
    settlement = await agent.settle(round_id, report)
    assert [award.hand for award in settlement.awards] == ["royal_flush"]
    await client.close()
    await audit_ok(controller.store)
    assert not await redis_client.smembers(keys.LinkGroupKeys(GROUP).open_rounds)


async def test_a_restore_under_way_is_left_alone_and_can_be_run_again(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path, redis_client: Redis
) -> None:
    """While a restore writes a link group (its epoch record comes last), a running
    controller neither serves it nor gives it an epoch of its own; an interrupted restore is
    simply run again."""
    await play(controller.port, pki, Outbox(tmp_path, "t1"), 3)
    await controller.check_state()  # the controller has seen the link group
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    await redis_client.flushall()
    exported = journal_restore.read_export(tmp_path / "export", GROUP)
    await controller.store.snapshots.restore_state(
        exported.snapshot, exported.entries
    )  # then it stops
    await redis_client.hset(keys.INSTALLATION, mapping=exported.snapshot["installation"])
    await controller.check_state()
    assert "restore is under way or was interrupted" in controller.guard.problems[GROUP]
    assert not await redis_client.exists(keys.LinkGroupKeys(GROUP).epoch)
    await journal_restore.restore(
        controller.store,
        tmp_path / "export",
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="test",
        reason="again",
    )
    await controller.check_state()
    assert not controller.guard.problems
    await audit_ok(controller.store)
