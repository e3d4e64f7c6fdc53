"""``jackpot-controller``: run the controller.

    jackpot-controller serve --listen 0.0.0.0:50051 --redis redis://127.0.0.1:6379/0 \\
        --metrics-port 9102 --insecure
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from controller.errors import JackpotError
from controller.rules_file import load_submission
from controller.server import ControllerServer, ServerConfig

log = logging.getLogger("controller")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jackpot-controller", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve TableService and AdminService over gRPC")
    serve.add_argument(
        "--listen",
        default="127.0.0.1:50051",
        metavar="HOST:PORT",
        help="gRPC address (default %(default)s)",
    )
    serve.add_argument(
        "--redis",
        default="redis://127.0.0.1:6379/0",
        metavar="URL",
        help="Redis URL, the state of record (default %(default)s)",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        default=9102,
        metavar="PORT",
        help="Prometheus /metrics port on the listen host; -1 disables (default %(default)s)",
    )
    serve.add_argument(
        "--rules",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="apply this Rules Submission at start (link groups, meters, tables); repeatable",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="serve plaintext gRPC (required until mutual TLS is configured)",
    )
    serve.add_argument(
        "--round-retention-hours",
        type=float,
        default=168.0,
        metavar="H",
        help="how long a round's stored answers serve retries (default 168)",
    )
    serve.add_argument(
        "--wait-replicas",
        type=int,
        default=0,
        metavar="N",
        help="acknowledge a write only after N Redis replicas have it",
    )
    serve.add_argument(
        "--wait-timeout-ms",
        type=int,
        default=1000,
        metavar="MS",
        help="how long to wait for those replicas (default %(default)s)",
    )
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


async def _serve(config: ServerConfig) -> None:
    server = ControllerServer(config)
    await server.start()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    log.info("stopping: finishing calls in flight")
    await server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``jackpot-controller`` console script."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    if not args.insecure:
        print(
            "jackpot-controller: refusing to serve without transport security; mutual TLS is "
            "not configured yet, so pass --insecure to serve plaintext on a trusted network",
            file=sys.stderr,
        )
        return 2
    if args.wait_replicas < 0 or args.round_retention_hours < 1:
        print(
            "jackpot-controller: --wait-replicas must be >= 0 and --round-retention-hours >= 1",
            file=sys.stderr,
        )
        return 2
    try:
        rules = tuple(load_submission(path) for path in args.rules)
    except JackpotError as error:
        print(f"jackpot-controller: {error}", file=sys.stderr)
        return 2
    config = ServerConfig(
        rules=rules,
        listen=args.listen,
        redis_url=args.redis,
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        round_retention_seconds=int(args.round_retention_hours * 3600),
        wait_replicas=args.wait_replicas,
        wait_timeout_ms=args.wait_timeout_ms,
    )
    try:
        asyncio.run(_serve(config))
    except (OSError, JackpotError) as error:
        print(f"jackpot-controller: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
