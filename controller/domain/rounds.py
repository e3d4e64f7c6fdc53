"""A round's reports, checked and turned into what the store applies atomically.

* :func:`check_lockout` validates the wagers accepted at "no more bets" against what the
  table offers (kinds, limits, the dealer's hand, the Envy lammer).
* :func:`plan_settlement` validates the cards, evaluates every hand itself (a reported rank
  is never trusted) and lists, in settlement order, what each wager wins: seat N down to
  seat 1 (§ 639a.11(c), § 639a.12(d)(4), § 670a.11(e)), once per phase of the game
  (:attr:`Game.phases`), each seat's wagers of the phase in the order its game settles them,
  then the phase's envy bonuses. Caribbean Stud, Three Card Poker and Texas Hold 'Em Bonus
  have one phase: each seat completely, then the envy bonuses; Six-Card Fortune settles every
  Fortune Bonus, then their envy bonuses, every Insurance, every Progressive Payout Wager,
  then theirs (§ 670a.11(h)). A player who folds at Caribbean Stud forfeits all wagers, a
  Five Card Hand Bonus on the dealer's hand too (§ 639a.11(b)). Fixed awards are computed
  here, in cents, with the aggregate payout limit per hand (§ 647a.12(c)); the store pays
  that plan in that order, computing each percentage award from the meter at its turn.
* :func:`fingerprint` gives the content digest that makes each phase idempotent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import cast

from controller.domain.config import TableConfig, WagerOffer
from controller.domain.paytables import AwardRule
from controller.domain.wagers import WagerTable
from jackpot.cards import Card, check_hand_size, check_no_duplicates
from jackpot.errors import InvalidAmount, InvalidArgument, InvalidCards, InvalidSeat
from jackpot.hands.poker import evaluate
from jackpot.kinds import AwardKind, Extra
from jackpot.results import SeatOutcome

Cards = tuple[Card, ...]  # at Six-Card Fortune a hand may hold the joker


@dataclass(frozen=True, slots=True)
class Wager:
    """One wager accepted at lockout: the game's wager name (``progressive``, ``bonus``, ...)
    and the chip in cents. ``on_dealer``: a Five Card Hand Bonus on the dealer's hand
    (§ 639a.7(d)(4)); ``envy``: the Envy lammer of a Fortune Bonus (§ 670a.11(h)(1)(ii))."""

    seat: int
    kind: str
    amount_cents: int
    on_dealer: bool = False
    envy: bool = False

    @property
    def label(self) -> str:
        """How a message names it: "seat 3 five_card_bonus (dealer's hand)"."""
        return f"seat {self.seat} {self.kind}" + (" (dealer's hand)" if self.on_dealer else "")


@dataclass(frozen=True, slots=True)
class SeatCards:
    """One seat's report at settlement: its cards, or ``folded`` (§ 639a.11(b)); a folded
    seat whose wagers are all forfeited may report no cards (they were collected).

    ``base_game_win_cents``: what the seat's other wagers won this round (winnings, the
    returned stakes excluded), counted against the payout limit per hand (§ 647a.12(c)).
    """

    seat: int
    cards: Cards
    folded: bool = False
    base_game_win_cents: int = 0


@dataclass(frozen=True, slots=True)
class RoundCards:
    """Every card of a round the controller needs, as the table reports them."""

    seats: tuple[SeatCards, ...]
    dealer: Cards = ()
    community: Cards = ()
    rest_of_round_void: str = ""  # § 647a.13(a), (d): why the rest of the round is void


@dataclass(frozen=True, slots=True)
class Payout:
    """One line of a settlement plan: what one wager (or one envy bonus) wins.

    ``amount_cents`` is final for fixed awards (after the payout limit, ``limited_from_cents``
    being the amount before it); a percentage award is computed by the store from
    ``meter_id`` at its turn. ``wager`` is empty for a reported seat without a wager.
    """

    seat: int
    wager: str
    hand: str
    outcome: SeatOutcome
    on_dealer: bool = False
    award: AwardRule | None = None
    amount_cents: int = 0
    meter_id: str = ""
    envy_for_seat: int = 0
    limited_from_cents: int = 0
    line: str = ""  # the paytable line paid, e.g. "ace_ace_dealer_and_player"

    @property
    def award_kind(self) -> str:
        """``for_one``, ``to_one``, ``percent_of_meter``, ``fixed_amount`` or ``envy``."""
        if self.award is None:
            return ""
        return str(AwardKind.ENVY) if self.envy_for_seat else str(self.award.kind)


def _check_seat(table: TableConfig, seat: int) -> None:
    if not 1 <= seat <= table.seats:
        raise InvalidSeat(
            f"seat {seat} does not exist at table {table.table_id}; its seats are 1 to "
            f"{table.seats}"
        )


def _offer(table: TableConfig, kind: str) -> WagerOffer:
    offer = table.offer(kind)
    if offer is None:
        offered = ", ".join(o.wager for o in table.wagers)
        raise InvalidArgument(f"table {table.table_id} does not offer the {kind} wager ({offered})")
    return offer


def _order_key(table: TableConfig, wager: Wager) -> tuple[int, int, bool]:
    """Settlement order: seat N first, then the game's wager order, the player's hand first."""
    order = table.game_rules.settle_order
    return (-wager.seat, order.index(wager.kind), wager.on_dealer)


def check_lockout(table: TableConfig, wagers: Sequence[Wager]) -> tuple[Wager, ...]:
    """Validate a lockout's wagers against the table; return them by seat (1 first), each
    seat's in the order its game settles them.

    Each seat exists; each wager is one the table offers, once per seat (and hand), for an
    amount within the table's limits (exactly the amount of a fixed wager); the dealer's
    hand and the Envy lammer only where the game has them.
    """
    game = table.game_rules
    seen: set[tuple[int, str, bool]] = set()
    for wager in wagers:
        _check_seat(table, wager.seat)
        offer = _offer(table, wager.kind)
        rules = game.wager(wager.kind)
        if wager.on_dealer and not rules.facts.on_dealer_hand:
            raise InvalidArgument(
                f"{wager.label}: the {rules.facts.title} is not placed on the dealer's hand"
            )
        if wager.envy and not (rules.facts.envy_by_marker and offer.paytable.envy_lines):
            raise InvalidArgument(
                f"{wager.label}: the {rules.facts.title} at table {table.table_id} has no Envy "
                "lammer"
            )
        key = (wager.seat, wager.kind, wager.on_dealer)
        if key in seen:
            raise InvalidSeat(f"{wager.label} is placed twice; a seat places it once per round")
        seen.add(key)
        if wager.amount_cents <= 0:
            raise InvalidAmount(
                f"{wager.label}: wager amount must be positive, got {wager.amount_cents} cents"
            )
        if offer.fixed and wager.amount_cents != offer.min_cents:
            raise InvalidAmount(
                f"{wager.label}: wagered {wager.amount_cents} cents; the {wager.kind} wager "
                f"at table {table.table_id} is fixed at {offer.min_cents} cents"
            )
        if not offer.min_cents <= wager.amount_cents <= offer.max_cents:
            raise InvalidAmount(
                f"{wager.label}: wagered {wager.amount_cents} cents; the {wager.kind} wager at "
                f"table {table.table_id} takes {offer.min_cents} to {offer.max_cents} cents"
            )
    order = table.game_rules.settle_order
    return tuple(sorted(wagers, key=lambda w: (w.seat, order.index(w.kind), w.on_dealer)))


def _check_report(table: TableConfig, report: SeatCards, cards: RoundCards) -> None:
    """One seat's report: the seat exists, a full hand unless folded (where the game has a
    fold), a base game win only where a payout limit counts it."""
    game = table.game_rules
    _check_seat(table, report.seat)
    if report.folded and not game.facts.folds:
        raise InvalidArgument(f"seat {report.seat}: no player folds at {game.facts.title}")
    if not (report.folded and not report.cards):
        check_hand_size(report.cards, game.facts.hand_size, f"seat {report.seat}")
    if report.base_game_win_cents < 0:
        raise InvalidAmount(f"seat {report.seat}: base game win cannot be negative")
    if report.base_game_win_cents and not table.payout_limit_cents:
        raise InvalidAmount(
            f"seat {report.seat}: a base game win is reported only at a table with a payout "
            "limit per hand"
        )
    if report.base_game_win_cents and cards.rest_of_round_void:
        raise InvalidAmount(
            f"seat {report.seat}: reports a base game win, but the rest of the round is void"
        )


def _forfeited(table: TableConfig, wager: Wager, report: SeatCards) -> bool:
    """Whether the player's fold forfeits ``wager``: at Caribbean Stud every wager, also a
    Five Card Hand Bonus on the dealer's hand (§ 639a.11(b): "shall forfeit all wagers")."""
    return report.folded and table.game_rules.wager(wager.kind).facts.forfeit_on_fold


