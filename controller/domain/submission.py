"""Rules Submissions (§ 601a.2): the operator's declared configuration, validated.

A submission is a TOML file: the games offered and, for each wager, the regulation paytable
chosen by its name; the wager amounts; the progressive meters; the link groups; the tables.
Every refusal names the file's entry and cites the section it breaks. Example::

    [submission]
    operator = "Example Casino"

    [[link_groups]]
    id = "floor"
    title = "Caribbean Stud Progressive"  # the sign's title (optional; else the id)

    [[meters]]
    id = "cs-main"
    title = "Jackpot"          # the meter's name on the sign (optional)
    link_group = "floor"
    game = "caribbean-stud"
    reset = "10000"            # dollars: initial and reset amount
    rate_percent = "15"        # rate of progression, up to 4 decimals
    reserve_rate_percent = "5"
    ceiling = "0"              # dollars; 0 = none

    [[meters]]                 # a must-hit-by mystery meter (docs/mystery.md): no ceiling,
    id = "cs-mystery"          # paid by no paytable line, hit at a point drawn in
    link_group = "floor"       # (reset, must_hit_by]
    game = "caribbean-stud"
    kind = "must_hit_by"       # "progressive" (the default) or "must_hit_by"
    reset = "10000"
    must_hit_by = "12500"      # dollars: the most it can reach (required for must_hit_by)
    rate_percent = "2"

    [games.caribbean-stud]
    validation_threshold = "1200"  # dollars: a fixed award above it awaits validation

    [games.caribbean-stud.wagers.progressive]
    paytable = "B"
    amount = "1"               # the fixed progressive wager, dollars
    meters = ["cs-main", "cs-mystery"]  # the first pays "P% of meter"

    [games.caribbean-stud.wagers.bonus]
    paytable = "A"
    min = "1"
    max = "100"

    [[tables]]
    id = "cs-1"
    game = "caribbean-stud"
    seats = 7
    link_group = "floor"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.domain.bounds import check_id
from controller.domain.config import (
    MUST_HIT_BY,
    PROGRESSIVE,
    LinkGroupConfig,
    MeterConfig,
    TableConfig,
    WagerOffer,
    payout_limit_floor_cents,
)
from controller.domain.games import Game, get_game
from controller.domain.gaming_day import GamingDay
from controller.domain.offers import WagerDeclaration, wager_offer
from controller.domain.wagers import SUIT_NAMES
from jackpot.errors import InvalidAmount, InvalidConfiguration
from jackpot.kinds import AwardKind
from jackpot.money import format_cents, parse_dollars_cents, parse_percent_ppm


@dataclass(frozen=True, slots=True)
class TableOffer:
    """A table of the submission: its game, seats and link group."""

    table_id: str
    game: str
    seats: int
    link_group_id: str


@dataclass(frozen=True, slots=True)
class RulesSubmission:
    """A validated Rules Submission. ``payout_limits`` maps a game to its aggregate payout
    limit per hand in cents (§ 647a.12(c)); games without one are absent.
    ``validation_thresholds`` maps every game to the amount in cents above which a fixed
    award awaits a supervisor's validation, as every percentage award does
    (§ 639a.11(c)(5)(iii), read conservatively)."""

    operator: str
    link_groups: tuple[LinkGroupConfig, ...]
    meters: tuple[MeterConfig, ...]
    games: dict[str, dict[str, WagerOffer]]
    tables: tuple[TableOffer, ...]
    payout_limits: dict[str, int] = field(default_factory=dict)
    validation_thresholds: dict[str, int] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    """The names the players read on the sign (:mod:`controller.web.display`): a link
    group's ``title`` (``[[link_groups]] title = "Caribbean Stud Progressive"``) and a
    meter's (``[[meters]] title = "Mega Jackpot"``), by id; absent: none given."""
    gaming_day: GamingDay | None = None
    """The casino's gaming day (``[gaming_day] zone = "America/New_York"``, ``start_hour =
    6``): what every report's ``--day`` and ``jackpotctl day close`` count in; None when the
    submission does not declare one (those commands then refuse unless given one)."""

    def table_configs(self) -> list[TableConfig]:
        """Every table as the controller registers it, with every wager its game offers."""
        return [
            TableConfig(
                table.table_id,
                table.game,
                table.seats,
                table.link_group_id,
                tuple(self.games[table.game].values()),
                self.payout_limits.get(table.game, 0),
                self.validation_thresholds.get(table.game),
            )
            for table in self.tables
        ]


