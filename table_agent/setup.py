"""What the simulated table agent (``table-agent``) and the dealer console (``table-agent
console``) set up alike: the TLS files of the channel to the controller, the retry and
offline windows, the metrics endpoint, and the table's registration checked against the
command line.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from typing import TYPE_CHECKING

import grpc

from jackpot import tls
from jackpot.kinds import WagerKind
from table_agent.client import ControllerClient, ControllerRefused, TableInfo
from table_agent.games import game_procedure
from table_agent.link import check_offline_after
from table_agent.table import TableAgent
from table_agent.wagers import TableLayout

if TYPE_CHECKING:
    from table_agent.metrics import MetricsEndpoint


class TableSetupError(Exception):
    """The table cannot be played as registered and asked for (the message says why)."""


class MetricsPortError(Exception):
    """The metrics port, or the sign's port, cannot be served (the message names it)."""


def add_metrics_arguments(parser: argparse.ArgumentParser) -> None:
    """``--metrics-port`` and ``--metrics-host``: the agent's Prometheus metrics, for the
    simulated agent and the dealer console alike."""
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus /metrics over plain HTTP on this port (default: off)",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="the address of --metrics-port (default 127.0.0.1; 0.0.0.0 for a Prometheus "
        "on another host)",
    )


def check_metrics(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--metrics-port`` (None: nothing)."""
    if args.metrics_port is not None and not 1 <= args.metrics_port <= 65535:
        return f"--metrics-port must be 1 to 65535, not {args.metrics_port}"
    if args.metrics_port is not None and importlib.util.find_spec("prometheus_client") is None:
        return (
            "--metrics-port needs the Prometheus client, which this installation lacks: "
            "pip install 'table-jackpot[metrics]'"
        )
    return None


def check_retry(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--retry-for`` and ``--offline-after`` (None: nothing)."""
    if not math.isfinite(args.retry_for) or args.retry_for <= 0:
        return f"--retry-for must be a positive number of seconds, not {args.retry_for}"
    try:
        check_offline_after(args.offline_after)
    except ValueError as error:
        return str(error)
    if args.offline_after >= args.retry_for:
        return (
            f"--offline-after {args.offline_after:g} must be below --retry-for "
            f"{args.retry_for:g}: the table would give up before it says PROGRESSIVE OFFLINE"
        )
    return None


def controller_tls(args: argparse.Namespace) -> tuple[tls.ClientTLS | None, str | None]:
    """The channel's TLS files from ``--controller``, ``--ca``, ``--cert``, ``--key`` and
    ``--insecure``, or why they are refused (a bad address, a missing or unreadable file)."""
    try:
        tls.target(args.controller)
        files = tls.from_arguments(args)
        if files is not None:
            files.check()  # e.g. "the key does not match the certificate", before connecting
        return files, None
    except (ValueError, tls.TLSConfigError) as error:
        return None, str(error)


def _reconcile(layout: TableLayout, args: argparse.Namespace) -> TableLayout:
    """The registration, checked against what the command line asks for."""
    game_procedure(layout.game)  # one the agent deals
    if args.game and args.game != layout.game:
        raise TableSetupError(f"--game {args.game}, but the table is registered for {layout.game}")
    if args.seats and args.seats > layout.seats:
        raise TableSetupError(f"--seats {args.seats}, but the table has {layout.seats} seats")
    progressive = layout.offer(WagerKind.PROGRESSIVE)
    if args.wager_cents and (
        progressive is None or not progressive.fixed or progressive.min_cents != args.wager_cents
    ):
        raise TableSetupError(
            f"--wager-cents {args.wager_cents}, but the registration offers "
            f"{layout.describe()}; leave --wager-cents out"
        )
    return layout


async def learn_table(client: ControllerClient, args: argparse.Namespace) -> TableInfo:
    """The table's registration and last round from the controller (TableService.GetTable),
    checked against what the command line asks for."""
    try:
        info = await client.get_table(args.table_id)
    except ControllerRefused as refusal:
        if refusal.code is grpc.StatusCode.NOT_FOUND:
            raise TableSetupError(
                f"table {args.table_id} is not registered at the controller"
            ) from None
        raise
    _reconcile(info.layout, args)
    return info


def serve_metrics(agent: TableAgent, args: argparse.Namespace) -> MetricsEndpoint | None:
    """The agent's metrics endpoint on ``--metrics-port`` (None without it);
    :class:`MetricsPortError` naming the port when it cannot be served."""
    if args.metrics_port is None:
        return None
    from table_agent.metrics import MetricsEndpoint  # prometheus-client only when asked

    try:
        return MetricsEndpoint(agent, args.metrics_host, args.metrics_port)
    except OSError as error:
        raise MetricsPortError(
            f"cannot serve metrics on {args.metrics_host}:{args.metrics_port}: "
            f"{error.strerror or error}"
        ) from None
