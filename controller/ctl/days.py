"""``jackpotctl day close|verify``: the gaming day's statement (docs/accounting.md).

    jackpotctl day close 2026-03-08 --redis URL --rules rules.toml --signing-key checkpoint.key
    jackpotctl day close 2026-03-08 --file /var/lib/jackpot/export --rules rules.toml \\
        --format csv --output 2026-03-08.csv
    jackpotctl day verify 2026-03-08 --redis URL --checkpoint-key checkpoint.pub

``close`` with ``--redis`` computes each link group's statement from the journal, refuses one
that does not balance (naming the meter, the entry and the difference), signs it with the
checkpoint key and journals it once (:mod:`controller.actions.day_close`). With ``--file DIR`` it
recomputes the statement from an export alone, journals nothing and says whether the export's
journal closed the day with the same statement. ``verify`` checks a journaled statement's
digest and signature and recomputes it from the journal (Redis or ``--file``). ``--format
table`` prints dollars for people; ``csv`` (one row per meter and per table, then the total)
and ``json`` (the statement documents as journaled) print the integers; ``--output FILE``
writes there instead of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from controller.actions import day_close
from controller.ctl import gaming_days, redis_access
from controller.domain.day_close import money
from controller.journal import checkpoint_signature
from controller.journal import export as journal_export
from controller.store.redis_store import RedisStore
from jackpot.errors import InvalidArgument, NotFound
from jackpot.money import format_cents
from jackpot.times import format_time

FORMATS = ("table", "csv", "json")


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``day close`` and ``day verify`` to ``jackpotctl``."""
    day = top.add_parser("day", help="the gaming day's statement").add_subparsers(
        dest="action", required=True
    )
    close = day.add_parser("close", help="compute, sign and journal a gaming day's statement")
    verify = day.add_parser("verify", help="check a journaled statement against the journal")
    for parser in (close, verify):
        parser.add_argument("date", metavar="YYYY-MM-DD")
        redis_access.add_arguments(parser, required=False)
        parser.add_argument("--file", type=Path, metavar="DIR", help="an export directory")
        parser.add_argument("--link-group", default="", help="one link group (default: all)")
    gaming_days.add_arguments(close)
    close.add_argument(
        "--signing-key", type=Path, metavar="FILE", help="the checkpoint's Ed25519 private key"
    )
    close.add_argument("--format", choices=FORMATS, default="table")
    close.add_argument("--output", type=Path, metavar="FILE", help="write there, not stdout")
    close.set_defaults(
        handler=lambda args: _close(args, redis_access.open_store, redis_access.actor)
    )
    verify.add_argument(
        "--checkpoint-key",
        type=Path,
        action="append",
        metavar="FILE",
        help="a trusted checkpoint public key (PEM; repeat for a rotated key)",
    )
    verify.set_defaults(handler=lambda args: _verify(args, redis_access.open_store))


def _source(args: argparse.Namespace) -> None:
    if (args.redis is None) == (args.file is None):
        raise InvalidArgument("read Redis (--redis URL) or an export (--file DIR), one of them")


def _export_groups(directory: Path, only: str) -> list[str]:
    if only:
        return [only]
    groups = sorted(p.parent.name for p in directory.glob(f"*/{journal_export.JOURNAL_FILE}"))
    if not groups:
        raise NotFound(f"{directory} holds no export (no <link group>/journal.jsonl)")
    return groups


async def _redis_groups(store: RedisStore, only: str) -> list[str]:
    if only:
        await store.catalog.get_link_group(only)  # NotFound names it
        return [only]
    return sorted(await store.catalog.every_link_group_id())


def _close(
    args: argparse.Namespace,
    open_store: Callable[[argparse.Namespace], RedisStore],
    actor: Callable[[str], str],
) -> int:
    _source(args)
    day = gaming_days.parse_day(args.date)
    definition = gaming_days.definition(args)
    results: list[day_close.Closed] = []
    if args.file is not None:
        for group in _export_groups(args.file, args.link_group):
            results.append(day_close.from_export(args.file, group, definition, day))
    else:
        if args.signing_key is None:
            raise InvalidArgument("a close signs its statement: give --signing-key FILE")
        key = checkpoint_signature.load_signing_key(args.signing_key)

        async def run() -> None:
            store = open_store(args)
            try:
                for group in await _redis_groups(store, args.link_group):
                    closed = await day_close.close(
                        store, group, definition, day, key, actor("day close")
                    )
                    results.append(closed)
            finally:
                await store.close()

        asyncio.run(run())
    start, end = definition.window_ms(day)
    gaming_days.say(
        f"gaming day {day} ({definition.hours(day)} hours) from {definition.start_hour:02d}:00 "
        f"in {definition.zone}: {format_time(start)} to {format_time(end)}"
    )
    for closed in results:
        group = closed.statement.link_group_id
        if args.file is None:
            said = f"journaled as #{closed.seq}"
        elif closed.seq:
            said = f"the export's journal closed it at #{closed.seq}"
        else:
            said = "recomputed from the export; not closed in its journal"
        gaming_days.say(f"{group}: statement {closed.digest[:16]}... {said}")
    _write(args, render(args.format, [closed.document for closed in results]))
    return 0


