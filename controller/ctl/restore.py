"""``jackpotctl restore``: a link group Redis lost rebuilt from its export, and its tables
reconciled after it (docs/journal.md).

    jackpotctl restore --redis ... --from /var/lib/jackpot/export --link-group casino-floor \\
        --checkpoint-key checkpoint.pub \\
        --reason "Redis volume lost; restored from the 02:00 export" --outbox cs-1.outbox.jsonl
    jackpotctl restore collect --redis ... --link-group casino-floor --outbox cs-2.outbox.jsonl
    jackpotctl --controller ... restore status --link-group casino-floor
    jackpotctl --controller ... restore request --link-group casino-floor   # one operator
    jackpotctl --controller ... restore approve --link-group casino-floor   # another one
    jackpotctl --controller ... restore finish --link-group casino-floor
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from controller.actions import reconcile
from controller.ctl import redis_access
from controller.ctl.audit import expected_heads
from controller.ctl.remote import call, show
from controller.journal import checkpoint_signature
from controller.journal import export as journal_export
from controller.journal import restore as journal_restore
from jackpot.errors import InvalidConfiguration
from jackpot.v1 import jackpot_pb2 as pb


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``restore`` and its steps ``collect|status|request|approve|finish``."""
    restore = top.add_parser(
        "restore",
        help="rebuild a link group Redis lost from its export (journaled; RUNBOOK: Redis lost "
        "its data)",
    )
    redis_access.add_arguments(restore, required=False)
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
        redis_access.add_arguments(sub, required=name == "collect")
        sub.add_argument("--link-group", required=True)
        sub.set_defaults(handler=_reconcile, restore_action=name)


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
        ((group, head),) = expected_heads([args.expect_head]).items()
        if group not in ("", args.link_group):
            raise ValueError(f"--expect-head names link group {group}, not {args.link_group}")

    async def run() -> int:
        store = redis_access.open_store(args)
        try:
            snapshot = journal_export.group_directory(args.source, args.link_group)
            exported_seq = (  # the restore itself reports an unreadable export
                _exported_seq(snapshot / journal_export.SNAPSHOT_FILE) if outboxes else 0
            )
            above = max(args.seq_above, reconcile.seq_above(outboxes, exported_seq))
            seq = await journal_restore.restore(
                store,
                args.source,
                args.link_group,
                checkpoint_key=key,
                actor=redis_access.actor("restore"),
                reason=args.reason,
                expect_head=head,
                seq_above=above,
            )
            for outbox in outboxes:
                done = await reconcile.collect(
                    store, args.link_group, outbox, actor=redis_access.person()
                )
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
    reply = call(args, method, pb.RestoreStepsRequest(link_group_id=args.link_group))
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
    return show(args, reply, "\n".join(lines))


def _reconcile(args: argparse.Namespace) -> int:
    group, action = args.link_group, args.restore_action
    if action != "collect" and not args.redis:
        return _reconcile_remote(args)

    async def run() -> int:
        store = redis_access.open_store(args)
        try:
            if action == "collect":
                for outbox in reconcile.outboxes(args.outboxes):
                    done = await reconcile.collect(
                        store, group, outbox, actor=redis_access.person()
                    )
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
                count = await reconcile.request(store, group, actor=redis_access.person())
                print(f"restore request: {count} steps requested; a second operator approves")
            elif action == "approve":
                applied = await reconcile.approve(store, group, actor=redis_access.person())
                for step in applied:
                    print(f"  {reconcile.describe(step)}")
                print(f"restore approve: {len(applied)} steps applied")
            else:
                seq = await reconcile.finish(store, group, actor=redis_access.person())
                print(f"restore finish: link group {group} serves its tables again (#{seq})")
        finally:
            await store.close()
        return 0

    return asyncio.run(run())
