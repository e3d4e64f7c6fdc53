"""The signed bytes of a checkpoint and of a key handover, spelled out (docs/journal.md § 5),
and the rules a checkpoint is judged by, without Redis."""

from __future__ import annotations

from dataclasses import replace

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.domain.records import Checkpoint
from controller.journal import checkpoint_signature as cs

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
NEW = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
V2 = Checkpoint(
    seq=42,
    value_microcents={"m": 7},
    reserve_microcents={"m": -1},
    exported_seq=50,
    hash="ab" * 32,
    signed_by=cs.key_id(KEY.public_key()),
    signed_as=cs.DOMAIN,
    epoch="e1",
    signed_exported_seq=45,
)


def test_the_v2_message_covers_epoch_seq_hash_sums_and_exported_position() -> None:
    assert cs.message("floor", V2) == (
        b'{"domain":"jackpot-checkpoint-v2","epoch":"e1","exported_seq":45,"hash":"'
        + b"ab" * 32
        + b'","key_handovers":[],"link_group":"floor","reserve_microcents":{"m":-1},'
        b'"seq":42,"value_microcents":{"m":7}}'
    )


def test_a_v1_message_is_what_v1_signed() -> None:
    v1 = replace(V2, signed_as="", epoch="", signed_exported_seq=0)
    assert cs.message("floor", v1) == (
        b'{"domain":"jackpot-checkpoint-v1","hash":"'
        + b"ab" * 32
        + b'","link_group":"floor","reserve_microcents":{"m":-1},"seq":42,'
        b'"value_microcents":{"m":7}}'
    )
    signed = replace(v1, signature=cs.sign(KEY, "floor", v1))
    assert cs.problem(KEY.public_key(), "floor", signed) is None
    problem = cs.problem(KEY.public_key(), "floor", replace(signed, epoch="e1"))
    assert problem is not None and "does not cover an epoch" in problem


def test_a_signed_v2_checkpoint_and_its_epoch() -> None:
    signed = replace(V2, signature=cs.sign(KEY, "floor", V2))
    assert cs.problem(KEY.public_key(), "floor", signed, epochs={"e0", "e1"}) is None
    problem = cs.problem(KEY.public_key(), "floor", signed, epochs={"e2"})
    assert problem is not None and "copied from other state" in problem
    problem = cs.problem(KEY.public_key(), "other", signed)
    assert problem is not None and "does not match its signature" in problem


def test_a_checkpoint_at_0_holding_anything_signed_is_a_problem() -> None:
    for forged in (
        Checkpoint(value_microcents={"m": -5}),
        Checkpoint(hash="ab" * 32),
        Checkpoint(signature="00", signed_by="k"),
        Checkpoint(epoch="e1"),
    ):
        problem = cs.problem(KEY.public_key(), "floor", forged)
        assert problem is not None and "no trimmed position" in problem, forged
    assert cs.problem(None, "floor", Checkpoint(exported_seq=9, exported_at_ms=1)) is None


def test_the_handover_message_and_the_chain_of_keys() -> None:
    handover = cs.Handover(
        link_group="floor",
        epoch="e1",
        seq=43,
        checkpoint_seq=42,
        from_key=cs.key_id(KEY.public_key()),
        from_public_key=cs.raw_public_key(KEY.public_key()).hex(),
        to_key=cs.key_id(NEW.public_key()),
        to_public_key=cs.raw_public_key(NEW.public_key()).hex(),
    )
    assert handover.message().startswith(
        b'{"checkpoint_seq":42,"domain":"jackpot-key-handover-v1","epoch":"e1","from_key":"'
    )
    handover = replace(handover, signature=KEY.sign(handover.message()).hex())
    rotated = replace(
        V2,
        key_handovers=cs.handovers_text([handover]),
        signed_handovers=1,
        signed_by=handover.to_key,
    )
    rotated = replace(rotated, signature=cs.sign(NEW, "floor", rotated))
    for trusted in (KEY.public_key(), NEW.public_key()):
        verdict = cs.check(trusted, "floor", rotated)
        assert not verdict.problems and verdict.current == handover.to_key
    # The retired key signing after the handover fails, whoever is trusted.
    late = replace(rotated, signed_by=handover.from_key)
    late = replace(late, signature=cs.sign(KEY, "floor", late))
    problem = cs.problem(KEY.public_key(), "floor", late)
    assert problem is not None and "a retired key signs nothing" in problem
    # A handover signed by someone else than the key it names fails.
    forged = replace(handover, signature=NEW.sign(handover.message()).hex())
    bad = replace(rotated, key_handovers=cs.handovers_text([forged]))
    problem = cs.problem(KEY.public_key(), "floor", bad)
    assert problem is not None and "does not match the signature of key" in problem
