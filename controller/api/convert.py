"""Protobuf <-> domain. Protobuf types stop here: servicers hand the domain dataclasses.

Parsing checks what the wire alone can get wrong (missing ids, a round id out of range, an
unspecified enum, a card that is not a card) and raises :mod:`controller.errors` classes
with messages that name the seat or field concerned.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.domain.cards import Card, parse_cards
from controller.domain.config import DEFAULT_WAGER_CENTS, MeterConfig, TableConfig
from controller.domain.money import MICROCENTS_PER_CENT, format_percent, parse_percent_ppm
from controller.domain.records import (
    AcceptedWager,
    Jackpot,
    LinkGroupState,
    MeterState,
    MeterValue,
    SeatOutcome,
    SeatResult,
)
from controller.domain.rounds import SeatCards, Wager, WagerKind
from controller.errors import InvalidArgument, InvalidCards
from jackpot.v1 import jackpot_pb2 as pb

MAX_ROUND_ID = 2**53 - 1  # round ids are compared inside Redis scripts, exact below 2**53

_WAGER_KIND_FROM_PB = {pb.WAGER_KIND_PROGRESSIVE: WagerKind.PROGRESSIVE}
_WAGER_KIND_TO_PB = {kind: number for number, kind in _WAGER_KIND_FROM_PB.items()}
_AWARD_KIND_TO_PB = {
    "for_one": pb.AWARD_KIND_FOR_ONE,
    "to_one": pb.AWARD_KIND_TO_ONE,
    "percent_of_meter": pb.AWARD_KIND_PERCENT_OF_METER,
}
_OUTCOME_TO_PB = {
    SeatOutcome.PAID: pb.SEAT_OUTCOME_PAID,
    SeatOutcome.NO_AWARD: pb.SEAT_OUTCOME_NO_AWARD,
    SeatOutcome.FORFEITED: pb.SEAT_OUTCOME_FORFEITED,
    SeatOutcome.NO_WAGER: pb.SEAT_OUTCOME_NO_WAGER,
}


def round_key(table_id: str, round_id: int) -> tuple[str, int]:
    """Check the idempotency key of an agent write: a table id and a round id in range."""
    if not table_id:
        raise InvalidArgument("table_id is required")
    if not 1 <= round_id <= MAX_ROUND_ID:
        raise InvalidArgument(f"round_id must be 1 to {MAX_ROUND_ID}, got {round_id}")
    return table_id, round_id


def wagers(items: Iterable[pb.Wager]) -> list[Wager]:
    """The wagers of a lockout; an unspecified or unknown kind is refused."""
    parsed = []
    for item in items:
        kind = _WAGER_KIND_FROM_PB.get(item.kind)
        if kind is None:
            raise InvalidArgument(f"seat {item.seat}: wager kind is missing or unknown")
        parsed.append(Wager(item.seat, kind, item.amount_cents))
    return parsed


def _cards(texts: Iterable[str], whose: str) -> tuple[Card, ...]:
    try:
        return parse_cards(texts)
    except InvalidCards as error:
        raise InvalidCards(f"{whose}: {error}") from None


def seat_cards(items: Iterable[pb.SeatCards]) -> list[SeatCards]:
    """The seats of a settlement, cards parsed."""
    return [
        SeatCards(item.seat, _cards(item.cards, f"seat {item.seat}"), item.folded) for item in items
    ]


def dealer_cards(texts: Iterable[str]) -> tuple[Card, ...]:
    """The dealer's cards of a settlement, parsed."""
    return _cards(texts, "the dealer")


def meter_value(meter: MeterValue) -> pb.MeterValue:
    """A meter value for the wire."""
    return pb.MeterValue(
        meter_id=meter.meter_id,
        amount_cents=meter.amount_cents,
        amount_microcents=meter.amount_microcents,
    )


def accepted_wager(wager: AcceptedWager) -> pb.AcceptedWager:
    """An accepted (or reversed) wager for the wire."""
    return pb.AcceptedWager(
        seat=wager.seat,
        kind=_WAGER_KIND_TO_PB[WagerKind(wager.kind)],
        amount_cents=wager.amount_cents,
        meter_id=wager.meter_id,
        to_meter_microcents=wager.to_meter_microcents,
        to_reserve_microcents=wager.to_reserve_microcents,
    )


def seat_result(result: SeatResult) -> pb.SeatResult:
    """One seat's settlement for the wire."""
    return pb.SeatResult(
        seat=result.seat,
        hand=result.hand,
        outcome=_OUTCOME_TO_PB[result.outcome],
        award_kind=_AWARD_KIND_TO_PB.get(result.award_kind, pb.AWARD_KIND_UNSPECIFIED),
        award_text=result.award_text,
        amount_cents=result.amount_cents,
        meter_id=result.meter_id,
        meter_before_cents=result.meter_before_cents,
        meter_after_cents=result.meter_after_cents,
        pending_validation=result.pending_validation,
        jackpot_id=result.jackpot_id,
        journal_seq=result.journal_seq,
    )


def meter_config(request: pb.CreateMeterRequest) -> MeterConfig:
    """A meter definition from the wire (rates are decimal percent strings)."""
    return MeterConfig(
        meter_id=request.meter_id,
        link_group_id=request.link_group_id,
        game=request.game,
        reset_cents=request.reset_cents,
        rate_ppm=parse_percent_ppm(request.rate_of_progression_percent, "rate of progression"),
        reserve_rate_ppm=parse_percent_ppm(request.reserve_rate_percent or "0", "reserve rate"),
        ceiling_cents=request.ceiling_cents,
    )


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
    )


def table_config(table: pb.Table) -> TableConfig:
    """A table definition from the wire; a wager of 0 means the default $1."""
    return TableConfig(
        table_id=table.table_id,
        game=table.game,
        paytable=table.paytable,
        seats=table.seats,
        link_group_id=table.link_group_id,
        meter_id=table.meter_id,
        wager_cents=table.wager_cents or DEFAULT_WAGER_CENTS,
    )


def table(config: TableConfig) -> pb.Table:
    """A table definition for the wire."""
    return pb.Table(
        table_id=config.table_id,
        game=config.game,
        paytable=config.paytable,
        seats=config.seats,
        link_group_id=config.link_group_id,
        meter_id=config.meter_id,
        wager_cents=config.wager_cents,
    )


def link_group(state: LinkGroupState) -> pb.LinkGroup:
    """A link group for the wire."""
    return pb.LinkGroup(
        link_group_id=state.link_group_id,
        description=state.description,
        meter_ids=state.meter_ids,
        table_ids=state.table_ids,
    )


def jackpot(record: Jackpot) -> pb.Jackpot:
    """A jackpot for the wire."""
    return pb.Jackpot(
        jackpot_id=record.jackpot_id,
        link_group_id=record.link_group_id,
        meter_id=record.meter_id,
        table_id=record.table_id,
        round_id=record.round_id,
        seat=record.seat,
        hand=record.hand,
        award_text=record.award_text,
        amount_cents=record.amount_cents,
        meter_before_cents=record.meter_before_cents,
        meter_after_cents=record.meter_after_cents,
        status=record.status,
        journal_seq=record.journal_seq,
        reviewed_by=record.reviewed_by,
        note=record.note,
    )
