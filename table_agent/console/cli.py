"""``table-agent console``: the dealer console, with which a dealer runs a real table.

    table-agent console --table-id cs-1 --controller 127.0.0.1:50051 --state-dir /var/lib/cs-1 \\
        --ca certs/ca.crt --cert certs/cs-1.crt --key certs/cs-1.key

It learns the table from the controller (TableService.GetTable: the game, the seats, the side
wagers offered and their limits, the last round), delivers what a crash left in the outbox,
then runs rounds: open, the wagers per seat (checked against the offer), lockout, the chip
count, the cards (checked with the shared core: real cards of the game's deck, the right
number, none twice), settle with every result and award (a jackpot awaiting a supervisor's
validation with its id), or void with a reason; the live meters in a corner, PROGRESSIVE
OFFLINE when the controller stops answering. Every report goes through the outbox in
``--state-dir``, as does the round record (``<table id>.rounds.jsonl``) and the log
(``<table id>.console.log``). ``--metrics-port`` serves the agent's Prometheus metrics, as
for the simulated agent (:mod:`table_agent.metrics`; the ``metrics`` extra). It needs the
``console`` extra (prompt_toolkit).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from jackpot import tls
from jackpot.times import utc_logs
from table_agent.client import (
    ControllerClient,
    ControllerMisconfigured,
    ControllerRefused,
    ControllerUnreachable,
)
from table_agent.console.desk import Desk
from table_agent.console.record import RoundRecord
from table_agent.console.session import DealerSession
from table_agent.games import UnknownGame, game_procedure
from table_agent.link import OFFLINE_AFTER_S, Link
from table_agent.outbox import Outbox
from table_agent.setup import (
    MetricsPortError,
    TableSetupError,
    add_metrics_arguments,
    check_metrics,
    check_retry,
    controller_tls,
    learn_table,
    serve_metrics,
)
from table_agent.table import TableAgent

MISSING_EXTRA = (
    "the dealer console needs prompt_toolkit, which this installation lacks: "
    "pip install 'table-jackpot[console]'"
)


def parser() -> argparse.ArgumentParser:
    """The command line of ``table-agent console``."""
    parser = argparse.ArgumentParser(prog="table-agent console", description=__doc__.split("\n")[0])
    parser.add_argument("--table-id", required=True, help="the registered table id")
    parser.add_argument("--controller", required=True, metavar="HOST:PORT", help="the controller")
    parser.add_argument(
        "--state-dir",
        required=True,
        type=Path,
        metavar="DIR",
        help="the table's outbox, round record and log (a restart re-sends what it holds)",
    )
    parser.add_argument("--game", help="the table's game, checked against its registration")
    parser.add_argument(
        "--retry-for",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long to retry a report before it is left to the next start (default 300)",
    )
    parser.add_argument(
        "--offline-after",
        type=float,
        default=OFFLINE_AFTER_S,
        metavar="SECONDS",
        help=f"PROGRESSIVE OFFLINE after this long without an answer (default "
        f"{OFFLINE_AFTER_S:.0f})",
    )
    add_metrics_arguments(parser)
    parser.set_defaults(seats=None, wager_cents=None)  # what learn_table checks besides --game
    tls.add_arguments(parser)
    return parser


async def _run(args: argparse.Namespace, tls_files: tls.ClientTLS | None) -> None:
    from table_agent.console import screen  # prompt_toolkit: the `console` extra

    link = Link(args.offline_after, table_id=args.table_id)
    client = ControllerClient(
        args.controller, tls_files=tls_files, retry_for_s=args.retry_for, link=link
    )
    agent = TableAgent(args.table_id, client, Outbox(args.state_dir, args.table_id))
    try:
        endpoint = serve_metrics(agent, args)
    except MetricsPortError:
        await client.close()
        raise
    try:
        recovered = await agent.recover()
        try:
            info = await learn_table(client, args)
            game = game_procedure(info.layout.game)
        except (UnknownGame, ValueError) as error:
            raise TableSetupError(str(error)) from None
        agent.continue_after(info.last_round_id)
        session = DealerSession(info.layout, game)
        session.say(f"table {args.table_id}: {info.layout.describe()}")
        if recovered:
            session.say(f"delivered {recovered} report(s) a restart left pending (see the log)")
        session.say("type help for the commands")
        desk = Desk(agent, session, RoundRecord(args.state_dir, args.table_id))
        await screen.run(desk, game)
    finally:
        if endpoint is not None:
            endpoint.close()
        await client.close()


def _log_to_file(args: argparse.Namespace) -> Path:
    """The agent's log goes to the state directory: the screen is the dealer's."""
    args.state_dir.mkdir(parents=True, exist_ok=True)
    path: Path = args.state_dir / f"{args.table_id}.console.log"
    logging.basicConfig(filename=path, level=logging.INFO)
    utc_logs()
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``table-agent console``."""
    args = parser().parse_args(argv)
    if importlib.util.find_spec("prompt_toolkit") is None:
        print(f"table-agent console: {MISSING_EXTRA}", file=sys.stderr)
        return 2
    problem = check_retry(args) or check_metrics(args)
    tls_files, refused = controller_tls(args)
    problem = problem or refused
    if problem:
        print(f"table-agent console: {problem}", file=sys.stderr)
        return 2
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("table-agent console: the dealer console runs in a terminal", file=sys.stderr)
        return 2
    log_path = _log_to_file(args)
    print(f"table-agent console: asking {args.controller} for table {args.table_id}...")
    try:
        asyncio.run(_run(args, tls_files))
    except TableSetupError as error:
        print(f"table-agent console: cannot run table {args.table_id}: {error}", file=sys.stderr)
        return 2
    except MetricsPortError as error:
        print(f"table-agent console: {error}", file=sys.stderr)
        return 1
    except ControllerRefused as refusal:
        print(f"table-agent console: the controller refused: {refusal}", file=sys.stderr)
        return 1
    except ControllerMisconfigured as error:
        print(f"table-agent console: cannot reach the controller: {error}", file=sys.stderr)
        return 2
    except ControllerUnreachable as error:
        print(
            f"table-agent console: {error}; what was not acknowledged stays in the outbox "
            f"(log: {log_path})",
            file=sys.stderr,
        )
        return 1
    return 0
