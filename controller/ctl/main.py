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
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import grpc

from controller import certs, checkpoint_signature, journal_export, reconcile, settings
from controller.audit import AuditReport, export_heads, verify, verify_export
from controller.ctl import controls, days, irregularities, jackpots, odds, reports
from controller.ctl import corrections as round_corrections
from controller.ctl.hands import classify_stream
from controller.ctl.remote import call as _call
from controller.ctl.remote import show as _show
from controller.ctl.remote import table_line as _table_line
from controller.ctl.staged import add_commands as add_staged_commands
from controller.ctl.staged import meter_status, staged_table_changes
from controller.domain.games import get_game
from controller.domain.identity import CERTIFICATE_ROLES
from controller.rules_file import describe, load_submission
from controller.store import cluster
from controller.store.connection import check_url
from controller.store.redis_store import RedisStore
from jackpot import tls
from jackpot.errors import InvalidAmount, InvalidConfiguration, JackpotError
from jackpot.games import DEFAULT_WAGER_CENTS
from jackpot.money import format_cents, parse_dollars_cents, parse_percent_ppm
from jackpot.v1 import jackpot_pb2 as pb

Handler = Callable[[argparse.Namespace], int]


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

    audit = top.add_parser("audit", help="check the meters against the journal")
    audit_cmds = audit.add_subparsers(dest="action", required=True)
    audit_verify = audit_cmds.add_parser(
        "verify",
        help="check the journal's hash chain and recompute meters from it, in Redis (--redis) "
        "or in an export (--file)",
    )
    _redis_arguments(audit_verify, required=False)
    audit_verify.add_argument(
        "--file",
        type=Path,
        metavar="DIR",
        help="check the export in DIR (jackpotctl journal export) offline, instead of Redis",
    )
    audit_verify.add_argument(
        "--link-group", default="", help="with --file: only this link group (default all)"
    )
    audit_verify.add_argument(
        "--checkpoint-key",
        type=Path,
        action="append",
        metavar="FILE",
        help="a public key (PEM) you trust to sign trim checkpoints (repeat for several); "
        "needed once a journal is trimmed; key handovers are followed from it",
    )
    audit_verify.add_argument(
        "--expect-head",
        action="append",
        default=[],
        metavar="[GROUP:]SEQ:HASH",
        help="a journal head kept from earlier (an audit's or an export's): Redis must still "
        "hold that entry with that hash (GROUP may be left out when Redis has one link group)",
    )
    audit_verify.add_argument(
        "--expect-head-from",
        type=Path,
        metavar="DIR",
        help="the last export (jackpotctl journal export --dir DIR): every link group in it "
        "must be in Redis, of the same installation, holding its last exported entry unchanged",
    )
    audit_verify.set_defaults(handler=_audit_verify)

    journal = top.add_parser(
        "journal", help="export the journal to files, trim what is exported, rotate the key"
    ).add_subparsers(dest="action", required=True)
    export = journal.add_parser(
        "export",
        help="append every new journal entry to DIR/<link group>/journal.jsonl and write the "
        "state at that point to DIR/<link group>/snapshot.json",
    )
    _redis_arguments(export)
    export.add_argument("--dir", type=Path, required=True, help="the export directory")
    export.add_argument("--link-group", default="", help="only this link group (default all)")
    export.set_defaults(handler=_journal_export)
    trim = journal.add_parser(
        "trim", help="delete exported entries older than the retention window (checkpointed)"
    )
    _redis_arguments(trim)
    trim.add_argument(
        "--retention-hours",
        type=float,
        required=True,
        metavar="H",
        help=f"keep exported entries younger than this in Redis (0 to {MAX_RETENTION_HOURS})",
    )
    trim.add_argument(
        "--signing-key",
        type=Path,
        required=True,
        metavar="FILE",
        help="the Ed25519 private key (PEM) that signs the checkpoint a trim leaves",
    )
    trim.add_argument("--link-group", default="", help="only this link group (default all)")
    trim.set_defaults(handler=_journal_trim)
    rotate = journal.add_parser(
        "rotate-key",
        help="hand the checkpoint signing key over to a new key (the old key signs the "
        "handover, the new key re-signs the checkpoint; journaled)",
    )
    _redis_arguments(rotate)
    rotate.add_argument(
        "--signing-key",
        type=Path,
        required=True,
        metavar="FILE",
        help="the current Ed25519 private key (PEM); it signs nothing after this",
    )
    rotate.add_argument(
        "--new-signing-key",
        type=Path,
        required=True,
        metavar="FILE",
        help="the new Ed25519 private key (PEM), which signs every checkpoint from now on",
    )
    rotate.add_argument("--link-group", default="", help="only this link group (default all)")
    rotate.set_defaults(handler=_journal_rotate_key)

    restore = top.add_parser(
        "restore",
        help="rebuild a link group Redis lost from its export (journaled; RUNBOOK: Redis lost "
        "its data)",
    )
    _redis_arguments(restore, required=False)
    restore.add_argument("--from", dest="source", type=Path, metavar="DIR", help="the export")
    restore.add_argument("--link-group", default="")
    restore.add_argument("--reason", default="", help="why, for the journal")
    restore.add_argument(
        "--outbox",
        dest="outboxes",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a table's outbox (<table>.outbox.jsonl; repeat for every table): the journal "
        "numbers on above what it was answered, and its later answers are collected",
    )
    restore.add_argument(
        "--seq-above",
        type=int,
        default=0,
        metavar="SEQ",
        help="the highest journal sequence number the lost state may have issued, when a "
        "record shows more than the outboxes",
    )
    restore.add_argument(
        "--checkpoint-key",
        type=Path,
        action="append",
        metavar="FILE",
        help="a public key (PEM) you trust to sign trim checkpoints (repeat for several; key "
        "handovers are followed from it); required: the export is audited with it before "
        "anything is written",
    )
    restore.add_argument(
        "--expect-head",
        metavar="[GROUP:]SEQ:HASH",
        help="a journal head kept from earlier (a printed audit verify, another copy of the "
        "export): the export's entry #SEQ must carry HASH",
    )
    restore.set_defaults(handler=_restore)
    steps = restore.add_subparsers(
        dest="restore_action",
        title="reconciling the tables after a restore (docs/journal.md)",
        required=False,
    )
    collect = steps.add_parser("collect", help="keep what a table's outbox holds after the export")
    collect.add_argument(
        "--outbox", dest="outboxes", type=Path, action="append", required=True, metavar="FILE"
    )
    for name, what in (
        ("status", "list the missing steps and the tables not collected"),
        ("request", "request every missing step as a correction (a first operator)"),
        ("approve", "approve and apply every requested step (a second, different operator)"),
        ("finish", "serve the tables again once every step is applied"),
    ):
        steps.add_parser(name, help=what)
    for name, sub in steps.choices.items():
        # collect reads files here and writes Redis; the others go through the controller
        # (--controller, with this user's certificate) unless --redis is given
        _redis_arguments(sub, required=name == "collect")
        sub.add_argument("--link-group", required=True)
        sub.set_defaults(handler=_reconcile, restore_action=name)

    groups = top.add_parser("link-groups", help="link groups").add_subparsers(
        dest="action", required=True
    )
    create_group = groups.add_parser("create")
    create_group.add_argument("link_group_id")
    create_group.add_argument("--description", default="")
    create_group.set_defaults(handler=_create_link_group)
    groups.add_parser("list").set_defaults(handler=_list_link_groups)
    resume = groups.add_parser(
        "resume",
        help="serve a stopped link group again, in a new epoch, once what Redis lost is "
        "reconciled (journaled with your certificate and the reason)",
    )
    resume.add_argument("link_group_id")
    resume.add_argument("--reason", required=True)
    resume.set_defaults(handler=_resume_link_group)

    meters = top.add_parser("meters", help="progressive meters").add_subparsers(
        dest="action", required=True
    )
    create_meter = meters.add_parser("create")
    create_meter.add_argument("meter_id")
    create_meter.add_argument("--link-group", required=True)
    create_meter.add_argument("--game", required=True)
    create_meter.add_argument(
        "--reset", required=True, metavar="DOLLARS", help="initial and reset amount"
    )
    create_meter.add_argument(
        "--rate",
        required=True,
        metavar="PERCENT",
        help="rate of progression, percent of each wager",
    )
    create_meter.add_argument("--reserve-rate", default="0", metavar="PERCENT")
    create_meter.add_argument("--ceiling", default="0", metavar="DOLLARS", help="0: none")
    create_meter.add_argument(
        "--must-hit-by",
        default="",
        metavar="DOLLARS",
        help="a must-hit-by mystery meter hitting at a secret amount up to this (docs/mystery.md)",
    )
    create_meter.set_defaults(handler=_create_meter)
    list_meters = meters.add_parser("list")
    list_meters.add_argument("--link-group", default="")
    list_meters.set_defaults(handler=_list_meters)

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

    rules = top.add_parser("rules", help="Rules Submissions").add_subparsers(
        dest="action", required=True
    )
    rules_check = rules.add_parser("check", help="validate a Rules Submission file")
    rules_check.add_argument("file", type=Path)
    rules_check.set_defaults(handler=_rules_check)

    hands = top.add_parser("hands", help="classify hands").add_subparsers(
        dest="action", required=True
    )
    classify = hands.add_parser("classify", help="one hand a line on stdin -> JSON lines")
    classify.add_argument("--game", required=True)
    classify.add_argument(
        "--rules", type=Path, help="a Rules Submission: also show its paytables' awards"
    )
    classify.set_defaults(handler=_classify)

    odds = top.add_parser("odds", help="exact odds and return of a paytable")
    odds.add_argument("--game", required=True)
    odds.add_argument(
        "--wager", required=True, help="progressive, bonus, five_card_bonus, insurance, ..."
    )
    odds.add_argument("--paytable", required=True)
    odds.add_argument("--meter", required=True, metavar="DOLLARS")
    odds.add_argument("--wager-cents", type=int, default=DEFAULT_WAGER_CENTS)
    odds.add_argument(
        "--rate", metavar="PERCENT", help="rate of progression, to show its contribution per wager"
    )
    odds.add_argument(
        "--rules",
        type=Path,
        metavar="FILE",
        help="take the paytable from this Rules Submission (for wagers whose "
        "paytables the regulation does not print)",
    )
    odds.add_argument("--format", choices=["table", "json"], default="table")
    odds.set_defaults(handler=_odds)

    jackpots.add_commands(top)
    irregularities.add_commands(top)
    reports.add_commands(top, _redis_arguments, _store)
    days.add_commands(top, _redis_arguments, _store, _actor)
    controls.add_commands(groups, meters, tables)
    round_corrections.add_commands(top)
    add_staged_commands(meters)
    return parser


