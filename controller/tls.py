"""The server side of mutual TLS: the controller's certificate and the CA it trusts.

The controller serves only clients whose certificate chains to ``client_ca`` (gRPC checks it
during the handshake, before any call). The certificate, key and CA files are read again at
the next handshake after any of them changes, so a rotated certificate or CA bundle takes
effect without a restart; calls on connections already open are not interrupted.
"""

from __future__ import annotations

import logging
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
__all__ = ["ServerCertificates", "TLSFiles", "is_loopback"]


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


class ServerCertificates:
    """Dynamic server credentials over :class:`TLSFiles`, re-read when a file changes."""

    def __init__(self, files: TLSFiles) -> None:
        self.files = files
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._initial = self._read()

    def _stat(self) -> tuple[int, ...]:
        stamps = []
        for path in (self.files.cert, self.files.key, self.files.client_ca):
            try:
                stamps.append(path.stat().st_mtime_ns)
            except OSError:
                stamps.append(-1)
        return tuple(stamps)

    def _read(self) -> grpc.ServerCertificateConfiguration:
        """The files as a configuration, once they are usable: a key that matches the
        certificate, and at least one CA certificate (an empty or half-written CA file would
        otherwise refuse every client). :class:`OSError` naming the file otherwise."""
        try:
            key, cert = self.files.key.read_bytes(), self.files.cert.read_bytes()
            client_ca = self.files.client_ca.read_bytes()
        except OSError as error:
            raise OSError(f"cannot read {error.filename}: {error.strerror}") from None
        _check_pair(self.files, key, cert)
        try:
            x509.load_pem_x509_certificates(client_ca)
        except ValueError:
            raise OSError(f"{self.files.client_ca} holds no PEM CA certificate") from None
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
