"""``jackpotctl report``: the regulator's meters and reports, read from the journal in Redis.

    jackpotctl report meters  --redis URL --from 2025-03-01 --to 2025-03-01 [--link-group floor]
    jackpotctl report handle  --redis URL --from 2025-03-01T06:00 --to 2025-03-01T14:00 --table cs-1
    jackpotctl report hits    --redis URL --format csv          # the last 25 hits
    jackpotctl report changes --redis URL --format json         # configuration changes
    jackpotctl report meters  --redis URL --day 2025-03-01 --rules rules.toml  # a gaming day
    jackpotctl report handle  --redis URL --month 2025-03 --zone America/New_York --day-start 6

The figures are computed by :mod:`controller.domain.reports` from the journal entries Redis
wrote in the window (``--from`` inclusive, ``--to`` exclusive; a date alone for ``--to``
takes the whole day; UTC unless the time carries an offset; no ``--from`` is the journal's
start, no ``--to`` is now), so they reconcile to the journal to the cent. ``--table`` keeps
the entries that name that table. ``--format table`` prints dollars; ``csv`` and ``json``
print the integers the journal holds (cents, and microcents where a column says so) and
frequencies as exact fractions ("1/649740"). ``--day YYYY-MM-DD`` / ``--month YYYY-MM`` take
gaming days instead (:mod:`controller.ctl.gaming_days`: the zone and start hour of ``--rules``
or ``--zone``/``--day-start``), and say on stderr which days, hours and zone they counted.

A window that starts before the first entry Redis still holds of a link group's trimmed
journal (``jackpotctl journal trim``) is refused, naming where Redis's journal starts: the
report would miss the trimmed entries. ``--file DIR`` reads the journal from an export
directory instead (``jackpotctl journal export --dir DIR``; ``DIR/<link group>/journal.jsonl``,
its tables and meters from ``snapshot.json``), which holds the whole journal up to the export;
the same refusal applies to a window before an export's first entry (an export begun after a
trim). No Redis is opened then.

    jackpotctl report hits --file /var/lib/jackpot/export --from 2025-03-01 --to 2025-03-01
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import functools
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

from controller.ctl import gaming_days, redis_access, theoretical
from controller.ctl.jackpots import parse_when
from controller.ctl.report_common import MAX_WINDOW_ENTRIES, aligned, microcents, one_in
from controller.domain import reports
from controller.domain.config import TableConfig
from controller.domain.records import JournalEntry, MeterState
from controller.domain.staged_tables import StagedTableChange
from controller.journal import export as journal_export
from controller.store import codec
from controller.store.redis_store import RedisStore
from controller.store.staged_tables import StagedTables, staged_table_change
from jackpot.errors import InvalidArgument, NotFound
from jackpot.hands.words import hand_words
from jackpot.money import format_cents
from jackpot.results import METER_AFTER
from jackpot.times import format_time

T = TypeVar("T")

KINDS = ("meters", "hits", "handle", "changes", "theoretical")
FORMATS = ("table", "csv", "json")
Row = dict[str, Any]


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report meters|hits|handle|changes|theoretical`` to ``jackpotctl`` (Redis, named by
    ``--redis`` and its friends, or an export: ``--file``)."""
    report = top.add_parser("report", help="regulator reports from the journal")
    report.add_argument("kind", choices=KINDS)
    redis_access.add_arguments(report, required=False)
    report.add_argument("--from", dest="since", metavar="WHEN", help="from (a date or time)")
    report.add_argument("--to", dest="until", metavar="WHEN", help="before (a date: its end)")
    report.add_argument("--link-group", default="", help="one link group (default: all)")
    report.add_argument("--table", default="", metavar="TABLE_ID", help="one table's entries")
    report.add_argument("--format", choices=FORMATS, default="table")
    report.add_argument(
        "--file",
        type=Path,
        metavar="DIR",
        help="read an export directory (jackpotctl journal export --dir DIR) instead of Redis: "
        "it holds what a trim took out of Redis",
    )
    report.add_argument("--day", metavar="YYYY-MM-DD", help="one gaming day (not with --from/--to)")
    report.add_argument("--month", metavar="YYYY-MM", help="the gaming days of a month")
    gaming_days.add_arguments(report)
    theoretical.add_arguments(report)
    report.set_defaults(handler=lambda args: _report(args, redis_access.open_store))