def _check_seats(table: TableConfig, wagers: Sequence[Wager], cards: RoundCards) -> None:
    """Every seat exists, is reported once with a full hand (or folded), and every seat
    holding a wager is reported, with its cards when a wager on its hand survives a fold."""
    game = table.game_rules
    named: set[int] = set()
    for report in cards.seats:
        if report.seat in named:
            raise InvalidSeat(f"seat {report.seat} is reported twice")
        named.add(report.seat)
        _check_report(table, report, cards)
    for wager in wagers:
        if wager.seat not in named:
            raise InvalidSeat(
                f"{wager.label} was accepted at lockout but the seat was not reported; "
                "report its cards or mark it folded"
            )
    collected = {r.seat for r in cards.seats if r.folded and not r.cards}
    for wager in wagers:
        rules = game.wager(wager.kind)
        # A wager the fold forfeits needs no cards; one on the dealer's hand needs the dealer's.
        if wager.seat in collected and not wager.on_dealer and not rules.facts.forfeit_on_fold:
            raise InvalidCards(
                f"{wager.label}: a {rules.facts.title} is settled even when the player folds; "
                "report the seat's cards"
            )


def _check_cards(table: TableConfig, wagers: Sequence[Wager], cards: RoundCards) -> None:
    """Refuse a report that does not fit the round (nothing changes)."""
    game = table.game_rules
    _check_seats(table, wagers, cards)
    by_seat = {report.seat: report for report in cards.seats}
    needs_dealer = any(
        (w.on_dealer or game.wager(w.kind).facts.extra is Extra.DEALER)
        and not _forfeited(table, w, by_seat[w.seat])
        for w in wagers
    )
    if cards.dealer or needs_dealer:
        check_hand_size(cards.dealer, game.facts.dealer_hand_size, "the dealer")
    needs_community = any(game.wager(w.kind).facts.extra is Extra.COMMUNITY for w in wagers)
    if needs_community:
        check_hand_size(cards.community, game.facts.community_cards, "the community")
    elif cards.community:
        if not game.facts.community_cards:
            raise InvalidCards(f"{game.facts.title} deals no community cards")
        raise InvalidCards(
            "community cards are dealt only when a Five Card Hand Bonus or Five-Card "
            "Progressive wager was placed (§ 649a.9(b)); this round has none"
        )
    if cards.rest_of_round_void and not game.rest_void_citation:
        raise InvalidArgument(
            f"{game.facts.title} settles no wager of a round that is void; void the round instead"
        )
    check_no_duplicates(
        [(f"seat {report.seat}", report.cards) for report in cards.seats]
        + [("the dealer", cards.dealer), ("the community", cards.community)]
    )


