"""The baseline server: a bare grpc.aio echo, in a process of its own, on 127.0.0.1.

``python -m bench.echo --port P --reply-bytes N [--plain-port Q] --cert F --key F --ca F``
serves one unary method, :data:`METHOD`, that answers every request with ``N`` bytes and does
nothing else: no decoding, no interceptor, no Redis. It listens with mutual TLS and the
controller's own certificate (so the load generator connects to it exactly as to the
controller), and optionally in plaintext on ``--plain-port`` for a C load tool (h2load cannot
present a client certificate). It stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc import aio

SERVICE = "bench.Echo"
METHOD = f"/{SERVICE}/Echo"
"""The echo's full method name (bytes in, bytes out: no serializer on either side)."""


def _identity(raw: bytes) -> bytes:
    return raw


async def _serve(args: argparse.Namespace) -> None:
    reply = bytes(args.reply_bytes)

    async def echo(request: bytes, context: object) -> bytes:
        return reply

    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Echo": grpc.unary_unary_rpc_method_handler(
                echo, request_deserializer=_identity, response_serializer=_identity
            )
        },
    )
    server = aio.server()
    server.add_generic_rpc_handlers((handler,))
    credentials = grpc.ssl_server_credentials(
        [(args.key.read_bytes(), args.cert.read_bytes())],
        root_certificates=args.ca.read_bytes(),
        require_client_auth=True,
    )
    server.add_secure_port(f"127.0.0.1:{args.port}", credentials)
    if args.plain_port:
        server.add_insecure_port(f"127.0.0.1:{args.plain_port}")
    await server.start()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    await server.stop(1)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bench.echo``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.echo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--plain-port", type=int, default=0)
    parser.add_argument("--reply-bytes", type=int, required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--ca", type=Path, required=True)
    asyncio.run(_serve(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
