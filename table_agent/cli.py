"""``table-agent``: one table's agent, here driving a simulated table of its registered game.

    table-agent --table-id cs-1 --controller 127.0.0.1:50051 --sim --rounds 100 --pace 0.2 \
        --ca certs/ca.crt --cert certs/cs-1.crt --key certs/cs-1.key

The agent talks to the controller over mutual TLS with its table's certificate
(``jackpot://table/<table id>``, from ``jackpotctl certs issue --role table``; or the
``JACKPOT_CA``, ``JACKPOT_CERT``, ``JACKPOT_KEY`` variables). At start it asks the controller
(TableService.GetTable) for its table's registration: the game (Caribbean Stud Poker, Three
Card Poker, Six-Card Fortune Pai Gow Poker, Texas Hold 'Em Bonus Poker), the seats, the side
wagers offered with their limits, and the last round, above which its round ids continue.
``--game``, ``--seats`` and ``--wager-cents`` are checked against the registration.

When the controller has not answered for ``--offline-after`` seconds (default 30) the table is
PROGRESSIVE OFFLINE: no side wagers until it answers again (:mod:`table_agent.link`).
``--metrics-port`` serves the agent's Prometheus metrics (:mod:`table_agent.metrics`);
``--web-port`` the table's meter sign at ``/sign`` (:mod:`table_agent.sign`).

``table-agent console`` is the dealer console, with which a dealer runs a real table (see
:mod:`table_agent.console.cli`).

A scripted round (chosen cards and wagers, for demonstrations) is a JSON file; see
:mod:`table_agent.script`::

    {"label": "straight flush and royal flush",
     "hands": {"6": "9H TH JH QH KH", "2": "AS KS QS JS TS"}}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from jackpot import tls
from jackpot.errors import InvalidCards
from jackpot.games import MAX_SEATS
from jackpot.money import format_cents
from jackpot.times import utc_logs
from table_agent.client import (
    ControllerClient,
    ControllerMisconfigured,
    ControllerRefused,
    ControllerUnreachable,
)
from table_agent.console import cli as console_cli
from table_agent.games import UnknownGame
from table_agent.link import OFFLINE_AFTER_S, Link, ProgressiveOffline
from table_agent.outbox import Outbox
from table_agent.script import ScriptedRound, ScriptError, load_script
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
from table_agent.sign import TableSign, sign_tls
from table_agent.sign import add_arguments as add_sign_arguments
from table_agent.sign import check_arguments as check_sign_arguments
from table_agent.simulator import SimulationConfig, TableSimulator, Tally
from table_agent.table import TableAgent
from table_agent.wagers import TableLayout

log = logging.getLogger("table_agent.cli")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="table-agent",
        description=__doc__.split("\n")[0],
        epilog="A dealer runs a real table with the dealer console: table-agent console --help",
    )
    parser.add_argument("--table-id", required=True, help="the registered table id")
    parser.add_argument(
        "--controller",
        required=True,
        metavar="HOST:PORT",
        help="the controller (a name may resolve to every replica), or several IP:PORT "
        "separated by commas; calls go to each in turn",
    )
    parser.add_argument("--sim", action="store_true", help="simulate the table's play")
    parser.add_argument("--rounds", type=int, default=100, help="rounds to play (default 100)")
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="pause between rounds (default 0)",
    )
    parser.add_argument(
        "--seats",
        type=int,
        help="play only seats 1 to N (default: the table's registered seats)",
    )
    parser.add_argument("--game", help="the table's game, checked against its registration")
    parser.add_argument(
        "--wager-cents",
        type=int,
        help="the fixed Progressive Payout Wager, checked against the registration",
    )
    parser.add_argument("--occupancy-percent", type=int, default=85)
    parser.add_argument(
        "--wager-percent",
        type=int,
        default=60,
        help="chance an occupied seat places each side wager the table offers (default 60)",
    )
    parser.add_argument(
        "--void-percent",
        type=int,
        default=0,
        help="chance a round is voided for a misdeal after the lockout",
    )
    parser.add_argument(
        "--rest-of-round-void-percent",
        type=int,
        default=0,
        help="Texas Hold 'Em Bonus: chance a dealer card is exposed after the first two cards, "
        "voiding the rest of the round but settling the bonus wagers (§ 647a.13(d)); default 0",
    )
    parser.add_argument(
        "--script",
        type=Path,
        metavar="FILE",
        help="after the simulated rounds, play this scripted round",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="keep the durable outbox here and re-send what a crash left",
    )
    parser.add_argument(
        "--summary-json",
        type=Path,
        metavar="FILE",
        help="write the table's tally (rounds, wagers, awards) as JSON",
    )
    parser.add_argument(
        "--retry-for",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="how long to retry a report, or to wait for the controller while the table is "
        "PROGRESSIVE OFFLINE, before giving up (default 300)",
    )
    parser.add_argument(
        "--offline-after",
        type=float,
        default=OFFLINE_AFTER_S,
        metavar="SECONDS",
        help="PROGRESSIVE OFFLINE (no side wagers) once the controller has not answered for "
        f"this long (default {OFFLINE_AFTER_S:.0f}; 1 to 3600, below --retry-for)",
    )
    add_metrics_arguments(parser)
    add_sign_arguments(parser)
    tls.add_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="print only awards and errors")
    return parser


def _check_link(args: argparse.Namespace) -> str | None:
    problem = check_retry(args) or check_metrics(args)
    if problem:
        return problem
    return check_sign_arguments(args)


def _check(args: argparse.Namespace) -> str | None:
    if not args.sim:
        return "pass --sim to simulate the table, or run the dealer console: table-agent console"
    if args.rounds < 0 or not 0 <= args.pace < math.inf:
        return "--rounds and --pace must be >= 0"
    problem = _check_link(args)
    if problem:
        return problem
    if args.seats is not None and not 1 <= args.seats <= MAX_SEATS:
        return f"--seats must be 1 to {MAX_SEATS} (no table seats more, § 639a.2(a))"
    if args.wager_cents is not None and args.wager_cents <= 0:
        return "--wager-cents must be a positive number of cents"
    percents = (
        args.occupancy_percent,
        args.wager_percent,
        args.void_percent,
        args.rest_of_round_void_percent,
    )
    if any(not 0 <= p <= 100 for p in percents):
        return "percentages must be 0 to 100"
    return None


async def _run(
    args: argparse.Namespace,
    tls_files: tls.ClientTLS | None,
    scripted: tuple[str, ScriptedRound] | None,
) -> tuple[TableLayout, Tally, int]:
    link = Link(args.offline_after, table_id=args.table_id)
    client = ControllerClient(
        args.controller, tls_files=tls_files, retry_for_s=args.retry_for, link=link
    )
    outbox = Outbox(args.state_dir, args.table_id) if args.state_dir else None
    agent = TableAgent(args.table_id, client, outbox)
    try:
        endpoint = serve_metrics(agent, args)
    except MetricsPortError:
        await client.close()
        raise
    try:
        table_sign = await _open_sign(client, link, args)
    except MetricsPortError:
        if endpoint is not None:
            endpoint.close()
        await client.close()
        raise
    keeper = asyncio.create_task(agent.keep_link())
    try:
        if await agent.recover():
            print(f"table {args.table_id}: delivered the reports a restart left pending")
        try:
            info = await learn_table(client, args)
        except (UnknownGame, ValueError) as error:
            raise TableSetupError(str(error)) from None
        agent.continue_after(info.last_round_id)
        layout = info.layout
        log.info("table %s: %s", args.table_id, layout.describe())
        config = SimulationConfig(
            seats=args.seats or layout.seats,
            occupancy_percent=args.occupancy_percent,
            wager_percent=args.wager_percent,
            void_percent=args.void_percent,
            rest_of_round_void_percent=args.rest_of_round_void_percent,
            pace_s=args.pace,
        )
        simulator = TableSimulator(agent, config, layout=layout)
        await simulator.run(args.rounds)
        if scripted is not None:
            label, round_ = scripted
            print(f"table {args.table_id}: ==== SCRIPTED ROUND: {label} ====")
            await simulator.play_round(round_)  # offline: refused, for the dealer
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
        if table_sign is not None:
            await table_sign.close()
        await client.close()
        if endpoint is not None:
            endpoint.close()
    return layout, simulator.tally, link.offline_periods


async def _open_sign(
    client: ControllerClient, link: Link, args: argparse.Namespace
) -> TableSign | None:
    if args.web_port is None:
        return None
    where = f"{args.web_host}:{args.web_port}"
    try:
        table_sign = TableSign(
            client,
            args.table_id,
            link,
            host=args.web_host,
            port=args.web_port,
            tls=sign_tls(args),
        )
        await table_sign.start()
    except OSError as error:
        reason = error.strerror or error
        raise MetricsPortError(f"cannot serve the sign on {where}: {reason}") from None
    log.info("table %s: meter sign at %s/sign", args.table_id, where)
    return table_sign


def _write_summary(path: Path, layout: TableLayout, tally: Tally) -> None:
    summary: dict[str, Any] = {
        "table_id": layout.table_id,
        "game": layout.game,
        "rounds": tally.rounds,
        "voids": tally.voids,
        "rest_of_round_voids": tally.rest_of_round_voids,
        "wagers": tally.wagers,
        "wagers_by_kind": tally.wagers_by_kind,
        "wagered_cents": tally.wagered_cents,
        "meters": {meter: asdict(counts) for meter, counts in tally.meters.items()},
        "results": tally.results,
        "awards_cents": tally.awards_cents,
        "awards": [{"round_id": round_id, **asdict(award)} for round_id, award in tally.awards],
    }
    path.write_text(json.dumps(summary, indent=2), encoding="utf-8")


def _summary_line(table_id: str, tally: Tally, offline_periods: int = 0) -> str:
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(tally.wagers_by_kind.items()))
    offline = f"; PROGRESSIVE OFFLINE {offline_periods} time(s)" if offline_periods else ""
    return (
        f"table {table_id}: {tally.rounds} rounds, {tally.wagers} wagers"
        + (f" ({kinds})" if kinds else "")
        + f", {tally.voids} voids, {len(tally.awards)} awards totalling "
        f"{format_cents(tally.awards_cents)}" + offline
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``table-agent`` console script (``table-agent console ...``: the
    dealer console, :mod:`table_agent.console.cli`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["console"]:
        return console_cli.main(argv[1:])
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO)
    utc_logs()
    problem = _check(args)
    tls_files, refused = controller_tls(args)
    problem = problem or refused
    if problem:
        print(f"table-agent: {problem}", file=sys.stderr)
        return 2
    try:
        scripted = load_script(args.script) if args.script else None
    except (OSError, ValueError, KeyError, InvalidCards) as error:
        print(
            f"table-agent: cannot read the scripted round {args.script}: {error}", file=sys.stderr
        )
        return 2
    try:
        layout, tally, offline_periods = asyncio.run(_run(args, tls_files, scripted))
    except TableSetupError as error:
        print(f"table-agent: cannot play table {args.table_id}: {error}", file=sys.stderr)
        return 2
    except MetricsPortError as error:
        print(f"table-agent: {error}", file=sys.stderr)
        return 1
    except ProgressiveOffline as error:
        print(f"table-agent: table {args.table_id}: {error}", file=sys.stderr)
        return 1
    except ControllerRefused as refusal:
        print(f"table-agent: the controller refused a report: {refusal}", file=sys.stderr)
        return 1
    except ControllerMisconfigured as error:
        print(f"table-agent: cannot reach the controller: {error}", file=sys.stderr)
        return 2
    except ControllerUnreachable as error:
        kept = "; what was not acknowledged stays in the outbox" if args.state_dir else ""
        print(f"table-agent: {error}{kept}", file=sys.stderr)
        return 1
    except ScriptError as error:
        print(f"table-agent: {error}", file=sys.stderr)
        return 2
    print(_summary_line(args.table_id, tally, offline_periods))
    if args.summary_json:
        _write_summary(args.summary_json, layout, tally)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
