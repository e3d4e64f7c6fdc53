"""Rules Submissions (§ 601a.2): the operator's declared configuration, validated.

A submission is a TOML file: the games offered and, for each wager, the regulation paytable
chosen by its name; the wager amounts; the progressive meters; the link groups; the tables.
Every refusal names the file's entry and cites the section it breaks. Example::

    [submission]
    operator = "Example Casino"

    [[link_groups]]
    id = "floor"

    [[meters]]
    id = "cs-main"
    link_group = "floor"
    game = "caribbean-stud"
    reset = "10000"            # dollars: initial and reset amount
    rate_percent = "15"        # rate of progression, up to 4 decimals
    reserve_rate_percent = "5"
    ceiling = "0"              # dollars; 0 = none

    [games.caribbean-stud.wagers.progressive]
    paytable = "B"
    amount = "1"               # the fixed progressive wager, dollars
    meter = "cs-main"

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
from dataclasses import dataclass
from typing import Any

from controller.domain.config import (
    LinkGroupConfig,
    MeterConfig,
    TableConfig,
    check_id,
)
from controller.domain.games import Game, get_game
from controller.domain.money import format_cents, parse_dollars_cents, parse_percent_ppm
from controller.domain.paytables import AwardKind, AwardRule, Paytable
from controller.domain.wagers import SUIT_NAMES, WagerTable
from controller.errors import InvalidAmount, InvalidConfiguration


@dataclass(frozen=True, slots=True)
class WagerOffer:
    """One wager a game offers: the chosen paytable and the amounts (cents).

    A progressive wager has a fixed ``amount_cents`` and a ``meter_id``; other wagers have a
    ``min_cents``..``max_cents`` range.
    """

    wager: str
    paytable: Paytable
    amount_cents: int = 0
    min_cents: int = 0
    max_cents: int = 0
    meter_id: str = ""


@dataclass(frozen=True, slots=True)
class TableOffer:
    """A table of the submission: its game, seats and link group."""

    table_id: str
    game: str
    seats: int
    link_group_id: str


@dataclass(frozen=True, slots=True)
class RulesSubmission:
    """A validated Rules Submission."""

    operator: str
    link_groups: tuple[LinkGroupConfig, ...]
    meters: tuple[MeterConfig, ...]
    games: dict[str, dict[str, WagerOffer]]
    tables: tuple[TableOffer, ...]

    def unsettled_tables(self) -> list[TableOffer]:
        """Tables of games whose rounds the controller does not settle yet (not registered)."""
        return [t for t in self.tables if not get_game(t.game).settled]

    def table_configs(self) -> list[TableConfig]:
        """The tables the controller settles (a progressive wager, a game it settles), as it
        registers them."""
        configs = []
        for table in self.tables:
            progressive = self.games[table.game].get("progressive")
            if progressive is not None and get_game(table.game).settled:
                configs.append(
                    TableConfig(
                        table.table_id,
                        table.game,
                        progressive.paytable.name,
                        table.seats,
                        table.link_group_id,
                        progressive.meter_id,
                        progressive.amount_cents,
                    )
                )
        return configs


_KEYS = {
    "submission": {"operator", "submitted", "notes"},
    "link_groups": {"id", "description"},
    "meters": {
        "id",
        "link_group",
        "game",
        "reset",
        "rate_percent",
        "reserve_rate_percent",
        "ceiling",
    },
    "tables": {"id", "game", "seats", "link_group"},
    "wager": {"paytable", "amount", "meter", "min", "max", "lines", "declared_suit"},
    "line": {"hand", "suit", "award"},
    "top": {"submission", "link_groups", "meters", "games", "tables"},
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


def _wager_offer(game: Game, wager_name: str, data: Mapping[str, Any]) -> WagerOffer:
    where = f"games.{game.name}.wagers.{wager_name}"
    _only(where, data, "wager")
    wager = game.wager(wager_name)
    if wager.paytables:
        if "lines" in data:
            raise InvalidConfiguration(
                f"{where}: {wager.citation} prints this wager's paytables; choose one by name "
                "instead of writing lines"
            )
        paytable = wager.paytable(_entry(where, data, "paytable"))
    else:
        paytable = _written_paytable(where, wager, data)
    if wager_name == "progressive":
        amount = _dollars(where, data, "amount")
        if amount <= 0:
            raise InvalidConfiguration(f"{where}: the progressive wager must be above $0")
        return WagerOffer(
            wager_name,
            paytable,
            amount_cents=amount,
            meter_id=check_id(_entry(where, data, "meter"), "meter id"),
        )
    if any(rule.kind is AwardKind.PERCENT_OF_METER for _, rule in paytable.lines):
        raise InvalidConfiguration(f"{where}: only a progressive wager pays a share of a meter")
    low, high = _dollars(where, data, "min"), _dollars(where, data, "max")
    if not 0 < low <= high:
        raise InvalidConfiguration(
            f"{where}: wager limits must satisfy 0 < min <= max, got {format_cents(low)} to "
            f"{format_cents(high)}"
        )
    return WagerOffer(wager_name, paytable, min_cents=low, max_cents=high)


def _written_paytable(where: str, wager: WagerTable, data: Mapping[str, Any]) -> Paytable:
    """A paytable the seeds do not print, written out line by line in the submission.

    Each line names a hand the game can make (``mini_royal``), optionally in a suit
    (``suit = "spades"``, or ``"declared"`` with the wager's ``declared_suit``), and its
    award as a paytable prints it. A hand the game cannot produce is refused.
    """
    known = wager.known_lines()
    declared = data.get("declared_suit")
    lines: list[tuple[str, AwardRule]] = []
    for number, raw in enumerate(_table_of(data, "lines"), start=1):
        at = f"{where}.lines[{number}]"
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
        if line not in known:
            raise InvalidConfiguration(
                f"{at}: {wager.title} ({wager.citation}) cannot produce a hand {line!r}; its "
                f"hands are {', '.join(sorted(h for h in known if '_in_' not in h))}"
            )
        if any(line == existing for existing, _ in lines):
            raise InvalidConfiguration(f"{at}: hand {line!r} is listed twice")
        lines.append((line, AwardRule.parse(str(_entry(at, raw, "award")))))
    if not lines:
        raise InvalidConfiguration(
            f"{where}: the seeds print no paytable for the {wager.title}; write it out as "
            "[[...lines]] with hand and award"
        )
    return Paytable(str(data.get("paytable", "submitted")), "Rules Submission", tuple(lines))


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
        )
    except InvalidConfiguration as error:
        if str(error).startswith(where):
            raise
        raise InvalidConfiguration(f"{where}: {error}") from None


def _games(
    data: Mapping[str, Any], meter_by_id: dict[str, MeterConfig]
) -> dict[str, dict[str, WagerOffer]]:
    """The [games] section: each game's wagers, each progressive tied to a declared meter."""

    games: dict[str, dict[str, WagerOffer]] = {}
    games_data = data.get("games", {})
    if not isinstance(games_data, dict) or not games_data:
        raise InvalidConfiguration("the submission offers no game: add [games.<name>.wagers.*]")
    for game_name, game_data in games_data.items():
        game = get_game(game_name)
        wagers_data = game_data.get("wagers", {}) if isinstance(game_data, dict) else {}
        if not wagers_data:
            raise InvalidConfiguration(f"games.{game_name}: no wager is offered")
        offers = {name: _wager_offer(game, name, w) for name, w in wagers_data.items()}
        progressive = offers.get("progressive")
        if progressive is not None:
            funding = meter_by_id.get(progressive.meter_id)
            if funding is None:
                raise InvalidConfiguration(
                    f"games.{game_name}.wagers.progressive: meter {progressive.meter_id} is not "
                    "declared in [[meters]]"
                )
            if funding.game != game_name:
                raise InvalidConfiguration(
                    f"games.{game_name}.wagers.progressive: meter {funding.meter_id} funds "
                    f"{funding.game}, not {game_name}"
                )
        games[game_name] = offers
    return games


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

    games = _games(data, meter_by_id)

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
    submission = RulesSubmission(operator, groups, tuple(meters), games, tuple(tables))
    submission.table_configs()  # every registrable table validates as the controller will
    return submission


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
    refusal = game.seats_refusal(where, table.seats)
    if refusal:
        raise InvalidConfiguration(refusal)
    if table.link_group_id not in group_ids:
        raise InvalidConfiguration(
            f"{where}: link group {table.link_group_id} is not declared in [[link_groups]]"
        )
    for offer in games[table.game].values():
        meter = meters.get(offer.meter_id)
        if meter is not None and meter.link_group_id != table.link_group_id:
            raise InvalidConfiguration(
                f"{where}: the table is in link group {table.link_group_id} but its "
                f"{offer.wager} meter {meter.meter_id} is in {meter.link_group_id}; all of a "
                "table's meters are in one link group"
            )
