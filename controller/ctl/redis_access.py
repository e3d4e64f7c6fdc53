"""How ``jackpotctl`` commands that work on Redis directly (no controller, no certificate) name
it and open it: ``--redis``/``--redis-cluster`` and the password files, and who runs them.

    jackpotctl audit verify --redis redis://127.0.0.1:6379/0 --redis-password-file pw
    jackpotctl journal export --redis-cluster 10.0.0.1:7000,10.0.0.2:7000 --dir export
"""

from __future__ import annotations

import argparse
import getpass
import socket
from pathlib import Path

from controller.runtime import settings
from controller.store import cluster
from controller.store.connection import check_url
from controller.store.redis_store import RedisStore


def add_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--redis URL`` or ``--redis-cluster NODES`` (one of them ``required``), and the
    password files."""
    where = parser.add_mutually_exclusive_group(required=required)
    where.add_argument(
        "--redis",
        metavar="URL",
        help="redis://HOST:PORT/DB, rediss://, unix://, or "
        "sentinel://HOST:PORT[,HOST:PORT...]/SERVICE[?db=N] (the primary Redis Sentinel names)",
    )
    where.add_argument(
        "--redis-cluster",
        dest="redis",
        metavar="HOST:PORT[,HOST:PORT...]",
        type=_cluster_url,
        help="instead of --redis: some nodes of a Redis Cluster (every link group is read "
        "from the shard that holds it)",
    )
    parser.add_argument(
        "--redis-password-file",
        type=Path,
        metavar="FILE",
        help=f"file holding the Redis password (or ${settings.REDIS_PASSWORD_ENV})",
    )
    parser.add_argument(
        "--sentinel-password-file",
        type=Path,
        metavar="FILE",
        help="file holding the Sentinels' own password, for a sentinel:// URL (or "
        f"${settings.SENTINEL_PASSWORD_ENV})",
    )


def _cluster_url(seeds: str) -> str:
    """``--redis-cluster``'s value as the URL the store takes; argparse shows the reason of a
    bad one."""
    try:
        return cluster.cluster_url(seeds)
    except cluster.ClusterSeedsError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def open_store(args: argparse.Namespace) -> RedisStore:
    """The store of ``--redis``; a URL it cannot use is a ValueError (exit 2) saying what is
    wrong, before anything connects."""
    check_url(args.redis)
    sentinel = args.redis.lower().startswith("sentinel://")
    if args.sentinel_password_file is not None and not sentinel:
        raise ValueError("--sentinel-password-file is for a sentinel:// --redis URL")
    return RedisStore.from_url(
        args.redis,
        password=settings.redis_password(args.redis_password_file),
        sentinel_password=(
            settings.sentinel_password(args.sentinel_password_file) if sentinel else None
        ),
    )


def actor(command: str) -> str:
    """Who runs a command that works on Redis directly (no certificate): the OS user."""
    return f"jackpotctl {command} ({getpass.getuser()}@{socket.gethostname()})"


async def link_groups(store: RedisStore, only: str) -> list[str]:
    """``only`` (NotFound when Redis has no such link group), or every link group."""
    if only:
        await store.catalog.get_link_group(only)  # NotFound names it
        return [only]
    return [group.link_group_id for group in await store.catalog.list_link_groups()]


def person() -> str:
    """Who runs a reconciliation command on Redis directly: the OS user on this host (the
    same person whatever the command, so one person cannot both request and approve)."""
    return f"{getpass.getuser()}@{socket.gethostname()}"