# ----------------------------------------------------------------------------- certificates


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


# ----------------------------------------------------------------------------- audit


MAX_RETENTION_HOURS = 24 * 366 * 10


def _redis_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
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


def _store(args: argparse.Namespace) -> RedisStore:
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


def _actor(command: str) -> str:
    """Who runs a command that works on Redis directly (no certificate): the OS user."""
    return f"jackpotctl {command} ({getpass.getuser()}@{socket.gethostname()})"


async def _groups(store: RedisStore, only: str) -> list[str]:
    if only:
        await store.get_link_group(only)  # NotFound names it
        return [only]
    return [group.link_group_id for group in await store.list_link_groups()]


def _journal_export(args: argparse.Namespace) -> int:
    async def run() -> int:
        store = _store(args)
        try:
            for group in await _groups(store, args.link_group):
                done = await journal_export.export(store, args.dir, group)
                entries = (
                    f"entries #{done.first_seq}..#{done.last_seq} ({done.count})"
                    if done.count
                    else "no new entries"
                )
                print(
                    f"journal: {group}: {entries}, snapshot at #{done.last_seq} in {done.directory}"
                )
        finally:
            await store.close()
        return 0

    return asyncio.run(run())


def _journal_trim(args: argparse.Namespace) -> int:
    if not 0 <= args.retention_hours <= MAX_RETENTION_HOURS:
        raise InvalidConfiguration(
            f"--retention-hours must be 0 to {MAX_RETENTION_HOURS}, not {args.retention_hours}"
        )

    signing_key = checkpoint_signature.load_signing_key(args.signing_key)

    async def run() -> int:
        store = _store(args)
        before_ms = int((time.time() - args.retention_hours * 3600) * 1000)
        try:
            for group in await _groups(store, args.link_group):
                trimmed = await journal_export.trim(
                    store, group, before_ms=before_ms, signing_key=signing_key
                )
                checkpoint = await store.checkpoint(group)
                print(
                    f"journal: {group}: trimmed {trimmed} entries; Redis keeps the journal after "
                    f"#{checkpoint.seq} (exported to #{checkpoint.exported_seq})"
                )
        finally:
            await store.close()
        return 0

    return asyncio.run(run())


