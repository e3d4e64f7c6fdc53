"""The client side of mutual TLS, shared by every client: table agents, ``jackpotctl``, tests.

Every client command takes ``--ca``, ``--cert`` and ``--key`` (or the environment variables
``JACKPOT_CA``, ``JACKPOT_CERT``, ``JACKPOT_KEY``): the casino's CA certificate, which the
controller's certificate must chain to, and the client's own certificate and key, whose
identity (``jackpot://<role>/<name>``) the controller checks on every call. ``--insecure``
talks plaintext to a development controller on loopback.

When the controller cannot be reached, :func:`diagnose` says in one sentence what is wrong
(no controller listening, a plaintext client to a TLS controller or the reverse, a
controller's certificate not from the client's CA, a client certificate the controller does
not accept), by a TLS handshake of its own; :meth:`ClientTLS.credentials` refuses a key that
does not match its certificate before any connection. gRPC's raw transport text is for logs.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc import aio

ENV_CA, ENV_CERT, ENV_KEY = "JACKPOT_CA", "JACKPOT_CERT", "JACKPOT_KEY"


def is_loopback(host: str) -> bool:
    """Whether a listen host is loopback only (plain text, ``--insecure`` or a table's sign
    without a certificate, is refused on anything else)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


CHANNEL_OPTIONS: Sequence[tuple[str, int | str]] = (
    ("grpc.max_receive_message_length", 4 * 1024 * 1024),
    # Reconnect within a second of a controller's return (gRPC's default backs off to 120 s).
    # Not grpc.min_reconnect_backoff_ms: it is also the time a connection attempt may take.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # Find a dead connection (a stalled network, a controller gone without a FIN) in 30 s.
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # Every address the target resolves to (controller replicas) takes calls in turn.
    ("grpc.service_config", json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})),
)


def _split(addresses: str) -> list[str]:
    return [part.strip() for part in addresses.split(",") if part.strip()]


def target(addresses: str) -> str:
    """The gRPC target of ``--controller``: one HOST:PORT (a DNS name may resolve to every
    replica), or several comma-separated IP:PORT for replicas without a shared name."""
    parts = _split(addresses)
    if len(parts) <= 1:
        return addresses.strip()
    for part in parts:
        host = part.rpartition(":")[0].strip("[]")
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(
                f"--controller {addresses[:100]!r}: several addresses must be IP:PORT (or give "
                "one name that resolves to every controller)"
            ) from None
    family = "ipv6" if ":" in parts[0].rpartition(":")[0] else "ipv4"
    return f"{family}:{','.join(parts)}"


class TLSConfigError(Exception):
    """The client's TLS files are missing or unreadable (the message says which)."""


@dataclass(frozen=True, slots=True)
class ClientTLS:
    """The files of a client's mutual TLS: CA, certificate, key (PEM)."""

    ca: Path
    cert: Path
    key: Path

    def check(self) -> None:
        """:class:`TLSConfigError` in one sentence when the files cannot serve: a CA file or
        certificate that is not PEM, a key that does not match the certificate."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            context.load_verify_locations(cafile=str(self.ca))
        except OSError as error:
            raise TLSConfigError(f"cannot read {self.ca}: {error.strerror}") from None
        except ssl.SSLError:
            raise TLSConfigError(f"the CA file {self.ca} holds no PEM certificate") from None
        try:
            context.load_cert_chain(str(self.cert), str(self.key), password=_no_password)
        except OSError as error:
            if not isinstance(error, ssl.SSLError):
                raise TLSConfigError(
                    f"cannot read {error.filename or self.cert}: {error.strerror}"
                ) from None
            if error.reason == "KEY_VALUES_MISMATCH":
                raise TLSConfigError(
                    f"the key does not match the certificate ({self.key} is not the key of "
                    f"{self.cert})"
                ) from None
            raise TLSConfigError(
                f"{self.cert} and {self.key} are not a PEM certificate and its unencrypted key"
            ) from None

    def credentials(self) -> grpc.ChannelCredentials:
        """Channel credentials read from the files now (so a rotated certificate is used by
        the next channel), after :meth:`check`."""
        self.check()
        try:
            return grpc.ssl_channel_credentials(
                root_certificates=self.ca.read_bytes(),
                private_key=self.key.read_bytes(),
                certificate_chain=self.cert.read_bytes(),
            )
        except OSError as error:
            raise TLSConfigError(f"cannot read {error.filename}: {error.strerror}") from None

    @classmethod
    def in_directory(cls, directory: Path, name: str) -> ClientTLS:
        """``directory/ca.crt`` with ``directory/name.crt`` and ``name.key`` (the layout
        ``jackpotctl certs`` writes)."""
        return cls(directory / "ca.crt", directory / f"{name}.crt", directory / f"{name}.key")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--ca``, ``--cert``, ``--key`` and ``--insecure`` to a client's command line."""
    group = parser.add_argument_group("mutual TLS (the controller requires it)")
    group.add_argument("--ca", type=Path, metavar="FILE", help=f"CA certificate (${ENV_CA})")
    group.add_argument(
        "--cert", type=Path, metavar="FILE", help=f"this client's certificate (${ENV_CERT})"
    )
    group.add_argument("--key", type=Path, metavar="FILE", help=f"its private key (${ENV_KEY})")
    group.add_argument(
        "--insecure",
        action="store_true",
        help="plaintext, for a development controller started with --insecure on loopback",
    )