_KEYS = {
    "submission": {"operator", "submitted", "notes"},
    "link_groups": {"id", "description", "title"},
    "meters": {
        "id",
        "link_group",
        "game",
        "reset",
        "rate_percent",
        "reserve_rate_percent",
        "ceiling",
        "kind",
        "must_hit_by",
        "title",
    },
    "tables": {"id", "game", "seats", "link_group"},
    "wager": {
        "paytable",
        "amount",
        "meter",
        "meters",
        "min",
        "max",
        "lines",
        "envy",
        "declared_suit",
    },
    "game": {"wagers", "payout_limit", "validation_threshold"},
    "gaming_day": {"zone", "start_hour"},
    "line": {"hand", "suit", "award"},
    "top": {"submission", "link_groups", "meters", "games", "tables", "gaming_day"},
}


def _only(where: str, data: Mapping[str, Any], allowed: str) -> None:
    """Refuse keys a section does not have (a misspelt key must not be ignored)."""
    unknown = sorted(set(data) - _KEYS[allowed])
    if unknown:
        raise InvalidConfiguration(
            f"{where}: unknown key {unknown[0]!r}; the keys here are "
            f"{', '.join(sorted(_KEYS[allowed]))}"
        )


def _unique(section: str, ids: list[str]) -> None:
    seen: set[str] = set()
    for item_id in ids:
        if item_id in seen:
            raise InvalidConfiguration(f"{section}: id {item_id!r} is declared twice")
        seen.add(item_id)


def _entry(where: str, data: Mapping[str, Any], key: str, kind: type = str) -> Any:
    value = data.get(key)
    if value is None:
        raise InvalidConfiguration(f"{where}: '{key}' is required")
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidConfiguration(f"{where}: '{key}' must be a {kind.__name__}, got {value!r}")
    return value


def _dollars(where: str, data: Mapping[str, Any], key: str, default: str | None = None) -> int:
    """An amount of dollars given as a string ("10000", "12.50") or a whole number; a TOML
    float is refused, since binary floating point cannot hold every amount exactly."""
    text = data.get(key, default)
    if text is None:
        raise InvalidConfiguration(f"{where}: '{key}' is required")
    if isinstance(text, bool) or not isinstance(text, str | int):
        raise InvalidConfiguration(
            f"{where}: '{key}' must be dollars as a string such as \"12.50\" or a whole "
            f"number, got {text!r}"
        )
    try:
        return parse_dollars_cents(str(text))
    except InvalidAmount as error:
        raise InvalidConfiguration(f"{where}: {key}: {error}") from None


