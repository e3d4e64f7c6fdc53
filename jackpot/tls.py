"""The client side of mutual TLS, shared by every client: table agents, ``jackpotctl``, tests.

Every client command takes ``--ca``, ``--cert`` and ``--key`` (or the environment variables
``JACKPOT_CA``, ``JACKPOT_CERT``, ``JACKPOT_KEY``): the casino's CA certificate, which the
controller's certificate must chain to, and the client's own certificate and key, whose
identity (``jackpot://<role>/<name>``) the controller checks on every call. ``--insecure``
talks plaintext to a development controller on loopback.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
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

    def credentials(self) -> grpc.ChannelCredentials:
        """Channel credentials read from the files now (so a rotated certificate is used by
        the next channel)."""
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
