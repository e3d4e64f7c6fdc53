"""``jackpotctl report theoretical``: actual against theoretical return, per wager and paytable.

    jackpotctl report theoretical --redis URL --month 2026-11 --rules rules.toml
    jackpotctl report theoretical --redis URL --since 2026-11-01 --until 2026-11-08 --format csv
    jackpotctl report theoretical --file DIR --day 2026-11-01 --zone America/New_York \
        --day-start 6 --format json

Reads the window's journal (Redis, or an export directory with ``--file DIR``, as the other
reports do) and the tables, and prints :func:`controller.domain.actual_theoretical.compare`'s
rows: per (game, wager kind, paytable) the wagers, the fixed lines' return against its band,
the percentage lines' payout beside their contributions, and per line the hits against the
band, each flagged when outside (and beside it the regulator's 4%). ``--day``/``--month`` are
gaming days, as for every report (:mod:`controller.ctl.gaming_days`: ``--rules`` or
``--zone``/``--day-start``);
``--since``/``--until`` are instants as ``--from``/``--to`` read them. The method:
docs/theoretical.md.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from controller.ctl import gaming_days
from controller.ctl.jackpots import parse_when
from controller.ctl.report_common import MAX_WINDOW_ENTRIES, aligned, microcents, one_in
from controller.domain import reports as domain_reports
from controller.domain.actual_theoretical import (
    CONFIDENCE_Z,
    DEFAULT_CONFIDENCE,
    Band,
    Comparison,
    compare,
)
from controller.domain.config import TableConfig
from controller.domain.records import JournalEntry
from controller.journal import export as journal_export
from controller.store import codec
from controller.store.redis_store import RedisStore
from jackpot.errors import InvalidArgument, NotFound
from jackpot.money import format_cents
from jackpot.times import format_time

Windows = list[tuple[list[JournalEntry], list[TableConfig]]]


def add_arguments(report: argparse.ArgumentParser) -> None:
    """The options of ``report theoretical`` on the ``report`` parser."""
    report.add_argument("--since", dest="since", metavar="WHEN", help="same as --from")
    report.add_argument("--until", dest="until", metavar="WHEN", help="same as --to")
    report.add_argument(
        "--confidence",
        choices=tuple(CONFIDENCE_Z),
        help=f"the bands' two-sided confidence in percent (theoretical; default "
        f"{DEFAULT_CONFIDENCE})",
    )


OWN_OPTIONS = ("confidence",)
"""The options only ``report theoretical`` reads (for now)."""


def refuse_own_options(args: argparse.Namespace) -> None:
    """Refuse this report's options on another report, which would ignore them."""
    given = [name for name in OWN_OPTIONS if getattr(args, name) is not None]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise InvalidArgument(
            f"{flags}: only report theoretical reads them, not report {args.kind}"
        )


def window(args: argparse.Namespace) -> tuple[int, int, str]:
    """``[from_ms, to_ms)`` (to 0: now) and how the report names it."""
    chosen = [name for name in ("day", "month") if getattr(args, name)]
    if len(chosen) > 1 or (chosen and (args.since or args.until)):
        raise InvalidArgument("give one of --day, --month, or --since/--until")
    if chosen:
        return gaming_days.window(args)
    from_ms = parse_when(args.since) if args.since else 0
    to_ms = parse_when(args.until, end_of_day=True) if args.until else 0
    if to_ms and to_ms <= from_ms:
        raise InvalidArgument(
            f"the window from {args.since} to {args.until} is empty; --until must be after --since"
        )
    described = (
        f"from {format_time(from_ms) if from_ms else 'the journal start'} to "
        f"{format_time(to_ms) if to_ms else 'now'}"
    )
    return from_ms, to_ms, described


def run(args: argparse.Namespace, open_store: Callable[[argparse.Namespace], RedisStore]) -> int:
    """The report: read the windows, compare, print; 0."""
    if (args.redis is None) == (args.file is None):
        raise InvalidArgument(
            "a report reads Redis (--redis URL or --redis-cluster NODES) or an export (--file DIR)"
        )
    from_ms, to_ms, described = window(args)
    if args.file:
        windows = _file_windows(args.file, args.link_group, from_ms, to_ms)
    else:
        windows = asyncio.run(_redis_windows(open_store(args), args.link_group, from_ms, to_ms))
    if args.table:
        windows = [
            (domain_reports.for_table(entries, args.table), tables) for entries, tables in windows
        ]
    confidence = args.confidence or DEFAULT_CONFIDENCE
    comparisons = compare(windows, confidence)
    print(render(comparisons, args.format, described, confidence))
    return 0


