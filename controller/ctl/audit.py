"""``jackpotctl audit verify``: the journal's hash chain checked and the meters recomputed from
it, in Redis or in an export.

    jackpotctl audit verify --redis redis://127.0.0.1:6379/0 --checkpoint-key checkpoint.pub
    jackpotctl audit verify --file /var/lib/jackpot/export --checkpoint-key checkpoint.pub
    jackpotctl audit verify --redis ... --checkpoint-key new.pub \\
        --expect-head-from /var/lib/jackpot/export
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from controller.ctl import redis_access
from controller.journal import checkpoint_signature
from controller.journal.audit import AuditReport, export_heads, verify, verify_export


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``audit verify``."""
    audit = top.add_parser("audit", help="check the meters against the journal")
    audit_cmds = audit.add_subparsers(dest="action", required=True)
    audit_verify = audit_cmds.add_parser(
        "verify",
        help="check the journal's hash chain and recompute meters from it, in Redis (--redis) "
        "or in an export (--file)",
    )
    redis_access.add_arguments(audit_verify, required=False)
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


def expected_heads(values: Sequence[str]) -> dict[str, tuple[int, str]]:
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
    heads = expected_heads(args.expect_head)
    if args.expect_head_from is None:
        return heads, ""
    exported = export_heads(args.expect_head_from)
    for group, head in exported.heads.items():
        heads.setdefault(group, head)
    return heads, exported.installation_id


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
        store = redis_access.open_store(args)
        try:
            if "" in heads:  # a head given without its link group: Redis's one group
                groups = await store.catalog.link_group_ids()
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