def _journal_rotate_key(args: argparse.Namespace) -> int:
    old = checkpoint_signature.load_signing_key(args.signing_key)
    new = checkpoint_signature.load_signing_key(args.new_signing_key)
    new_id = checkpoint_signature.key_id(new.public_key())

    async def run() -> int:
        store = _store(args)
        try:
            for group in await _groups(store, args.link_group):
                seq = await journal_export.rotate_key(
                    store,
                    group,
                    signing_key=old,
                    new_signing_key=new,
                    actor=_actor("journal rotate-key"),
                )
                print(
                    f"journal: {group}: checkpoint key handed over to {new_id} (journal #{seq}); "
                    "trim with the new key from now on, audit with its public key"
                )
        finally:
            await store.close()
        return 0

    return asyncio.run(run())


def _expected_heads(values: Sequence[str]) -> dict[str, tuple[int, str]]:
    """``--expect-head`` values by link group ("" for one given without its group)."""
    heads: dict[str, tuple[int, str]] = {}
    for value in values:
        group, seq, hash_ = ("", *value.split(":"))[-3:]
        if not seq.isdigit() or len(hash_) != 64 or value.count(":") > 2:
            raise ValueError(f"--expect-head takes [GROUP:]SEQ:HASH (64 hex digits), not {value!r}")
        if group in heads:
            raise ValueError(f"--expect-head names link group {group or '(one)'} twice")
        heads[group] = (int(seq), hash_.lower())
    return heads


