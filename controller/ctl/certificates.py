"""``jackpotctl certs``: the casino's CA and the certificates it issues.

jackpotctl certs init --dir certs --san controller.casino.internal
jackpotctl certs issue --dir certs --role operator --name alice
jackpotctl certs controller --dir certs --san controller.casino.internal --force
jackpotctl certs fingerprint certs/alice.crt
"""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.domain.identity import CERTIFICATE_ROLES
from controller.security import certs


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``certs init|issue|controller|fingerprint``."""
    cert_cmds = top.add_parser("certs", help="the casino's CA and its certificates")
    cert_actions = cert_cmds.add_subparsers(dest="action", required=True)
    init = cert_actions.add_parser(
        "init", help="create the CA (ca.crt, ca.key) and the controller's certificate"
    )
    init.add_argument("--dir", type=Path, required=True)
    init.add_argument(
        "--san",
        action="append",
        default=[],
        metavar="NAME",
        help="another host name or IP the controller is reached at (repeatable; localhost and "
        "127.0.0.1 are always in)",
    )
    init.add_argument("--days", type=int, default=certs.CA_DAYS, help="the CA's validity")
    init.set_defaults(handler=_certs_init)
    issue = cert_actions.add_parser(
        "issue", help="issue a client certificate jackpot://ROLE/NAME as NAME.crt and NAME.key"
    )
    issue.add_argument("--dir", type=Path, required=True, help="where the CA is (certs init)")
    issue.add_argument("--role", required=True, choices=CERTIFICATE_ROLES)
    issue.add_argument("--name", required=True, help="a table's name is its table id")
    issue.add_argument("--days", type=int, default=certs.CLIENT_DAYS)
    issue.add_argument(
        "--out", type=Path, metavar="DIR", help="write NAME.crt and NAME.key here (default --dir)"
    )
    issue.add_argument("--force", action="store_true", help="replace NAME.crt and NAME.key")
    issue.set_defaults(handler=_certs_issue)
    renew = cert_actions.add_parser(
        "controller", help="issue the controller's certificate again (renewal, new names)"
    )
    renew.add_argument("--dir", type=Path, required=True, help="where the CA is (certs init)")
    renew.add_argument("--san", action="append", default=[], metavar="NAME")
    renew.add_argument("--days", type=int, default=certs.CONTROLLER_DAYS)
    renew.add_argument("--out", type=Path, metavar="DIR", help="write here (default --dir)")
    renew.add_argument(
        "--force", action="store_true", help="replace controller.crt and controller.key"
    )
    renew.set_defaults(handler=_certs_controller)
    print_fingerprint = cert_actions.add_parser(
        "fingerprint", help="a certificate's SHA-256 fingerprint, for the deny list"
    )
    print_fingerprint.add_argument("file", type=Path)
    print_fingerprint.set_defaults(handler=_certs_fingerprint)


def _certs_init(args: argparse.Namespace) -> int:
    ca, controller = certs.init_authority(args.dir, sans=args.san, days=args.days)
    print(f"CA: {ca.cert} (key {ca.key}, keep it offline)")
    print(f"controller: {controller.cert} (key {controller.key})")
    print(
        f"next: jackpotctl certs issue --dir {args.dir} --role table --name <table id> "
        "(and operator, supervisor, cashier, auditor, display)"
    )
    return 0


def _certs_issue(args: argparse.Namespace) -> int:
    issued = certs.issue(
        args.dir, args.role, args.name, days=args.days, force=args.force, out=args.out
    )
    print(f"jackpot://{args.role}/{args.name}: {issued.cert} (key {issued.key})")
    print(f"sha256 {issued.fingerprint}")
    return 0


def _certs_controller(args: argparse.Namespace) -> int:
    issued = certs.issue_controller(
        args.dir, sans=args.san, days=args.days, force=args.force, out=args.out
    )
    print(f"controller: {issued.cert} (key {issued.key}); a running controller uses it at its")
    print("next handshake (its --tls-cert and --tls-key files are re-read when they change)")
    return 0


def _certs_fingerprint(args: argparse.Namespace) -> int:
    try:
        pem = args.file.read_bytes()
    except OSError as error:
        raise certs.CertificateError(f"cannot read {args.file}: {error.strerror}") from None
    print(f"{certs.fingerprint(pem)}  {args.file}")
    return 0