async def _redis_windows(store: RedisStore, link_group: str, from_ms: int, to_ms: int) -> Windows:
    try:
        if link_group:
            await store.catalog.get_link_group(link_group)  # NotFound names it
            groups = [link_group]
        else:
            groups = await store.catalog.every_link_group_id()
        windows: Windows = []
        for group in sorted(groups):
            if await store.journal.checkpoint_seq(group):  # trimmed: does Redis cover the window?
                first = await anext(aiter(store.journal.entries(group, batch=1)), None)
                domain_reports.check_covered(
                    group,
                    from_ms,
                    first,
                    source="Redis",
                    remedy="report from the export with --file DIR, or start the window later",
                )
            entries = await store.journal.window(group, from_ms, to_ms, MAX_WINDOW_ENTRIES)
            windows.append((entries, await store.tables.list_tables(group)))
        return windows
    finally:
        await store.close()


def _file_windows(directory: Path, link_group: str, from_ms: int, to_ms: int) -> Windows:
    groups = (
        [link_group]
        if link_group
        else sorted(p.parent.name for p in directory.glob(f"*/{journal_export.JOURNAL_FILE}"))
    )
    if not groups:
        raise NotFound(
            f"{directory} holds no export (no <link group>/{journal_export.JOURNAL_FILE})"
        )
    windows: Windows = []
    for group in groups:
        target = journal_export.group_directory(directory, group)
        snapshot = journal_export.read_json(target / journal_export.SNAPSHOT_FILE, group)
        entries = journal_export.read_entries(target / journal_export.JOURNAL_FILE, group)
        domain_reports.check_covered(
            group,
            from_ms,
            entries[0] if entries else None,
            source=f"the export in {directory}",
            remedy="report from an export begun before the trim, or start the window later",
        )
        inside = [
            e
            for e in entries
            if from_ms <= domain_reports.entry_ms(e)
            and (not to_ms or domain_reports.entry_ms(e) < to_ms)
        ]
        if len(inside) > MAX_WINDOW_ENTRIES:
            raise InvalidArgument(
                f"the journal of link group {group} holds more than "
                f"{MAX_WINDOW_ENTRIES} entries in that window; ask for a shorter one"
            )
        tables = [codec.table_config(t["config"]) for _, t in sorted(snapshot["tables"].items())]
        windows.append((inside, tables))
    return windows


# ----------------------------------------------------------------------------- output


def _fraction(value: Any) -> str:
    return "" if value is None else f"{value.numerator}/{value.denominator}"


def _percent(value: Any) -> str:
    return "-" if value is None else f"{float(value):+.2%}"


def _band_data(b: Band) -> dict[str, Any]:
    return {
        "observed": b.observed,
        "expected": _fraction(b.expected),
        "variance": _fraction(b.variance),
        "band_low": b.low,
        "band_high": b.high,
        "inside": b.inside,
        "deviation": _fraction(b.deviation),
        "beyond_4_percent": b.beyond_tolerance,
    }


def as_data(c: Comparison) -> dict[str, Any]:
    """One comparison as plain data: integers, exact fractions as "n/d" strings."""
    return {
        "game": c.game,
        "wager": c.wager,
        "paytable": c.paytable,
        "tables": list(c.tables),
        "wagers": c.wagers,
        "wagered_cents": c.wagered_cents,
        "fixed_paid_cents": _band_data(c.fixed_paid),
        "fixed_return": _fraction(c.fixed_return),
        "theoretical_fixed_return": _fraction(c.theoretical_fixed_return),
        "variance_exact": c.variance_exact,
        "meter_paid_cents": c.meter_paid_cents,
        "contributed_microcents": c.contributed_microcents,
        "envy_paid_cents": c.envy_paid_cents,
        "limited_cents": c.limited_cents,
        "unlisted_hits": c.unlisted_hits,
        "flagged": c.flagged,
        "notes": list(c.notes),
        "lines": [
            {
                "line": line.line,
                "award": line.award,
                "meter_line": line.meter_line,
                "probability": _fraction(line.probability),
                "few_expected": line.few_expected,
                "hits": _band_data(line.hits),
            }
            for line in c.lines
        ],
    }


