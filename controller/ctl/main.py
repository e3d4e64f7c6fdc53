"""``jackpotctl``: the operator's command line.

    jackpotctl certs init --dir certs --san controller.casino.internal
    jackpotctl certs issue --dir certs --role operator --name alice
    jackpotctl certs issue --dir certs --role table --name cs-1
    export JACKPOT_CA=certs/ca.crt JACKPOT_CERT=certs/alice.crt JACKPOT_KEY=certs/alice.key
    jackpotctl audit verify --redis redis://127.0.0.1:6379/0 --checkpoint-key checkpoint.pub
    jackpotctl audit verify --file /var/lib/jackpot/export --checkpoint-key checkpoint.pub
    jackpotctl journal export --redis redis://127.0.0.1:6379/0 --dir /var/lib/jackpot/export
    jackpotctl journal trim --redis redis://127.0.0.1:6379/0 --retention-hours 168 \\
        --signing-key checkpoint.key
    jackpotctl journal rotate-key --redis ... --signing-key old.key --new-signing-key new.key
    jackpotctl audit verify --redis ... --checkpoint-key new.pub \\
        --expect-head-from /var/lib/jackpot/export
    jackpotctl restore --redis ... --from /var/lib/jackpot/export --link-group casino-floor \\
        --checkpoint-key checkpoint.pub \\
        --reason "Redis volume lost; restored from the 02:00 export" --outbox cs-1.outbox.jsonl
    jackpotctl restore collect --redis ... --link-group casino-floor --outbox cs-2.outbox.jsonl
    jackpotctl --controller ... restore status --link-group casino-floor
    jackpotctl --controller ... restore request --link-group casino-floor   # one operator
    jackpotctl --controller ... restore approve --link-group casino-floor   # another one
    jackpotctl --controller ... restore finish --link-group casino-floor
    jackpotctl --controller 127.0.0.1:50051 link-groups create casino-floor
    jackpotctl --controller ... meters create cs-main --link-group casino-floor \\
        --game caribbean-stud --reset 10000 --rate 15 --reserve-rate 5
    jackpotctl --controller ... tables register cs-1 --game caribbean-stud --paytable B \\
        --seats 7 --link-group casino-floor --meter cs-main
    jackpotctl --controller ... jackpots list --status pending --format table
    jackpotctl --controller ... jackpots approve casino-floor:42 --note "verified"
    jackpotctl --controller ... jackpots paid casino-floor:42 --note "cage receipt 1187"
    jackpotctl --controller ... jackpots show casino-floor:42
    jackpotctl --controller ... tables rebase-rounds cs-1 --to 5000 --reason "agent replaced"
    jackpotctl --controller ... link-groups resume casino-floor --reason "lost rounds paid by hand"
    echo "AS KS QS JS TS" | jackpotctl hands classify --game caribbean-stud
    jackpotctl odds --game caribbean-stud --wager progressive --paytable B --meter 25000
    jackpotctl rules check deploy/rules/caribbean-stud.toml

Calls to the controller use mutual TLS: ``--ca``, ``--cert`` and ``--key`` (or
``JACKPOT_CA``, ``JACKPOT_CERT``, ``JACKPOT_KEY``) name the casino's CA and this user's
certificate, whose role (operator, supervisor, cashier, auditor) decides what may be done.
Amounts are given in dollars ("10000", "12.50") and printed in dollars; rates in percent.
Every refusal prints the controller's reason and exits 1; a usage error exits 2.

Each command group is a module of :mod:`controller.ctl` whose ``add_commands`` registers its
parser and handlers (:data:`COMMAND_GROUPS`); this module builds the root parser (the global
options), dispatches, and maps errors to exit statuses.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

import grpc

from controller.ctl import (
    audit,
    certificates,
    corrections,
    days,
    hands,
    irregularities,
    jackpots,
    journal,
    link_groups,
    meters,
    odds,
    reports,
    restore,
    rules,
    tables,
)
from controller.runtime import settings
from controller.security import certs
from jackpot import tls
from jackpot.errors import JackpotError

Handler = Callable[[argparse.Namespace], int]


class CommandGroup(Protocol):
    """A module of commands: ``add_commands`` adds its parser (with a ``handler`` default) to
    ``jackpotctl``'s."""

    def add_commands(self, top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None: ...


COMMAND_GROUPS: tuple[CommandGroup, ...] = (
    certificates,
    audit,
    journal,
    restore,
    link_groups,
    meters,
    tables,
    rules,
    hands,
    odds,
    jackpots,
    irregularities,
    reports,
    days,
    corrections,
)
"""Every command group, in the order ``jackpotctl --help`` lists them; each module's
``add_commands`` registers its parser and handlers."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jackpotctl", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--controller",
        default="127.0.0.1:50051",
        metavar="HOST:PORT",
        help="controller address for admin commands, or several IP:PORT separated by commas "
        "(default %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    tls.add_arguments(parser)
    top = parser.add_subparsers(dest="area", required=True)
    for group in COMMAND_GROUPS:
        group.add_commands(top)
    return parser


def _unreachable(args: argparse.Namespace) -> str | None:
    """Why ``--controller`` did not answer, in one sentence (:func:`jackpot.tls.diagnose`);
    None when nothing is found wrong (gRPC's own words are shown then)."""
    try:
        files = tls.from_arguments(args)
    except tls.TLSConfigError as error:
        return str(error)
    found = tls.diagnose(args.controller, files)
    return found.sentence if found else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``jackpotctl`` console script."""
    args = _parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except grpc.RpcError as error:
        code = error.code() if isinstance(error, grpc.Call) else None
        details = error.details() if isinstance(error, grpc.Call) else str(error)
        why = _unreachable(args) if code is grpc.StatusCode.UNAVAILABLE else None
        said = why or f"{code.name if code else 'error'}: {details}"
        print(f"jackpotctl: {said}", file=sys.stderr)
        return 1
    except (
        JackpotError,
        certs.CertificateError,
        settings.SettingsError,
        tls.TLSConfigError,
    ) as error:
        print(f"jackpotctl: {error}", file=sys.stderr)
        return 1
    except (ValueError, OverflowError) as error:  # a number the request cannot carry
        print(f"jackpotctl: {str(error)[:200]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