def _hand_cards(rules: WagerTable, wager_on_dealer: bool, seat: Cards, cards: RoundCards) -> Cards:
    if wager_on_dealer:
        return cards.dealer
    if rules.facts.extra is Extra.COMMUNITY:
        return seat + cards.community
    return seat


def _lines(rules: WagerTable, hand: Cards, cards: RoundCards) -> tuple[str, ...]:
    return rules.lines_of(hand, cards.dealer if rules.facts.extra is Extra.DEALER else ())


def _hand_name(table: TableConfig, rules: WagerTable, hand: Cards) -> str:
    if rules.facts.extra is Extra.COMMUNITY:
        return evaluate(hand).category.label
    return table.game_rules.name_hand(hand)


def _wager_payout(table: TableConfig, wager: Wager, report: SeatCards, cards: RoundCards) -> Payout:
    rules = table.game_rules.wager(wager.kind)
    offer = _offer(table, wager.kind)
    if _forfeited(table, wager, report):
        return Payout(wager.seat, wager.kind, "", SeatOutcome.FORFEITED, wager.on_dealer)
    hand = _hand_cards(rules, wager.on_dealer, report.cards, cards)
    name = _hand_name(table, rules, hand)
    paid = offer.paytable.highest_award(_lines(rules, hand, cards))
    if paid is None:
        return Payout(wager.seat, wager.kind, name, SeatOutcome.NO_AWARD, wager.on_dealer)
    line, rule = paid
    if rule.kind is AwardKind.PERCENT_OF_METER:
        return Payout(
            wager.seat,
            wager.kind,
            name,
            SeatOutcome.PAID,
            wager.on_dealer,
            rule,
            meter_id=offer.meter_of(rule),
            line=line,
        )
    amount = rule.fixed_award_cents(wager.amount_cents)
    return Payout(
        wager.seat, wager.kind, name, SeatOutcome.PAID, wager.on_dealer, rule, amount, line=line
    )


