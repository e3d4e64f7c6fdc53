"""The hash-chained journal against a real Redis: an entry edited, deleted, inserted or moved
in Redis makes ``jackpotctl audit verify`` fail naming it; an export verifies offline and
fails when a line is edited; a trim leaves a signed checkpoint the audit checks (a forged
one fails); a restore continues the exported chain."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.journal import checkpoint_signature
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.testing import TestPKI
from jackpot.errors import FailedPrecondition
from table_agent.outbox import Outbox
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from tests.helpers import Floor, journal, table_client

GROUP = "floor"
NOW_MS = 10**15  # far in the future: every entry is older than it
KEY = Ed25519PrivateKey.generate()


async def ctl(*argv: str) -> int:
    return await asyncio.to_thread(jackpotctl, list(argv))


async def play(controller: ControllerServer, pki: TestPKI, tmp_path: Path, rounds: int) -> None:
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, Outbox(tmp_path / "agent", "t1"))
    agent.continue_after((await client.get_table("t1")).last_round_id)
    await TableSimulator(agent, SimulationConfig(void_percent=20)).run(rounds)
    await client.close()


async def rewrite(client: Redis, rows: list[tuple[str, dict[str, str]]]) -> None:
    """Put the journal back as ``rows`` (ids kept): how one edits a Redis stream."""
    stream = keys.LinkGroupKeys(GROUP).journal
    await client.delete(stream)
    for entry_id, fields in rows:
        await client.xadd(stream, fields, id=entry_id)  # type: ignore[arg-type]


def key_files(tmp_path: Path, key: Ed25519PrivateKey = KEY) -> tuple[str, str]:
    """The key as the operator holds it: a private and a public PEM file."""
    private, public = tmp_path / "checkpoint.key", tmp_path / "checkpoint.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return str(private), str(public)


def first_difference(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("audit: DIFFERENCE"))


@pytest.fixture
async def played(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path
) -> ControllerServer:
    await play(controller, pki, tmp_path, 8)
    return controller


async def test_a_clean_journal_verifies_and_names_its_head(
    played: ControllerServer,
    redis_url: str,
    redis_client: Redis,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert await ctl("audit", "verify", "--redis", redis_url) == 0
    rows = await journal(redis_client)
    seq, head = rows[-1][1]["seq"], rows[-1][1]["hash"]
    assert f"audit: {GROUP}: hash chain verified to #{seq} (sha256 {head})" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize("field", ["d_meter", "type", "table", "seq", "hash"])
async def test_an_edited_entry_is_named(
    played: ControllerServer,
    redis_url: str,
    redis_client: Redis,
    capsys: pytest.CaptureFixture[str],
    field: str,
) -> None:
    rows = await journal(redis_client)
    index = next(i for i, (_, f) in enumerate(rows) if f["type"] == "contribution")
    seq = rows[index][1]["seq"]
    rows[index][1][field] = {"d_meter": "1", "type": "void", "table": "t9", "seq": "999"}.get(
        field, "0" * 64
    )
    await rewrite(redis_client, rows)
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    difference = first_difference(capsys.readouterr().out)
    if field == "seq":  # the entries after it look moved, and it names itself
        expected = f"journal entry #{seq}..#998 is missing: the journal goes from #{int(seq) - 1} "
        assert expected in difference
        assert f"to journal entry #999 (stream id {rows[index][0]})" in difference
    else:
        assert difference.startswith(f"audit: DIFFERENCE {GROUP}: journal entry #{seq} ")


async def test_a_deleted_entry_is_named(
    played: ControllerServer,
    redis_url: str,
    redis_client: Redis,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = await journal(redis_client)
    del rows[5]
    await rewrite(redis_client, rows)
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    assert first_difference(capsys.readouterr().out) == (
        f"audit: DIFFERENCE {GROUP}: journal entry #6 is missing: the journal goes from #5 to "
        f"journal entry #7 (stream id {rows[5][0]}) (deleted, or trimmed without a checkpoint)"
    )
    # The last entry deleted: the sequence counter names it.
    await rewrite(redis_client, rows[:-1])
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    last = int(rows[-1][1]["seq"])
    assert f"journal entry #{last} is missing: the journal ends at #{last - 1}" in (
        capsys.readouterr().out
    )


async def test_an_inserted_or_moved_entry_is_named(
    played: ControllerServer,
    redis_url: str,
    redis_client: Redis,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = await journal(redis_client)
    # An entry the next of which was written in a later millisecond: room for one between.
    index = next(
        i
        for i, (entry_id, fields) in enumerate(rows[:-1])
        if fields["type"] == "contribution"
        and rows[i + 1][0].partition("-")[0] != entry_id.partition("-")[0]
    )
    copy = dict(rows[index][1])
    millis, _, sub = rows[index][0].partition("-")
    inserted = f"{millis}-{int(sub) + 1}"
    await rewrite(redis_client, [*rows[: index + 1], (inserted, copy), *rows[index + 1 :]])
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    seq = copy["seq"]
    assert first_difference(capsys.readouterr().out).startswith(
        f"audit: DIFFERENCE {GROUP}: journal entry #{seq} (stream id {inserted}) comes after "
        f"#{seq}, where #{int(seq) + 1} was due: inserted or moved out of order"
    )
    # Two entries swapped (their fields, under the stream's ids): the first is named.
    swapped = [*rows]
    swapped[index], swapped[index + 1] = (
        (rows[index][0], rows[index + 1][1]),
        (rows[index + 1][0], rows[index][1]),
    )
    await rewrite(redis_client, swapped)
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    assert f"journal entry #{int(seq) + 1} (stream id {rows[index][0]})" in first_difference(
        capsys.readouterr().out
    )


async def test_the_export_verifies_offline_and_an_edited_line_fails(
    played: ControllerServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await journal_export.export(played.store, tmp_path / "export", GROUP)
    export = str(tmp_path / "export")
    assert await ctl("audit", "verify", "--file", export) == 0
    assert "audit: OK (1 link groups, 1 meters," in capsys.readouterr().out
    path = tmp_path / "export" / GROUP / journal_export.JOURNAL_FILE
    lines: list[dict[str, Any]] = [json.loads(line) for line in path.read_text().splitlines()]
    edited = next(line for line in lines if line["fields"]["type"] == "contribution")
    edited["fields"]["amount_cents"] = "500"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert await ctl("audit", "verify", "--file", export) == 1
    assert first_difference(capsys.readouterr().out).startswith(
        f"audit: DIFFERENCE {GROUP}: journal entry #{edited['seq']} (stream id {edited['id']}) "
        "does not match its hash"
    )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines if line is not edited))
    assert await ctl("audit", "verify", "--file", export) == 1
    assert f"journal entry #{edited['seq']} is missing" in capsys.readouterr().out


async def test_trim_then_verify_online_and_offline_and_a_forged_checkpoint_fails(
    played: ControllerServer,
    pki: TestPKI,
    redis_url: str,
    redis_client: Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    private, public = key_files(tmp_path)
    export = str(tmp_path / "export")
    assert await ctl("journal", "export", "--redis", redis_url, "--dir", export) == 0
    trim = ["journal", "trim", "--redis", redis_url, "--retention-hours", "0"]
    assert await ctl(*trim, "--signing-key", private) == 0
    checkpoint = await played.store.journal.checkpoint(GROUP)
    assert checkpoint.seq > 0 and checkpoint.signed_by == checkpoint_signature.key_id(
        KEY.public_key()
    )
    assert await ctl("audit", "verify", "--redis", redis_url, "--checkpoint-key", public) == 0
    await play(played, pki, tmp_path, 3)
    assert await ctl("journal", "export", "--redis", redis_url, "--dir", export) == 0
    assert await ctl(*trim, "--signing-key", private) == 0
    assert (await played.store.journal.checkpoint(GROUP)).seq > checkpoint.seq
    assert await ctl("audit", "verify", "--redis", redis_url, "--checkpoint-key", public) == 0
    assert await ctl("audit", "verify", "--file", export, "--checkpoint-key", public) == 0
    capsys.readouterr()

    # Without the public key the checkpoint cannot be checked: the audit says so and fails.
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    assert "give its public key (--checkpoint-key) to check it" in capsys.readouterr().out

    # A checkpoint altered in Redis, or signed anew by another key, fails.
    group = keys.LinkGroupKeys(GROUP)
    real = {str(k): str(v) for k, v in (await redis_client.hgetall(group.checkpoint)).items()}
    await redis_client.hset(group.checkpoint, "hash", "1" * 64)
    assert await ctl("audit", "verify", "--redis", redis_url, "--checkpoint-key", public) == 1
    assert "does not match its signature: it was altered or forged" in capsys.readouterr().out
    forger = Ed25519PrivateKey.generate()
    forged = await played.store.journal.checkpoint(GROUP)
    await redis_client.hset(
        group.checkpoint,
        mapping={
            "signed_by": checkpoint_signature.key_id(forger.public_key()),
            "signature": checkpoint_signature.sign(forger, GROUP, forged),
        },
    )
    assert await ctl("audit", "verify", "--redis", redis_url, "--checkpoint-key", public) == 1
    assert "not by the key given" in capsys.readouterr().out
    # ... and the trimmer's key signs nothing after it.
    with pytest.raises(FailedPrecondition, match=r"will not trim: .* not by the key given"):
        await journal_export.trim(played.store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    for name, value in real.items():
        await redis_client.hset(group.checkpoint, name, value)
    assert await ctl("audit", "verify", "--redis", redis_url, "--checkpoint-key", public) == 0


async def test_a_trim_never_signs_over_a_broken_chain(
    played: ControllerServer, redis_client: Redis, tmp_path: Path
) -> None:
    await journal_export.export(played.store, tmp_path / "export", GROUP)
    rows = await journal(redis_client)
    rows[3][1]["by"] = "someone else"
    await rewrite(redis_client, rows)
    with pytest.raises(FailedPrecondition, match="broken journal: floor: journal entry #4 "):
        await journal_export.trim(played.store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    assert (await played.store.journal.checkpoint(GROUP)).seq == 0
    assert len(await journal(redis_client)) == len(rows)


async def test_a_restore_continues_the_exported_chain(
    played: ControllerServer, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    store = played.store
    await journal_export.export(store, tmp_path / "export", GROUP)
    await journal_export.trim(store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    await play(played, pki, tmp_path, 3)
    await journal_export.export(store, tmp_path / "export", GROUP)
    head = (await journal(redis_client))[-1][1]
    await redis_client.flushall()
    await played.check_state()
    seq = await journal_restore.restore(
        store,
        tmp_path / "export",
        GROUP,
        checkpoint_key=KEY.public_key(),
        actor="test",
        reason="volume lost",
    )
    assert seq == int(head["seq"]) + 1
    report = await verify(store, KEY.public_key())
    assert report.ok, report.differences
    assert report.heads[GROUP][0] == seq
    await played.check_state()
    await play(played, pki, tmp_path, 2)
    await journal_export.export(store, tmp_path / "export", GROUP)
    assert (await verify(store, KEY.public_key())).ok
    offline = verify_export(tmp_path / "export", KEY.public_key())
    assert offline.ok, offline.differences
