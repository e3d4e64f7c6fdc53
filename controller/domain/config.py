"""Link groups, meters and tables: the configuration a round is settled against.

Every constructor validates, so a configuration object that exists is one the regulation and
the design accept. Identifiers are 1-64 characters of ``[A-Za-z0-9._-]``, so they can be put
into Redis key names (no braces, colons or spaces) and into metric labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from controller.domain.games import Game, get_game
from controller.domain.money import FULL_PPM, MAX_METER_CENTS, format_cents, format_percent
from controller.errors import InvalidAmount, InvalidConfiguration

_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
DEFAULT_WAGER_CENTS = 100  # the $1 chip on the progressive sensor
# Keeps wager x rate (microcents) and wager x the largest "N for 1" exact in Redis's Lua.
MAX_WAGER_CENTS = 100_000_000  # $1,000,000


def check_id(value: str, what: str) -> str:
    """Return ``value`` if it is a valid identifier, else raise naming ``what`` it is."""
    if not _ID.match(value):
        raise InvalidConfiguration(
            f"{what} {value!r} must be 1-64 characters of letters, digits, '.', '_' or '-'"
        )
    return value


@dataclass(frozen=True, slots=True)
class LinkGroupConfig:
    """A set of meters and tables that share state: one Redis hash tag, one journal."""

    link_group_id: str
    description: str = ""

    def __post_init__(self) -> None:
        check_id(self.link_group_id, "link group id")


@dataclass(frozen=True, slots=True)
class MeterConfig:
    """A progressive meter's parameters, fixed at creation.

    ``rate_ppm`` (rate of progression) and ``reserve_rate_ppm`` are parts per million of each
    wager; ``reset_cents`` is the initial and the reset amount; ``ceiling_cents`` (0 = none)
    caps the meter, above it contributions go to the reserve.
    """

    meter_id: str
    link_group_id: str
    game: str
    reset_cents: int
    rate_ppm: int
    reserve_rate_ppm: int = 0
    ceiling_cents: int = 0

    def __post_init__(self) -> None:
        check_id(self.meter_id, "meter id")
        check_id(self.link_group_id, "link group id")
        game = get_game(self.game)
        game.wager("progressive")  # a meter funds a progressive wager the game must have
        if self.reset_cents < game.min_reset_cents:
            raise InvalidConfiguration(
                f"reset amount {format_cents(self.reset_cents)} of meter {self.meter_id} is "
                f"below the {format_cents(game.min_reset_cents)} minimum for {game.title} "
                f"({game.min_reset_citation})"
            )
        if self.reset_cents > MAX_METER_CENTS:
            raise InvalidConfiguration(
                f"reset amount {format_cents(self.reset_cents)} is above the largest meter "
                f"this controller keeps exactly, {format_cents(MAX_METER_CENTS)}"
            )
        if self.rate_ppm <= 0:
            raise InvalidConfiguration(
                f"rate of progression of meter {self.meter_id} must be above 0%"
            )
        if self.reserve_rate_ppm < 0 or self.rate_ppm + self.reserve_rate_ppm > FULL_PPM:
            raise InvalidConfiguration(
                f"rate of progression {format_percent(self.rate_ppm)}% plus reserve rate "
                f"{format_percent(self.reserve_rate_ppm)}% exceeds 100% of the wager"
            )
        if self.ceiling_cents and not self.reset_cents < self.ceiling_cents <= MAX_METER_CENTS:
            raise InvalidConfiguration(
                f"ceiling {format_cents(self.ceiling_cents)} must be above the reset amount "
                f"{format_cents(self.reset_cents)} and at most {format_cents(MAX_METER_CENTS)}"
            )


@dataclass(frozen=True, slots=True)
class TableConfig:
    """A registered table: its game, chosen paytable, seats, link group and meter.

    ``wager_cents`` is the fixed amount of the progressive wager at this table.
    """

    table_id: str
    game: str
    paytable: str
    seats: int
    link_group_id: str
    meter_id: str
    wager_cents: int = DEFAULT_WAGER_CENTS

    def __post_init__(self) -> None:
        check_id(self.table_id, "table id")
        check_id(self.link_group_id, "link group id")
        check_id(self.meter_id, "meter id")
        game = self.game_rules
        game.paytable(self.paytable)
        refusal = game.seats_refusal(f"table {self.table_id}", self.seats)
        if refusal:
            raise InvalidConfiguration(refusal)
        if not 0 < self.wager_cents <= MAX_WAGER_CENTS:
            raise InvalidAmount(
                f"table {self.table_id}: the progressive wager must be 1 to {MAX_WAGER_CENTS} "
                f"cents, got {self.wager_cents}"
            )

    @property
    def game_rules(self) -> Game:
        """The :class:`Game` this table deals."""
        return get_game(self.game)