def _stake_back(payout: Payout, wagers: dict[tuple[int, str, bool], Wager]) -> int:
    """The part of a fixed award that returns the stake: "N to 1" pays N wagers and the wager
    back, "N for 1" N wagers of which one is the wager back; "$A" returns none."""
    if payout.award is None or payout.award.kind is AwardKind.PERCENT_OF_METER:
        return 0
    wager = wagers[(payout.seat, payout.wager, payout.on_dealer)]
    return payout.award.returned_stake_cents(wager.amount_cents)


def _apply_payout_limit(
    table: TableConfig, payouts: list[Payout], wagers: Sequence[Wager], cards: RoundCards
) -> list[Payout]:
    """Cut each seat's winnings so that, with what its base game won, they stay within the
    aggregate payout limit per hand (§ 647a.12(c)); returned stakes are not winnings.

    ``payouts`` is the plan in settlement order: each seat's room is used up by its wagers in
    the order they are paid (whatever the phases), so a cut falls on the last one paid. Only
    the wagers the limit counts (:attr:`Game.payout_limit_wagers`) are limited; envy bonuses
    are not winning wagers and are never cut.
    """
    limit = table.payout_limit_cents
    if not limit:
        return payouts
    counted = table.game_rules.payout_limit_wagers
    by_key = {(w.seat, w.kind, w.on_dealer): w for w in wagers}
    room = {r.seat: max(0, limit - r.base_game_win_cents) for r in cards.seats}
    limited = []
    for payout in payouts:
        if (
            payout.outcome is not SeatOutcome.PAID
            or payout.award is None
            or payout.envy_for_seat
            or payout.wager not in counted
        ):
            limited.append(payout)
            continue
        stake = _stake_back(payout, by_key)
        winnings = payout.amount_cents - stake
        allowed = min(winnings, room[payout.seat])
        room[payout.seat] -= allowed
        if allowed < winnings:
            payout = replace(
                payout, amount_cents=allowed + stake, limited_from_cents=payout.amount_cents
            )
        limited.append(payout)
    return limited


def _envy_payouts(
    table: TableConfig, wagers: Sequence[Wager], cards: RoundCards, kinds: Sequence[str]
) -> list[Payout]:
    """Every envy bonus of the wagers ``kinds``: for each qualifying hand at the table, each
    other entitled seat is paid once (§ 670a.11(h)(1)(ii), (3)(ii)); never for its own hand or
    the dealer's."""
    game = table.game_rules
    payouts: list[Payout] = []
    # Every hand on the table qualifies, also a folded player's whose cards were reported.
    playing = sorted((r for r in cards.seats if r.cards), key=lambda r: -r.seat)
    for kind in kinds:
        offer = table.offer(kind)
        if offer is None or not offer.paytable.envy_lines:
            continue
        rules = game.wager(kind)
        entitled = sorted(
            {
                w.seat
                for w in wagers
                if w.kind == kind and (w.envy or not rules.facts.envy_by_marker)
            },
            reverse=True,
        )
        for holder in playing:
            hand = _hand_cards(rules, False, holder.cards, cards)
            qualifying = offer.paytable.envy_award(_lines(rules, hand, cards))
            if qualifying is None:
                continue
            rule = qualifying[1]
            name = _hand_name(table, rules, hand)
            payouts.extend(
                Payout(
                    seat,
                    kind,
                    name,
                    SeatOutcome.PAID,
                    award=rule,
                    amount_cents=rule.amount_cents,
                    envy_for_seat=holder.seat,
                    line=qualifying[0],
                )
                for seat in entitled
                if seat != holder.seat
            )
    return payouts


