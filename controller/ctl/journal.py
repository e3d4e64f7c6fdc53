"""``jackpotctl journal``: the journal exported to files, what is exported trimmed from Redis,
the checkpoint signing key handed over.

    jackpotctl journal export --redis redis://127.0.0.1:6379/0 --dir /var/lib/jackpot/export
    jackpotctl journal trim --redis redis://127.0.0.1:6379/0 --retention-hours 168 \\
        --signing-key checkpoint.key
    jackpotctl journal rotate-key --redis ... --signing-key old.key --new-signing-key new.key
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from controller.ctl import redis_access
from controller.journal import checkpoint_signature
from controller.journal import export as journal_export
from jackpot.errors import InvalidConfiguration

MAX_RETENTION_HOURS = 24 * 366 * 10


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``journal export|trim|rotate-key``."""
    journal = top.add_parser(
        "journal", help="export the journal to files, trim what is exported, rotate the key"
    ).add_subparsers(dest="action", required=True)
    export = journal.add_parser(
        "export",
        help="append every new journal entry to DIR/<link group>/journal.jsonl and write the "
        "state at that point to DIR/<link group>/snapshot.json",
    )
    redis_access.add_arguments(export)
    export.add_argument("--dir", type=Path, required=True, help="the export directory")
    export.add_argument("--link-group", default="", help="only this link group (default all)")
    export.set_defaults(handler=_journal_export)
    trim = journal.add_parser(
        "trim", help="delete exported entries older than the retention window (checkpointed)"
    )
    redis_access.add_arguments(trim)
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
    redis_access.add_arguments(rotate)
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


def _journal_export(args: argparse.Namespace) -> int:
    async def run() -> int:
        store = redis_access.open_store(args)
        try:
            for group in await redis_access.link_groups(store, args.link_group):
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
        store = redis_access.open_store(args)
        before_ms = int((time.time() - args.retention_hours * 3600) * 1000)
        try:
            for group in await redis_access.link_groups(store, args.link_group):
                trimmed = await journal_export.trim(
                    store, group, before_ms=before_ms, signing_key=signing_key
                )
                checkpoint = await store.journal.checkpoint(group)
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
        store = redis_access.open_store(args)
        try:
            for group in await redis_access.link_groups(store, args.link_group):
                seq = await journal_export.rotate_key(
                    store,
                    group,
                    signing_key=old,
                    new_signing_key=new,
                    actor=redis_access.actor("journal rotate-key"),
                )
                print(
                    f"journal: {group}: checkpoint key handed over to {new_id} (journal #{seq}); "
                    "trim with the new key from now on, audit with its public key"
                )
        finally:
            await store.close()
        return 0

    return asyncio.run(run())
