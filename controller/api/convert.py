"""Protobuf <-> domain. Protobuf types stop here: servicers hand the domain dataclasses.

Parsing checks what the wire alone can get wrong (missing ids, a round id out of range, an
unspecified enum, a card that is not a card) and the bound of every text and repeated field
(:mod:`controller.domain.bounds`), before anything is converted, and raises
:mod:`jackpot.errors` classes with messages that name the seat or field concerned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from controller.domain import bounds
from controller.domain.bounds import (
    ID_PATTERN,
    check_count,
    check_each_text,
    check_id,
    check_range,
    check_text,
    excerpt,
)
from controller.domain.config import MUST_HIT_BY, PROGRESSIVE, MeterConfig, TableConfig, WagerOffer
from controller.domain.games import get_game
from controller.domain.offers import WagerDeclaration, wager_offer
from controller.domain.paytables import Lines
from controller.domain.records import (
    JACKPOT_STATUSES,
    Adjustment,
    Jackpot,
    LinkGroupState,
    MeterState,
    RetiredMeter,
    StagedChange,
)
from controller.domain.rounds import Cards, RoundCards, SeatCards, Wager, cards_of
from controller.domain.staged_tables import StagedTableChange
from jackpot.cards import exact_cards, parse_cards
from jackpot.epochs import JournalPosition
from jackpot.errors import InvalidArgument, InvalidCards
from jackpot.hands.joker_poker import parse_joker_cards
from jackpot.kinds import WagerKind
from jackpot.money import (
    MAX_METER_CENTS,
    MICROCENTS_PER_CENT,
    format_percent,
    parse_percent_ppm,
)
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.wire import compile_encoders, enum_member, enum_number, to_message

compile_encoders(  # what this module encodes, compiled now (jackpot.codegen)
    pb.JournalPosition, pb.Maintenance, pb.Jackpot, pb.Adjustment, pb.RetiredMeter
)

MAX_ROUND_ID = 2**53 - 1  # round ids are compared inside Redis scripts, exact below 2**53

_WAGER_KINDS = pb.WagerKind.DESCRIPTOR


def table_id(value: str) -> str:
    """A table id from a request (required)."""
    if not value:
        raise InvalidArgument("table_id is required", field="table_id")
    return check_id(value, "table_id")


def optional_link_group_id(value: str) -> str:
    """A link group id filter: empty (all link groups) or an id."""
    return check_id(value, "link_group_id") if value else ""


def round_key(table: str, round_id: int) -> tuple[str, int]:
    """Check the idempotency key of an agent write: a table id and a round id in range."""
    return table_id(table), check_range(round_id, "round_id", 1, MAX_ROUND_ID)


def reason(value: str, field: str = "reason") -> str:
    """A void's (or rebase's) reason: required, printable, bounded."""
    return check_text(value, field, bounds.REASON_MAX_CHARS, required=True)


def wager_kind(number: int, where: str) -> WagerKind:
    """A wager kind's name; an unspecified or unknown kind is refused naming ``where``."""
    kind: WagerKind | None = enum_member(number, WagerKind, _WAGER_KINDS)
    if kind is None:
        raise InvalidArgument(f"{where}: wager kind is missing or unknown")
    return kind


def wagers(items: Sequence[pb.Wager]) -> list[Wager]:
    """The wagers of a lockout; an unspecified or unknown kind is refused."""
    check_count(items, "wagers", bounds.MAX_WAGERS_PER_ROUND)
    try:
        return [
            Wager(
                item.seat,
                wager_kind(item.kind, f"seat {item.seat}"),
                item.amount_cents,
                item.on_dealer_hand,
                item.envy,
            )
            for item in items
        ]
    except InvalidArgument as error:  # the refusal only: name the field (nothing per round)
        bad = next(i for i, item in enumerate(items) if item.kind not in _KNOWN_WAGER_KINDS)
        error.field = f"wagers[{bad}].kind"
        raise


_KNOWN_WAGER_KINDS = frozenset(
    number for number in _WAGER_KINDS.values_by_number if number != pb.WAGER_KIND_UNSPECIFIED
)


def _cards(texts: Sequence[str], whose: str, joker: bool) -> Cards:
    check_count(texts, f"the cards of {whose}", bounds.MAX_CARDS_PER_HAND)
    if not joker:  # as agents write them: looked up, nothing more to check
        exact = exact_cards(texts)
        if exact is not None:
            return exact
    check_each_text(texts, f"the cards of {whose}", bounds.CARD_TEXT_MAX_CHARS)
    try:
        return cards_of(parse_joker_cards(texts)) if joker else parse_cards(texts)
    except InvalidCards as error:
        raise InvalidCards(f"{whose}: {error}") from None