def _audit_expectations(args: argparse.Namespace) -> tuple[dict[str, tuple[int, str]], str]:
    """The heads Redis must hold (``--expect-head``, then the last export's) and the
    installation id it must be (the export's, "" for any)."""
    heads = _expected_heads(args.expect_head)
    if args.expect_head_from is None:
        return heads, ""
    exported = export_heads(args.expect_head_from)
    for group, head in exported.heads.items():
        heads.setdefault(group, head)
    return heads, exported.installation_id


def _restore(args: argparse.Namespace) -> int:
    missing = [
        name
        for name, value in (
            ("--redis", args.redis),
            ("--from", args.source),
            ("--link-group", args.link_group),
            ("--reason", args.reason),
        )
        if not value
    ]
    if missing:
        raise ValueError(f"jackpotctl restore needs {', '.join(missing)}")
    outboxes = reconcile.outboxes(args.outboxes)
    if not args.checkpoint_key:
        raise InvalidConfiguration(
            "restore needs --checkpoint-key FILE, the public key of the trims' checkpoints "
            "(openssl pkey -in checkpoint.key -pubout): the export is audited with it before "
            "anything is written"
        )
    key = [checkpoint_signature.load_public_key(path) for path in args.checkpoint_key]
    head = None
    if args.expect_head:
        ((group, head),) = _expected_heads([args.expect_head]).items()
        if group not in ("", args.link_group):
            raise ValueError(f"--expect-head names link group {group}, not {args.link_group}")

    async def run() -> int:
        store = _store(args)
        try:
            snapshot = journal_export.group_directory(args.source, args.link_group)
            exported_seq = (  # the restore itself reports an unreadable export
                _exported_seq(snapshot / journal_export.SNAPSHOT_FILE) if outboxes else 0
            )
            above = max(args.seq_above, reconcile.seq_above(outboxes, exported_seq))
            seq = await journal_export.restore(
                store,
                args.source,
                args.link_group,
                checkpoint_key=key,
                actor=_actor("restore"),
                reason=args.reason,
                expect_head=head,
                seq_above=above,
            )
            for outbox in outboxes:
                done = await reconcile.collect(store, args.link_group, outbox, actor=_person())
                print(f"restore: table {done.table_id}: {done.missing} missing steps collected")
        finally:
            await store.close()
        print(
            f"restore: link group {args.link_group} restored from {args.source} (journal "
            f"#{seq})"
            + (
                f", numbered on after #{above}; its tables are reconciled with jackpotctl "
                f"restore status|request|approve|finish --link-group {args.link_group}"
                if seq > exported_seq + 1
                else "; tables acknowledged after the export will stop it: restore again "
                "with --outbox for every table"
            )
        )
        return 0

    return asyncio.run(run())


