"""The player at the seat over real gRPC and Redis (docs/staged-changes.md, "The player at
the seat").

A lockout may carry an opaque player token per seat: bounded (length, charset, one per seat,
only for a seat with a wager), never required, part of the lockout's content (a retry must
repeat it), stored with the round's wagers and carried onto any jackpot it wins (the record,
the journal entry, the slip, the CSV export, a restore). A round without tokens stores,
journals and answers exactly what it did before.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.domain.digests import fingerprint, lockout_fingerprint
from controller.domain.rounds import Wager
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.testing import TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    AUDITOR,
    ROYAL_SPADES,
    Floor,
    expect_refusal,
    journal,
    lockout,
    progressive_table,
    settle,
    snapshot,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def with_players(request: pb.LockoutRequest, **tokens: str) -> pb.LockoutRequest:
    """``request`` with player tokens by seat (``s1="P-1"``)."""
    for name, token in tokens.items():
        request.players.append(pb.SeatPlayer(seat=int(name[1:]), player_token=token))
    return request


async def test_a_lockout_carries_player_tokens_onto_the_round_and_the_jackpot(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    request = with_players(lockout("t1", 1, [1, 2, 3]), s1="P-1001", s2="loyalty:77.a_b")
    answer = await tables.Lockout(request)
    assert [(a.seat, a.player_token) for a in answer.accepted] == [
        (1, "P-1001"),
        (2, "loyalty:77.a_b"),
        (3, ""),
    ]
    assert await tables.Lockout(request) == answer  # a retry: the same answer
    for changed in (lockout("t1", 1, [1, 2, 3]), with_players(lockout("t1", 1, [1, 2, 3]), s1="X")):
        await expect_refusal(
            tables.Lockout(changed),
            grpc.StatusCode.FAILED_PRECONDITION,
            "already locked out with other",
        )
    stored = json.loads(
        str(await redis_client.hget(keys.LinkGroupKeys("floor").round("t1", 1), "wagers"))
    )
    assert [w.get("player_token") for w in stored] == ["P-1001", "loyalty:77.a_b", None]

    settled = await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}, folded=[2, 3]))
    (won,) = [r for r in settled.results if r.seat == 1]
    jackpot = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=won.jackpot_id))
    assert jackpot.player_token == "P-1001"
    (award,) = [f for _, f in await journal(redis_client) if f["type"] == "award"]
    assert award["player"] == "P-1001"

    address = ["--controller", f"127.0.0.1:{controller.port}", *pki.client_args(*AUDITOR)]
    status = await asyncio.to_thread(jackpotctl, [*address, "jackpots", "show", won.jackpot_id])
    assert status == 0 and "  player       P-1001 (the player system's token)" in (
        capsys.readouterr().out
    )
    argv = [*address, "jackpots", "list", "--format", "csv"]
    assert await asyncio.to_thread(jackpotctl, argv) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert "player_token" in header.split(",") and "P-1001" in row.split(",")
    report = await verify(controller.store)
    assert report.ok, report.differences


async def test_a_bad_player_token_is_refused_and_changes_nothing(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    before = await snapshot(redis_client)
    for tokens, text in (
        ({"s1": "Jane Doe"}, "the player token of seat 1 must be 1-64 of [A-Za-z0-9._:-]"),
        ({"s1": "jane@example.com"}, "never personal data"),
        ({"s1": "x" * 65}, "the player token of seat 1 must be"),
        ({"s1": ""}, "the player token of seat 1 must be"),
        ({"s4": "P-1"}, "players: seat 4 has no wager in this lockout"),
    ):
        await expect_refusal(
            tables.Lockout(with_players(lockout("t1", 1, [1, 2]), **tokens)), INVALID, text
        )
    twice = lockout("t1", 1, [1])
    twice.players.extend([pb.SeatPlayer(seat=1, player_token="A")] * 2)
    await expect_refusal(tables.Lockout(twice), INVALID, "players: seat 1 is given twice")
    many = lockout("t1", 1, [1])
    many.players.extend(pb.SeatPlayer(seat=seat, player_token="A") for seat in range(1, 18))
    await expect_refusal(tables.Lockout(many), INVALID, "players: at most 16 seats")
    assert await snapshot(redis_client) == before


async def test_a_round_without_tokens_stores_and_journals_nothing_more(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    wagers = (Wager(1, "progressive", 100), Wager(2, "progressive", 100))
    rows = sorted([w.seat, w.kind, w.amount_cents, w.on_dealer_hand, w.envy] for w in wagers)
    assert lockout_fingerprint(wagers) == fingerprint("lockout", rows)  # as before tokens
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    record = await redis_client.hgetall(keys.LinkGroupKeys("floor").round("t1", 1))
    assert "player" not in record["wagers"] and "player" not in record["lockout_reply"]
    settled = await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}, folded=[2]))
    (won,) = [r for r in settled.results if r.seat == 1]
    raw = await redis_client.hget(keys.LinkGroupKeys("floor").jackpots, won.jackpot_id)
    assert "player" not in json.loads(str(raw))
    assert all("player" not in f for _, f in await journal(redis_client))
    assert (
        await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=won.jackpot_id))
    ).player_token == ""


async def test_a_must_hit_by_hit_and_a_restore_carry_the_token(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
    controller: ControllerServer,
    tmp_path: Path,
) -> None:
    await Floor(admin).create(tables=())
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-mystery",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=1_000_000,
            rate_of_progression_percent="50",
            kind=pb.METER_KIND_MUST_HIT_BY,
            must_hit_by_cents=1_001_000,
        )
    )
    table = progressive_table("t1", "floor", "cs-main")
    table.wagers[0].meter_ids.append("cs-mystery")
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    round_id = 0
    hits: list[pb.MysteryHit] = []
    while not hits:
        round_id += 1
        request = lockout("t1", round_id, [1, 2, 3, 4, 5, 6, 7])
        for seat in range(1, 8):
            request.players.append(pb.SeatPlayer(seat=seat, player_token=f"P-{seat}"))
        hits = list((await tables.Lockout(request)).mystery_hits)
    jackpot = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=hits[0].jackpot_id))
    assert jackpot.player_token == f"P-{hits[0].seat}"
    (hit,) = [f for _, f in await journal(redis_client) if f["type"] == "mystery_hit"][:1]
    assert hit["player"] == f"P-{hits[0].seat}"

    await journal_export.export(controller.store, tmp_path, "floor")
    path = tmp_path / "floor" / journal_export.SNAPSHOT_FILE
    good = path.read_text()
    forged = json.loads(good)
    record = json.loads(forged["jackpots"][jackpot.jackpot_id])
    forged["jackpots"][jackpot.jackpot_id] = json.dumps(record | {"player_token": "P-9"})
    path.write_text(json.dumps(forged))
    with pytest.raises(journal_export.ExportError, match="player_token"):
        journal_restore.read_export(tmp_path, "floor")
    path.write_text(good)
    rebuilt = journal_restore.read_export(tmp_path, "floor")
    assert rebuilt is not None