def round_cards(request: pb.SettleRequest, joker: bool) -> RoundCards:
    """The cards of a settlement, parsed (``joker``: the game's deck holds ``JK``)."""
    check_count(request.seats, "seats", bounds.MAX_SEAT_REPORTS)
    try:
        return RoundCards(
            seats=tuple(
                SeatCards(
                    item.seat,
                    _cards(item.cards, f"seat {item.seat}", joker),
                    item.folded,
                    check_range(
                        item.base_game_win_cents,
                        f"seat {item.seat} base_game_win_cents",
                        0,
                        MAX_METER_CENTS,
                    ),
                )
                for item in request.seats
            ),
            dealer=_cards(request.dealer_cards, "the dealer", joker),
            community=_cards(request.community_cards, "the community cards", joker),
            rest_of_round_void=check_text(
                request.rest_of_round_void, "rest_of_round_void", bounds.REASON_MAX_CHARS
            ),
        )
    except InvalidArgument as error:  # the refusal only: name the field (nothing per round)
        if not error.field:
            error.field = _bad_cards_field(request, joker, str(error))
        raise


def _bad_cards_field(request: pb.SettleRequest, joker: bool, refusal: str) -> str:
    """The cards field of a refused settlement that the refusal is about, found by parsing
    each again: the one refused with the same message ("" when none is, such as a card dealt
    twice across two hands, or a base_game_win_cents)."""
    fields = [
        (f"seats[{i}].cards", item.cards, f"seat {item.seat}")
        for i, item in enumerate(request.seats)
    ]
    fields += [
        ("dealer_cards", request.dealer_cards, "the dealer"),
        ("community_cards", request.community_cards, "the community cards"),
    ]
    for field, texts, whose in fields:
        try:
            _cards(texts, whose, joker)
        except InvalidArgument as error:
            if str(error) == refusal:
                return field
    return ""


def meter_config(request: pb.CreateMeterRequest) -> MeterConfig:
    """A meter definition from the wire (rates are decimal percent strings)."""
    check_text(request.game, "game", bounds.NAME_MAX_CHARS)
    check_text(
        request.rate_of_progression_percent,
        "rate_of_progression_percent",
        bounds.RATE_TEXT_MAX_CHARS,
    )
    check_text(request.reserve_rate_percent, "reserve_rate_percent", bounds.RATE_TEXT_MAX_CHARS)
    return MeterConfig(
        meter_id=request.meter_id,
        link_group_id=request.link_group_id,
        game=request.game,
        reset_cents=request.reset_cents,
        rate_ppm=parse_percent_ppm(request.rate_of_progression_percent, "rate of progression"),
        reserve_rate_ppm=parse_percent_ppm(request.reserve_rate_percent or "0", "reserve rate"),
        ceiling_cents=request.ceiling_cents,
        kind=_METER_KINDS.get(request.kind, ""),
        must_hit_by_cents=request.must_hit_by_cents,
    )


_METER_KINDS = {
    pb.METER_KIND_UNSPECIFIED: PROGRESSIVE,
    pb.METER_KIND_PROGRESSIVE: PROGRESSIVE,
    pb.METER_KIND_MUST_HIT_BY: MUST_HIT_BY,
}
"""A CreateMeterRequest's kind (unspecified: progressive); an unknown number is refused."""


def meter_update(request: pb.UpdateMeterRequest, old: MeterState) -> MeterConfig:
    """The meter's parameters after an update: the fields ``request`` sets, the others as
    they are; validated as a new meter's are (the store adds: a ceiling never below the
    current amount)."""
    rate, reserve_rate = old.rate_ppm, old.reserve_rate_ppm
    if request.HasField("rate_of_progression_percent"):
        text = check_text(
            request.rate_of_progression_percent,
            "rate_of_progression_percent",
            bounds.RATE_TEXT_MAX_CHARS,
        )
        rate = parse_percent_ppm(text, "rate of progression")
    if request.HasField("reserve_rate_percent"):
        text = check_text(
            request.reserve_rate_percent, "reserve_rate_percent", bounds.RATE_TEXT_MAX_CHARS
        )
        reserve_rate = parse_percent_ppm(text or "0", "reserve rate")
    given = [
        request.HasField(name)
        for name in (
            "rate_of_progression_percent",
            "reserve_rate_percent",
            "ceiling_cents",
            "reset_cents",
        )
    ]
    if not any(given):
        raise InvalidArgument(
            "nothing to change: give rate_of_progression_percent, reserve_rate_percent, "
            "ceiling_cents or reset_cents"
        )
    return MeterConfig(
        meter_id=old.meter_id,
        link_group_id=old.link_group_id,
        game=old.game,
        reset_cents=request.reset_cents if request.HasField("reset_cents") else old.reset_cents,
        rate_ppm=rate,
        reserve_rate_ppm=reserve_rate,
        ceiling_cents=(
            request.ceiling_cents if request.HasField("ceiling_cents") else old.ceiling_cents
        ),
        kind=old.kind,
        must_hit_by_cents=old.must_hit_by_cents,
    )


