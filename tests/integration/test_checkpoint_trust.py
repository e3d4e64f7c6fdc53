"""Nothing the audit accepts is unexplained by the hash chain (issue 19, items 1, 5 and 8),
tried as an attacker would, on a real Redis: a checkpoint at journal #0 carrying sums, an
unsigned one, one whose epoch or exported position was edited, a rewritten chain against the
head of the last export, a retired key signing on, a key handover removed, and a Redis that
lost its installation."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from grpc_health.v1 import health_pb2
from redis.asyncio import Redis

from controller.domain.journal_chain import entry_hash
from controller.journal import checkpoint_signature
from controller.journal import export as journal_export
from controller.journal.audit import verify, verify_export
from controller.runtime.server import ControllerServer
from controller.store import codec, keys
from controller.testing import TestPKI
from jackpot.errors import FailedPrecondition
from tests.helpers import Floor, controller_config, journal
from tests.integration.test_epochs import health_of
from tests.integration.test_journal_chain import ctl, key_files, play, rewrite

GROUP = "floor"
NOW_MS = 10**15  # far in the future: every entry is older than it
KEY = Ed25519PrivateKey.generate()
NEW_KEY = Ed25519PrivateKey.generate()
STOLEN = 500_000 * 1_000_000  # $5,000 in microcents
CHECKPOINT = keys.LinkGroupKeys(GROUP).checkpoint
METER = keys.LinkGroupKeys(GROUP).meter("cs-main")


@pytest.fixture
async def played(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path
) -> ControllerServer:
    await play(controller, pki, tmp_path, 6)
    return controller


async def trimmed(controller: ControllerServer, tmp_path: Path) -> None:
    """Export, then trim everything exported (signed with KEY)."""
    await journal_export.export(controller.store, tmp_path / "export", GROUP)
    assert await journal_export.trim(controller.store, GROUP, before_ms=NOW_MS, signing_key=KEY)


async def fields(client: Redis) -> dict[str, str]:
    return {str(k): str(v) for k, v in (await client.hgetall(CHECKPOINT)).items()}


async def test_sums_on_a_checkpoint_at_journal_0_are_refused_by_audit_and_trim(
    played: ControllerServer, redis_client: Redis, tmp_path: Path
) -> None:
    """The attack of the issue: $5,000 moved off the meter into a checkpoint that trimmed
    nothing. It passed the audit, and the next trim signed it."""
    await journal_export.export(played.store, tmp_path / "export", GROUP)  # exported_seq only
    await redis_client.hset(CHECKPOINT, f"value:{'cs-main'}", str(-STOLEN))
    await redis_client.hincrby(METER, "value_microcents", -STOLEN)
    report = await verify(played.store, KEY.public_key())
    assert not report.ok
    assert "no trimmed position (journal #0)" in report.differences[0], report.differences
    with pytest.raises(FailedPrecondition, match=r"no trimmed position \(journal #0\)"):
        await journal_export.trim(played.store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    assert "signature" not in await fields(redis_client)  # nothing was signed
    await journal_export.export(played.store, tmp_path / "export", GROUP)
    offline = verify_export(tmp_path / "export", KEY.public_key())
    assert any("no trimmed position" in line for line in offline.differences)
    await played.check_state()  # the refresh loop logs the refused checkpoint and goes on


@pytest.mark.parametrize(
    "forged",
    [{"hash": "ab" * 32}, {"signature": "00" * 64, "signed_by": "0" * 16}, {"epoch": "e1"}],
)
async def test_anything_but_the_export_marker_on_a_checkpoint_at_0_is_refused(
    played: ControllerServer, redis_client: Redis, forged: dict[str, str]
) -> None:
    for name, value in forged.items():
        await redis_client.hset(CHECKPOINT, name, value)
    report = await verify(played.store, KEY.public_key())
    assert any("no trimmed position" in line for line in report.differences), report.differences
    with pytest.raises(FailedPrecondition):
        codec.checkpoint(await fields(redis_client))


async def test_an_unsigned_trimmed_checkpoint_is_refused(
    played: ControllerServer, redis_client: Redis, tmp_path: Path
) -> None:
    await trimmed(played, tmp_path)
    await redis_client.hdel(CHECKPOINT, "signature", "signed_by")
    report = await verify(played.store, KEY.public_key())
    assert any("has no signature, signed_by" in line for line in report.differences)
    with pytest.raises(FailedPrecondition, match="has no signature"):
        await journal_export.trim(played.store, GROUP, before_ms=NOW_MS, signing_key=KEY)


@pytest.mark.parametrize(
    ("name", "value"), [("epoch", "another-epoch"), ("signed_exported_seq", "999999")]
)
async def test_the_signature_covers_the_epoch_and_the_exported_position(
    played: ControllerServer, redis_client: Redis, tmp_path: Path, name: str, value: str
) -> None:
    await trimmed(played, tmp_path)
    assert (await verify(played.store, KEY.public_key())).ok
    await redis_client.hset(CHECKPOINT, name, value)
    report = await verify(played.store, KEY.public_key())
    assert any("does not match its signature" in line for line in report.differences)


async def test_the_export_marker_never_goes_below_what_a_trim_signed(
    played: ControllerServer, redis_client: Redis, tmp_path: Path
) -> None:
    await trimmed(played, tmp_path)
    await redis_client.hset(CHECKPOINT, "exported_seq", "1")
    report = await verify(played.store, KEY.public_key())
    assert any("the marker was moved back" in line for line in report.differences)


async def test_a_checkpoint_copied_from_another_epoch_fails(
    played: ControllerServer, redis_client: Redis, tmp_path: Path
) -> None:
    """A checkpoint is bound to its epoch: the same bytes signed for other state (here: the
    epoch record replaced, as a restore of other state would) do not pass."""
    await trimmed(played, tmp_path)
    await redis_client.hset(keys.LinkGroupKeys(GROUP).epoch, mapping={"id": "other", "lineage": ""})
    report = await verify(played.store, KEY.public_key())
    assert any("copied from other state" in line for line in report.differences)


async def test_a_v1_checkpoint_still_verifies_for_what_v1_covered(
    played: ControllerServer, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    """A checkpoint signed before v2 (no epoch, no exported position) verifies; v2 fields
    added to it are not covered and fail; the next trim re-signs it as v2."""
    await trimmed(played, tmp_path)
    await redis_client.hdel(
        CHECKPOINT, "signed_as", "epoch", "signed_exported_seq", "signed_handovers"
    )
    v1 = codec.checkpoint(await fields(redis_client))
    await redis_client.hset(
        CHECKPOINT, "signature", checkpoint_signature.sign(KEY, GROUP, v1)
    )  # as a v1 trim signed it
    assert checkpoint_signature.message(GROUP, v1).startswith(b'{"domain":"jackpot-checkpoint-v1"')
    report = await verify(played.store, KEY.public_key())
    assert report.ok, report.differences
    await redis_client.hset(CHECKPOINT, "epoch", "x")
    report = await verify(played.store, KEY.public_key())
    assert any("which does not cover an epoch" in line for line in report.differences)
    await redis_client.hdel(CHECKPOINT, "epoch")
    await play(played, pki, tmp_path, 3)
    await journal_export.export(played.store, tmp_path / "export", GROUP)
    await journal_export.trim(played.store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    assert (await fields(redis_client))["signed_as"] == checkpoint_signature.DOMAIN


async def test_expect_head_fails_on_a_chain_rewritten_after_the_export(
    played: ControllerServer,
    pki: TestPKI,
    redis_url: str,
    redis_client: Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Someone with Redis write edits an exported entry and rewrites every hash after it: the
    chain holds, but not against the last export's head."""
    export = tmp_path / "export"
    await journal_export.export(played.store, export, GROUP)
    await play(played, pki, tmp_path, 2)
    audit = ["audit", "verify", "--redis", redis_url]
    assert await ctl(*audit, "--expect-head-from", str(export)) == 0
    rows = await journal(redis_client)
    head_seq, head_hash = rows[-1][1]["seq"], rows[-1][1]["hash"]
    assert await ctl(*audit, "--expect-head", f"{GROUP}:{head_seq}:{head_hash}") == 0
    assert await ctl(*audit, "--expect-head", f"{head_seq}:{head_hash}") == 0
    capsys.readouterr()
    edited = next(i for i, (_, f) in enumerate(rows) if f["type"] == "contribution")
    rows[edited][1]["by"] = "nobody"
    previous = rows[edited - 1][1]["hash"] if edited else "0" * 64
    for _, entry in rows[edited:]:
        entry["hash"] = previous = entry_hash(previous, entry)
    await rewrite(redis_client, rows)
    assert await ctl(*audit) == 0  # the chain alone cannot tell
    assert await ctl(*audit, "--expect-head-from", str(export)) == 1
    assert "the journal was rewritten from there on" in capsys.readouterr().out
    assert await ctl(*audit, "--expect-head", f"{GROUP}:{head_seq}:{head_hash}") == 1