def _report(
    args: argparse.Namespace, open_store: Callable[[argparse.Namespace], RedisStore]
) -> int:
    if args.kind == "theoretical":
        return theoretical.run(args, open_store)
    theoretical.refuse_own_options(args)
    if (args.redis is None) == (args.file is None):
        raise InvalidArgument(
            "a report reads Redis (--redis URL or --redis-cluster NODES) or an export (--file DIR)"
        )
    from_ms = parse_when(args.since) if args.since else 0
    to_ms = parse_when(args.until, end_of_day=True) if args.until else 0
    if args.day or args.month:
        if args.since or args.until or (args.day and args.month):
            raise InvalidArgument("give one of --day, --month or --from/--to")
        from_ms, to_ms, counted = gaming_days.window(args)
        gaming_days.say(counted)
    if to_ms and to_ms <= from_ms:
        raise InvalidArgument(
            f"the window from {args.since} to {args.until} is empty; --to must be after --from"
        )

    async def run() -> list[Row]:
        store = open_store(args)
        try:
            if args.link_group:
                await store.catalog.get_link_group(args.link_group)  # NotFound names it
                groups = [args.link_group]
            else:
                groups = await store.catalog.every_link_group_id()  # on every shard of a cluster
            rows: list[Row] = []
            for group in sorted(groups):
                if await store.journal.checkpoint_seq(
                    group
                ):  # trimmed: does Redis cover the window?
                    first = await anext(aiter(store.journal.entries(group, batch=1)), None)
                    reports.check_covered(
                        group, from_ms, first, source="Redis", remedy=_FROM_THE_EXPORT
                    )
                window = await store.journal.window(group, from_ms, to_ms, MAX_WINDOW_ENTRIES)
                rows += await _group_rows(
                    args,
                    group,
                    window,
                    functools.partial(store.tables.list_tables, group),
                    functools.partial(store.catalog.list_meters, group),
                    functools.partial(_staged_in_redis, store.staged_tables),
                )
            return rows
        finally:
            await store.close()

    rows = asyncio.run(_file_rows(args, from_ms, to_ms) if args.file else run())
    if args.kind == "hits":
        rows = sorted(rows, key=lambda r: -int(r["at_ms"]))[: reports.LAST_HITS]
    print_rows(args.kind, rows, args.format)
    return 0


_FROM_THE_EXPORT = (
    "report from the export with --file DIR (jackpotctl journal export --dir DIR wrote it), "
    "or start the window (--from) after that entry"
)


async def _group_rows(
    args: argparse.Namespace,
    group: str,
    window: list[JournalEntry],
    tables: Callable[[], Awaitable[list[TableConfig]]],
    meters: Callable[[], Awaitable[list[MeterState]]],
    staged: Callable[[list[TableConfig]], Awaitable[list[StagedTableChange]]] | None = None,
) -> list[Row]:
    """One link group's rows of the report, from the entries of its window (``tables`` and
    ``meters`` read the group's definitions, ``staged`` the table changes waiting now, when
    the report needs them)."""
    entries = reports.for_table(window, args.table)
    rows = await _rows(args.kind, entries, tables, meters, staged)
    return [{"link_group_id": group, **row} for row in rows]


async def _file_rows(args: argparse.Namespace, from_ms: int, to_ms: int) -> list[Row]:
    """The report from the export directory ``args.file``: every link group exported there
    (or ``--link-group``), its journal file's entries in the window."""
    directory: Path = args.file
    if args.link_group:
        groups = [args.link_group]
    else:
        groups = sorted(
            path.name
            for path in directory.glob(f"*/{journal_export.JOURNAL_FILE}")
            for path in [path.parent]
        )
        if not groups:
            raise NotFound(
                f"{directory} holds no export (no <link group>/{journal_export.JOURNAL_FILE})"
            )
    rows: list[Row] = []
    for group in groups:
        target = journal_export.group_directory(directory, group)
        snapshot = journal_export.read_json(target / journal_export.SNAPSHOT_FILE, group)
        entries = journal_export.read_entries(target / journal_export.JOURNAL_FILE, group)
        reports.check_covered(
            group,
            from_ms,
            entries[0] if entries else None,
            source=f"the export in {directory}",
            remedy="report from an export begun before the trim, or start the window (--from) "
            "after that entry",
        )
        window = [
            entry
            for entry in entries
            if from_ms <= reports.entry_ms(entry) and (not to_ms or reports.entry_ms(entry) < to_ms)
        ]
        if len(window) > MAX_WINDOW_ENTRIES:
            raise InvalidArgument(
                f"the journal of link group {group} holds more than {MAX_WINDOW_ENTRIES} "
                "entries in that window; ask for a shorter one"
            )
        if entries and (not to_ms or to_ms > reports.entry_ms(entries[-1])):
            print(
                f"jackpotctl: the export of {group} holds its journal up to entry "
                f"#{entries[-1].seq}; later entries are in Redis only",
                file=sys.stderr,
            )
        tables = [codec.table_config(t["config"]) for _, t in sorted(snapshot["tables"].items())]
        meters = [codec.meter_state(m) for _, m in sorted(snapshot["meters"].items())]
        staged = [
            change
            for _, t in sorted(snapshot["tables"].items())
            if (change := staged_table_change(t.get("staged_change"), t.get("staged_seq")))
        ]
        rows += await _group_rows(
            args,
            group,
            window,
            functools.partial(_now, tables),
            functools.partial(_now, meters),
            functools.partial(_staged_exported, staged),
        )
    return rows