def _table_of(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = data.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise InvalidConfiguration(f"'{key}' must be an array of tables ([[{key}]])")
    return items


def _limits(where: str, data: Mapping[str, Any]) -> tuple[int, int]:
    """A wager's amounts: ``amount`` for a fixed wager, or ``min`` and ``max``."""
    if "amount" in data:
        if "min" in data or "max" in data:
            raise InvalidConfiguration(f"{where}: give either amount (fixed) or min and max")
        amount = _dollars(where, data, "amount")
        return amount, amount
    return _dollars(where, data, "min"), _dollars(where, data, "max")


def _meter_ids(where: str, data: Mapping[str, Any]) -> tuple[str, ...]:
    """``meter = "id"`` or ``meters = ["grand", "minor"]`` (the first pays "P% of meter")."""
    if "meter" in data and "meters" in data:
        raise InvalidConfiguration(f"{where}: give either meter or meters")
    if "meter" in data:
        return (check_id(_entry(where, data, "meter"), "meter id"),)
    ids = data.get("meters", [])
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidConfiguration(f"{where}: 'meters' must be a list of meter ids")
    return tuple(check_id(i, "meter id") for i in ids)


def _wager_offer(game: Game, wager_name: str, data: Mapping[str, Any]) -> WagerOffer:
    where = f"games.{game.facts.name}.wagers.{wager_name}"
    _only(where, data, "wager")
    wager = game.wager(wager_name)
    envy = _written_lines(where, "envy", data) if "envy" in data else []
    printed = bool(wager.paytables)
    if printed and "lines" in data:
        raise InvalidConfiguration(
            f"{where}: {wager.facts.citation} prints this wager's paytables; choose one "
            "by name instead of writing lines"
        )
    declared = WagerDeclaration(
        wager_name,
        _entry(where, data, "paytable") if printed else str(data.get("paytable", "")),
        () if printed else tuple(_written_lines(where, "lines", data)),
        tuple(envy),
        *_limits(where, data),
        _meter_ids(where, data),
    )
    offer = wager_offer(game, declared, where)
    offer.check(game, where)
    return offer


def _written_lines(where: str, key: str, data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Lines written out in the submission, as (hand line, award text).

    Each names a hand the game can make (``mini_royal``), optionally in a suit
    (``suit = "spades"``, or ``"declared"`` with the wager's ``declared_suit``); the wager
    refuses a hand it cannot produce.
    """
    declared = data.get("declared_suit")
    lines: list[tuple[str, str]] = []
    for number, raw in enumerate(_table_of(data, key), start=1):
        at = f"{where}.{key}[{number}]"
        _only(at, raw, "line")
        line = str(_entry(at, raw, "hand"))
        suit = raw.get("suit")
        if suit == "declared":
            suit = declared
            if suit is None:
                raise InvalidConfiguration(f"{at}: suit 'declared' needs the wager's declared_suit")
        if suit is not None:
            if suit not in SUIT_NAMES.values():
                raise InvalidConfiguration(
                    f"{at}: suit {suit!r} is not one of {', '.join(SUIT_NAMES.values())}"
                )
            line = f"{line}_in_{suit}"
        lines.append((line, str(_entry(at, raw, "award"))))
    return lines


def _meter(where: str, raw: Mapping[str, Any]) -> MeterConfig:
    """One [[meters]] entry; a refusal names the entry."""
    try:
        return MeterConfig(
            meter_id=_entry(where, raw, "id"),
            link_group_id=_entry(where, raw, "link_group"),
            game=_entry(where, raw, "game"),
            reset_cents=_dollars(where, raw, "reset"),
            rate_ppm=parse_percent_ppm(
                str(_entry(where, raw, "rate_percent")), "rate of progression"
            ),
            reserve_rate_ppm=parse_percent_ppm(
                str(raw.get("reserve_rate_percent", "0")), "reserve rate"
            ),
            ceiling_cents=_dollars(where, raw, "ceiling", "0"),
            kind=str(raw.get("kind", PROGRESSIVE)),
            must_hit_by_cents=_dollars(where, raw, "must_hit_by", "0"),
        )
    except InvalidConfiguration as error:
        if str(error).startswith(where):
            raise
        raise InvalidConfiguration(f"{where}: {error}") from None


VALIDATION_CITATION = "§ 639a.11(c)(5)(iii)"
"""The floorperson's validation of a progressive payout, read conservatively: the Rules
Submission says which fixed awards the controller holds for validation too."""


def _validation_threshold(where: str, game_data: Mapping[str, Any]) -> int:
    """A game's required validation threshold, in cents."""
    if "validation_threshold" not in game_data:
        raise InvalidConfiguration(
            f"{where}: validation_threshold is required: the amount in dollars above "
            "which a fixed award awaits a supervisor's validation, as every percentage "
            f'award does ({VALIDATION_CITATION}); "0" holds every fixed award'
        )
    return _dollars(where, game_data, "validation_threshold")


def _check_percent_meters(
    where: str, offer: WagerOffer, meter_by_id: dict[str, MeterConfig]
) -> None:
    """Refuse a "P% of meter" line paying from a must-hit-by meter, which pays only its
    mystery hit (as registration does, ``Tables.register_table``)."""
    for line, rule in offer.paytable.lines:
        if rule.kind is AwardKind.PERCENT_OF_METER:
            meter_id = offer.meter_of(rule)
            if meter_by_id[meter_id].kind == MUST_HIT_BY:
                raise InvalidConfiguration(
                    f"{where}: {line} pays {rule.text} from must-hit-by meter {meter_id}, which "
                    "pays only its mystery hit; list a progressive meter first"
                )


def _games(
    data: Mapping[str, Any], meter_by_id: dict[str, MeterConfig]
) -> tuple[dict[str, dict[str, WagerOffer]], dict[str, int], dict[str, int]]:
    """The [games] section: each game's wagers, each meter a wager feeds declared for that
    game; each game's payout limit per hand, where its regulation has one; and each game's
    validation threshold (required: above it a fixed award awaits validation)."""
    games: dict[str, dict[str, WagerOffer]] = {}
    limits: dict[str, int] = {}
    thresholds: dict[str, int] = {}
    games_data = data.get("games", {})
    if not isinstance(games_data, dict) or not games_data:
        raise InvalidConfiguration("the submission offers no game: add [games.<name>.wagers.*]")
    for game_name, game_data in games_data.items():
        game = get_game(game_name)
        where = f"games.{game_name}"
        if not isinstance(game_data, dict):
            raise InvalidConfiguration(f"{where} must be a table")
        _only(where, game_data, "game")
        wagers_data = game_data.get("wagers", {})
        if not wagers_data:
            raise InvalidConfiguration(f"{where}: no wager is offered")
        offers = {name: _wager_offer(game, name, w) for name, w in wagers_data.items()}
        for offer in offers.values():
            for meter_id in offer.meter_ids:
                funding = meter_by_id.get(meter_id)
                if funding is None:
                    raise InvalidConfiguration(
                        f"{where}.wagers.{offer.wager}: meter {meter_id} is not declared in "
                        "[[meters]]"
                    )
                if funding.game != game_name:
                    raise InvalidConfiguration(
                        f"{where}.wagers.{offer.wager}: meter {meter_id} funds "
                        f"{funding.game}, not {game_name}"
                    )
            _check_percent_meters(f"{where}.wagers.{offer.wager}", offer, meter_by_id)
        if game.payout_limit_citation:
            if "payout_limit" not in game_data:
                raise InvalidConfiguration(
                    f"{where}: payout_limit is required: the aggregate payout limit per hand, "
                    f"at least {format_cents(payout_limit_floor_cents(game, offers.values()))} "
                    f"({game.payout_limit_citation})"
                )
            limits[game_name] = _dollars(where, game_data, "payout_limit")
        elif "payout_limit" in game_data:
            raise InvalidConfiguration(f"{where}: {game.facts.title} has no payout limit per hand")
        thresholds[game_name] = _validation_threshold(where, game_data)
        games[game_name] = offers
    return games, limits, thresholds


def parse_submission(data: Mapping[str, Any]) -> RulesSubmission:
    """Validate a parsed TOML document; raise :class:`InvalidConfiguration` naming the entry."""
    _only("the submission", data, "top")
    header = data.get("submission", {})
    if not isinstance(header, dict):
        raise InvalidConfiguration("[submission] must be a table with the operator's name")
    _only("submission", header, "submission")
    operator = str(header.get("operator", ""))
    for section, kind in (
        ("link_groups", "link_groups"),
        ("meters", "meters"),
        ("tables", "tables"),
    ):
        items = _table_of(data, section)
        for item in items:
            _only(f"{section}.{item.get('id', '?')}", item, kind)
        _unique(section, [str(item.get("id")) for item in items])
    groups = tuple(
        LinkGroupConfig(
            check_id(_entry("link_groups", g, "id"), "link group id"), str(g.get("description", ""))
        )
        for g in _table_of(data, "link_groups")
    )
    group_ids = {g.link_group_id for g in groups}
    meters = []
    for raw in _table_of(data, "meters"):
        where = f"meters.{raw.get('id', '?')}"
        meter = _meter(where, raw)
        if meter.link_group_id not in group_ids:
            raise InvalidConfiguration(
                f"{where}: link group {meter.link_group_id} is not declared in [[link_groups]]"
            )
        meters.append(meter)
    meter_by_id = {m.meter_id: m for m in meters}

    games, limits, thresholds = _games(data, meter_by_id)

    tables = []
    for raw in _table_of(data, "tables"):
        where = f"tables.{raw.get('id', '?')}"
        table = TableOffer(
            check_id(_entry(where, raw, "id"), "table id"),
            _entry(where, raw, "game"),
            _entry(where, raw, "seats", int),
            _entry(where, raw, "link_group"),
        )
        _check_table(where, table, games, meter_by_id, group_ids)
        tables.append(table)
    titles = {
        str(item["id"]): _title(f"{section}.{item['id']}", item)
        for section in ("link_groups", "meters")
        for item in _table_of(data, section)
        if "title" in item
    }
    submission = RulesSubmission(
        operator,
        groups,
        tuple(meters),
        games,
        tuple(tables),
        limits,
        thresholds,
        titles,
        _gaming_day(data),
    )
    _configs(submission)  # every table validates as the controller will register it
    return submission


def _gaming_day(data: Mapping[str, Any]) -> GamingDay | None:
    """The ``[gaming_day]`` table: an IANA ``zone`` and a whole ``start_hour`` 0-23."""
    if "gaming_day" not in data:
        return None
    raw = data["gaming_day"]
    if not isinstance(raw, dict):
        raise InvalidConfiguration("[gaming_day] must be a table with zone and start_hour")
    _only("gaming_day", raw, "gaming_day")
    zone = _entry("gaming_day", raw, "zone")
    hour = _entry("gaming_day", raw, "start_hour", int)
    return GamingDay(zone, hour)


TITLE_MAX_CHARS = 60
"""A title on the sign: one line, read across a pit."""


def _title(where: str, data: Mapping[str, Any]) -> str:
    """A sign's title: printable text of 1 to :data:`TITLE_MAX_CHARS` characters."""
    title = str(_entry(where, data, "title"))
    if not 0 < len(title.strip()) <= TITLE_MAX_CHARS or not title.isprintable():
        raise InvalidConfiguration(
            f"{where}: title must be printable text of 1 to {TITLE_MAX_CHARS} characters, "
            f"got {title[:80]!r}"
        )
    return title.strip()


def _configs(submission: RulesSubmission) -> list[TableConfig]:
    try:
        return submission.table_configs()
    except InvalidConfiguration as error:
        raise InvalidConfiguration(f"tables: {error}") from None


def _check_table(
    where: str,
    table: TableOffer,
    games: dict[str, dict[str, WagerOffer]],
    meters: dict[str, MeterConfig],
    group_ids: set[str],
) -> None:
    game = get_game(table.game)
    if table.game not in games:
        raise InvalidConfiguration(f"{where}: game {table.game} is not offered in [games]")
    refusal = game.facts.seats_refusal(where, table.seats)
    if refusal:
        raise InvalidConfiguration(refusal)
    if table.link_group_id not in group_ids:
        raise InvalidConfiguration(
            f"{where}: link group {table.link_group_id} is not declared in [[link_groups]]"
        )
    for offer in games[table.game].values():
        for meter_id in offer.meter_ids:
            meter = meters[meter_id]
            if meter.link_group_id != table.link_group_id:
                raise InvalidConfiguration(
                    f"{where}: the table is in link group {table.link_group_id} but its "
                    f"{offer.wager} meter {meter.meter_id} is in {meter.link_group_id}; all of "
                    "a table's meters are in one link group"
                )
