"""Log lines that cannot be forged: every control character in a message is escaped.

A value a client sent (a reason, an id) can only reach a log line through a message this
formatter writes, so a newline or an escape sequence in it never starts a fake line or
repaints a terminal. Tracebacks keep their own line breaks.

grpc.aio logs, with a traceback at ERROR, a call whose client went away between the last
answer and the status (a cancelled stream, a closed connection: its own comment says so).
That is a client's choice, not a fault here, so it becomes one line at INFO
(:class:`ClientGoneFilter`); every other gRPC error keeps its traceback.
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


GRPC_SERVER_LOGGER = "grpc._cython.cygrpc"
"""Where grpc.aio's server logs what a servicer's call raised."""


class ClientGoneFilter(logging.Filter):
    """grpc.aio's ``ExecuteBatchError`` record, whose batch failed because the call had ended
    (its client cancelled or its connection closed), as one INFO line without a traceback;
    dropped below INFO. Every other record passes as it came."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[0] if record.exc_info else None
        if error is None or error.__name__ != "ExecuteBatchError":
            return True
        method = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
        record.msg = "a call to %s ended before its status was sent: its client went away"
        record.args = (method,)
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.exc_info, record.exc_text = None, None
        return logging.getLogger(record.name).isEnabledFor(logging.INFO)


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
    grpc_server = logging.getLogger(GRPC_SERVER_LOGGER)
    if not any(isinstance(each, ClientGoneFilter) for each in grpc_server.filters):
        grpc_server.addFilter(ClientGoneFilter())
