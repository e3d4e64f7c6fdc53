"""The signed checkpoint: where a trimmed journal's hash chain starts again, and who said so.

A trim (``jackpotctl journal trim --signing-key FILE``) deletes the oldest exported entries
from Redis and moves the link group's checkpoint to the last one deleted: its sequence number,
its chain hash (:mod:`controller.domain.journal_chain`) and what the deleted entries summed to per
meter. The operator's Ed25519 key signs that checkpoint (:func:`message` is what is signed),
after the trim has checked the chain of the entries it deletes; the script that trims writes
the signature with the checkpoint, in the same atomic step, and only if the checkpoint it
computes is the one signed. ``audit verify --checkpoint-key FILE`` checks the signature with
the public key: a checkpoint someone edited in Redis (to hide what the trimmed entries
moved, or to restart the chain elsewhere) fails.

Invariants (:func:`check`): a checkpoint at sequence 0 holds no sums, hash or signature (only
the export marker ``exported_seq``/``exported_at_ms`` and key handovers, each signed on its
own); one above 0 is signed, and the signature (``jackpot-checkpoint-v2``) covers everything
the audit reads from it: the link group, the epoch, the sequence number, the hash, every sum,
the exported position the trim relied on and the key handovers. A checkpoint signed as
``jackpot-checkpoint-v1`` (before v2) still verifies, for what v1 covered (link group, seq,
hash, sums) and only if it holds nothing v1 did not cover; the next trim or rotation re-signs
it as v2.

**Key rotation** (:class:`Handover`, ``jackpotctl journal rotate-key``): the current key
signs a handover naming the new key (its id and raw public key), the link group, epoch and
the journal sequence number of the ``checkpoint_key_rotated`` entry written with it; in the
same atomic step the new key signs the checkpoint anew, covering the handover list. From
then on the checkpoint must be signed by the last handover's key: a trim with a retired key
is refused, and a checkpoint signed by a retired key fails the audit. An auditor gives any
key it trusts (the first, or a later one); the handovers lead from it to the current one.

Keys are PEM files: the private key (PKCS#8, e.g. ``openssl genpkey -algorithm ed25519 -out
checkpoint.key``) only where trims run, readable by that user only; the public key
(``openssl pkey -in checkpoint.key -pubout -out checkpoint.pub``) wherever the journal is
audited. A key is named by its id, :func:`key_id`, recorded with each checkpoint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from controller.domain.records import Checkpoint
from jackpot.errors import InvalidConfiguration

DOMAIN_V1 = "jackpot-checkpoint-v1"
"""The first signed message: link group, seq, hash and sums only."""
DOMAIN = "jackpot-checkpoint-v2"
"""The signed message trims write now (:func:`message`)."""
HANDOVER_DOMAIN = "jackpot-key-handover-v1"
ROTATION_ENTRY = "checkpoint_key_rotated"
"""The journal entry type a key rotation writes (its ``handover`` field is the handover)."""

PublicKeys = Ed25519PublicKey | Sequence[Ed25519PublicKey] | None
"""The keys an auditor trusts: one, several, or none."""


def key_id(public_key: Ed25519PublicKey) -> str:
    """A public key's id: the first 16 hex digits of the SHA-256 of its 32 raw bytes."""
    return hashlib.sha256(raw_public_key(public_key)).hexdigest()[:16]


