"""Money and rates as integers: cents on the wire, microcents on the meters, ppm for rates.

* An amount of money is an ``int`` of US cents (``amount_cents``).
* A meter keeps microcents (``_microcents``): 1 cent = 1,000,000 microcents. A rate of
  progression has up to four decimal places of a percent, i.e. it is a whole number of parts
  per million (ppm) of the wager, so a whole-cent wager times a ppm rate is a whole number of
  microcents: ``contribution_microcents = amount_cents * rate_ppm``, with nothing rounded.
* A display or an award sees whole cents: ``floor(microcents / 1,000,000)``. The sub-cent
  remainder stays on the meter; it is never dropped.

No float is used anywhere in this module, and callers must not use one near an amount.
"""

from __future__ import annotations

import re

from jackpot.errors import InvalidAmount, InvalidConfiguration

MICROCENTS_PER_CENT = 1_000_000
PPM_PER_PERCENT = 10_000  # 1% = 10,000 parts per million
FULL_PPM = 100 * PPM_PER_PERCENT  # 100% = 1,000,000 ppm

# Meter arithmetic inside Redis's Lua runs on IEEE doubles, exact for integers below 2**53.
# 2**53 microcents is $90,071,992.54; meters, reserves and ceilings stay below this bound.
MAX_EXACT_MICROCENTS = 2**53 - 1
MAX_METER_CENTS = MAX_EXACT_MICROCENTS // MICROCENTS_PER_CENT

_PERCENT = re.compile(r"^(\d{1,3})(?:\.(\d{1,4}))?$")
# At most 15 digits of dollars: far above any meter, far below any integer limit.
_DOLLARS = re.compile(r"^\$?(\d{1,3}(?:,\d{3}){1,4}|\d{1,15})(?:\.(\d{1,2}))?$")


def parse_percent_ppm(text: str, what: str) -> int:
    """Parse a percent with at most four decimals ("15", "0.1234", "100") into ppm.

    ``what`` names the field in the error message. The result is 0..1,000,000.
    """
    match = _PERCENT.match(text.strip())
    if not match:
        raise InvalidConfiguration(
            f"{what} {text!r} is not a percent with at most 4 decimal places (e.g. '15.25')"
        )
    whole, fraction = match.group(1), (match.group(2) or "")
    ppm = int(whole) * PPM_PER_PERCENT + int(fraction.ljust(4, "0"))
    if ppm > FULL_PPM:
        raise InvalidConfiguration(f"{what} {text}% is above 100%")
    return ppm


def format_percent(ppm: int) -> str:
    """ppm as the shortest exact percent string: 150,000 -> "15", 1,234 -> "0.1234"."""
    whole, fraction = divmod(ppm, PPM_PER_PERCENT)
    if fraction == 0:
        return str(whole)
    return f"{whole}.{fraction:04d}".rstrip("0")


def parse_dollars_cents(text: str) -> int:
    """Parse "$10,000", "10000" or "12.50" into cents; raise :class:`InvalidAmount` otherwise."""
    match = _DOLLARS.match(text.strip())
    if not match:
        raise InvalidAmount(
            f"{text[:32]!r} is not an amount of dollars such as '10000' or '12.50' (at most "
            "15 digits)"
        )
    dollars = int(match.group(1).replace(",", ""))
    cents = int((match.group(2) or "").ljust(2, "0"))
    return dollars * 100 + cents


def format_cents(amount_cents: int) -> str:
    """Cents as dollars for people: 1234567 -> "$12,345.67"; negative amounts keep the sign."""
    sign = "-" if amount_cents < 0 else ""
    dollars, cents = divmod(abs(amount_cents), 100)
    return f"{sign}${dollars:,}.{cents:02d}"


def floor_cents(microcents: int) -> int:
    """Whole cents of a microcent amount, rounded down (what a display and an award see)."""
    return microcents // MICROCENTS_PER_CENT


def percent_of_cents(amount_cents: int, ppm: int) -> int:
    """``ppm`` parts per million of ``amount_cents``, rounded down to the cent."""
    return amount_cents * ppm // FULL_PPM
