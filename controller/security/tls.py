"""The server side of mutual TLS: the controller's certificate and the CA it trusts.

The controller serves only clients whose certificate chains to ``client_ca`` (gRPC checks it
during the handshake, before any call). The certificate, key and CA files are read again at
the next handshake after any of them changes, so a rotated certificate or CA bundle takes
effect without a restart; calls on connections already open are not interrupted. The web
port does the same with :class:`WebCertificates`: a new :class:`ssl.SSLContext` for the
connections after a change (so a CA removed from ``client_ca`` is refused there too).
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from jackpot.tls import is_loopback

log = logging.getLogger("controller.tls")
__all__ = ["ServerCertificates", "TLSFiles", "WebCertificates", "is_loopback"]

Observer = Callable[[x509.Certificate, list[x509.Certificate]], None]
"""Told the controller's certificate and the client CAs each time they are read."""


@dataclass(frozen=True, slots=True)
class TLSFiles:
    """The controller's certificate and key, and the CA its clients' certificates chain to
    (PEM files; ``client_ca`` may hold several CAs during a rotation)."""

    cert: Path
    key: Path
    client_ca: Path


def _check_pair(files: TLSFiles, key_pem: bytes, cert_pem: bytes) -> None:
    try:
        certificate = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        raise OSError(f"{files.cert} is not a PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(key_pem, None)
    except (ValueError, TypeError):
        raise OSError(f"{files.key} is not an unencrypted PEM private key") from None
    raw = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(*raw) != certificate.public_key().public_bytes(*raw):
        raise OSError(f"{files.key} is not the key of {files.cert}")


def _stat(files: TLSFiles) -> tuple[int, ...]:
    stamps = []
    for path in (files.cert, files.key, files.client_ca):
        try:
            stamps.append(path.stat().st_mtime_ns)
        except OSError:
            stamps.append(-1)
    return tuple(stamps)


def _load(files: TLSFiles, observe: Observer | None = None) -> tuple[bytes, bytes, bytes]:
    """The key, certificate and client CA bundle (PEM), once they are usable: a key that
    matches the certificate, and at least one CA certificate (an empty or half-written CA
    file would otherwise refuse every client). :class:`OSError` naming the file otherwise."""
    try:
        key, cert = files.key.read_bytes(), files.cert.read_bytes()
        client_ca = files.client_ca.read_bytes()
    except OSError as error:
        raise OSError(f"cannot read {error.filename}: {error.strerror}") from None
    _check_pair(files, key, cert)
    try:
        authorities = x509.load_pem_x509_certificates(client_ca)
    except ValueError:
        raise OSError(f"{files.client_ca} holds no PEM CA certificate") from None
    if observe is not None:
        observe(x509.load_pem_x509_certificate(cert), authorities)
    return key, cert, client_ca


class ServerCertificates:
    """Dynamic server credentials over :class:`TLSFiles`, re-read when a file changes;
    ``observe`` is told the certificates at each read (their expiry is exported)."""

    def __init__(self, files: TLSFiles, observe: Observer | None = None) -> None:
        self.files = files
        self._observe = observe
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._initial = self._read()

    def _stat(self) -> tuple[int, ...]:
        return _stat(self.files)

    def _read(self) -> grpc.ServerCertificateConfiguration:
        """The files as a configuration (:func:`_load`)."""
        key, cert, client_ca = _load(self.files, self._observe)
        return grpc.ssl_server_certificate_configuration([(key, cert)], client_ca)

    def _fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """Called by gRPC at each handshake: a new configuration when the files changed."""
        with self._lock:
            stamp = self._stat()
            if stamp == self._stamp:
                return None
            try:
                configuration = self._read()
            except OSError as error:
                log.error("TLS files changed but %s; keeping the certificates in use", error)
                return None
            self._stamp = stamp
        log.warning(
            "TLS certificate, key or client CA changed on disk: offered to new handshakes "
            "(gRPC keeps the old ones if the new ones do not load)"
        )
        return configuration

    def credentials(self) -> grpc.ServerCredentials:
        """Credentials that require a client certificate from the configured CA."""
        fetch = cast("Callable[[], grpc.ServerCertificateConfiguration]", self._fetch)
        return grpc.dynamic_ssl_server_credentials(  # the stub omits the None "no change"
            self._initial, fetch, require_client_authentication=True
        )


def web_context(files: TLSFiles) -> ssl.SSLContext:
    """TLS for the web port: the controller's certificate, client certificates required
    from ``client_ca``. :class:`OSError` naming a file that cannot be used."""
    _load(files)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    # TLS 1.3 and no session tickets: no handshake resumes a session, so every connection's
    # certificate is verified against the CA bundle of the moment (a removed CA is refused).
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.options |= ssl.OP_NO_TICKET
    context.num_tickets = 0
    try:
        context.load_cert_chain(files.cert, files.key)
        context.load_verify_locations(cafile=files.client_ca)
    except (OSError, ssl.SSLError) as error:
        raise OSError(f"web port: cannot use the TLS files: {error}") from None
    context.verify_mode = ssl.CERT_REQUIRED
    return context


class WebCertificates:
    """The web port's :class:`ssl.SSLContext` over :class:`TLSFiles`, made again for the
    next connection after a file changes (as gRPC's credentials are): a renewed certificate
    is served, and a CA removed from ``client_ca`` is refused, without a restart. Files that
    do not load keep the context in use (logged once per change)."""

    def __init__(self, files: TLSFiles) -> None:
        self.files = files
        self._stamp = _stat(files)
        self._context = web_context(files)

    def __call__(self) -> ssl.SSLContext:
        """The context for a new connection."""
        stamp = _stat(self.files)
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._context = web_context(self.files)
            except OSError as error:
                log.error("web port: TLS files changed but %s; keeping the ones in use", error)
            else:
                log.warning(
                    "web port: TLS certificate, key or client CA changed on disk: used for "
                    "new connections"
                )
        return self._context
