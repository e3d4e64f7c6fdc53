"""``table-agent``: one table's agent, here driving a simulated Caribbean Stud Poker table.

    table-agent --table-id cs-1 --controller 127.0.0.1:50051 --sim --rounds 100 --pace 0.2

A scripted round (chosen hands, for demonstrations) is given as a JSON file::

    {"label": "straight flush and royal flush",
     "hands": {"6": "9H TH JH QH KH", "2": "AS KS QS JS TS"}}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from controller.domain.cards import parse_cards
from controller.domain.money import format_cents
from controller.errors import InvalidCards
from table_agent.client import ControllerClient, ControllerRefused, ControllerUnreachable
from table_agent.outbox import Outbox
from table_agent.simulator import ScriptedRound, SimulationConfig, TableSimulator, Tally
from table_agent.table import TableAgent


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="table-agent", description=__doc__.split("\n")[0])
    parser.add_argument("--table-id", required=True, help="the registered table id")
    parser.add_argument("--controller", required=True, metavar="HOST:PORT")
    parser.add_argument("--sim", action="store_true", help="simulate the table's play")
    parser.add_argument("--rounds", type=int, default=100, help="rounds to play (default 100)")
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="pause between rounds (default 0)",
    )
    parser.add_argument("--seats", type=int, default=7, help="seats at the table (default 7)")
    parser.add_argument("--occupancy-percent", type=int, default=85)
    parser.add_argument(
        "--wager-percent",
        type=int,
        default=60,
        help="chance an occupied seat places the progressive wager",
    )
    parser.add_argument(
        "--wager-cents", type=int, default=100, help="the progressive wager (default 100 = $1)"
    )
    parser.add_argument(
        "--void-percent",
        type=int,
        default=0,
        help="chance a round is voided for a misdeal after the lockout",
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
        help="how long to retry a report before giving up (default 300)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only awards and errors")
    return parser


def _load_script(path: Path) -> tuple[str, ScriptedRound]:
    data = json.loads(path.read_text(encoding="utf-8"))
    hands = {int(seat): parse_cards(cards.split()) for seat, cards in data["hands"].items()}
    dealer = parse_cards(data.get("dealer", "").split())
    return str(data.get("label", path.name)), ScriptedRound(hands, dealer)


def _check(args: argparse.Namespace) -> str | None:
    if not args.sim:
        return "only the simulated table is available in this version: pass --sim"
    if args.rounds < 0 or args.pace < 0 or not 1 <= args.seats <= 7:
        return "--rounds and --pace must be >= 0 and --seats 1 to 7 (§ 639a.2(a))"
    percents = (args.occupancy_percent, args.wager_percent, args.void_percent)
    if any(not 0 <= p <= 100 for p in percents):
        return "percentages must be 0 to 100"
    return None


async def _run(args: argparse.Namespace, scripted: tuple[str, ScriptedRound] | None) -> Tally:
    client = ControllerClient(args.controller, retry_for_s=args.retry_for)
    outbox = Outbox(args.state_dir, args.table_id) if args.state_dir else None
    agent = TableAgent(args.table_id, client, outbox)
    config = SimulationConfig(
        seats=args.seats,
        occupancy_percent=args.occupancy_percent,
        wager_percent=args.wager_percent,
        wager_cents=args.wager_cents,
        void_percent=args.void_percent,
        pace_s=args.pace,
    )
    simulator = TableSimulator(agent, config)
    try:
        if await agent.recover():
            print(f"table {args.table_id}: delivered the reports a restart left pending")
        await simulator.run(args.rounds)
        if scripted is not None:
            label, round_ = scripted
            print(f"table {args.table_id}: ==== SCRIPTED ROUND: {label} ====")
            await simulator.play_round(round_)
    finally:
        await client.close()
    return simulator.tally


def _write_summary(path: Path, table_id: str, tally: Tally) -> None:
    summary: dict[str, Any] = {
        "table_id": table_id,
        "rounds": tally.rounds,
        "voids": tally.voids,
        "wagers": tally.wagers,
        "awards_cents": tally.awards_cents,
        "awards": [{"round_id": round_id, **asdict(award)} for round_id, award in tally.awards],
    }
    path.write_text(json.dumps(summary, indent=2), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``table-agent`` console script."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    problem = _check(args)
    if problem:
        print(f"table-agent: {problem}", file=sys.stderr)
        return 2
    try:
        scripted = _load_script(args.script) if args.script else None
    except (OSError, ValueError, KeyError, InvalidCards) as error:
        print(
            f"table-agent: cannot read the scripted round {args.script}: {error}", file=sys.stderr
        )
        return 2
    try:
        tally = asyncio.run(_run(args, scripted))
    except ControllerRefused as refusal:
        print(f"table-agent: the controller refused a report: {refusal}", file=sys.stderr)
        return 1
    except ControllerUnreachable as error:
        kept = "; the report stays in the outbox" if args.state_dir else ""
        print(f"table-agent: {error}{kept}", file=sys.stderr)
        return 1
    print(
        f"table {args.table_id}: {tally.rounds} rounds, {tally.wagers} progressive wagers, "
        f"{tally.voids} voids, {len(tally.awards)} awards totalling "
        f"{format_cents(tally.awards_cents)}"
    )
    if args.summary_json:
        _write_summary(args.summary_json, args.table_id, tally)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