_ADJUSTMENT_ID = re.compile(ID_PATTERN + r":[0-9]{1,19}")


def adjustment_id(value: str) -> str:
    """An adjustment id: ``<link group id>:<journal sequence of its request>``."""
    if not _ADJUSTMENT_ID.fullmatch(value):
        raise InvalidArgument(
            f"adjustment_id {excerpt(value)} is not an adjustment id such as 'casino-floor:17'",
            field="adjustment_id",
        )
    return value


def meter(state: MeterState) -> pb.Meter:
    """A meter's parameters, values and counters for the wire."""
    return pb.Meter(
        meter_id=state.meter_id,
        link_group_id=state.link_group_id,
        game=state.game,
        reset_cents=state.reset_cents,
        rate_of_progression_percent=format_percent(state.rate_ppm),
        reserve_rate_percent=format_percent(state.reserve_rate_ppm),
        ceiling_cents=state.ceiling_cents,
        amount_cents=state.amount_microcents // MICROCENTS_PER_CENT,
        amount_microcents=state.amount_microcents,
        reserve_cents=state.reserve_microcents // MICROCENTS_PER_CENT,
        reserve_microcents=state.reserve_microcents,
        pending_jackpots=state.pending_jackpots,
        wagers_total=state.wagers_total,
        hits_total=state.hits_total,
        awards_cents_total=state.awards_cents_total,
        operator_seed_microcents_total=state.operator_seed_microcents_total,
        kind=(
            pb.METER_KIND_MUST_HIT_BY if state.kind == MUST_HIT_BY else pb.METER_KIND_PROGRESSIVE
        ),
        must_hit_by_cents=state.must_hit_by_cents,
        mystery_cycle=state.mystery_cycle,
        mystery_commitment=state.mystery_commitment,
        staged_change=staged_change(state.staged_change),
        wound_down_seq=state.wound_down_seq,
    )


CHANGE_AT = {pb.METER_CHANGE_AT_NEXT_HIT: "hit", pb.METER_CHANGE_AT_NEXT_RESET: "reset"}
"""UpdateMeter's ``at`` as the store names it (docs/staged-changes.md); NOW is not staged."""


def change_at(at: int) -> str:
    """The store's name of a staged change's moment; InvalidArgument for an unknown one."""
    if at not in CHANGE_AT:
        raise InvalidArgument(f"at must be NOW, NEXT_HIT or NEXT_RESET, not {at}", field="at")
    return CHANGE_AT[pb.MeterChangeAt.ValueType(at)]


def staged_change(staged: StagedChange | None) -> pb.StagedMeterChange | None:
    """A meter's staged change for the wire (None: none waits)."""
    if staged is None:
        return None
    at = {name: value for value, name in CHANGE_AT.items()}[staged.at]
    return pb.StagedMeterChange(
        at=at,
        staged_seq=staged.staged_seq,
        old_reset_cents=staged.old_reset_cents,
        old_rate_of_progression_percent=format_percent(staged.old_rate_ppm),
        old_reserve_rate_percent=format_percent(staged.old_reserve_rate_ppm),
        old_ceiling_cents=staged.old_ceiling_cents,
        reset_cents=staged.new_reset_cents,
        rate_of_progression_percent=format_percent(staged.new_rate_ppm),
        reserve_rate_percent=format_percent(staged.new_reserve_rate_ppm),
        ceiling_cents=staged.new_ceiling_cents,
        by=staged.by,
        reason=staged.reason,
    )


def _check_lines(lines: Sequence[pb.PaytableLine], field: str) -> None:
    check_count(lines, field, bounds.MAX_PAYTABLE_LINES)
    check_each_text([line.hand for line in lines], f"{field} hand", bounds.NAME_MAX_CHARS)
    check_each_text([line.award for line in lines], f"{field} award", bounds.AWARD_TEXT_MAX_CHARS)


def _offer(game: str, table_id: str, item: pb.TableWager) -> WagerOffer:
    kind = wager_kind(item.kind, f"table {table_id}")
    where = f"table {table_id} {kind} wager"
    check_text(item.paytable, f"{where} paytable", bounds.NAME_MAX_CHARS)
    _check_lines(item.lines, f"{where} lines")
    _check_lines(item.envy_lines, f"{where} envy_lines")
    check_count(item.meter_ids, f"{where} meter_ids", bounds.MAX_METERS_PER_WAGER)
    declared = WagerDeclaration(
        kind,
        item.paytable,
        tuple((line.hand, line.award) for line in item.lines),
        tuple((line.hand, line.award) for line in item.envy_lines),
        item.min_cents,
        item.max_cents,
        tuple(item.meter_ids),
    )
    return wager_offer(get_game(game), declared, where)