def csv_rows(comparisons: Sequence[Comparison]) -> list[list[str]]:
    """One row per line and one per wager's fixed return (``line`` "(fixed return)")."""
    header = ["game", "wager", "paytable", "line", "award", "probability", "wagers",
              "wagered_cents", "observed", "expected", "band_low", "band_high", "inside",
              "deviation", "beyond_4_percent", "few_expected", "variance_exact"]  # fmt: skip
    rows = [header]
    for c in comparisons:
        f = c.fixed_paid
        rows.append(
            [
                c.game,
                c.wager,
                c.paytable,
                "(fixed return cents)",
                "",
                "",
                str(c.wagers),
                str(c.wagered_cents),
                str(f.observed),
                _fraction(f.expected),
                str(f.low),
                str(f.high),
                str(f.inside),
                _fraction(f.deviation),
                str(f.beyond_tolerance),
                "",
                str(c.variance_exact),
            ]
        )
        for line in c.lines:
            h = line.hits
            rows.append(
                [
                    c.game,
                    c.wager,
                    c.paytable,
                    line.line,
                    line.award,
                    _fraction(line.probability),
                    str(c.wagers),
                    str(c.wagered_cents),
                    str(h.observed),
                    _fraction(h.expected),
                    str(h.low),
                    str(h.high),
                    str(h.inside),
                    _fraction(h.deviation),
                    str(h.beyond_tolerance),
                    str(line.few_expected),
                    "",
                ]
            )
    return rows


def as_text(comparisons: Sequence[Comparison], described: str, confidence: str) -> str:
    """The report for people: amounts in dollars, ratios as percentages."""
    out = [f"actual against theoretical, {described}; bands at {confidence}% confidence"]
    if not comparisons:
        out.append("no wagers in that window")
    for c in comparisons:
        f = c.fixed_paid
        out.append("")
        out.append(
            f"{c.game} / {c.wager} / paytable {c.paytable} (tables {', '.join(c.tables)}): "
            f"{c.wagers:,} wagers, {format_cents(c.wagered_cents)} wagered"
            + ("  ** OUTSIDE THE BAND **" if c.flagged else "")
        )
        theoretical = c.theoretical_fixed_return
        out.append(
            f"  fixed lines paid {format_cents(f.observed)}, theoretical "
            f"{format_cents(int(f.expected))}, band {format_cents(f.low)} to "
            f"{format_cents(f.high)}{'' if c.variance_exact else ' (variance bounded)'}: "
            f"{'inside' if f.inside else 'OUTSIDE'}; return {_percent(c.fixed_return)[1:]} "
            f"against {_percent(theoretical)[1:]}, deviation {_percent(f.deviation)}"
            + (" (beyond 4%)" if f.beyond_tolerance else "")
        )
        if c.meter_paid_cents or c.contributed_microcents:
            out.append(
                f"  meter lines paid {format_cents(c.meter_paid_cents)}; the same wagers "
                f"contributed {microcents(c.contributed_microcents)}"
            )
        if c.envy_paid_cents or c.limited_cents:
            out.append(
                f"  envy bonuses paid {format_cents(c.envy_paid_cents)}; payout limit cut "
                f"{format_cents(c.limited_cents)}"
            )
        table: list[tuple[str, ...]] = [
            ("LINE", "AWARD", "1 IN", "HITS", "EXPECTED", "BAND", "", "DEVIATION")
        ]
        for line in c.lines:
            h = line.hits
            table.append(
                (
                    line.line,
                    line.award,
                    one_in(line.probability).removeprefix("1 in "),
                    str(h.observed),
                    f"{float(h.expected):.2f}",
                    f"{h.low}-{h.high}",
                    "inside" if h.inside else "OUTSIDE",
                    _percent(h.deviation)
                    + (" (beyond 4%)" if h.beyond_tolerance else "")
                    + (" few expected: only the band counts" if line.few_expected else ""),
                )
            )
        out += ["  " + row for row in aligned(table)]
        out += [f"  note: {note}" for note in c.notes]
    return "\n".join(out)


def render(comparisons: Sequence[Comparison], fmt: str, described: str, confidence: str) -> str:
    """The report in ``fmt``: ``table`` (text), ``csv`` or ``json``."""
    if fmt == "json":
        return json.dumps(
            {
                "window": described,
                "confidence_percent": confidence,
                "comparisons": [as_data(c) for c in comparisons],
            },
            indent=2,
        )
    if fmt == "csv":
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(csv_rows(comparisons))
        return buffer.getvalue().rstrip("\n")
    return as_text(comparisons, described, confidence)