async def _now(value: T) -> T:
    return value


async def _staged_in_redis(
    staged: StagedTables, tables: list[TableConfig]
) -> list[StagedTableChange]:
    """The table changes waiting now, as Redis holds them (docs/staged-changes.md)."""
    found = [(await staged.staged(table))[1] for table in tables]
    return [change for change in found if change is not None]


async def _staged_exported(
    staged: list[StagedTableChange], tables: list[TableConfig]
) -> list[StagedTableChange]:
    return staged


async def _rows(
    kind: str,
    entries: list[Any],
    tables_: Callable[[], Awaitable[list[TableConfig]]],
    meters_: Callable[[], Awaitable[list[MeterState]]],
    staged_: Callable[[list[TableConfig]], Awaitable[list[StagedTableChange]]] | None = None,
) -> list[Row]:
    if kind == "hits":
        return [asdict(hit) for hit in reports.hit_report(entries)]
    if kind == "changes":
        return [asdict(change) for change in reports.change_report(entries)]
    tables = await tables_()
    if kind == "handle":
        handle = reports.handle_report(entries, tables)
        rows = [handle_row(line) for line in handle.lines]
        rows += [
            {"table_id": table, "wager": "", "note": f"round {round_id} voided, locked out earlier"}
            for table, round_id in handle.earlier_voids
        ]
        return rows
    meters = await meters_()
    staged = await staged_(tables) if staged_ is not None else []  # docs/staged-changes.md
    return [meter_row(line) for line in reports.meter_report(entries, meters, tables, staged)]


def handle_row(line: reports.HandleLine) -> Row:
    """A handle line as plain data: integers, frequencies as fractions."""
    row = asdict(line)
    row |= {
        "count": line.count,
        "cents": line.cents,
        "wins": line.wins,
        "wins_cents": line.wins_cents,
        "hit_frequency": line.hit_frequency,
    }
    return row


def meter_row(line: reports.MeterLine) -> Row:
    """A meter line as plain data; other movements as ``other:<type>_microcents``."""
    row = asdict(line)
    other = row.pop("other_microcents")
    row |= {f"other:{kind}_microcents": amount for kind, amount in sorted(other.items())}
    row["hit_frequency"] = line.hit_frequency
    return row


# ----------------------------------------------------------------------------- printing


def ratio(value: Fraction | None) -> str:
    """An exact frequency as "n/d" ("" for none)."""
    return "" if value is None else f"{value.numerator}/{value.denominator}"