def _write(args: argparse.Namespace, text: str) -> None:
    if args.output is None:
        sys.stdout.write(text)
        return
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InvalidArgument(f"cannot write {args.output}: {error.strerror}") from None


def render(fmt: str, documents: Sequence[dict[str, Any]]) -> str:
    """The statements as JSON, CSV or a table for people."""
    if fmt == "json":
        return json.dumps(list(documents), indent=2, sort_keys=True) + "\n"
    rows = csv_rows(documents)
    if fmt == "csv":
        out = io.StringIO()
        columns: list[str] = []
        for row in rows:
            columns += [name for name in row if name not in columns]
        writer = csv.DictWriter(out, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()
    return "\n".join(_table(documents)) + "\n"


def csv_rows(documents: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per meter and per table of every statement, then each link group's total."""
    rows: list[dict[str, Any]] = []
    for doc in documents:
        common = {
            "gaming_day": doc["gaming_day"],
            "zone": doc["zone"],
            "link_group": doc["link_group"],
        }
        for meter in doc["meters"]:
            other = dict(meter["adjustments"])
            row = {k: v for k, v in meter.items() if k != "adjustments"}
            row |= {
                f"adjustment:{kind}_microcents": amount for kind, amount in sorted(other.items())
            }
            rows.append({**common, "line": "meter", **row})
        for table in doc["tables"]:
            row = {k: v for k, v in table.items() if k not in ("wagers", "handle_cents")}
            row["wagers_by_kind"] = json.dumps(table["wagers"], sort_keys=True)
            row["handle_cents_by_kind"] = json.dumps(table["handle_cents"], sort_keys=True)
            rows.append({**common, "line": "table", **row})
        rows.append({**common, "line": "total", **doc["totals"]})
    return rows


def _table(documents: Sequence[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for doc in documents:
        lines.append(
            f"{doc['link_group']}: gaming day {doc['gaming_day']} ({doc['hours']} hours, "
            f"{doc['zone']} from {doc['start_hour']:02d}:00), journal #{doc['first_seq']} to "
            f"#{doc['through_seq']}"
        )
        header = ("METER", "OPENING", "+CONTRIB", "-AWARDS", "+SEED", "+ADJUST", "=CLOSING",
                  "WAGERS", "HITS", "RESETS")  # fmt: skip
        cells: list[tuple[str, ...]] = [header]
        for m in [*doc["meters"], {"meter_id": "TOTAL", **doc["totals"]}]:
            cells.append(
                (
                    str(m["meter_id"]),
                    money(m["opening_microcents"]),
                    money(m["contributions_microcents"]),
                    money(m["awards_microcents"]),
                    money(m["seed_microcents"]),
                    money(m["adjustments_microcents"]),
                    money(m["closing_microcents"]),
                    str(m["handle_count"]),
                    str(m["hits"]),
                    str(m["resets"]),
                )
            )
        lines += _aligned(cells)
        cells = [("TABLE", "WAGERS", "HANDLE", "PERCENT", "MYSTERY", "FIXED", "AWARDS", "HIT FREQ")]
        for t in doc["tables"]:
            cells.append(
                (
                    t["table_id"],
                    str(t["wager_count"]),
                    format_cents(sum(t["handle_cents"].values())),
                    format_cents(t["percent_cents"]),
                    format_cents(t["mystery_cents"]),
                    format_cents(t["fixed_cents"]),
                    str(t["awards"]),
                    t["hit_frequency"] or "-",
                )
            )
        lines += _aligned(cells) if len(cells) > 1 else ["no table played"]
    return lines


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def _verify(
    args: argparse.Namespace, open_store: Callable[[argparse.Namespace], RedisStore]
) -> int:
    _source(args)
    day = gaming_days.parse_day(args.date)
    keys = [checkpoint_signature.load_public_key(path) for path in args.checkpoint_key or []]
    trusted = keys or None
    problems: list[str] = []
    verified: list[str] = []
    if args.file is not None:
        for group in _export_groups(args.file, args.link_group):
            start, entries, _ = day_close.exported(args.file, group)
            entry, found = day_close.verify(group, day, entries, trusted, start)
            problems += found
            verified.append(f"{group}: journal #{entry.seq}")
    else:

        async def run() -> None:
            store = open_store(args)
            try:
                for group in await _redis_groups(store, args.link_group):
                    snapshot = await store.journal.audit_snapshot(group)
                    entries = [e async for e in store.journal.entries(group, unreadable=True)]
                    entry, found = day_close.verify(
                        group, day, entries, trusted, snapshot.checkpoint
                    )
                    problems.extend(found)
                    verified.append(f"{group}: journal #{entry.seq}")
            finally:
                await store.close()

        asyncio.run(run())
    for problem in problems:
        print(f"DIFFERENCE: {problem}")
    if problems:
        print(f"day verify: gaming day {day}: {len(problems)} differences")
        return 1
    print(
        f"day verify: gaming day {day}: OK ({'; '.join(verified)}: digest, signature, recomputed)"
    )
    return 0
