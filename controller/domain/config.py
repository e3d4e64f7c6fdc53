"""Link groups, meters and tables: the configuration a round is settled against.

Every constructor validates, so a configuration object that exists is one the regulation and
the design accept. Identifiers are 1-64 characters of ``[A-Za-z0-9._-]``, so they can be put
into Redis key names (no braces, colons or spaces) and into metric labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.domain.bounds import check_id
from controller.domain.games import Game, get_game
from controller.domain.paytables import AwardRule, Paytable
from jackpot.errors import InvalidAmount, InvalidConfiguration
from jackpot.games import DEFAULT_WAGER_CENTS
from jackpot.kinds import AwardKind
from jackpot.money import FULL_PPM, MAX_METER_CENTS, format_cents, format_percent

# Keeps wager x rate (microcents) and wager x the largest "N for 1" exact in Redis's Lua.
MAX_WAGER_CENTS = 100_000_000  # $1,000,000


PROGRESSIVE = "progressive"
MUST_HIT_BY = "must_hit_by"
METER_KINDS = (PROGRESSIVE, MUST_HIT_BY)
"""A meter's kind: paid by percentage-of-meter lines, or a must-hit-by mystery meter."""


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

    ``kind`` is ``"progressive"`` (paid by "P% of meter" lines) or ``"must_hit_by"``: a
    mystery meter (docs/mystery.md) that pays the contribution reaching a hit point drawn in
    (reset, ``must_hit_by_cents``]; it has no ceiling (it never passes its cap).
    """

    meter_id: str
    link_group_id: str
    game: str
    reset_cents: int
    rate_ppm: int
    reserve_rate_ppm: int = 0
    ceiling_cents: int = 0
    kind: str = PROGRESSIVE
    must_hit_by_cents: int = 0

    def __post_init__(self) -> None:
        check_id(self.meter_id, "meter id")
        check_id(self.link_group_id, "link group id")
        game = get_game(self.game)
        game.wager("progressive")  # a meter funds a progressive wager the game must have
        if self.reset_cents < game.min_reset_cents:
            raise InvalidConfiguration(
                f"reset amount {format_cents(self.reset_cents)} of meter {self.meter_id} is "
                f"below the {format_cents(game.min_reset_cents)} minimum for {game.facts.title} "
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
        self._check_kind()

    def _check_kind(self) -> None:
        if self.kind not in METER_KINDS:
            raise InvalidConfiguration(
                f"meter {self.meter_id}: kind {self.kind!r} is not one of {', '.join(METER_KINDS)}"
            )
        if self.kind == PROGRESSIVE:
            if self.must_hit_by_cents:
                raise InvalidConfiguration(
                    f"meter {self.meter_id}: must_hit_by_cents is for a must_hit_by meter only"
                )
            return
        if not self.reset_cents < self.must_hit_by_cents <= MAX_METER_CENTS:
            raise InvalidConfiguration(
                f"must-hit-by amount {format_cents(self.must_hit_by_cents)} of meter "
                f"{self.meter_id} must be above the reset amount {format_cents(self.reset_cents)} "
                f"and at most {format_cents(MAX_METER_CENTS)}"
            )
        if self.ceiling_cents:
            raise InvalidConfiguration(
                f"meter {self.meter_id}: a must_hit_by meter has no ceiling (it hits at most at "
                f"its must-hit-by amount {format_cents(self.must_hit_by_cents)})"
            )


@dataclass(frozen=True, slots=True)
class WagerOffer:
    """A wager a table offers: its paytable, its limits (cents) and the meters it feeds.

    A fixed wager has ``min_cents == max_cents`` (the chip on the progressive sensor). Each
    accepted wager contributes to every meter in ``meter_ids`` at that meter's rate; a
    "P% of meter" line pays from the meter it names, or from the first one.
    """

    wager: str
    paytable: Paytable
    min_cents: int
    max_cents: int
    meter_ids: tuple[str, ...] = ()

    def check(self, game: Game, where: str) -> None:
        """Refuse an offer the game or this controller cannot settle; ``where`` names it."""
        rules = game.wager(self.wager)
        if not 0 < self.min_cents <= self.max_cents <= MAX_WAGER_CENTS:
            raise InvalidConfiguration(
                f"{where}: wager limits must satisfy 0 < min <= max <= "
                f"{format_cents(MAX_WAGER_CENTS)}, got {format_cents(self.min_cents)} to "
                f"{format_cents(self.max_cents)}"
            )
        for meter_id in self.meter_ids:
            check_id(meter_id, "meter id")
        if len(set(self.meter_ids)) != len(self.meter_ids):
            raise InvalidConfiguration(f"{where}: a meter is listed twice")
        named = self.paytable.meters_named()
        if named and not self.meter_ids:
            raise InvalidConfiguration(
                f"{where}: paytable {self.paytable.name} pays a share of a meter, but the wager "
                "feeds no meter"
            )
        unknown = sorted(named - {"", *self.meter_ids})
        if unknown:
            raise InvalidConfiguration(
                f"{where}: paytable {self.paytable.name} pays from meter {unknown[0]}, which "
                f"the wager does not feed ({', '.join(self.meter_ids)})"
            )
        if self.meter_ids and self.min_cents != self.max_cents:
            raise InvalidConfiguration(
                f"{where}: a wager that feeds a meter has one fixed amount (min = max)"
            )
        if self.paytable.envy_lines and not rules.facts.envy_citation:
            raise InvalidConfiguration(
                f"{where}: the {rules.facts.title} pays no envy bonus; remove its envy lines"
            )
        self._check_awards(where)

    def _check_awards(self, where: str) -> None:
        """Every fixed award fits what Redis computes exactly; envy bonuses are "$A"."""
        for line, rule in (*self.paytable.lines, *self.paytable.envy_lines):
            if rule.kind is AwardKind.PERCENT_OF_METER:
                continue
            if rule.fixed_award_cents(self.max_cents) > MAX_METER_CENTS:
                raise InvalidConfiguration(
                    f"{where}: {line} pays {rule.text} on a {format_cents(self.max_cents)} wager, "
                    f"above the largest award this controller pays exactly, "
                    f"{format_cents(MAX_METER_CENTS)}"
                )
        for line, rule in self.paytable.envy_lines:
            if rule.kind is not AwardKind.FIXED_AMOUNT:
                raise InvalidConfiguration(
                    f"{where}: envy bonus for {line} must be a fixed amount ('$A'), got "
                    f"{rule.text!r}"
                )

    @property
    def fixed(self) -> bool:
        """Whether the wager has one amount."""
        return self.min_cents == self.max_cents

    def minimum_wager_winnings_cents(self) -> int:
        """The most one wager of the minimum amount wins: its highest-paying fixed line's
        winnings (the returned wager excluded) on ``min_cents``; percentage lines count 0."""
        return self.paytable.largest_winnings_cents(self.min_cents)

    def meter_of(self, rule: AwardRule) -> str:
        """The meter a percentage line pays from."""
        return rule.meter or self.meter_ids[0]

    def to_data(self) -> dict[str, object]:
        """Plain data for the stored registration."""
        return {
            "wager": self.wager,
            "paytable": self.paytable.to_data(),
            "min_cents": self.min_cents,
            "max_cents": self.max_cents,
            "meter_ids": list(self.meter_ids),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> WagerOffer:
        """Read :meth:`to_data`'s output back."""
        return cls(
            str(data["wager"]),
            Paytable.from_data(data["paytable"]),
            int(data["min_cents"]),
            int(data["max_cents"]),
            tuple(str(m) for m in data["meter_ids"]),
        )


