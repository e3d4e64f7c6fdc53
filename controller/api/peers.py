"""Who is calling: the identity of the client certificate, checked against the deny list.

gRPC's TLS layer has already checked that the certificate chains to the configured CA;
here the certificate's one ``jackpot://<role>/<name>`` URI SAN becomes the caller's
:class:`Identity`, and a certificate whose SHA-256 fingerprint is on the deny list is
refused (revocation without restart: the list is re-read on SIGHUP and when its file
changes).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from controller.domain.identity import INSECURE_CALLER, Identity, IdentityError
from jackpot.errors import Unauthenticated

log = logging.getLogger("controller.peers")

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_PEM_BODY = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.DOTALL)
_CACHE_LIMIT = 4096
RECHECK_INTERVAL_S = 1.0


class DenyListError(Exception):
    """The deny list cannot be read (the message names the file and line)."""


def read_deny_list(path: Path) -> frozenset[str]:
    """The fingerprints in a deny list file: one SHA-256 (64 hex digits, ':' allowed) first
    on a line, then anything (``jackpotctl certs fingerprint FILE`` prints a line to append
    as it is); ``#`` starts a comment; blank lines are ignored."""
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
    return frozenset(found)


class DenyList:
    """The revoked certificates, re-read when the file changes or on :meth:`reload`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fingerprints = read_deny_list(path)
        self._mtime_ns = self._stat()
        self._checked = time.monotonic()

    def _stat(self) -> int:
        try:
            return self.path.stat().st_mtime_ns
        except OSError:
            return -1

    def reload(self) -> None:
        """Read the file again; an unreadable file keeps the last good list (never
        un-revokes) and is logged."""
        with self._lock:
            self._mtime_ns = self._stat()
            try:
                self._fingerprints = read_deny_list(self.path)
            except DenyListError as error:
                log.error("%s; keeping the %d revocations read before", error, len(self))
                return
        log.info("deny list %s: %d revoked certificates", self.path, len(self))

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


class Authenticator:
    """Turns a call's TLS auth context into the caller's :class:`Identity`.

    ``insecure``: no TLS at all; every caller is the development identity.
    """

    def __init__(self, *, insecure: bool = False, deny_list: DenyList | None = None) -> None:
        self.insecure = insecure
        self.deny_list = deny_list
        self._fingerprints: dict[bytes, str] = {}

    def _fingerprint(self, pem: bytes) -> str:
        cached = self._fingerprints.get(pem)
        if cached is None:
            match = _PEM_BODY.search(pem)
            try:
                der = base64.b64decode(b"".join(match[1].split()) if match else b"", validate=True)
            except binascii.Error:
                der = b""
            cached = hashlib.sha256(der).hexdigest() if der else ""
            if len(self._fingerprints) >= _CACHE_LIMIT:
                self._fingerprints.clear()
            self._fingerprints[pem] = cached
        return cached

    def identify(self, auth_context: Mapping[str, Iterable[bytes]]) -> Identity:
        """The caller, or :class:`Unauthenticated`."""
        if self.insecure:
            return INSECURE_CALLER
        pems = list(auth_context.get("x509_pem_cert") or ())
        if not pems:
            raise Unauthenticated("no_certificate", "a client certificate is required")
        fingerprint = self._fingerprint(pems[0])
        if self.deny_list is not None and fingerprint in self.deny_list:
            raise Unauthenticated(
                "revoked", f"certificate {fingerprint[:16]}... is revoked (on the deny list)"
            )
        # peer_uri: the certificate's URI SANs only (a DNS or e-mail SAN spelling an identity
        # is not one).
        names = [
            value.decode("utf-8", "replace")
            for value in auth_context.get("peer_uri") or ()
            if value.startswith(b"jackpot://")
        ]
        if len(names) != 1:
            raise Unauthenticated(
                "no_identity",
                f"the client certificate names {len(names)} jackpot identities; exactly one "
                "URI SAN jackpot://<role>/<name> is required",
            )
        try:
            return Identity.parse(names[0], fingerprint)
        except IdentityError as error:
            raise Unauthenticated("no_identity", f"the client certificate: {error}") from None

    def check_not_revoked(self, caller: Identity) -> None:
        """Refuse a caller whose certificate was revoked since its call began (a stream)."""
        if self.deny_list is not None and caller.fingerprint in self.deny_list:
            raise Unauthenticated(
                "revoked",
                f"certificate {caller.fingerprint[:16]}... is revoked (on the deny list)",
            )
