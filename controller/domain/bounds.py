"""The bounds of every input: how long a text, how many items, how big a number.

Every request is checked against these before it reaches the store, and every refusal
names the field and its bound (:class:`jackpot.errors.InvalidArgument`). A refusal quotes
at most a short prefix of what it refuses (:func:`excerpt`), so a hostile megabyte never
travels back in an error message or into a log line.

The numbers are generous for any real table (seven seats, six wager kinds, six cards a hand)
and small for an attacker.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence, Sized

from jackpot.errors import InvalidArgument, InvalidConfiguration

ID_MAX_CHARS = 64
"""Table, meter and link group ids: 1-64 of ``[A-Za-z0-9._-]``, the first a letter or a
digit (:func:`check_id`; also Redis key parts, metric labels and export directory names)."""
REASON_MAX_CHARS = 200
"""A void's reason, a rest-of-round irregularity, a rebase's reason."""
DESCRIPTION_MAX_CHARS = 200
"""A link group's description."""
NOTE_MAX_CHARS = 500
"""A supervisor's note on a jackpot review."""
NAME_MAX_CHARS = 64
"""A game, a paytable name, a hand or line name."""
AWARD_TEXT_MAX_CHARS = 64
"""An award as a paytable prints it ("10% of meter tcp-grand", "5,000 for 1")."""
RATE_TEXT_MAX_CHARS = 16
"""A rate in percent ("0.1234")."""
CARD_TEXT_MAX_CHARS = 3
"""One card ("10H", "AS", "JK")."""

MAX_WAGERS_PER_ROUND = 64
"""Wagers in one lockout (7 seats x 6 kinds, and the dealer's hand, fit)."""
MAX_SEAT_REPORTS = 16
"""Seats reported in one settlement."""
MAX_CARDS_PER_HAND = 8
"""Cards of one seat, of the dealer or of the community."""
MAX_WAGER_OFFERS = 8
"""Wagers one table offers."""
MAX_PAYTABLE_LINES = 64
"""Lines (or envy lines) of one written paytable."""
MAX_METERS_PER_WAGER = 8
"""Meters one wager feeds."""
MAX_WATCH_INTERVAL_MS = 60_000
"""The slowest meter stream a display may ask for."""

EXCERPT_CHARS = 32
"""How much of a refused input a message quotes."""

ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
"""The one syntax of a table, meter or link group id (:func:`check_id`): no path separator,
no control character, no dots-only name (``.``, ``..``) nor a hidden one (``.x``), no leading
``-`` (a command-line option), no brace or colon (a Redis key's hash tag and separator)."""
_ID = re.compile(ID_PATTERN)
_JACKPOT_ID = re.compile(ID_PATTERN + r":[0-9]{1,19}")


_FIELD_PATH = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*|\[[0-9]+\])*")


def request_field(name: str) -> str:
    """``name`` if it is a request field's path as the .proto spells it (``table_id``,
    ``table.seats``, ``wagers[2]``), for the error's ``field`` (a ``BadRequest`` violation);
    empty for a name written for a person (``the cards of seat 3``)."""
    return name if _FIELD_PATH.fullmatch(name) else ""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` quoted for a message: its repr, cut to ``limit`` characters with the full
    length said when longer. Control characters come out escaped (repr)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def _has_control(text: str) -> bool:
    # Controls, formats (bidirectional overrides), surrogates, private use, line and
    # paragraph separators: none belongs in a reason, a note or a name.
    return any(unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp") for char in text)


def check_text(value: str, field: str, max_chars: int, *, required: bool = False) -> str:
    """``value`` stripped, if it is printable text of at most ``max_chars`` characters (and
    not empty when ``required``); else :class:`InvalidArgument` naming ``field``."""
    if len(value) > max_chars:
        raise InvalidArgument(
            f"{field} is {len(value):,} characters long; at most {max_chars} are accepted",
            field=request_field(field),
        )
    if _has_control(value):
        raise InvalidArgument(
            f"{field} {excerpt(value)} holds control characters; write plain text",
            field=request_field(field),
        )
    stripped = value.strip()
    if required and not stripped:
        raise InvalidArgument(f"{field} is required", field=request_field(field))
    return stripped


def check_count(items: Sized, field: str, max_items: int) -> None:
    """Refuse more than ``max_items`` items in a repeated field, naming it."""
    if len(items) > max_items:
        raise InvalidArgument(
            f"{field} has {len(items):,} items; at most {max_items} are accepted",
            field=request_field(field),
        )


def check_each_text(items: Sequence[str], field: str, max_chars: int) -> None:
    """Refuse any item of a repeated text field longer than ``max_chars``."""
    for index, item in enumerate(items):
        if len(item) > max_chars:
            raise InvalidArgument(
                f"{field}[{index}] {excerpt(item)} is longer than {max_chars} characters",
                field=request_field(f"{field}[{index}]"),
            )


def check_id(value: str, what: str) -> str:
    """``value`` if it is an identifier (:data:`ID_PATTERN`): 1-64 of ``[A-Za-z0-9._-]``, the
    first a letter or a digit, the whole string (no trailing newline); else
    :class:`InvalidConfiguration` naming ``what`` it is.

    Every path that creates a link group, meter or table (``AdminService``, the rules
    submission, ``jackpotctl``, which calls ``AdminService``) checks its ids here, through the
    configuration records' constructors (:mod:`controller.domain.config`)."""
    if not _ID.fullmatch(value):
        raise InvalidConfiguration(
            f"{what} {excerpt(value)} must be 1-64 characters of letters, digits, '.', '_' or "
            "'-', starting with a letter or a digit",
            field=request_field(what),
        )
    return value


def check_range(value: int, field: str, low: int, high: int) -> int:
    """``value`` if ``low <= value <= high``, else :class:`InvalidArgument` naming ``field``."""
    if not low <= value <= high:
        raise InvalidArgument(
            f"{field} must be {low:,} to {high:,}, got {value:,}", field=request_field(field)
        )
    return value


def check_jackpot_id(value: str) -> str:
    """A jackpot id: ``<link group id>:<journal sequence>`` (e.g. ``floor:42``)."""
    if not _JACKPOT_ID.fullmatch(value):
        raise InvalidArgument(
            f"jackpot_id {excerpt(value)} is not a jackpot id such as 'casino-floor:42'",
            field="jackpot_id",
        )
    return value