async def test_an_emptied_redis_is_never_ok(
    played: ControllerServer,
    redis_url: str,
    redis_client: Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    export = tmp_path / "export"
    await journal_export.export(played.store, export, GROUP)
    await redis_client.flushall()
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    out = capsys.readouterr().out
    assert "Redis holds no installation record: it lost its data" in out
    assert (
        await ctl("audit", "verify", "--redis", redis_url, "--expect-head-from", str(export)) == 1
    )
    out = capsys.readouterr().out
    assert f"{GROUP}: the expected heads name it" in out and "lost" in out


async def test_a_lost_link_group_named_by_the_export_fails(
    played: ControllerServer,
    redis_url: str,
    redis_client: Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The installation record is there, the group's state and index entry are not."""
    export = tmp_path / "export"
    await journal_export.export(played.store, export, GROUP)
    tag = keys.LinkGroupKeys(GROUP).tag
    async for key in redis_client.scan_iter(match=f"*{tag}*"):
        await redis_client.delete(key)
    await redis_client.srem(keys.LINK_GROUPS, GROUP)
    assert await ctl("audit", "verify", "--redis", redis_url) == 0  # nothing names it
    assert (
        await ctl("audit", "verify", "--redis", redis_url, "--expect-head-from", str(export)) == 1
    )
    assert f"{GROUP}: the expected heads name it" in capsys.readouterr().out


async def test_a_controller_on_an_empty_redis_without_rules_is_not_serving(
    redis_url: str, pki: TestPKI
) -> None:
    controller = ControllerServer(controller_config(redis_url, pki))
    await controller.start()
    try:
        assert controller.guard.nothing_to_serve()
        status = await health_of(controller, pki, "")
        assert status == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        await controller.stop(grace_s=1)


async def test_a_rotated_key_takes_over_and_the_retired_key_signs_nothing(
    played: ControllerServer,
    pki: TestPKI,
    redis_url: str,
    redis_client: Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = played.store
    await trimmed(played, tmp_path)
    for name in ("old", "new"):
        (tmp_path / name).mkdir()
    old_private, old_public = key_files(tmp_path / "old", KEY)
    new_private, new_public = key_files(tmp_path / "new", NEW_KEY)
    assert (
        await ctl(
            "journal",
            "rotate-key",
            "--redis",
            redis_url,
            "--signing-key",
            old_private,
            "--new-signing-key",
            new_private,
        )
        == 0
    )
    rotated = (await journal(redis_client))[-1][1]
    assert rotated["type"] == checkpoint_signature.ROTATION_ENTRY
    assert rotated["to_key"] == checkpoint_signature.key_id(NEW_KEY.public_key())
    audit = ["audit", "verify", "--redis", redis_url]
    assert await ctl(*audit, "--checkpoint-key", old_public) == 0  # follows the handover
    assert await ctl(*audit, "--checkpoint-key", new_public) == 0
    capsys.readouterr()

    # The retired key signs nothing new: neither a trim nor a second handover.
    await play(played, pki, tmp_path, 3)
    await journal_export.export(store, tmp_path / "export", GROUP)
    with pytest.raises(FailedPrecondition, match="is retired: it handed the checkpoint over"):
        await journal_export.trim(store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    with pytest.raises(FailedPrecondition, match="is retired"):
        await journal_export.rotate_key(
            store, GROUP, signing_key=KEY, new_signing_key=Ed25519PrivateKey.generate(), actor="x"
        )
    assert await journal_export.trim(store, GROUP, before_ms=NOW_MS, signing_key=NEW_KEY)
    assert await ctl(*audit, "--checkpoint-key", old_public) == 0
    assert (
        await ctl(
            "audit", "verify", "--file", str(tmp_path / "export"), "--checkpoint-key", old_public
        )
        == 0
    )
    real = await fields(redis_client)

    # Someone holding the leaked old key signs a checkpoint with the money moved.
    current = codec.checkpoint(real)
    moved = {**current.value_microcents, "cs-main": current.value_microcents["cs-main"] - STOLEN}
    forged = replace(
        current,
        value_microcents=moved,
        signed_by=checkpoint_signature.key_id(KEY.public_key()),
    )
    await redis_client.hset(
        CHECKPOINT,
        mapping={
            "value:cs-main": str(moved["cs-main"]),
            "signed_by": forged.signed_by,
            "signature": checkpoint_signature.sign(KEY, GROUP, forged),
        },
    )
    await redis_client.hincrby(METER, "value_microcents", -STOLEN)
    assert await ctl(*audit, "--checkpoint-key", old_public) == 1
    assert "a retired key signs nothing" in capsys.readouterr().out
    # ... and with the handover removed, the auditor who holds the new key still sees it.
    await redis_client.hdel(CHECKPOINT, "key_handovers")
    await redis_client.hset(CHECKPOINT, "signed_handovers", "0")
    stripped = codec.checkpoint(await fields(redis_client))
    await redis_client.hset(
        CHECKPOINT, "signature", checkpoint_signature.sign(KEY, GROUP, stripped)
    )
    assert await ctl(*audit, "--checkpoint-key", new_public) == 1
    assert "not by the key given" in capsys.readouterr().out


async def test_a_handover_removed_before_the_new_key_trimmed_is_named_by_the_journal(
    played: ControllerServer, redis_client: Redis, tmp_path: Path
) -> None:
    """Before any trim covers the rotation entry, the journal holds the handover: a
    checkpoint stripped of it (the old key made current again) is named."""
    await trimmed(played, tmp_path)
    seq = await journal_export.rotate_key(
        played.store, GROUP, signing_key=KEY, new_signing_key=NEW_KEY, actor="test"
    )
    assert (await verify(played.store, KEY.public_key())).ok
    before = codec.checkpoint(await fields(redis_client))
    handovers = json.loads(before.key_handovers)
    assert [h["seq"] for h in handovers] == [seq]
    # The attacker restores the checkpoint as the old key had signed it (before the handover).
    await redis_client.hdel(CHECKPOINT, "key_handovers")
    await redis_client.hset(
        CHECKPOINT,
        mapping={
            "signed_handovers": "0",
            "signed_by": checkpoint_signature.key_id(KEY.public_key()),
        },
    )
    stripped = codec.checkpoint(await fields(redis_client))
    await redis_client.hset(
        CHECKPOINT, "signature", checkpoint_signature.sign(KEY, GROUP, stripped)
    )
    report = await verify(played.store, KEY.public_key())
    assert any(
        f"journal entry #{seq} hands the checkpoint key over" in line and "it was removed" in line
        for line in report.differences
    ), report.differences
    assert not (await verify(played.store, NEW_KEY.public_key())).ok


async def test_a_rotation_before_any_trim_and_an_offline_audit(
    played: ControllerServer, redis_client: Redis, tmp_path: Path
) -> None:
    """A key handed over before the journal was ever trimmed: the checkpoint at #0 holds only
    the handover; the new key trims; the export verifies offline with either key."""
    export = tmp_path / "export"
    await journal_export.rotate_key(
        played.store, GROUP, signing_key=KEY, new_signing_key=NEW_KEY, actor="test"
    )
    assert (await verify(played.store, KEY.public_key())).ok
    assert (await verify(played.store, NEW_KEY.public_key())).ok
    await journal_export.export(played.store, export, GROUP)
    with pytest.raises(FailedPrecondition, match="is retired"):
        await journal_export.trim(played.store, GROUP, before_ms=NOW_MS, signing_key=KEY)
    assert await journal_export.trim(played.store, GROUP, before_ms=NOW_MS, signing_key=NEW_KEY)
    for key in (KEY, NEW_KEY):
        assert (await verify(played.store, key.public_key())).ok
        report = verify_export(export, key.public_key())
        assert report.ok, report.differences


async def test_a_malformed_expected_head_is_a_usage_error(
    played: ControllerServer, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = ["audit", "verify", "--redis", redis_url]
    assert await ctl(*audit, "--expect-head", "12:not-a-hash") == 2
    assert "--expect-head takes [GROUP:]SEQ:HASH" in capsys.readouterr().err
    assert await ctl(*audit, "--expect-head", f"{GROUP}:1:{'0' * 64}") == 1
    assert "differs from Redis's" in capsys.readouterr().out
