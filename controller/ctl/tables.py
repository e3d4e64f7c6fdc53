"""``jackpotctl tables``: register and list tables, move a table's rounds on (updates and
retirement: :mod:`controller.ctl.controls`).

    jackpotctl --controller ... tables register cs-1 --game caribbean-stud --paytable B \\
        --seats 7 --link-group casino-floor --meter cs-main
    jackpotctl --controller ... tables rebase-rounds cs-1 --to 5000 --reason "agent replaced"
"""

from __future__ import annotations

import argparse

from controller.ctl import controls
from controller.ctl.remote import call, show, table_line
from jackpot.games import DEFAULT_WAGER_CENTS
from jackpot.money import parse_dollars_cents
from jackpot.v1 import jackpot_pb2 as pb


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``tables register|list|rebase-rounds``, then the controls' ``update|retire``."""
    tables = top.add_parser("tables", help="tables").add_subparsers(dest="action", required=True)
    register = tables.add_parser("register")
    register.add_argument("table_id")
    register.add_argument("--game", required=True)
    register.add_argument("--paytable", required=True)
    register.add_argument("--seats", type=int, required=True)
    register.add_argument("--link-group", required=True)
    register.add_argument("--meter", required=True)
    register.add_argument("--wager-cents", type=int, default=DEFAULT_WAGER_CENTS)
    register.add_argument(
        "--validation-threshold",
        metavar="DOLLARS",
        help="a fixed award above this awaits a supervisor's validation (default: only "
        "percentage-of-meter awards do; 0 holds every fixed award)",
    )
    register.set_defaults(handler=_register_table)
    list_tables = tables.add_parser("list")
    list_tables.add_argument("--link-group", default="")
    list_tables.set_defaults(handler=_list_tables)
    rebase = tables.add_parser(
        "rebase-rounds", help="move a table's last round forward (journaled with why)"
    )
    rebase.add_argument("table_id")
    rebase.add_argument("--to", type=int, required=True, metavar="ROUND_ID")
    rebase.add_argument("--reason", required=True)
    rebase.set_defaults(handler=_rebase_rounds)

    controls.add_table_commands(tables)


def _register_table(args: argparse.Namespace) -> int:
    """A table that offers only the progressive wager, fixed at ``--wager-cents``, on the
    regulation paytable ``--paytable``, feeding ``--meter`` (the rules submission, or
    ``AdminService.RegisterTable``, registers other wagers)."""
    progressive = pb.TableWager(
        kind=pb.WAGER_KIND_PROGRESSIVE,
        paytable=args.paytable,
        min_cents=args.wager_cents,
        max_cents=args.wager_cents,
        meter_ids=[args.meter],
    )
    table = pb.Table(
        table_id=args.table_id,
        game=args.game,
        seats=args.seats,
        link_group_id=args.link_group,
        wagers=[progressive],
    )
    if args.validation_threshold is not None:
        table.validation_threshold_cents = parse_dollars_cents(args.validation_threshold)
    reply = call(args, "RegisterTable", pb.RegisterTableRequest(table=table))
    return show(args, reply, f"table registered: {table_line(reply)}")


def _list_tables(args: argparse.Namespace) -> int:
    reply = call(args, "ListTables", pb.ListTablesRequest(link_group_id=args.link_group))
    return show(args, reply, "\n".join(table_line(t) for t in reply.tables) or "no tables")


def _rebase_rounds(args: argparse.Namespace) -> int:
    reply = call(
        args,
        "RebaseTableRounds",
        pb.RebaseTableRoundsRequest(
            table_id=args.table_id, last_round_id=args.to, reason=args.reason
        ),
    )
    text = (
        f"table {reply.table_id}: last round {reply.previous_last_round_id} -> "
        f"{reply.last_round_id}; its next round id is {reply.last_round_id + 1}"
    )
    return show(args, reply, text)
