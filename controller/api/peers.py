"""Who is calling: the identity of the client certificate, checked against the deny list.

gRPC's TLS layer (and the web port's) has already checked that the certificate chains to the
configured CA; here the certificate's one ``jackpot://<role>/<name>`` URI SAN becomes the
caller's :class:`Identity`, and a certificate whose SHA-256 fingerprint is on the deny list
is refused (revocation without restart: the list is re-read on SIGHUP and when its file
changes).

The URI SANs are read from the certificate itself (its DER, with ``cryptography``), never
from the TLS layer's string alone: gRPC cuts a URI at an embedded NUL
(``jackpot://supervisor/eve\\0table`` reads as ``jackpot://supervisor/eve``). A URI with a
control character is refused, and so is a certificate whose URIs gRPC read differently.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from controller.domain.identity import INSECURE_CALLER, Identity, IdentityError
from jackpot.errors import Unauthenticated

log = logging.getLogger("controller.peers")

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_PEM_BODY = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CACHE_LIMIT = 4096
_MAX_URIS = 16
RECHECK_INTERVAL_S = 1.0
_LISTED_UNREVOKED = 20

ExpiryObserver = Callable[[Identity, float], None]
"""Called once per certificate read: the identity it names and when it expires (unix s)."""


class DenyListError(Exception):
    """The deny list cannot be read (the message names the file and line)."""


def read_deny_list(path: Path) -> frozenset[str]:
    """The fingerprints in a deny list file: one SHA-256 (64 hex digits, ':' allowed) first
    on a line, then anything (``jackpotctl certs fingerprint FILE`` prints a line to append
    as it is); ``#`` starts a comment; blank lines are ignored."""
    return _read(path)[0]