def _plain(value: Any) -> Any:
    if isinstance(value, Fraction):
        return ratio(value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return value


def print_rows(kind: str, rows: Sequence[Row], fmt: str) -> None:
    """Print the report's rows as JSON, CSV (every column) or a table for people."""
    if fmt == "json":
        print(json.dumps([{k: _plain_json(v) for k, v in r.items()} for r in rows], indent=2))
        return
    if fmt == "csv":
        columns: list[str] = []
        for row in rows:
            columns += [name for name in row if name not in columns]
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(_plain(row.get(name, "")) for name in columns)
        return
    if not rows:
        print(f"no {kind} in that window")
        return
    for line in aligned(TABLES[kind](rows)):
        print(line)


def _plain_json(value: Any) -> Any:
    return ratio(value) if isinstance(value, Fraction) else value


def _meters_table(rows: Sequence[Row]) -> list[tuple[str, ...]]:
    header = (
        "METER", "WAGERS", "HANDLE", "TO METER", "TO RESERVE", "OVERFLOW", "HITS", "WON",
        "RESETS", "NET", "AMOUNT", "RESERVE", "PAID EVER", "HIT FREQ", "EXPECTED",
    )  # fmt: skip
    table: list[tuple[str, ...]] = [header]
    for r in rows:
        table.append(
            (
                f"{r['link_group_id']}/{r['meter_id']}",
                str(r["handle_count"]),
                format_cents(r["handle_cents"]),
                microcents(r["to_meter_microcents"]),
                microcents(r["to_reserve_microcents"]),
                microcents(r["overflow_microcents"]),
                str(r["hits"] - r["rejected_hits"]),
                format_cents(r["percent_wins_cents"]),
                microcents(r["reset_microcents"]),
                microcents(r["net_meter_microcents"]),
                microcents(r["amount_microcents"]),
                microcents(r["reserve_microcents"]),
                format_cents(r["cumulative_paid_cents"]),
                one_in(r["hit_frequency"]),
                one_in(r["expected_hit_frequency"]),
            )
        )
    return table


def _handle_table(rows: Sequence[Row]) -> list[tuple[str, ...]]:
    header = ("TABLE", "GAME", "WAGER", "WAGERS", "HANDLE", "VOIDED", "PERCENT WON",
              "FIXED WON", "WINS", "HIT FREQ", "EXPECTED")  # fmt: skip
    table: list[tuple[str, ...]] = [header]
    for r in rows:
        if "note" in r:
            table.append((r["table_id"], "", r["note"], "", "", "", "", "", "", "", ""))
            continue
        table.append(
            (
                r["table_id"],
                r["game"],
                r["wager"],
                str(r["count"]),
                format_cents(r["cents"]),
                f"{r['voided_count']} ({format_cents(r['voided_cents'])})",
                format_cents(r["percent_cents"]),
                format_cents(r["fixed_cents"]),
                str(r["wins"]),
                one_in(r["hit_frequency"]),
                one_in(r["expected_hit_frequency"]),
            )
        )
    return table


def _hits_table(rows: Sequence[Row]) -> list[tuple[str, ...]]:
    header = ("SEQ", "TIME (UTC)", "METER", "TABLE", "ROUND", "SEAT", "HAND", "AWARD",
              "AMOUNT", f"METER BEFORE -> {METER_AFTER.upper()}")  # fmt: skip
    table: list[tuple[str, ...]] = [header]
    for r in rows:
        table.append(
            (
                f"{r['link_group_id']}:{r['seq']}",
                format_time(r["at_ms"]).removesuffix(" UTC"),
                r["meter_id"],
                r["table_id"],
                r["round_id"],
                r["seat"],
                hand_words(r["hand"]) + (" (rejected)" if r["rejected"] else "") + _paid_with(r),
                r["award"],
                format_cents(r["amount_cents"]),
                f"{format_cents(r['meter_before_cents'])} -> "
                f"{format_cents(r['meter_after_cents'])}",
            )
        )
    return table


def _paid_with(row: Row) -> str:
    """A hit's payout compliance, as its payment gave it (docs/payout-compliance.md)."""
    given = [f"W-2G {row['tax_form_ref']}"] if row.get("tax_form_ref") else []
    given += ["W-2G overridden"] if row.get("tax_form_override") else []
    given += [f"witness {row['witnessed_by']}"] if row.get("witnessed_by") else []
    return f" ({', '.join(given)})" if given else ""


def _changes_table(rows: Sequence[Row]) -> list[tuple[str, ...]]:
    table: list[tuple[str, ...]] = [("SEQ", "TIME (UTC)", "CHANGE", "METER", "MOVED", "FIELDS")]
    for r in rows:
        moved = r["d_meter_microcents"] or r["d_reserve_microcents"]
        table.append(
            (
                f"{r['link_group_id']}:{r['seq']}",
                format_time(r["at_ms"]).removesuffix(" UTC"),
                r["type"],
                r["meter_id"] or "-",
                microcents(r["d_meter_microcents"]) if moved else "-",
                " ".join(f"{k}={v[:60]}" for k, v in r["fields"].items()),
            )
        )
    return table


TABLES: dict[str, Callable[[Sequence[Row]], list[tuple[str, ...]]]] = {
    "meters": _meters_table,
    "handle": _handle_table,
    "hits": _hits_table,
    "changes": _changes_table,
}