def raw_public_key(public_key: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of a public key."""
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _compact(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class Handover:
    """The signing key ``from_key`` hands a link group's checkpoint over to ``to_key``, at the
    ``checkpoint_key_rotated`` journal entry #``seq`` of epoch ``epoch``, while the checkpoint
    was at #``checkpoint_seq``. Public keys are 64 hex digits (raw bytes); ``signature`` is
    ``from_key``'s over :meth:`message`."""

    link_group: str
    epoch: str
    seq: int
    checkpoint_seq: int
    from_key: str
    from_public_key: str
    to_key: str
    to_public_key: str
    signature: str = ""

    def message(self) -> bytes:
        """The bytes the old key signs: every field but the signature, compact sorted JSON."""
        document: dict[str, Any] = asdict(self)
        del document["signature"]
        return _compact({"domain": HANDOVER_DOMAIN, **document})

    def to_data(self) -> dict[str, Any]:
        """The handover as stored (JSON object)."""
        return asdict(self)

    @classmethod
    def from_data(cls, data: Any) -> Handover:
        """A stored handover; :class:`ValueError` when it is not one."""
        if not isinstance(data, dict) or set(data) != set(cls.__dataclass_fields__):
            raise ValueError(f"not a key handover: {str(data)[:80]}")
        handover = cls(**data)
        text = (handover.link_group, handover.epoch, handover.from_key, handover.to_key)
        numbers = (handover.seq, handover.checkpoint_seq)
        if not all(isinstance(value, str) for value in text) or not all(
            isinstance(value, int) and not isinstance(value, bool) for value in numbers
        ):
            raise ValueError(f"not a key handover: {str(data)[:80]}")
        return handover


def handovers(checkpoint: Checkpoint) -> list[Handover]:
    """The checkpoint's key handovers, oldest first; :class:`ValueError` when unreadable."""
    if not checkpoint.key_handovers:
        return []
    try:
        data = json.loads(checkpoint.key_handovers)
    except json.JSONDecodeError as error:
        raise ValueError(f"the key handovers are not JSON: {error}") from None
    if not isinstance(data, list):
        raise ValueError("the key handovers are not a list")
    return [Handover.from_data(item) for item in data]


def handovers_text(items: Sequence[Handover]) -> str:
    """The stored form of a handover list (compact JSON, "" for none)."""
    if not items:
        return ""
    return json.dumps([item.to_data() for item in items], sort_keys=True, separators=(",", ":"))


def message(link_group_id: str, checkpoint: Checkpoint) -> bytes:
    """The bytes signed for a checkpoint, compact JSON with sorted keys. v2 (``signed_as``
    :data:`DOMAIN`): ``domain``, ``link_group``, ``epoch``, ``seq``, ``hash``,
    ``value_microcents`` and ``reserve_microcents`` (every meter's trimmed sums),
    ``exported_seq`` (the exported position the trim relied on) and ``key_handovers`` (the
    signatures of the first ``signed_handovers`` handovers). v1 (``signed_as`` "" or
    :data:`DOMAIN_V1`): the same without epoch, exported position and handovers."""
    document: dict[str, Any] = {
        "link_group": link_group_id,
        "seq": checkpoint.seq,
        "hash": checkpoint.hash,
        "value_microcents": checkpoint.value_microcents,
        "reserve_microcents": checkpoint.reserve_microcents,
    }
    if checkpoint.signed_as in ("", DOMAIN_V1):
        return _compact({"domain": DOMAIN_V1, **document})
    covered = handovers(checkpoint)[: checkpoint.signed_handovers]
    return _compact(
        {
            "domain": checkpoint.signed_as,
            **document,
            "epoch": checkpoint.epoch,
            "exported_seq": checkpoint.signed_exported_seq,
            "key_handovers": [item.signature for item in covered],
        }
    )


def sign(key: Ed25519PrivateKey, link_group_id: str, checkpoint: Checkpoint) -> str:
    """The signature of a checkpoint (128 hex digits)."""
    return key.sign(message(link_group_id, checkpoint)).hex()


def _trusted(keys: PublicKeys) -> dict[str, Ed25519PublicKey]:
    if keys is None:
        return {}
    if isinstance(keys, Ed25519PublicKey):
        return {key_id(keys): keys}
    return {key_id(key): key for key in keys}


def _public(hex_digits: str) -> Ed25519PublicKey | None:
    try:
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(hex_digits))
    except ValueError:
        return None


def _verifies(key: Ed25519PublicKey, signature: str, signed: bytes) -> bool:
    try:
        key.verify(bytes.fromhex(signature), signed)
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass
class KeyVerdict:
    """What :func:`check` found: ``problems`` (none: the checkpoint can be trusted), the id
    of the key that signs the link group's next checkpoint (``current``, "" when no key has
    yet), and the handovers whose journal entry is not trimmed (``pending``: the audit holds
    them against the journal)."""

    problems: list[str] = field(default_factory=list)
    current: str = ""
    pending: list[Handover] = field(default_factory=list)


def _stray(checkpoint: Checkpoint) -> list[str]:
    """What a checkpoint at sequence 0 holds that only a signed one may."""
    held = {
        "sums": bool(checkpoint.value_microcents or checkpoint.reserve_microcents),
        "hash": bool(checkpoint.hash),
        "signature": bool(checkpoint.signature or checkpoint.signed_by or checkpoint.signed_as),
        "epoch": bool(checkpoint.epoch),
        "signed exported position": bool(checkpoint.signed_exported_seq),
        "signed handovers": bool(checkpoint.signed_handovers),
    }
    return [name for name, present in held.items() if present]


