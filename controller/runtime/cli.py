"""``jackpot-controller``: run the controller.

    jackpot-controller serve --listen 0.0.0.0:50051 --redis redis://redis:6379/0 \\
        --redis-password-file /run/secrets/redis-password \\
        --tls-cert certs/controller.crt --tls-key certs/controller.key --client-ca certs/ca.crt

Every option may also come from ``--config FILE`` (TOML) or ``JACKPOT_<OPTION>`` environment
variables (:mod:`controller.runtime.settings`). Mutual TLS is required; ``--insecure`` serves
plaintext for development, on a loopback address only.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from controller.api.peers import DenyListError, read_deny_list
from controller.domain import payout_compliance
from controller.observability import logs
from controller.runtime import settings, workers
from controller.runtime.rules_file import load_submission
from controller.runtime.server import MAX_CALLS_PER_CALLER, MAX_CONCURRENT_RPCS, ServerConfig
from controller.runtime.serving import run_server
from controller.security.position_key import read_position_key, write_position_key
from controller.security.tls import TLSFiles, is_loopback
from controller.store import cluster, connection
from jackpot.errors import InvalidAmount, InvalidConfiguration, JackpotError
from jackpot.money import parse_dollars_cents

log = logging.getLogger("controller")
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


class UsageError(Exception):
    """Options that do not make a controller (exit 2)."""


def _parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The command line, and its ``serve`` command's parser."""
    parser = argparse.ArgumentParser(prog="jackpot-controller", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = add_serve_command(commands)
    add_position_key_command(commands)
    return parser, serve


def add_serve_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add ``serve`` and its options (each also a ``--config`` key and a ``JACKPOT_<OPTION>``
    variable); its parser, which :func:`controller.runtime.settings.apply` fills in."""
    serve = commands.add_parser("serve", help="serve TableService and AdminService over gRPC")
    serve.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="TOML file of these options (keys: tls-cert, ...)",
    )
    serve.add_argument(
        "--listen", default="127.0.0.1:50051", metavar="HOST:PORT", help="gRPC address"
    )
    serve.add_argument(
        "--redis",
        default=DEFAULT_REDIS,
        metavar="URL",
        help="Redis URL, the state of record: redis://HOST:PORT/DB, rediss:// for TLS, or "
        "sentinel://HOST:PORT[,HOST:PORT...]/SERVICE[?db=N] for the primary that Redis Sentinel "
        "names (and follows through failovers); no password in it",
    )
    serve.add_argument(
        "--redis-cluster",
        metavar="HOST:PORT[,HOST:PORT...]",
        help="instead of --redis: some nodes of a Redis Cluster (the client learns the rest); "
        "each link group is served by the shard of its hash tag",
    )
    serve.add_argument(
        "--redis-password-file",
        type=Path,
        metavar="FILE",
        help=f"file holding the Redis password (or ${settings.REDIS_PASSWORD_ENV})",
    )
    serve.add_argument(
        "--sentinel-password-file",
        type=Path,
        metavar="FILE",
        help="file holding the Redis Sentinels' own password, for a sentinel:// URL (or "
        f"${settings.SENTINEL_PASSWORD_ENV}); the servers' is --redis-password-file",
    )
    serve.add_argument("--tls-cert", type=Path, metavar="FILE", help="the controller's certificate")
    serve.add_argument("--tls-key", type=Path, metavar="FILE", help="its private key")
    serve.add_argument(
        "--client-ca", type=Path, metavar="FILE", help="CA(s) a client's certificate must chain to"
    )
    serve.add_argument(
        "--deny-list",
        type=Path,
        metavar="FILE",
        help="revoked certificates' SHA-256 fingerprints, one a line (re-read on SIGHUP and when "
        "the file changes)",
    )
    serve.add_argument(
        "--position-key",
        type=Path,
        metavar="FILE",
        help="the key of the macs over tables' journal positions, outside Redis (written by "
        "'jackpot-controller position-key'; the same file on every replica): without it no "
        "single table's position can stop its link group, only two tables' (docs/journal.md)",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="serve plaintext with no identities: development only, loopback addresses only",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        default=9102,
        metavar="PORT",
        help="HTTP /metrics and /healthz on the listen host; -1 disables",
    )
    serve.add_argument(
        "--web-port",
        type=int,
        default=-1,
        metavar="PORT",
        help="the meter signs (/sign/<link group>) and the floor view (/floor) on the listen "
        "host, HTTPS with the gRPC port's certificates (plain HTTP with --insecure); -1 "
        "(the default) disables",
    )
    serve.add_argument(
        "--rules",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="apply this Rules Submission at start (link groups, meters, tables); repeatable. "
        "Nothing is created on a Redis that holds no installation record (a new installation, "
        "or a Redis that lost its data) unless --first-install is given",
    )
    serve.add_argument(
        "--first-install",
        action="store_true",
        help="this is a new installation: on a Redis without an installation record, create "
        "one (and the Rules Submission's link groups). Never use it to recover a Redis that "
        "lost its data: restore that (RUNBOOK)",
    )
    serve.add_argument(
        "--round-retention-hours",
        type=float,
        default=168.0,
        metavar="H",
        help="how long a round's stored answers serve retries",
    )
    serve.add_argument(
        "--max-round-step",
        type=int,
        default=1000,
        metavar="N",
        help="how far above a table's last round a new round id may be",
    )
    serve.add_argument(
        "--table-calls-per-second",
        type=float,
        default=2.0,
        metavar="N",
        help="calls one table may make a second, bursts of 20 or ten times that; a real table "
        "makes one every several seconds; 0: no limit",
    )
    serve.add_argument(
        "--client-calls-per-second",
        type=float,
        default=10.0,
        metavar="N",
        help="calls any other identity (a person, a tool, a display) may make a second, bursts "
        "of 20 or twice that; 0: no limit",
    )
    serve.add_argument(
        "--max-streams",
        type=int,
        default=1000,
        metavar="N",
        help="open streams (meters, health, reflection) in all",
    )
    serve.add_argument(
        "--max-streams-per-caller",
        type=int,
        default=8,
        metavar="N",
        help="open streams of one certificate identity",
    )
    serve.add_argument(
        "--max-calls-per-caller",
        type=int,
        default=MAX_CALLS_PER_CALLER,
        metavar="N",
        help="calls in progress of one certificate identity, streams included",
    )
    serve.add_argument(
        "--redis-max-connections",
        type=int,
        default=64,
        metavar="N",
        help="Redis connections; a call waits for a free one",
    )
    serve.add_argument(
        "--wait-replicas",
        type=int,
        default=0,
        metavar="N",
        help="acknowledge a write only after N Redis replicas have it (WAIT; on Redis 7.2+ "
        "WAITAOF: fsynced to their append-only files and the primary's)",
    )
    serve.add_argument(
        "--wait-timeout-ms",
        type=int,
        default=1000,
        metavar="MS",
        help="how long to wait for those replicas",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve with N processes on the one --listen port (SO_REUSEPORT; a fixed port) "
        "and one metrics endpoint: about one core each (README: Scaling)",
    )
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    serve.add_argument(
        "--payout-compliance",
        default=payout_compliance.DEFAULT,
        choices=tuple(payout_compliance.PRESETS),
        help="what a jackpot's hand-pay needs before it is recorded paid: a W-2G tax-form "
        "reference and a witness (default: us-default, a W-2G at >= $600 and >= 300x the "
        "wager, a witness from $1,200; none: nothing; docs/payout-compliance.md)",
    )
    serve.add_argument(
        "--tax-form-from",
        metavar="DOLLARS",
        help="change the preset's tax-form threshold (0: no tax-form rule)",
    )
    serve.add_argument(
        "--tax-form-wager-multiple",
        type=int,
        metavar="N",
        help="change the preset's tax-form wager multiple (the win is at least N x the wager)",
    )
    serve.add_argument(
        "--witness-from",
        metavar="DOLLARS",
        help="change the preset's witness threshold, up to 5000 (0: no witness rule)",
    )
    for action in serve._actions:
        if action.default not in (None, [], False, argparse.SUPPRESS) and action.help:
            action.help += " (default %(default)s)"
    return serve


def add_position_key_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``position-key``."""
    new_key = commands.add_parser(
        "position-key", help="write a new random --position-key file (mode 0600, never over one)"
    )
    new_key.add_argument("--out", type=Path, required=True, metavar="FILE")


def _tls(args: argparse.Namespace) -> TLSFiles | None:
    given = {"--tls-cert": args.tls_cert, "--tls-key": args.tls_key, "--client-ca": args.client_ca}
    host = args.listen.rpartition(":")[0]
    if args.insecure:
        if any(given.values()):
            raise UsageError(
                "--insecure serves plaintext: leave out --tls-cert, --tls-key, --client-ca"
            )
        if not is_loopback(host):
            raise UsageError(
                f"--insecure is for development on a loopback address, not {host!r}: configure "
                "mutual TLS (--tls-cert, --tls-key, --client-ca)"
            )
        return None
    missing = [flag for flag, value in given.items() if value is None]
    if missing:
        raise UsageError(
            f"mutual TLS needs {', '.join(missing)} (or the JACKPOT_TLS_CERT, JACKPOT_TLS_KEY, "
            "JACKPOT_CLIENT_CA variables); 'jackpotctl certs init' makes them. For development "
            "on loopback only, --insecure serves plaintext"
        )
    for flag, path in given.items():
        if not os.access(path, os.R_OK) or not path.is_file():
            raise UsageError(f"{flag} {path}: not a readable file")
    return TLSFiles(args.tls_cert, args.tls_key, args.client_ca)


def _position_key(path: Path | None) -> Path | None:
    """``--position-key``, refused at start unless it is a readable key."""
    if path is not None:
        try:
            read_position_key(path)
        except OSError as error:
            raise UsageError(f"--position-key {path}: {error}") from None
    return path


def _config(args: argparse.Namespace, environ: Mapping[str, str]) -> ServerConfig:
    if args.wait_replicas < 0 or args.round_retention_hours < 1:
        raise UsageError("--wait-replicas must be >= 0 and --round-retention-hours >= 1")
    if not 1 <= args.max_round_step <= 1_000_000_000:
        raise UsageError("--max-round-step must be 1 to 1,000,000,000")
    limits = (
        args.max_streams,
        args.max_streams_per_caller,
        args.max_calls_per_caller,
        args.redis_max_connections,
    )
    if min(limits) < 1 or min(args.table_calls_per_second, args.client_calls_per_second) < 0:
        raise UsageError(
            "--max-streams, --max-streams-per-caller, --max-calls-per-caller and "
            "--redis-max-connections must be >= 1, "
            "--table-calls-per-second and --client-calls-per-second >= 0"
        )
    if args.max_streams > MAX_CONCURRENT_RPCS // 2:
        raise UsageError(
            f"--max-streams must leave room for calls: at most {MAX_CONCURRENT_RPCS // 2}"
        )
    redis_url = args.redis
    if args.redis_cluster is not None:
        if args.redis != DEFAULT_REDIS:
            raise UsageError("give --redis or --redis-cluster, not both")
        try:
            redis_url = cluster.cluster_url(args.redis_cluster)
        except cluster.ClusterSeedsError as error:
            raise UsageError(f"--redis-cluster: {error}") from None
    try:
        connection.check_url(redis_url)
    except connection.RedisURLError as error:
        raise UsageError(f"--redis: {error}") from None
    sentinel = redis_url.lower().startswith("sentinel://")
    if args.sentinel_password_file is not None and not sentinel:
        raise UsageError("--sentinel-password-file is for a sentinel:// --redis URL")
    if "@" in args.redis.partition("://")[2].partition("/")[0]:
        log.warning(
            "the --redis URL holds credentials, visible in process listings; use "
            "--redis-password-file or $%s",
            settings.REDIS_PASSWORD_ENV,
        )
    if args.deny_list is not None:
        read_deny_list(args.deny_list)  # refuse to start on an unreadable list
    return ServerConfig(
        rules=tuple(load_submission(path) for path in args.rules),
        first_install=args.first_install,
        listen=args.listen,
        redis_url=redis_url,
        redis_password=settings.redis_password(args.redis_password_file, environ),
        sentinel_password=(
            settings.sentinel_password(args.sentinel_password_file, environ) if sentinel else None
        ),
        tls=_tls(args),
        deny_list=args.deny_list,
        position_key=_position_key(args.position_key),
        metrics_port=None if args.metrics_port < 0 else args.metrics_port,
        web_port=None if args.web_port < 0 else args.web_port,
        round_retention_seconds=int(args.round_retention_hours * 3600),
        max_round_step=args.max_round_step,
        table_calls_per_s=args.table_calls_per_second,
        table_call_burst=max(20, int(args.table_calls_per_second * 10)),
        client_calls_per_s=args.client_calls_per_second,
        client_call_burst=max(20, int(args.client_calls_per_second * 2)),
        max_streams=args.max_streams,
        max_streams_per_caller=args.max_streams_per_caller,
        max_calls_per_caller=args.max_calls_per_caller,
        redis_max_connections=args.redis_max_connections,
        wait_replicas=args.wait_replicas,
        wait_timeout_ms=args.wait_timeout_ms,
        payout_compliance=_payout_compliance(args),
    )


def _payout_compliance(args: argparse.Namespace) -> payout_compliance.PayoutCompliance:
    """The payout compliance policy of ``--payout-compliance`` and its changes
    (:class:`UsageError` names a value that cannot be one)."""

    def cents(option: str, text: str | None) -> int | None:
        if text is None:
            return None
        try:
            return parse_dollars_cents(text)
        except InvalidAmount as error:
            raise UsageError(f"{option}: {error}") from None

    try:
        return payout_compliance.policy(
            args.payout_compliance,
            tax_form_from_cents=cents("--tax-form-from", args.tax_form_from),
            tax_form_wager_multiple=args.tax_form_wager_multiple,
            witness_from_cents=cents("--witness-from", args.witness_from),
        )
    except InvalidConfiguration as error:
        raise UsageError(str(error)) from None


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Entry point of the ``jackpot-controller`` console script."""
    env = os.environ if environ is None else environ
    parser, serve = _parser()
    args = parser.parse_args(argv)
    if args.command == "position-key":
        return _position_key_command(args)
    return _serve_command(args, parser, serve, argv, env)


def _position_key_command(args: argparse.Namespace) -> int:
    """``position-key``: the new key file written; 1 when it cannot be."""
    try:
        write_position_key(args.out)
    except OSError as error:
        print(f"jackpot-controller: {error}", file=sys.stderr)
        return 1
    return 0


def _serve_command(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    serve: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    env: Mapping[str, str],
) -> int:
    """``serve``: the options completed from ``--config`` and the environment (``argv`` parsed
    again with ``parser`` once ``serve``'s defaults are theirs) and checked (2: they make no
    controller), then the controller runs until stopped (1: it could not start)."""
    try:
        settings.apply(serve, args.config, env)
        args = parser.parse_args(argv)
        logs.configure(args.log_level)
        config = _config(args, env)
    except (UsageError, settings.SettingsError, DenyListError, JackpotError) as error:
        print(f"jackpot-controller: {error}", file=sys.stderr)
        return 2
    try:
        if args.workers != 1:
            return workers.run(config, args.workers, args.log_level)
        run_server(config)
    except workers.WorkersError as error:
        print(f"jackpot-controller: {error}", file=sys.stderr)
        return 2
    except (OSError, JackpotError) as error:
        print(f"jackpot-controller: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
