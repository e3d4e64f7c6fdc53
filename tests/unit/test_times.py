"""One time convention where people read a time: UTC, labelled (jackpot.times); the
controller's and the agents' log lines too, whatever the host's time zone."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator

import pytest

from controller.domain.reports import _utc
from controller.observability.logs import SafeFormatter
from jackpot.times import LOG_FORMAT, UTCFormatter, format_time

MOMENT_MS = 1_740_853_805_123  # 2025-03-01 18:30:05.123 UTC


@pytest.fixture
def far_from_utc() -> Iterator[None]:
    """The host's zone is 10 hours from UTC (a log in local time would show 04:30)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Australia/Brisbane"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


def record() -> logging.LogRecord:
    entry = logging.LogRecord("jackpot", logging.INFO, __file__, 1, "hello", None, None)
    entry.created, entry.msecs = MOMENT_MS / 1000, 123.0
    return entry


def test_people_read_one_labelled_utc_time(far_from_utc: None) -> None:
    assert format_time(MOMENT_MS) == "2025-03-01 18:30:05 UTC"
    assert _utc(MOMENT_MS) == format_time(MOMENT_MS)  # reports' messages: the same
    assert format_time(0) == "-"


@pytest.mark.parametrize("formatter", [UTCFormatter(LOG_FORMAT), SafeFormatter(LOG_FORMAT)])
def test_log_lines_are_in_utc_labelled(far_from_utc: None, formatter: logging.Formatter) -> None:
    assert formatter.format(record()) == "2025-03-01 18:30:05.123 UTC INFO jackpot hello"