def payout_limit_floor_cents(game: Game, offers: Iterable[WagerOffer]) -> int:
    """The lowest aggregate payout limit per hand (cents; 0: the game has none) of a table of
    ``game`` offering ``offers``: the greater of the game's fixed floor and what one patron
    could win per round betting the minimum, taken as the sum, over the offered wagers the
    limit counts, of each one's highest-paying line on its minimum amount (winnings only, the
    returned wagers excluded). The base game's wagers (§ 647a.12(a): Ante, Flop, Turn, River,
    1 to 1) are not registered with the controller and are not counted."""
    if not game.payout_limit_citation:
        return 0
    # § 647a.12(c): "$50,000 or the maximum amount that one patron could win per round when
    # betting the minimum wager, whichever is greater" (the minimum wager, not the maximum).
    winnable = sum(
        offer.minimum_wager_winnings_cents()
        for offer in offers
        if offer.wager in game.payout_limit_wagers
    )
    return max(game.payout_limit_floor_cents, winnable)


@dataclass(frozen=True, slots=True)
class TableConfig:
    """A registered table: its game, seats, link group and the wagers it offers.

    ``payout_limit_cents`` (0 = none) is the aggregate payout limit per hand of § 647a.12(c):
    what one seat's wagers may win together in a round.

    ``validation_threshold_cents``: a fixed award above it awaits a supervisor's validation
    before it is paid, as every percentage-of-meter award does (§ 639a.11(c)(5)(iii), read
    conservatively: "validate the progressive payout"); 0 makes every fixed award wait. None:
    the registration declares no threshold, and only percentage awards wait.
    """

    table_id: str
    game: str
    seats: int
    link_group_id: str
    wagers: tuple[WagerOffer, ...]
    payout_limit_cents: int = 0
    validation_threshold_cents: int | None = None

    def __post_init__(self) -> None:
        check_id(self.table_id, "table id")
        check_id(self.link_group_id, "link group id")
        threshold = self.validation_threshold_cents
        if threshold is not None and not 0 <= threshold <= MAX_METER_CENTS:
            raise InvalidConfiguration(
                f"table {self.table_id}: validation threshold must be $0 to "
                f"{format_cents(MAX_METER_CENTS)}, got {threshold} cents"
            )
        game = self.game_rules
        refusal = game.facts.seats_refusal(f"table {self.table_id}", self.seats)
        if refusal:
            raise InvalidConfiguration(refusal)
        if not self.wagers:
            raise InvalidConfiguration(f"table {self.table_id}: offers no wager")
        names = [offer.wager for offer in self.wagers]
        for offer in self.wagers:
            if names.count(offer.wager) > 1:
                raise InvalidConfiguration(
                    f"table {self.table_id}: the {offer.wager} wager is offered twice"
                )
            offer.check(game, f"table {self.table_id} {offer.wager} wager")
        if game.payout_limit_citation and not self.payout_limit_cents:
            raise InvalidConfiguration(
                f"table {self.table_id}: {game.facts.title} needs its aggregate payout limit "
                "per hand, "
                f"at least {format_cents(self.payout_limit_floor_cents)} "
                f"({game.payout_limit_citation})"
            )
        if self.payout_limit_cents:
            if not game.payout_limit_citation:
                raise InvalidConfiguration(
                    f"table {self.table_id}: {game.facts.title} has no payout limit per hand"
                )
            if not 0 < self.payout_limit_cents <= MAX_METER_CENTS:
                raise InvalidConfiguration(
                    f"table {self.table_id}: payout limit must be above $0 and at most "
                    f"{format_cents(MAX_METER_CENTS)}"
                )
            floor = self.payout_limit_floor_cents
            if self.payout_limit_cents < floor:
                winnable = ", ".join(
                    f"{format_cents(o.minimum_wager_winnings_cents())} on the {o.wager} wager's "
                    f"{format_cents(o.min_cents)} minimum"
                    for o in self.wagers
                    if o.wager in game.payout_limit_wagers
                )
                raise InvalidConfiguration(
                    f"table {self.table_id}: payout limit {format_cents(self.payout_limit_cents)}"
                    f" is below {format_cents(floor)}; the limit is the greater of "
                    f"{format_cents(game.payout_limit_floor_cents)} and what one patron could "
                    f"win per round betting the minimum ({game.payout_limit_citation}), "
                    f"{winnable}; register a limit of at least {format_cents(floor)} or lower "
                    "the minimum wager"
                )
            if any(offer.meter_ids for offer in self.wagers):
                raise InvalidConfiguration(
                    f"table {self.table_id}: a payout limit with meter awards is not supported"
                )

    @classmethod
    def progressive(
        cls,
        table_id: str,
        game: str,
        paytable: str,
        seats: int,
        link_group_id: str,
        meter_id: str,
        wager_cents: int = DEFAULT_WAGER_CENTS,
    ) -> TableConfig:
        """A table offering only the progressive wager, fixed at ``wager_cents``, on the
        regulation paytable called ``paytable``, feeding ``meter_id``."""
        rules = get_game(game).wager("progressive")
        if not 0 < wager_cents <= MAX_WAGER_CENTS:
            raise InvalidAmount(
                f"table {table_id}: the progressive wager must be 1 to {MAX_WAGER_CENTS} "
                f"cents, got {wager_cents}"
            )
        offer = WagerOffer(
            "progressive", rules.paytable(paytable), wager_cents, wager_cents, (meter_id,)
        )
        return cls(table_id, game, seats, link_group_id, (offer,))

    @property
    def payout_limit_floor_cents(self) -> int:
        """The lowest aggregate payout limit per hand this table may register (0: none); see
        :func:`payout_limit_floor_cents`."""
        return payout_limit_floor_cents(self.game_rules, self.wagers)

    @property
    def game_rules(self) -> Game:
        """The :class:`Game` this table deals."""
        return get_game(self.game)

    @property
    def meter_ids(self) -> tuple[str, ...]:
        """Every meter the table's wagers feed, each once, in offer order."""
        return tuple(dict.fromkeys(m for offer in self.wagers for m in offer.meter_ids))

    def offer(self, wager: str) -> WagerOffer | None:
        """The offer of the wager called ``wager``, or None when the table does not offer it."""
        for offer in self.wagers:
            if offer.wager == wager:
                return offer
        return None

    def to_data(self) -> dict[str, object]:
        """Plain data for the stored registration (canonical JSON is built from it)."""
        return {
            "table_id": self.table_id,
            "game": self.game,
            "seats": self.seats,
            "link_group_id": self.link_group_id,
            "wagers": [offer.to_data() for offer in self.wagers],
            "payout_limit_cents": self.payout_limit_cents,
            "validation_threshold_cents": self.validation_threshold_cents,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> TableConfig:
        """Read :meth:`to_data`'s output back."""
        return cls(
            str(data["table_id"]),
            str(data["game"]),
            int(data["seats"]),
            str(data["link_group_id"]),
            tuple(WagerOffer.from_data(offer) for offer in data["wagers"]),
            int(data["payout_limit_cents"]),
            _optional_int(data.get("validation_threshold_cents")),
        )


def _optional_int(value: Any) -> int | None:
    """A stored optional amount (JSON null: none)."""
    return None if value is None else int(value)