def _walk(
    chain: list[Handover],
    known: dict[str, Ed25519PublicKey],
    link_group_id: str,
    where: str,
    epochs: Collection[str] | None,
    problems: list[str],
) -> list[int]:
    """Check each handover in turn, adding each new key an accepted key handed over to to
    ``known``; answer the positions of the handovers from a key not known (not checked)."""
    unverified: list[int] = []
    for number, handover in enumerate(chain):
        name = f"{where}: the key handover at journal #{handover.seq}"
        if handover.link_group != link_group_id:
            problems.append(f"{name} is of link group {handover.link_group}: copied")
        if epochs is not None and handover.epoch not in epochs:
            problems.append(f"{name} is of epoch {handover.epoch}, not of this state: copied")
        if number and handover.from_key != chain[number - 1].to_key:
            problems.append(
                f"{name} is from key {handover.from_key}, but the key before it handed over "
                f"to {chain[number - 1].to_key}: altered"
            )
        old, new = _public(handover.from_public_key), _public(handover.to_public_key)
        if (
            old is None
            or new is None
            or key_id(old) != handover.from_key
            or key_id(new) != handover.to_key
        ):
            problems.append(f"{name} names keys that are not the ids it gives: altered")
            continue
        signer = known.get(handover.from_key)
        if signer is None:
            unverified.append(number)
        elif not _verifies(signer, handover.signature, handover.message()):
            problems.append(f"{name} does not match the signature of key {handover.from_key}")
            continue
        known.setdefault(handover.to_key, new)
    return unverified


def check(
    keys: PublicKeys,
    link_group_id: str,
    checkpoint: Checkpoint,
    *,
    epochs: Collection[str] | None = None,
) -> KeyVerdict:
    """Judge a link group's checkpoint with the public ``keys`` the caller trusts (a key
    handed over to by a trusted key, in a handover it signed, is trusted too). ``epochs``:
    the link group's epoch id and its lineage's, which a v2 checkpoint's epoch must be one
    of (None: not checked)."""
    verdict = KeyVerdict()
    problems = verdict.problems
    where = f"{link_group_id}: the checkpoint at journal #{checkpoint.seq}"
    try:
        chain = handovers(checkpoint)
    except ValueError as error:
        problems.append(f"{where}: its key handovers cannot be read ({error}): it was altered")
        return verdict
    known = _trusted(keys)
    given = dict(known)
    unverified = _walk(chain, known, link_group_id, where, epochs, problems)
    verdict.pending = [handover for handover in chain if handover.seq > checkpoint.seq]
    verdict.current = chain[-1].to_key if chain else checkpoint.signed_by
    if checkpoint.seq == 0:
        _check_unsigned(checkpoint, chain, given, unverified, link_group_id, where, problems)
        return verdict
    if not checkpoint.signature or not checkpoint.signed_by:
        problems.append(f"{where} is not signed (a trim writes a signature): it was altered")
        return verdict
    if not given:
        problems.append(
            f"{where} is signed by key {checkpoint.signed_by}; give its public key "
            "(--checkpoint-key) to check it"
        )
        return verdict
    _check_signed(checkpoint, chain, given, unverified, where, epochs, problems)
    try:
        signed = message(link_group_id, checkpoint)
    except ValueError as error:
        problems.append(f"{where} cannot be read: {error}")
        return verdict
    signer = known.get(checkpoint.signed_by)
    if signer is None:
        problems.append(
            f"{where} is signed by key {checkpoint.signed_by}, not by the key given "
            f"({', '.join(sorted(given))}) nor one it handed over to"
        )
    elif not _verifies(signer, checkpoint.signature, signed):
        problems.append(f"{where} does not match its signature: it was altered or forged")
    return verdict


def _check_unsigned(
    checkpoint: Checkpoint,
    chain: list[Handover],
    given: dict[str, Ed25519PublicKey],
    unverified: list[int],
    link_group_id: str,
    where: str,
    problems: list[str],
) -> None:
    """The rules of a checkpoint at sequence 0: nothing but the export marker and handovers
    that lead from a given key (or to one)."""
    stray = _stray(checkpoint)
    if stray:
        problems.append(
            f"{link_group_id}: the checkpoint holds {', '.join(stray)} but no trimmed "
            "position (journal #0): only a signed trim writes those; it was forged"
        )
    if chain and not given:
        problems.append(
            f"{where} names key handovers; give a public key (--checkpoint-key) to check them"
        )
    elif unverified and chain[-1].to_key not in given:
        first = chain[unverified[0]]
        problems.append(
            f"{where}: the key handover at journal #{first.seq} is from key "
            f"{first.from_key}, which is neither given nor handed over to by a given key"
        )


