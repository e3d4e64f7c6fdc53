"""The casino's gaming day: the accounting day every report, statement and slip is counted in.

A gaming day is named by its calendar date and runs from ``start_hour`` o'clock local time in
the casino's IANA time zone (``zone``) on that date to the same local hour of the next date. It
is therefore 24 hours long, except on the days a daylight-saving change falls inside it: 23 hours
at the spring change, 25 at the autumn one. Nothing here counts in UTC unless the casino's zone
is UTC.

Invariants (tested): every instant belongs to exactly one gaming day, ``day_of(ms)`` is the day
whose :meth:`GamingDay.window_ms` holds ``ms``, and consecutive windows meet without a gap or an
overlap. When the start hour does not exist on a date (the spring change skips it), the day starts
at the first instant after the skipped hour, as :mod:`zoneinfo` reads a skipped local time
(``fold=0``: the offset in force before the change); when it occurs twice (the autumn change), the
day starts at its first occurrence.

Times are integer milliseconds since the Unix epoch, as in the journal. Pure: no I/O beyond the
time-zone database that :mod:`zoneinfo` reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jackpot.errors import InvalidConfiguration

_MS_PER_HOUR = 3_600_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ZONE_MAX_CHARS = 64
"""An IANA zone name (``America/New_York``); the longest in the database is 32."""


@dataclass(frozen=True, slots=True)
class GamingDay:
    """The casino's gaming-day definition: an IANA ``zone`` and a local ``start_hour`` (0-23)."""

    zone: str
    start_hour: int

    def __post_init__(self) -> None:
        if not self.zone or len(self.zone) > ZONE_MAX_CHARS or not _zone_exists(self.zone):
            raise InvalidConfiguration(
                f"gaming day: time zone {self.zone[:ZONE_MAX_CHARS]!r} is not an IANA zone name "
                "(for example America/New_York)"
            )
        if isinstance(self.start_hour, bool) or not 0 <= self.start_hour <= 23:
            raise InvalidConfiguration(
                f"gaming day: start hour {self.start_hour!r} is not a whole hour from 0 to 23"
            )

    @property
    def tz(self) -> ZoneInfo:
        """The zone (cached by :mod:`zoneinfo`)."""
        return ZoneInfo(self.zone)

    def start_ms(self, day: date) -> int:
        """The first millisecond of gaming day ``day`` (since the Unix epoch)."""
        local = datetime(day.year, day.month, day.day, self.start_hour, tzinfo=self.tz)
        return (local.astimezone(UTC) - _EPOCH) // timedelta(milliseconds=1)

    def window_ms(self, day: date) -> tuple[int, int]:
        """Gaming day ``day`` as ``[start, end)`` in milliseconds since the Unix epoch."""
        return self.start_ms(day), self.start_ms(day + timedelta(days=1))

    def length_ms(self, day: date) -> int:
        """How long gaming day ``day`` is, in milliseconds."""
        start, end = self.window_ms(day)
        return end - start

    def hours(self, day: date) -> int:
        """How long gaming day ``day`` is, in whole hours: 23, 24 or 25 (a zone whose change
        is half an hour, Australia/Lord_Howe, gives 23 or 24; :meth:`length_ms` is exact)."""
        return self.length_ms(day) // _MS_PER_HOUR

    def day_of(self, ms: int) -> date:
        """The gaming day the instant ``ms`` (milliseconds since the Unix epoch) belongs to."""
        local = (_EPOCH + timedelta(milliseconds=ms)).astimezone(self.tz).replace(tzinfo=None)
        day = (local - timedelta(hours=self.start_hour)).date()
        # The local-clock estimate can be one day off around a daylight-saving change; the
        # windows are the definition.
        while ms < self.start_ms(day):
            day -= timedelta(days=1)
        while ms >= self.start_ms(day + timedelta(days=1)):
            day += timedelta(days=1)
        return day

    def month_window_ms(self, year: int, month: int) -> tuple[int, int]:
        """Every gaming day of a calendar month, ``[start of the 1st, start of the next 1st)``."""
        if not 1 <= month <= 12:
            raise InvalidConfiguration(f"gaming day: month {month} is not 1 to 12")
        first = date(year, month, 1)
        after = date(year + month // 12, month % 12 + 1, 1)
        return self.start_ms(first), self.start_ms(after)

    def days(self, first: date, last: date) -> list[date]:
        """The gaming days ``first`` to ``last``, both included (at most 366)."""
        count = (last - first).days + 1
        if not 1 <= count <= 366:
            raise InvalidConfiguration(
                f"gaming days {first} to {last}: give 1 to 366 days, the first not after the last"
            )
        return [first + timedelta(days=i) for i in range(count)]


def _zone_exists(zone: str) -> bool:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True
