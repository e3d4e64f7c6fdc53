"""``jackpotctl report``: the regulator's meters and reports, read from the journal in Redis.

    jackpotctl report meters  --redis URL --from 2025-03-01 --to 2025-03-01 [--link-group floor]
    jackpotctl report handle  --redis URL --from 2025-03-01T06:00 --to 2025-03-01T14:00 --table cs-1
    jackpotctl report hits    --redis URL --format csv          # the last 25 hits
    jackpotctl report changes --redis URL --format json         # configuration changes

The figures are computed by :mod:`controller.domain.reports` from the journal entries Redis
wrote in the window (``--from`` inclusive, ``--to`` exclusive; a date alone for ``--to``
takes the whole day; UTC unless the time carries an offset; no ``--from`` is the journal's
start, no ``--to`` is now), so they reconcile to the journal to the cent. ``--table`` keeps
the entries that name that table. ``--format table`` prints dollars; ``csv`` and ``json``
print the integers the journal holds (cents, and microcents where a column says so) and
frequencies as exact fractions ("1/649740").
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from fractions import Fraction
from typing import Any

from controller.ctl.jackpots import format_time, parse_when
from controller.domain import reports
from controller.store.redis_store import RedisStore
from jackpot.money import MICROCENTS_PER_CENT, format_cents

KINDS = ("meters", "hits", "handle", "changes")
FORMATS = ("table", "csv", "json")
MAX_WINDOW_ENTRIES = 500_000
"""The most journal entries one report reads per link group (about a week of a busy floor):
a longer window is refused with a request to shorten it."""

Row = dict[str, Any]


def add_commands(
    top: argparse._SubParsersAction,  # type: ignore[type-arg]
    redis_arguments: Callable[[argparse.ArgumentParser], None],
    store: Callable[[argparse.Namespace], RedisStore],
) -> None:
    """Add ``report meters|hits|handle|changes`` to ``jackpotctl``; ``redis_arguments`` adds
    ``--redis`` and its friends, ``store`` opens the store they name."""
    report = top.add_parser("report", help="regulator reports from the journal")
    report.add_argument("kind", choices=KINDS)
    redis_arguments(report)
    report.add_argument("--from", dest="since", metavar="WHEN", help="from (a date or time)")
    report.add_argument("--to", dest="until", metavar="WHEN", help="before (a date: its end)")
    report.add_argument("--link-group", default="", help="one link group (default: all)")
    report.add_argument("--table", default="", metavar="TABLE_ID", help="one table's entries")
    report.add_argument("--format", choices=FORMATS, default="table")
    report.set_defaults(handler=lambda args: _report(args, store))


def _report(
    args: argparse.Namespace, open_store: Callable[[argparse.Namespace], RedisStore]
) -> int:
    from_ms = parse_when(args.since) if args.since else 0
    to_ms = parse_when(args.until, end_of_day=True) if args.until else 0

    async def run() -> list[Row]:
        store = open_store(args)
        try:
            if args.link_group:
                await store.get_link_group(args.link_group)  # NotFound names it
                groups = [args.link_group]
            else:
                groups = await store.every_link_group_id()  # on every shard of a cluster
            rows: list[Row] = []
            for group in sorted(groups):
                window = await store.journal_window(group, from_ms, to_ms, MAX_WINDOW_ENTRIES)
                entries = reports.for_table(window, args.table)
                rows += [
                    {"link_group_id": group, **row}
                    for row in await _rows(args.kind, store, group, entries)
                ]
            return rows
        finally:
            await store.close()

    rows = asyncio.run(run())
    if args.kind == "hits":
        rows = sorted(rows, key=lambda r: -int(r["at_ms"]))[: reports.LAST_HITS]
    print_rows(args.kind, rows, args.format)
    return 0


async def _rows(kind: str, store: RedisStore, group: str, entries: list[Any]) -> list[Row]:
    if kind == "hits":
        return [asdict(hit) for hit in reports.hit_report(entries)]
    if kind == "changes":
        return [asdict(change) for change in reports.change_report(entries)]
    tables = await store.list_tables(group)
    if kind == "handle":
        handle = reports.handle_report(entries, tables)
        rows = [handle_row(line) for line in handle.lines]
        rows += [
            {"table_id": table, "wager": "", "note": f"round {round_id} voided, locked out earlier"}
            for table, round_id in handle.earlier_voids
        ]
        return rows
    meters = await store.list_meters(group)
    return [meter_row(line) for line in reports.meter_report(entries, meters, tables)]


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


def one_in(value: Fraction | None) -> str:
    """A frequency for people: "1 in 649,740" (rounded to a whole number), "0", or "-"."""
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"1 in {round(1 / value):,}"


def microcents(amount: int) -> str:
    """Microcents for people: dollars and cents, and the microcents below a cent if any."""
    cents, rest = divmod(abs(amount), MICROCENTS_PER_CENT)
    text = format_cents(cents) + (f" +{rest}u" if rest else "")
    return f"-{text}" if amount < 0 else text


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


def aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows of cells, columns aligned, the first row the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


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
              "AMOUNT", "METER BEFORE -> AFTER")  # fmt: skip
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
                r["hand"] + (" (rejected)" if r["rejected"] else ""),
                r["award"],
                format_cents(r["amount_cents"]),
                f"{format_cents(r['meter_before_cents'])} -> "
                f"{format_cents(r['meter_after_cents'])}",
            )
        )
    return table


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