def _check_signed(
    checkpoint: Checkpoint,
    chain: list[Handover],
    given: dict[str, Ed25519PublicKey],
    unverified: list[int],
    where: str,
    epochs: Collection[str] | None,
    problems: list[str],
) -> None:
    """The rules of a signed checkpoint (above sequence 0) besides the signature itself."""
    if checkpoint.signed_as in ("", DOMAIN_V1):
        stray = [
            name
            for name, present in (
                ("an epoch", checkpoint.epoch),
                ("a signed exported position", checkpoint.signed_exported_seq),
                ("key handovers", chain or checkpoint.signed_handovers),
            )
            if present
        ]
        if stray:
            problems.append(
                f"{where} is signed as {DOMAIN_V1}, which does not cover {', '.join(stray)}: "
                "they were added after it was signed"
            )
        return
    if checkpoint.signed_as != DOMAIN:
        problems.append(
            f"{where} is signed as {checkpoint.signed_as!r}, which this release does not know"
        )
        return
    if checkpoint.signed_handovers != len(chain):
        problems.append(
            f"{where} is signed over {checkpoint.signed_handovers} key handovers but lists "
            f"{len(chain)}: they were added or removed after it was signed"
        )
    elif chain and checkpoint.signed_by != chain[-1].to_key:
        retired = [handover for handover in chain if handover.from_key == checkpoint.signed_by]
        problems.append(
            f"{where} is signed by key {checkpoint.signed_by}, retired at journal "
            f"#{retired[-1].seq} (handed over to {retired[-1].to_key}): a retired key signs "
            "nothing"
            if retired
            else f"{where} is signed by key {checkpoint.signed_by}, not by the current key "
            f"{chain[-1].to_key}"
        )
    if unverified and checkpoint.signed_by not in given:
        first = chain[unverified[0]]
        problems.append(
            f"{where}: the key handover at journal #{first.seq} is from key {first.from_key}, "
            "which is neither given nor handed over to by a given key"
        )
    if epochs is not None and checkpoint.epoch not in epochs:
        problems.append(
            f"{where} was signed in epoch {checkpoint.epoch or '(none)'}, which is not this "
            "link group's epoch nor one it descends from: copied from other state"
        )
    if checkpoint.signed_exported_seq < checkpoint.seq:
        problems.append(
            f"{where} was signed as exported only to #{checkpoint.signed_exported_seq}: a trim "
            "deletes exported entries only"
        )
    if checkpoint.exported_seq < checkpoint.signed_exported_seq:
        problems.append(
            f"{where}: the journal is marked exported to #{checkpoint.exported_seq}, below the "
            f"#{checkpoint.signed_exported_seq} the trim signed: the marker was moved back"
        )


def problem(
    public_key: PublicKeys,
    link_group_id: str,
    checkpoint: Checkpoint,
    *,
    epochs: Collection[str] | None = None,
) -> str | None:
    """Why a link group's checkpoint cannot be trusted (the first reason), or None when it
    can (:func:`check`). ``public_key`` None: a signature cannot be checked, which is itself
    the problem."""
    problems = check(public_key, link_group_id, checkpoint, epochs=epochs).problems
    return problems[0] if problems else None


def _pem(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise InvalidConfiguration(f"cannot read the {what} {path}: {error}") from None


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in PEM file ``path`` (unencrypted PKCS#8)."""
    try:
        key = serialization.load_pem_private_key(_pem(path, "signing key"), password=None)
    except (ValueError, TypeError) as error:
        raise InvalidConfiguration(
            f"{path} is not an unencrypted PEM private key: {error}"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidConfiguration(
            f"{path} is not an Ed25519 key (openssl genpkey -algorithm ed25519)"
        )
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """The Ed25519 public key in PEM file ``path``."""
    try:
        key = serialization.load_pem_public_key(_pem(path, "public key"))
    except ValueError as error:
        raise InvalidConfiguration(f"{path} is not a PEM public key: {error}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidConfiguration(f"{path} is not an Ed25519 public key")
    return key


def journal_problems(
    link_group_id: str, pending: Sequence[Handover], rotations: Sequence[tuple[int, str]]
) -> list[str]:
    """The checkpoint's handovers not yet trimmed (``pending``, :attr:`KeyVerdict.pending`)
    against the ``checkpoint_key_rotated`` entries of the journal after the checkpoint
    (``rotations``: sequence number and ``handover`` field, as walked): each must be the
    other, so a handover removed from the checkpoint (to make a retired key current again)
    or added to it without its journal entry is named."""
    listed = {handover.seq: handover for handover in pending}
    journaled: dict[int, Handover | None] = {}
    for seq, text in rotations:
        try:
            journaled[seq] = Handover.from_data(json.loads(text))
        except (ValueError, TypeError):
            journaled[seq] = None
    problems = []
    for seq in sorted(set(listed) | set(journaled)):
        where = f"{link_group_id}: journal entry #{seq}"
        if seq not in journaled:
            problems.append(
                f"{where} is named by the checkpoint's key handover to key {listed[seq].to_key} "
                "but the journal holds no key rotation there: the handover was forged"
            )
        elif seq not in listed:
            found = journaled[seq]
            to = f" to key {found.to_key}" if found else ""
            problems.append(
                f"{where} hands the checkpoint key over{to} but the checkpoint does not list "
                "that handover: it was removed (a retired key made current again)"
            )
        elif journaled[seq] != listed[seq]:
            problems.append(f"{where}'s key handover is not the one the checkpoint lists: altered")
    return problems