def _read(path: Path) -> tuple[frozenset[str], bool]:
    """The fingerprints, and whether the file is blank (no entry and no comment: a file
    truncated or being written, never taken to un-revoke everything)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DenyListError(f"cannot read the deny list {path}: {error}") from None
    found: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        entry = words[0].replace(":", "").lower()
        if not _FINGERPRINT.fullmatch(entry):
            raise DenyListError(
                f"{path} line {number}: {entry[:70]!r} is not a SHA-256 fingerprint "
                "(64 hex digits; 'jackpotctl certs fingerprint FILE' prints one)"
            )
        found.add(entry)
    return frozenset(found), not text.strip()


class DenyList:
    """The revoked certificates, re-read when the file changes or on :meth:`reload`.

    A list that shrinks is applied only when the file is well-formed (every line a
    fingerprint or a comment) and not blank: an empty file is a truncated or half-written
    one and keeps every revocation (logged at ERROR); to revoke nothing, leave a comment
    line. Each certificate un-revoked is logged at WARNING. ``observe`` is told the number
    of revoked certificates at every load (``jackpot_revoked_certificates``).
    """

    def __init__(self, path: Path, observe: Callable[[int], None] | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._observe = observe
        self._fingerprints = read_deny_list(path)
        self._mtime_ns = self._stat()
        self._checked = time.monotonic()
        if observe is not None:
            observe(len(self._fingerprints))

    def _stat(self) -> int:
        try:
            return self.path.stat().st_mtime_ns
        except OSError:
            return -1

    def reload(self) -> None:
        """Read the file again; an unreadable, malformed or blank file keeps the last good
        list (never un-revokes) and is logged."""
        with self._lock:
            self._mtime_ns = self._stat()
            try:
                fingerprints, blank = _read(self.path)
            except DenyListError as error:
                log.error("%s; keeping the %d revocations read before", error, len(self))
                return
            if blank and self._fingerprints:
                log.error(
                    "deny list %s is empty (truncated or being written?); keeping the %d "
                    "revocations read before (to revoke nothing, leave a '#' comment line)",
                    self.path,
                    len(self),
                )
                return
            unrevoked = sorted(self._fingerprints - fingerprints)
            self._fingerprints = fingerprints
        if self._observe is not None:
            self._observe(len(fingerprints))
        if unrevoked:
            listed = ", ".join(f[:16] + "..." for f in unrevoked[:_LISTED_UNREVOKED])
            more = len(unrevoked) - _LISTED_UNREVOKED
            log.warning(
                "deny list %s: %d certificates UN-REVOKED (%s%s); %d revoked now",
                self.path,
                len(unrevoked),
                listed,
                f" and {more} more" if more > 0 else "",
                len(fingerprints),
            )
        else:
            log.info("deny list %s: %d revoked certificates", self.path, len(fingerprints))

    def _maybe_reload(self) -> None:
        now = time.monotonic()
        if now - self._checked < RECHECK_INTERVAL_S:
            return
        self._checked = now
        if self._stat() != self._mtime_ns:
            self.reload()

    def __contains__(self, fingerprint: object) -> bool:
        self._maybe_reload()
        return fingerprint in self._fingerprints

    def __len__(self) -> int:
        return len(self._fingerprints)


@dataclass(frozen=True, slots=True)
class _Certificate:
    """What the authenticator needs of one client certificate, read once."""

    fingerprint: str
    uris: tuple[str, ...]  # the jackpot:// URI SANs, as the certificate holds them
    problem: str = ""  # why no identity can be read from it ("" if one can)
    not_after: float = 0.0


def _der_of(pem: bytes) -> bytes:
    match = _PEM_BODY.search(pem)
    try:
        return base64.b64decode(b"".join(match[1].split()) if match else b"", validate=True)
    except binascii.Error:
        return b""


def _read_certificate(der: bytes) -> _Certificate:
    if not der:
        return _Certificate("", (), "the client certificate cannot be read")
    fingerprint = hashlib.sha256(der).hexdigest()
    try:
        certificate = x509.load_der_x509_certificate(der)
        not_after = certificate.not_valid_after_utc.timestamp()
        try:
            extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
            uris = extension.value.get_values_for_type(x509.UniformResourceIdentifier)
        except x509.ExtensionNotFound:
            uris = []
    except ValueError as error:  # a malformed extension or name
        return _Certificate(fingerprint, (), f"the client certificate cannot be read: {error}")
    ours = tuple(uri for uri in uris[:_MAX_URIS] if uri.startswith("jackpot://"))
    for uri in ours:
        if _CONTROL.search(uri):
            return _Certificate(
                fingerprint,
                ours,
                f"the client certificate's identity {uri[:80]!r} holds a control character",
                not_after,
            )
    return _Certificate(fingerprint, ours, "", not_after)


class Authenticator:
    """Turns a call's TLS auth context into the caller's :class:`Identity`.

    ``insecure``: no TLS at all; every caller is the development identity. ``observe`` is
    told a certificate's identity and expiry the first time it is admitted (a revoked or
    unusable certificate is not reported).
    """

    def __init__(
        self,
        *,
        insecure: bool = False,
        deny_list: DenyList | None = None,
        observe: ExpiryObserver | None = None,
    ) -> None:
        self.insecure = insecure
        self.deny_list = deny_list
        self._observe = observe
        self._certificates: dict[bytes, _Certificate] = {}
        self._observed: set[str] = set()  # fingerprints whose expiry was reported
        self._identities: dict[tuple[str, str], Identity] = {}  # parsed once a certificate

    def _certificate(self, key: bytes, der: Callable[[], bytes]) -> _Certificate:
        cached = self._certificates.get(key)
        if cached is None:
            cached = _read_certificate(der())
            if len(self._certificates) >= _CACHE_LIMIT:
                self._certificates.clear()
                self._observed.clear()
                self._identities.clear()
            self._certificates[key] = cached
        return cached

    def peer_key(self, auth_context: Mapping[str, Iterable[bytes]]) -> str:
        """A key for the peer of a call that has no usable identity: its certificate's
        fingerprint (its refusals count against that key's call rate)."""
        pems = list(auth_context.get("x509_pem_cert") or ())
        if not pems:
            return "cert:none"
        return "cert:" + self._certificate(pems[0], lambda: _der_of(pems[0])).fingerprint

    def identify(self, auth_context: Mapping[str, Iterable[bytes]]) -> Identity:
        """The caller of a gRPC call, or :class:`Unauthenticated`."""
        if self.insecure:
            return INSECURE_CALLER
        pems = list(auth_context.get("x509_pem_cert") or ())
        if not pems:
            raise Unauthenticated("no_certificate", "a client certificate is required")
        certificate = self._certificate(pems[0], lambda: _der_of(pems[0]))
        # peer_uri: the certificate's URI SANs as gRPC read them; they must agree with the
        # certificate's own (gRPC cuts a URI at a NUL).
        seen = (
            tuple(
                value.decode("utf-8", "replace")
                for value in auth_context.get("peer_uri") or ()
                if value.startswith(b"jackpot://")
            )
            if "peer_uri" in auth_context
            else None
        )
        return self._identity(certificate, seen)

    def identify_der(self, der: bytes | None) -> Identity:
        """The caller presenting the certificate ``der`` (the web port), or
        :class:`Unauthenticated`."""
        if self.insecure:
            return INSECURE_CALLER
        if not der:
            raise Unauthenticated("no_certificate", "a client certificate is required")
        certificate = self._certificate(der, lambda: der)
        return self._identity(certificate, None)

    def _identity(self, certificate: _Certificate, seen: tuple[str, ...] | None) -> Identity:
        fingerprint = certificate.fingerprint
        if self.deny_list is not None and fingerprint in self.deny_list:
            raise Unauthenticated(
                "revoked", f"certificate {fingerprint[:16]}... is revoked (on the deny list)"
            )
        if certificate.problem:
            raise Unauthenticated("no_identity", certificate.problem)
        names = certificate.uris
        if seen is not None and seen != names:
            raise Unauthenticated(
                "no_identity",
                f"the TLS layer reads the certificate's identities as {list(seen)!r:.120}, "
                f"the certificate holds {list(names)!r:.120}; refused",
            )
        if len(names) != 1:
            raise Unauthenticated(
                "no_identity",
                f"the client certificate names {len(names)} jackpot identities; exactly one "
                "URI SAN jackpot://<role>/<name> is required",
            )
        identity = self._identities.get((fingerprint, names[0]))
        if identity is None:
            try:
                identity = Identity.parse(names[0], fingerprint)
            except IdentityError as error:
                raise Unauthenticated("no_identity", f"the client certificate: {error}") from None
            self._identities[fingerprint, names[0]] = identity
        if self._observe is not None and fingerprint not in self._observed:
            self._observed.add(fingerprint)  # once per certificate admitted
            self._observe(identity, certificate.not_after)
        return identity

    def check_not_revoked(self, caller: Identity) -> None:
        """Refuse a caller whose certificate was revoked since its call began (a stream)."""
        if self.deny_list is not None and caller.fingerprint in self.deny_list:
            raise Unauthenticated(
                "revoked",
                f"certificate {caller.fingerprint[:16]}... is revoked (on the deny list)",
            )
