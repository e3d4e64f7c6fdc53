"""The signed checkpoint: where a trimmed journal's hash chain starts again, and who said so.

A trim (``jackpotctl journal trim --signing-key FILE``) deletes the oldest exported entries
from Redis and moves the link group's checkpoint to the last one deleted: its sequence number,
its chain hash (:mod:`controller.journal_chain`) and what the deleted entries summed to per
meter. The operator's Ed25519 key signs that checkpoint (:func:`message` is what is signed),
after the trim has checked the chain of the entries it deletes; the script that trims writes
the signature with the checkpoint, in the same atomic step, and only if the checkpoint it
computes is the one signed. ``audit verify --checkpoint-key FILE`` checks the signature with
the public key: a checkpoint someone edited in Redis (to hide what the trimmed entries
moved, or to restart the chain elsewhere) fails.

Keys are PEM files: the private key (PKCS#8, e.g. ``openssl genpkey -algorithm ed25519 -out
checkpoint.key``) only where trims run, readable by that user only; the public key
(``openssl pkey -in checkpoint.key -pubout -out checkpoint.pub``) wherever the journal is
audited. A key is named by its id, :func:`key_id`, recorded with each checkpoint.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from controller.domain.records import Checkpoint
from jackpot.errors import InvalidConfiguration

DOMAIN = "jackpot-checkpoint-v1"


def key_id(public_key: Ed25519PublicKey) -> str:
    """A public key's id: the first 16 hex digits of the SHA-256 of its 32 raw bytes."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def message(link_group_id: str, checkpoint: Checkpoint) -> bytes:
    """The bytes signed for a checkpoint: the link group, the sequence number and chain hash
    of the last trimmed entry, and every meter's trimmed sums (microcents), as compact JSON
    with sorted keys."""
    document = {
        "domain": DOMAIN,
        "link_group": link_group_id,
        "seq": checkpoint.seq,
        "hash": checkpoint.hash,
        "value_microcents": checkpoint.value_microcents,
        "reserve_microcents": checkpoint.reserve_microcents,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def sign(key: Ed25519PrivateKey, link_group_id: str, checkpoint: Checkpoint) -> str:
    """The signature of a checkpoint (128 hex digits)."""
    return key.sign(message(link_group_id, checkpoint)).hex()


def problem(
    public_key: Ed25519PublicKey | None, link_group_id: str, checkpoint: Checkpoint
) -> str | None:
    """Why a link group's checkpoint cannot be trusted, or None when it can (no checkpoint:
    nothing to check). ``public_key`` None: the signature cannot be checked, which is itself
    the problem."""
    if checkpoint.seq == 0:
        return None
    where = f"{link_group_id}: the checkpoint at journal #{checkpoint.seq}"
    if not checkpoint.signature:
        return f"{where} is not signed (a trim writes a signature): it was altered"
    if public_key is None:
        return (
            f"{where} is signed by key {checkpoint.signed_by}; give its public key "
            "(--checkpoint-key) to check it"
        )
    if checkpoint.signed_by != key_id(public_key):
        return (
            f"{where} is signed by key {checkpoint.signed_by}, not by the key given "
            f"({key_id(public_key)})"
        )
    try:
        public_key.verify(bytes.fromhex(checkpoint.signature), message(link_group_id, checkpoint))
    except (InvalidSignature, ValueError):
        return f"{where} does not match its signature: it was altered or forged"
    return None


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
