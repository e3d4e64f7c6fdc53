"""The gaming day a ``jackpotctl`` command counts in, and ``--day``/``--month`` windows.

One definition: the casino's IANA zone and start hour. It comes from the Rules Submission
(``--rules FILE``, its ``[gaming_day]`` table) or from ``--zone ZONE --day-start HOUR``; when
both are given, ``--zone``/``--day-start`` win (and must both be given). There is no default:
a command that needs a gaming day and has none refuses, so nothing is silently counted in
UTC. Every report that uses one prints the day, its hours and zone it counted.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import date
from pathlib import Path

from controller.domain.gaming_day import GamingDay
from controller.runtime.rules_file import load_submission
from jackpot.errors import InvalidArgument
from jackpot.times import format_time

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--rules FILE`` and ``--zone ZONE --day-start HOUR``: where the gaming day is read."""
    parser.add_argument(
        "--rules",
        type=Path,
        metavar="FILE",
        help="the Rules Submission whose [gaming_day] defines the gaming day",
    )
    parser.add_argument("--zone", metavar="ZONE", help="the casino's IANA zone (wins over --rules)")
    parser.add_argument(
        "--day-start", type=int, metavar="HOUR", help="the gaming day's local start hour, 0-23"
    )


def definition(args: argparse.Namespace) -> GamingDay:
    """The gaming day of the command line (see the module); refuses when none is given."""
    if (args.zone is None) != (args.day_start is None):
        raise InvalidArgument("give both --zone and --day-start (or neither, and --rules FILE)")
    if args.zone is not None:
        return GamingDay(args.zone, args.day_start)
    if args.rules is not None:
        declared = load_submission(args.rules).gaming_day
        if declared is None:
            raise InvalidArgument(
                f"{args.rules} declares no [gaming_day] (zone, start_hour); declare it there or "
                "give --zone and --day-start"
            )
        return declared
    raise InvalidArgument(
        "no gaming day given: give --rules FILE (its [gaming_day]) or --zone ZONE --day-start "
        "HOUR; nothing is counted in UTC by default"
    )


def optional(args: argparse.Namespace) -> GamingDay | None:
    """The gaming day when the command line gives one (``--rules`` or ``--zone``), else
    None: for output that only adds it (a slip), never for one that counts by it."""
    if args.zone is None and args.day_start is None and args.rules is None:
        return None
    return definition(args)


def parse_day(text: str) -> date:
    """A gaming day named ``YYYY-MM-DD``."""
    try:
        if not _DAY.match(text):
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(f"a gaming day is YYYY-MM-DD, not {text[:40]!r}") from None


def window(args: argparse.Namespace) -> tuple[int, int, str]:
    """``--day``/``--month`` as ``[from_ms, to_ms)`` and a line saying what it counted."""
    gaming_day = definition(args)
    if args.day:
        day = parse_day(args.day)
        start, end = gaming_day.window_ms(day)
        what = f"gaming day {day} ({gaming_day.hours(day)} hours)"
    else:
        match = _MONTH.match(args.month)
        if not match:
            raise InvalidArgument(f"a month is YYYY-MM, not {args.month[:40]!r}")
        start, end = gaming_day.month_window_ms(int(match[1]), int(match[2]))
        what = f"the gaming days of {args.month}"
    said = (
        f"{what}, from {gaming_day.start_hour:02d}:00 in {gaming_day.zone}: "
        f"{format_time(start)} to {format_time(end)}"
    )
    return start, end, said


def say(line: str) -> None:
    """Print which gaming day a report counted (on stderr: stdout stays CSV or JSON)."""
    print(f"jackpotctl: {line}", file=sys.stderr)