def plan_settlement(
    table: TableConfig, wagers: Sequence[Wager], cards: RoundCards
) -> tuple[Payout, ...]:
    """Check the cards of a round against its accepted ``wagers`` and list, in settlement
    order, what every wager and every envy bonus wins.

    Settlement order: for each phase of the game (:attr:`Game.phases`), seat N down to
    seat 1, each seat's wagers of that phase in its game's order, then the envy bonuses of
    that phase's wagers. A game of one phase settles each seat completely, then the envy
    bonuses (§ 639a.11(c)); Six-Card Fortune settles every Fortune Bonus, their envy bonuses,
    every Insurance, every Progressive Payout Wager, then theirs (§ 670a.11(h)). A reported
    seat without any wager has one NO_WAGER result, at its turn in the first phase.

    Refused (nothing changes): a seat outside the table or named twice; a seat holding a
    wager not reported; a hand of the wrong size; dealer or community cards missing where a
    wager needs them, or community cards no wager needs (§ 649a.9(b)); any card seen twice.
    A folded seat may report no cards (they were collected) when its wagers are forfeited;
    the dealer's cards are not needed for a wager the fold forfeited.
    """
    _check_cards(table, wagers, cards)
    by_seat = {report.seat: report for report in cards.seats}
    ordered = sorted(wagers, key=lambda wager: _order_key(table, wager))
    wagering = {wager.seat for wager in wagers}
    reports = sorted(cards.seats, key=lambda r: -r.seat)
    payouts: list[Payout] = []
    for number, phase in enumerate(table.game_rules.phases):
        for report in reports:
            if number == 0 and report.seat not in wagering:
                name = table.game_rules.name_hand(report.cards) if report.cards else ""
                payouts.append(Payout(report.seat, "", name, SeatOutcome.NO_WAGER))
            payouts.extend(
                _wager_payout(table, w, by_seat[w.seat], cards)
                for w in ordered
                if w.seat == report.seat and w.kind in phase
            )
        payouts.extend(_envy_payouts(table, wagers, cards, phase))
    return tuple(_apply_payout_limit(table, payouts, wagers, cards))


def fingerprint(phase: str, content: object) -> str:
    """A stable digest of a request's content for the idempotency key (table, round, phase).

    ``content`` must be JSON-serialisable; the digest ignores dictionary order.
    """
    if not phase:
        raise InvalidArgument("phase is required")
    canonical = json.dumps([phase, content], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def lockout_fingerprint(wagers: Sequence[Wager]) -> str:
    """The content digest of a lockout: its wagers, in a canonical order."""
    rows = sorted([w.seat, w.kind, w.amount_cents, w.on_dealer, w.envy] for w in wagers)
    return fingerprint("lockout", rows)


def _card_texts(cards: Sequence[object]) -> list[str]:
    return [str(card) for card in cards]


def settle_fingerprint(cards: RoundCards) -> str:
    """The content digest of a settlement: every card (as parsed, so "10H" and "TH" are the
    same report), the folds, the base game wins and the irregularity."""
    ordered = sorted(cards.seats, key=lambda report: report.seat)
    content: dict[str, object] = {
        "seats": [[r.seat, _card_texts(r.cards), r.folded] for r in ordered],
        "dealer": _card_texts(cards.dealer),
    }
    if cards.community or cards.rest_of_round_void or any(r.base_game_win_cents for r in ordered):
        content["community"] = _card_texts(cards.community)
        content["rest_void"] = cards.rest_of_round_void
        content["base_wins"] = [r.base_game_win_cents for r in ordered]
    return fingerprint("settle", content)


def void_fingerprint(reason: str) -> str:
    """The content digest of a void: its reason."""
    return fingerprint("void", reason)


def cards_of(items: Sequence[object]) -> Cards:
    """Type a parsed hand that may hold the joker as a hand (the joker sorts as an ace)."""
    return cast(Cards, tuple(items))