def from_arguments(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ClientTLS | None:
    """The TLS files from the command line, else the environment; None with ``--insecure``.

    Raises :class:`TLSConfigError` naming what is missing.
    """
    if args.insecure:
        return None
    env = os.environ if environ is None else environ
    paths: dict[str, str] = {
        "--ca": str(args.ca or env.get(ENV_CA) or ""),
        "--cert": str(args.cert or env.get(ENV_CERT) or ""),
        "--key": str(args.key or env.get(ENV_KEY) or ""),
    }
    missing = [flag for flag, value in paths.items() if not value]
    if missing:
        raise TLSConfigError(
            f"give {', '.join(missing)} (or ${ENV_CA}, ${ENV_CERT}, ${ENV_KEY}): the controller "
            "accepts only mutual TLS; --insecure is for a development controller"
        )
    return ClientTLS(Path(paths["--ca"]), Path(paths["--cert"]), Path(paths["--key"]))


def _options(addresses: str) -> list[tuple[str, int | str]]:
    """The channel options; several addresses are verified against the first one's host,
    which every replica's certificate must name (``jackpotctl certs init --san``)."""
    parts = _split(addresses)
    if len(parts) <= 1:
        return list(CHANNEL_OPTIONS)
    host = parts[0].rpartition(":")[0].strip("[]")
    return [*CHANNEL_OPTIONS, ("grpc.ssl_target_name_override", host)]


def aio_channel(addresses: str, tls: ClientTLS | None) -> aio.Channel:
    """An asyncio channel to ``addresses`` (HOST:PORT, or several IP:PORT): mutual TLS, or
    plaintext when None."""
    if tls is None:
        return aio.insecure_channel(target(addresses), options=_options(addresses))
    return aio.secure_channel(target(addresses), tls.credentials(), options=_options(addresses))


def channel(addresses: str, tls: ClientTLS | None) -> grpc.Channel:
    """A blocking channel to ``addresses``: mutual TLS, or plaintext when None."""
    if tls is None:
        return grpc.insecure_channel(target(addresses), options=_options(addresses))
    return grpc.secure_channel(target(addresses), tls.credentials(), options=_options(addresses))


def _no_password() -> str:
    raise TLSConfigError("the key is encrypted; gRPC needs an unencrypted key")


PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class Unreachable:
    """Why a controller cannot be reached: one ``sentence``; ``lasting`` when it is the
    client's or the controller's configuration (it will not mend itself), not a controller
    that is down."""

    sentence: str
    lasting: bool = True

    def __str__(self) -> str:
        return self.sentence


def diagnose(
    addresses: str, tls: ClientTLS | None, timeout_s: float = PROBE_TIMEOUT_S
) -> Unreachable | None:
    """Why the controller at ``addresses`` (its first HOST:PORT) cannot be reached with
    ``tls`` (None: plaintext), in one sentence; None when a handshake of its own finds
    nothing wrong (the controller may be starting, or overloaded). Blocking, at most about
    ``2 * timeout_s``."""
    first = _split(addresses)[0] if _split(addresses) else addresses
    host, _, port_text = first.rpartition(":")
    host = host.strip("[]")
    where = f"{host}:{port_text}"
    try:
        port = int(port_text)
        raw = socket.create_connection((host, port), timeout=timeout_s)
    except (OSError, ValueError):
        return Unreachable(f"no controller listens at {where}", lasting=False)
    with raw:
        raw.settimeout(timeout_s)
        if tls is None:
            return _plaintext_to(raw, host, where)
        return _tls_to(raw, host, where, tls)


def _plaintext_to(raw: socket.socket, host: str, where: str) -> Unreachable | None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with context.wrap_socket(raw, server_hostname=host):
            pass
    except (OSError, ssl.SSLError):
        return None  # not TLS: the plaintext client's problem is elsewhere
    return Unreachable(
        f"this controller requires TLS: give --ca, --cert and --key for {where} (--insecure "
        "is only for a development controller)"
    )


def _tls_to(raw: socket.socket, host: str, where: str, tls: ClientTLS) -> Unreachable | None:
    try:
        tls.check()
    except TLSConfigError as error:
        return Unreachable(str(error))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=str(tls.ca))
    context.load_cert_chain(str(tls.cert), str(tls.key))
    context.set_alpn_protocols(["h2"])
    try:
        with context.wrap_socket(raw, server_hostname=host) as wrapped:
            first = wrapped.recv(1)  # the server's HTTP/2 settings, or its refusal of us
    except ssl.SSLCertVerificationError as error:
        if error.verify_code == 62:  # X509_V_ERR_HOSTNAME_MISMATCH
            return Unreachable(f"the controller's certificate does not name {host}")
        if error.verify_code == 10:  # X509_V_ERR_CERT_HAS_EXPIRED
            return Unreachable(f"the controller's certificate at {where} has expired")
        return Unreachable(
            f"certificate not from this CA: the controller's certificate at {where} does not "
            f"chain to {tls.ca}"
        )
    except ssl.SSLError as error:
        if error.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "UNEXPECTED_EOF"):
            return Unreachable(
                f"the controller at {where} does not use TLS (a development controller "
                "started --insecure): give --insecure"
            )
        if "UNKNOWN_CA" in str(error.reason) or "BAD_CERTIFICATE" in str(error.reason):
            return _client_refused(where, tls)
        return None
    except OSError:
        return None
    if not first:  # the server closed the connection on our certificate
        return _client_refused(where, tls)
    return None


def _client_refused(where: str, tls: ClientTLS) -> Unreachable:
    return Unreachable(
        f"certificate not from this CA: the controller at {where} does not accept "
        f"{tls.cert} (issued by another CA, or expired)"
    )