def _exported_seq(path: Path) -> int:
    """The journal position an export's snapshot holds; 0 when it cannot be read (the
    restore then says what is wrong with the export, before it writes anything)."""
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["seq"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _person() -> str:
    """Who runs a reconciliation command on Redis directly: the OS user on this host (the
    same person whatever the command, so one person cannot both request and approve)."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


_RESTORE_RPCS = {
    "status": "ListRestoreSteps",
    "request": "RequestRestoreCorrections",
    "approve": "ApproveRestoreCorrections",
    "finish": "FinishRestore",
}


def _reconcile_remote(args: argparse.Namespace) -> int:
    """``restore status|request|approve|finish`` through the controller: the caller is the
    certificate's identity (two operators: two certificates)."""
    method = _RESTORE_RPCS[args.restore_action]
    reply = _call(args, method, pb.RestoreStepsRequest(link_group_id=args.link_group))
    waiting = sum(1 for step in reply.steps if step.status != "applied")
    lines = [
        f"restore {args.restore_action}: link group {reply.link_group_id} restored from "
        f"{reply.restored_from}, numbered on after #{reply.numbered_after}; {waiting} of "
        f"{len(reply.steps)} steps to apply"
        + (f"; serves again (#{reply.finished_seq})" if reply.finished_seq else "")
    ]
    lines += [
        f"  table {table_id}: outbox NOT collected (jackpotctl restore collect)"
        for table_id in reply.uncollected_tables
    ]
    lines += [f"  {step.description}" for step in reply.steps]
    if reply.stopped:
        lines.append(f"  stopped: {reply.stopped}")
    return _show(args, reply, "\n".join(lines))


def _reconcile(args: argparse.Namespace) -> int:
    group, action = args.link_group, args.restore_action
    if action != "collect" and not args.redis:
        return _reconcile_remote(args)

    async def run() -> int:
        store = _store(args)
        try:
            if action == "collect":
                for outbox in reconcile.outboxes(args.outboxes):
                    done = await reconcile.collect(store, group, outbox, actor=_person())
                    print(
                        f"restore collect: table {done.table_id}: {done.missing} missing steps "
                        f"kept, {done.present} already in the restored state, "
                        f"{done.collected_before} collected before"
                    )
            elif action == "status":
                status = await reconcile.status(store, group)
                print(
                    f"restore status: link group {group} restored from {status.restored_from}, "
                    f"numbered on after #{status.numbered_after}; "
                    f"{len(status.waiting)} of {len(status.steps)} steps to apply"
                )
                for table_id in status.uncollected:
                    print(f"  table {table_id}: outbox NOT collected (jackpotctl restore collect)")
                for step in status.steps:
                    print(f"  {reconcile.describe(step)}")
                if status.stopped:
                    print(f"  stopped: {status.stopped}")
            elif action == "request":
                count = await reconcile.request(store, group, actor=_person())
                print(f"restore request: {count} steps requested; a second operator approves")
            elif action == "approve":
                applied = await reconcile.approve(store, group, actor=_person())
                for step in applied:
                    print(f"  {reconcile.describe(step)}")
                print(f"restore approve: {len(applied)} steps applied")
            else:
                seq = await reconcile.finish(store, group, actor=_person())
                print(f"restore finish: link group {group} serves its tables again (#{seq})")
        finally:
            await store.close()
        return 0

    return asyncio.run(run())


def _audit_verify(args: argparse.Namespace) -> int:
    if (args.redis is None) == (args.file is None):
        raise ValueError(
            "audit verify checks Redis (--redis URL or --redis-cluster NODES) or an export "
            "(--file DIR)"
        )
    if args.link_group and args.file is None:
        raise ValueError("--link-group is for --file (the audit of Redis checks every group)")
    key = [checkpoint_signature.load_public_key(path) for path in args.checkpoint_key or ()]
    if args.file is not None and (args.expect_head or args.expect_head_from):
        raise ValueError("--expect-head and --expect-head-from are for an audit of Redis")
    heads, installation_id = _audit_expectations(args)

    async def run() -> AuditReport:
        store = _store(args)
        try:
            if "" in heads:  # a head given without its link group: Redis's one group
                groups = await store.link_group_ids()
                if len(groups) != 1:
                    raise ValueError(
                        f"Redis has {len(groups)} link groups: give --expect-head GROUP:SEQ:HASH"
                    )
                heads[groups[0]] = heads.pop("")
            return await verify(store, key, expect_heads=heads, installation_id=installation_id)
        finally:
            await store.close()

    if args.file is not None:
        report = verify_export(args.file, key, args.link_group)
    else:
        report = asyncio.run(run())
    return _print_report(report)


def _print_report(report: AuditReport) -> int:
    """Print what the audit found; the exit status (1: a difference)."""
    for difference in report.differences:
        print(f"audit: DIFFERENCE {difference}")
    if report.ok:
        print(
            f"audit: OK ({report.link_groups} link groups, {report.meters} meters, "
            f"{report.entries} journal entries)"
        )
        for group, (seq, head) in sorted(report.heads.items()):
            print(f"audit: {group}: hash chain verified to #{seq} (sha256 {head})")
        for shard, groups in sorted(report.shards.items()):
            if shard:  # a Redis Cluster: where each link group is
                print(f"audit: shard {shard}: {len(groups)} link groups {', '.join(groups)}")
        return 0
    print(f"audit: FAILED with {len(report.differences)} differences", file=sys.stderr)
    return 1


# ----------------------------------------------------------------------------- admin


def _create_link_group(args: argparse.Namespace) -> int:
    group = _call(
        args,
        "CreateLinkGroup",
        pb.CreateLinkGroupRequest(link_group_id=args.link_group_id, description=args.description),
    )
    return _show(args, group, f"link group {group.link_group_id} ready")


def _list_link_groups(args: argparse.Namespace) -> int:
    reply = _call(args, "ListLinkGroups", pb.ListLinkGroupsRequest())
    lines = [
        f"{g.link_group_id}: meters {', '.join(g.meter_ids) or '-'}; "
        f"tables {', '.join(g.table_ids) or '-'}; journal #{g.journal.seq}"
        + (f"; STOPPED: {g.stopped}" if g.stopped else "")
        for g in reply.link_groups
    ]
    return _show(args, reply, "\n".join(lines) or "no link groups")


def _resume_link_group(args: argparse.Namespace) -> int:
    group = _call(args, "GetLinkGroup", pb.GetLinkGroupRequest(link_group_id=args.link_group_id))
    if not group.stopped:
        print(f"jackpotctl: link group {group.link_group_id} is not stopped", file=sys.stderr)
        return 1
    print(f"link group {group.link_group_id} is stopped: {group.stopped}")
    reply = _call(
        args,
        "ResumeLinkGroup",
        pb.ResumeLinkGroupRequest(
            link_group_id=args.link_group_id, reason=args.reason, epoch=group.journal.epoch
        ),
    )
    return _show(
        args,
        reply,
        f"link group {reply.link_group_id} serves again in epoch {reply.journal.epoch} "
        f"(journal #{reply.journal.seq})",
    )


def _meter_line(meter: pb.Meter) -> str:
    mystery = (
        f", must hit by {format_cents(meter.must_hit_by_cents)} (cycle {meter.mystery_cycle}, "
        f"commitment {meter.mystery_commitment})"
        if meter.kind == pb.METER_KIND_MUST_HIT_BY
        else ""
    )
    return (
        f"{meter.meter_id} ({meter.link_group_id}, {meter.game}{mystery}): "
        f"{format_cents(meter.amount_cents)}, reserve {format_cents(meter.reserve_cents)}, "
        f"reset {format_cents(meter.reset_cents)}, rate {meter.rate_of_progression_percent}%"
        f", reserve rate {meter.reserve_rate_percent}%, {meter.wagers_total} wagers, "
        f"{meter.hits_total} hits, {meter.pending_jackpots} pending"
    ) + meter_status(meter)


def _create_meter(args: argparse.Namespace) -> int:
    request = pb.CreateMeterRequest(
        meter_id=args.meter_id,
        link_group_id=args.link_group,
        game=args.game,
        reset_cents=parse_dollars_cents(args.reset),
        rate_of_progression_percent=args.rate,
        reserve_rate_percent=args.reserve_rate,
        ceiling_cents=parse_dollars_cents(args.ceiling),
    )
    if args.must_hit_by:
        request.kind = pb.METER_KIND_MUST_HIT_BY
        request.must_hit_by_cents = parse_dollars_cents(args.must_hit_by)
    meter = _call(args, "CreateMeter", request)
    return _show(args, meter, _meter_line(meter))


def _list_meters(args: argparse.Namespace) -> int:
    reply = _call(args, "ListMeters", pb.ListMetersRequest(link_group_id=args.link_group))
    tables = _call(args, "ListTables", pb.ListTablesRequest(link_group_id=args.link_group))
    waiting = staged_table_changes(tables.tables)  # what each meter's hit changes at a table
    lines = [_meter_line(m) + waiting.get(m.meter_id, "") for m in reply.meters]
    return _show(args, reply, "\n".join(lines) or "no meters")


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
    reply = _call(args, "RegisterTable", pb.RegisterTableRequest(table=table))
    return _show(args, reply, f"table registered: {_table_line(reply)}")


def _list_tables(args: argparse.Namespace) -> int:
    reply = _call(args, "ListTables", pb.ListTablesRequest(link_group_id=args.link_group))
    return _show(args, reply, "\n".join(_table_line(t) for t in reply.tables) or "no tables")


def _rebase_rounds(args: argparse.Namespace) -> int:
    reply = _call(
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
    return _show(args, reply, text)


# ----------------------------------------------------------------------------- offline


def _rules_check(args: argparse.Namespace) -> int:
    submission = load_submission(args.file)
    for line in describe(submission):
        print(line)
    print(f"rules: OK ({args.file})")
    return 0


def _classify(args: argparse.Namespace) -> int:
    submitted = load_submission(args.rules).games.get(args.game, {}) if args.rules else {}
    paytables = {name: offer.paytable for name, offer in submitted.items()}
    bad = classify_stream(get_game(args.game), sys.stdin, sys.stdout, paytables)
    if bad:
        print(f"jackpotctl: {bad} lines could not be classified", file=sys.stderr)
    return 1 if bad else 0


def _odds(args: argparse.Namespace) -> int:
    game = get_game(args.game)
    if args.wager_cents <= 0:
        raise InvalidAmount(f"--wager-cents must be positive, got {args.wager_cents}")
    rate_ppm = parse_percent_ppm(args.rate, "rate of progression") if args.rate else None
    submitted = load_submission(args.rules) if args.rules else None
    result = odds.compute(
        game,
        args.wager,
        args.paytable,
        parse_dollars_cents(args.meter),
        args.wager_cents,
        submitted,
    )
    title = f"{game.facts.title}, {game.wager(args.wager).facts.title}"
    print(odds.render(result, title, rate_ppm, args.format))
    return 0


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
