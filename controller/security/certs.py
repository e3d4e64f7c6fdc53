"""The casino's own certificate authority: the CA, the controller's certificate, clients'.

``jackpotctl certs init --dir DIR`` writes ``ca.crt``, ``ca.key``, ``controller.crt`` and
``controller.key``; ``jackpotctl certs issue --dir DIR --role ROLE --name NAME`` writes
``NAME.crt`` and ``NAME.key``, a client certificate whose one URI subject alternative name
is the identity ``jackpot://ROLE/NAME`` (:mod:`controller.domain.identity`). Keys are ECDSA
P-256, written readable by their owner only; nothing here ever overwrites a key unless told.

A certificate is named in a deny list (revocation) by its SHA-256 fingerprint,
:func:`fingerprint`.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from controller.domain.identity import CERTIFICATE_ROLES, Identity, IdentityError, Role

CA_DAYS = 3650
CONTROLLER_DAYS = 397
CLIENT_DAYS = 397
DEFAULT_SANS = ("localhost", "127.0.0.1")
_MAX_DAYS = 3650


class CertificateError(Exception):
    """A certificate cannot be made or read as asked (the message says why)."""


@dataclass(frozen=True, slots=True)
class Issued:
    """A certificate and its key on disk, and the certificate's SHA-256 fingerprint."""

    cert: Path
    key: Path
    fingerprint: str


def fingerprint(pem: bytes) -> str:
    """The SHA-256 fingerprint (lower-case hex) of a PEM certificate's DER bytes."""
    try:
        der = x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)
    except ValueError as error:
        raise CertificateError(f"not a PEM certificate: {error}") from None
    return hashlib.sha256(der).hexdigest()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _write(path: Path, data: bytes, *, secret: bool, force: bool) -> None:
    if path.exists() and not force:
        raise CertificateError(f"{path} exists; remove it first (nothing was written)")
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    with os.fdopen(os.open(path, flags, 0o600 if secret else 0o644), "wb") as file:
        file.write(data)
    os.chmod(path, 0o600 if secret else 0o644)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _check_days(days: int) -> None:
    if not 1 <= days <= _MAX_DAYS:
        raise CertificateError(f"validity must be 1 to {_MAX_DAYS} days, got {days}")


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        pass
    if not name or len(name) > 253 or not all(part.isascii() for part in name):
        raise CertificateError(f"--san {name[:64]!r} is neither an IP address nor a host name")
    return x509.DNSName(name)


def _load_authority(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    try:
        cert = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
        key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
    except FileNotFoundError as error:
        raise CertificateError(
            f"{error.filename} is missing: run 'jackpotctl certs init --dir {directory}' first"
        ) from None
    except ValueError as error:
        raise CertificateError(f"cannot read the CA in {directory}: {error}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertificateError(f"{directory / 'ca.key'} is not an ECDSA key")
    return cert, key


def _leaf(
    authority: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    common_name: str,
    names: Sequence[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    days: int,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca_cert, ca_key = authority
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def _save(
    directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, force: bool
) -> Issued:
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    for path in (cert_path, key_path):
        if path.exists() and not force:
            raise CertificateError(f"{path} exists; remove it first (nothing was written)")
    _write(key_path, _key_pem(key), secret=True, force=force)
    pem = _cert_pem(cert)
    _write(cert_path, pem, secret=False, force=force)
    return Issued(cert_path, key_path, fingerprint(pem))


def init_authority(
    directory: Path,
    *,
    sans: Sequence[str] = (),
    organisation: str = "table-jackpot",
    days: int = CA_DAYS,
) -> tuple[Issued, Issued]:
    """Create a CA and the controller's certificate (valid for localhost, 127.0.0.1 and
    ``sans``) in ``directory``; refuse if a CA is there already. Returns (CA, controller)."""
    _check_days(days)
    if (directory / "ca.crt").exists() or (directory / "ca.key").exists():
        raise CertificateError(
            f"{directory} holds a CA already; a second one would orphan every certificate it "
            "signed (nothing was written)"
        )
    for name in sans:
        _san(name)  # refuse a bad name before anything is written
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation[:64]),
            x509.NameAttribute(NameOID.COMMON_NAME, "jackpot controller CA"),
        ]
    )
    now = _now()
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    ca = _save(directory, "ca", ca_cert, key, force=False)
    return ca, issue_controller(directory, sans=sans, days=min(days, CONTROLLER_DAYS))


def issue_controller(
    directory: Path,
    *,
    sans: Sequence[str] = (),
    days: int = CONTROLLER_DAYS,
    force: bool = False,
    out: Path | None = None,
) -> Issued:
    """The controller's certificate (valid for localhost, 127.0.0.1 and ``sans``) from the CA
    in ``directory``, as ``controller.crt`` and ``controller.key`` there (or in ``out``):
    renewing it (``force``) needs no new CA, and a running controller picks it up at its
    next handshake."""
    _check_days(days)
    names = [_san(name) for name in dict.fromkeys((*DEFAULT_SANS, *sans))]
    cert, key = _leaf(
        _load_authority(directory),
        "jackpot controller",
        names,
        ExtendedKeyUsageOID.SERVER_AUTH,
        days,
    )
    return _save(out or directory, "controller", cert, key, force=force)


def issue(
    directory: Path,
    role: str,
    name: str,
    *,
    days: int = CLIENT_DAYS,
    force: bool = False,
    out: Path | None = None,
) -> Issued:
    """Issue the client certificate ``jackpot://role/name`` signed by the CA in
    ``directory``, written there (or in ``out``) as ``name.crt`` and ``name.key``."""
    _check_days(days)
    if role not in CERTIFICATE_ROLES:
        raise CertificateError(f"--role {role!r}: choose one of {', '.join(CERTIFICATE_ROLES)}")
    try:
        identity = Identity(Role(role), name)
    except IdentityError as error:
        raise CertificateError(str(error)) from None
    if name in ("ca", "controller"):
        raise CertificateError(f"--name {name} would overwrite the CA's or controller's files")
    authority = _load_authority(directory)
    cert, key = _leaf(
        authority,
        f"{role} {name}",
        [x509.UniformResourceIdentifier(identity.uri)],
        ExtendedKeyUsageOID.CLIENT_AUTH,
        days,
    )
    return _save(out or directory, name, cert, key, force=force)
