"""Log lines that cannot be forged: every control character in a message is escaped.

A value a client sent (a reason, an id) can only reach a log line through a message this
formatter writes, so a newline or an escape sequence in it never starts a fake line or
repaints a terminal. Tracebacks keep their own line breaks.
"""

from __future__ import annotations

import logging
import re

from jackpot.times import LOG_FORMAT, UTCFormatter

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
FORMAT = LOG_FORMAT


def escape_controls(text: str) -> str:
    """``text`` with each control character written as ``\\xNN`` (``\\uNNNN``)."""
    return _CONTROL.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


class SafeFormatter(UTCFormatter):
    """A formatter whose message part never holds a raw control character (times in UTC,
    labelled: :mod:`jackpot.times`)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape_controls(record.message)
        return super().formatMessage(record)


def configure(level: str | int) -> None:
    """Log to standard error through :class:`SafeFormatter` at ``level``."""
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter(FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)
