"""The gaming day: 23, 24 and 25 hours, UTC midnight inside a day, every instant in one day."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from controller.domain.gaming_day import GamingDay
from jackpot.errors import InvalidConfiguration

NEW_YORK_6AM = GamingDay("America/New_York", 6)


def _ms(text: str) -> int:
    """``2026-03-08 10:00`` (UTC) in milliseconds since the Unix epoch."""
    moment = datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    return int(moment.timestamp()) * 1000


def test_an_ordinary_day_runs_24_hours_from_the_local_start_hour() -> None:
    start, end = NEW_YORK_6AM.window_ms(date(2026, 7, 1))
    assert start == _ms("2026-07-01 10:00")  # 06:00 EDT
    assert end == _ms("2026-07-02 10:00")
    assert NEW_YORK_6AM.hours(date(2026, 7, 1)) == 24


def test_utc_midnight_falls_inside_the_gaming_day_not_at_its_edge() -> None:
    # 23:59 and 00:01 UTC on either side of midnight are 19:59 and 20:01 EDT: the same day.
    assert NEW_YORK_6AM.day_of(_ms("2026-07-01 23:59")) == date(2026, 7, 1)
    assert NEW_YORK_6AM.day_of(_ms("2026-07-02 00:01")) == date(2026, 7, 1)
    # Before 06:00 local the night still belongs to the day before.
    assert NEW_YORK_6AM.day_of(_ms("2026-07-02 09:59")) == date(2026, 7, 1)
    assert NEW_YORK_6AM.day_of(_ms("2026-07-02 10:00")) == date(2026, 7, 2)


def test_the_spring_change_day_has_23_hours_and_the_autumn_one_25() -> None:
    assert NEW_YORK_6AM.hours(date(2026, 3, 7)) == 23  # holds 02:00 on 8 March
    assert NEW_YORK_6AM.hours(date(2026, 3, 8)) == 24
    assert NEW_YORK_6AM.hours(date(2026, 10, 31)) == 25  # holds 02:00 on 1 November
    assert NEW_YORK_6AM.hours(date(2026, 11, 1)) == 24


@pytest.mark.parametrize("start_hour", [0, 1, 2, 3, 6, 23])
@pytest.mark.parametrize("zone", ["America/New_York", "Europe/London", "Australia/Lord_Howe"])
def test_every_instant_belongs_to_exactly_the_day_whose_window_holds_it(
    zone: str, start_hour: int
) -> None:
    definition = GamingDay(zone, start_hour)
    for first in (date(2026, 3, 6), date(2026, 10, 2), date(2026, 3, 27), date(2026, 4, 3)):
        days = definition.days(first, first + timedelta(days=4))
        windows = [definition.window_ms(day) for day in days]
        for (_, end), (next_start, _) in itertools.pairwise(windows):
            assert end == next_start  # no gap, no overlap
        for day, (start, end) in zip(days, windows, strict=True):
            for ms in range(start, end, 1_799_999):  # every half hour or so, and the edges
                assert definition.day_of(ms) == day
            assert definition.day_of(end - 1) == day
            assert definition.day_of(start) == day


def test_a_start_hour_the_spring_change_skips_starts_the_day_after_the_skipped_hour() -> None:
    two_am = GamingDay("America/New_York", 2)
    # 02:00 does not exist on 8 March 2026; the day starts at 07:00 UTC (03:00 EDT).
    assert two_am.start_ms(date(2026, 3, 8)) == _ms("2026-03-08 07:00")
    # 01:00 exists twice on 1 November; a 1 a.m. day starts at its first occurrence (EDT).
    assert GamingDay("America/New_York", 1).start_ms(date(2026, 11, 1)) == _ms("2026-11-01 05:00")


def test_a_month_is_its_gaming_days() -> None:
    start, end = NEW_YORK_6AM.month_window_ms(2026, 12)
    assert start == NEW_YORK_6AM.start_ms(date(2026, 12, 1))
    assert end == NEW_YORK_6AM.start_ms(date(2027, 1, 1))


@pytest.mark.parametrize(
    ("zone", "start_hour", "words"),
    [
        ("Mars/Olympus_Mons", 6, "not an IANA zone"),
        ("../../etc/passwd", 6, "not an IANA zone"),
        ("", 6, "not an IANA zone"),
        ("America/New_York", 24, "0 to 23"),
        ("America/New_York", -1, "0 to 23"),
    ],
)
def test_a_bad_definition_is_refused_with_what_is_wrong(
    zone: str, start_hour: int, words: str
) -> None:
    with pytest.raises(InvalidConfiguration, match=words):
        GamingDay(zone, start_hour)


def test_a_window_of_days_is_bounded() -> None:
    with pytest.raises(InvalidConfiguration, match="1 to 366"):
        NEW_YORK_6AM.days(date(2026, 1, 2), date(2026, 1, 1))
    with pytest.raises(InvalidConfiguration, match="1 to 366"):
        NEW_YORK_6AM.days(date(2025, 1, 1), date(2026, 1, 2))
