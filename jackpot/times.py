"""One time convention wherever people read a time: UTC, labelled, ``2025-03-01 18:30:05 UTC``
(the hand-pay slip, jackpot and irregularity lists, reports' tables and messages); log lines
add the milliseconds, ``2025-03-01 18:30:05.123 UTC``. Machine formats (CSV, JSON, the wire,
the journal) keep integer milliseconds since the Unix epoch."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def format_time(ms: int) -> str:
    """Milliseconds since the Unix epoch as ``2025-03-01 18:30:05 UTC``; ``-`` for 0 (not
    yet)."""
    if not ms:
        return "-"
    return (_EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S UTC")


class UTCFormatter(logging.Formatter):
    """Log times in UTC, labelled: ``2025-03-01 18:30:05.123 UTC`` (never the host's zone)."""

    @staticmethod
    def converter(timestamp: float | None = None) -> time.struct_time:
        """The record's time in UTC."""
        return time.gmtime(timestamp)

    default_time_format = "%Y-%m-%d %H:%M:%S"
    default_msec_format = "%s.%03d UTC"


def utc_logs() -> None:
    """Every handler of the root logger (as ``logging.basicConfig`` set it up) writes
    :data:`LOG_FORMAT` with UTC times."""
    for handler in logging.getLogger().handlers:
        handler.setFormatter(UTCFormatter(LOG_FORMAT))