def table_config(table: pb.Table) -> TableConfig:
    """A table definition from the wire: the wagers it offers, each written out."""
    check_id(table.table_id, "table id")
    check_text(table.game, "game", bounds.NAME_MAX_CHARS)
    check_count(table.wagers, "wagers", bounds.MAX_WAGER_OFFERS)
    return TableConfig(
        table.table_id,
        table.game,
        table.seats,
        table.link_group_id,
        tuple(_offer(table.game, table.table_id, item) for item in table.wagers),
        table.payout_limit_cents,
        (
            table.validation_threshold_cents
            if table.HasField("validation_threshold_cents")
            else None
        ),
    )


def _lines(lines: Lines) -> list[pb.PaytableLine]:
    return [pb.PaytableLine(hand=line, award=rule.text) for line, rule in lines]


def table(config: TableConfig) -> pb.Table:
    """A table definition for the wire, every paytable line written out."""
    return pb.Table(
        table_id=config.table_id,
        game=config.game,
        seats=config.seats,
        link_group_id=config.link_group_id,
        wagers=[
            pb.TableWager(
                kind=pb.WagerKind.ValueType(enum_number(WagerKind(offer.wager), _WAGER_KINDS)),
                paytable=offer.paytable.name,
                lines=_lines(offer.paytable.lines),
                envy_lines=_lines(offer.paytable.envy_lines),
                min_cents=offer.min_cents,
                max_cents=offer.max_cents,
                meter_ids=offer.meter_ids,
            )
            for offer in config.wagers
        ],
        payout_limit_cents=config.payout_limit_cents,
        validation_threshold_cents=config.validation_threshold_cents,
    )


def link_group(state: LinkGroupState) -> pb.LinkGroup:
    """A link group for the wire."""
    return pb.LinkGroup(
        link_group_id=state.link_group_id,
        description=state.description,
        meter_ids=state.meter_ids,
        table_ids=state.table_ids,
        journal=to_message(state.journal, pb.JournalPosition),
        stopped=state.stopped,
        maintenance=to_message(state.maintenance, pb.Maintenance),
    )


def known_position(wire: pb.JournalPosition) -> JournalPosition:
    """A table's last acknowledged journal position from a request (checked)."""
    try:
        return JournalPosition(wire.epoch, wire.seq, wire.mac)
    except InvalidArgument as error:
        raise InvalidArgument(f"known: {error}", field="known") from None


def jackpot(record: Jackpot) -> pb.Jackpot:
    """A jackpot and its hand-pay slip for the wire (the message's fields are the record's)."""
    return to_message(record, pb.Jackpot)


def jackpot_filters(request: pb.ListJackpotsRequest) -> dict[str, Any]:
    """The filters of a jackpot listing, checked: a known status, a table id, a time range in
    ms since the Unix epoch (``from_ms`` before ``to_ms`` when both are given)."""
    if request.status and request.status not in JACKPOT_STATUSES:
        raise InvalidArgument(
            f"status {excerpt(request.status)} is not one of {', '.join(JACKPOT_STATUSES)}",
            field="status",
        )
    if request.from_ms < 0 or request.to_ms < 0:
        raise InvalidArgument(
            "from_ms and to_ms are ms since the Unix epoch, never negative",
            field="from_ms" if request.from_ms < 0 else "to_ms",
        )
    if request.from_ms and request.to_ms and request.from_ms >= request.to_ms:
        raise InvalidArgument(
            f"from_ms {request.from_ms} is not before to_ms {request.to_ms}: the range is empty"
        )
    return {
        "status": request.status,
        "table_id": table_id(request.table_id) if request.table_id else "",
        "from_ms": request.from_ms,
        "to_ms": request.to_ms,
    }


def adjustment(record: Adjustment) -> pb.Adjustment:
    """An adjustment for the wire."""
    return to_message(record, pb.Adjustment)


def retired_meter(record: RetiredMeter) -> pb.RetiredMeter:
    """A meter's retirement for the wire."""
    return to_message(record, pb.RetiredMeter)


def staged_table_change(staged: StagedTableChange) -> pb.StagedTableChange:
    """A table's staged change for the wire (docs/staged-changes.md)."""
    new = table(staged.table)
    message = pb.StagedTableChange(
        at=pb.METER_CHANGE_AT_NEXT_HIT if staged.at == "hit" else pb.METER_CHANGE_AT_NEXT_RESET,
        staged_seq=staged.staged_seq,
        meter_id=staged.meter_id,
        seats=new.seats,
        wagers=new.wagers,
        payout_limit_cents=new.payout_limit_cents,
        by=staged.by,
        reason=staged.reason,
    )
    if new.HasField("validation_threshold_cents"):
        message.validation_threshold_cents = new.validation_threshold_cents
    return message
