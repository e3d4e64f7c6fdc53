"""Settlement: a round's cards checked and turned into the plan the store pays atomically.

:func:`plan_settlement` validates the cards, evaluates every hand itself (a reported rank is
never trusted) and lists, in settlement order, what each wager wins: seat N down to seat 1
(§ 639a.11(c), § 639a.12(d)(4), § 670a.11(e)), once per phase of the game
(:attr:`Game.phases`), each seat's wagers of the phase in the order its game settles them,
then the phase's envy bonuses (:mod:`controller.domain.envy`). Caribbean Stud, Three Card
Poker and Texas Hold 'Em Bonus have one phase: each seat completely, then the envy bonuses;
Six-Card Fortune settles every Fortune Bonus, then their envy bonuses, every Insurance, every
Progressive Payout Wager, then theirs (§ 670a.11(h)). A player who folds at Caribbean Stud
forfeits all wagers, a Five Card Hand Bonus on the dealer's hand too (§ 639a.11(b)). Fixed
awards are computed here, in cents, with the aggregate payout limit per hand (§ 647a.12(c),
:mod:`controller.domain.payout_limit`); the store pays that plan in that order, computing each
percentage award from the meter at its turn.

Every award carries what its hand-pay slip needs (:func:`_slip`): the cards of the winning
hand, the wager, and whether a fixed award is above the table's validation threshold (then
it awaits a supervisor's validation like every percentage award, § 639a.11(c)(5)(iii)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from controller.domain.config import TableConfig
from controller.domain.envy import envy_payouts
from controller.domain.payout_limit import apply_payout_limit
from controller.domain.round_hands import RoundHands
from controller.domain.rounds import Payout, RoundCards, SeatCards, Wager, check_seat, offered
from jackpot.cards import check_hand_size, check_no_duplicates, format_cards
from jackpot.errors import InvalidAmount, InvalidArgument, InvalidCards, InvalidSeat
from jackpot.kinds import AwardKind, Extra
from jackpot.results import SeatOutcome


def _order_key(table: TableConfig, wager: Wager) -> tuple[int, int, bool]:
    """Settlement order: seat N first, then the game's wager order, the player's hand first."""
    order = table.game_rules.settle_order
    return (-wager.seat, order.index(wager.kind), wager.on_dealer_hand)


def _check_report(table: TableConfig, report: SeatCards, cards: RoundCards) -> None:
    """One seat's report: the seat exists, a full hand unless folded (where the game has a
    fold), a base game win only where a payout limit counts it."""
    game = table.game_rules
    check_seat(table, report.seat)
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
        if wager.seat in collected and not wager.on_dealer_hand and not rules.facts.forfeit_on_fold:
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
        (w.on_dealer_hand or game.wager(w.kind).facts.extra is Extra.DEALER)
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


def _wager_payout(table: TableConfig, wager: Wager, report: SeatCards, hands: RoundHands) -> Payout:
    rules = table.game_rules.wager(wager.kind)
    offer = offered(table, wager.kind)
    if _forfeited(table, wager, report):
        return Payout(wager.seat, wager.kind, "", SeatOutcome.FORFEITED, wager.on_dealer_hand)
    hand = hands.cards_of(rules, wager.on_dealer_hand, report.cards)
    name = hands.name(rules, hand)
    paid = offer.paytable.highest_award(hands.lines(rules, hand))
    if paid is None:
        return Payout(wager.seat, wager.kind, name, SeatOutcome.NO_AWARD, wager.on_dealer_hand)
    line, rule = paid
    if rule.kind is AwardKind.PERCENT_OF_METER:
        return Payout(
            wager.seat,
            wager.kind,
            name,
            SeatOutcome.PAID,
            wager.on_dealer_hand,
            rule,
            meter_id=offer.meter_of(rule),
            line=line,
            player_token=wager.player_token,
        )
    amount = rule.fixed_award_cents(wager.amount_cents)
    return Payout(
        wager.seat,
        wager.kind,
        name,
        SeatOutcome.PAID,
        wager.on_dealer_hand,
        rule,
        amount,
        line=line,
        player_token=wager.player_token,
    )


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
    hands = RoundHands(table, cards)  # each hand read once, whatever reads it again
    payouts: list[Payout] = []
    for number, phase in enumerate(table.game_rules.phases):
        for report in reports:
            if number == 0 and report.seat not in wagering:
                name = hands.name(None, report.cards) if report.cards else ""
                payouts.append(Payout(report.seat, "", name, SeatOutcome.NO_WAGER))
            payouts.extend(
                _wager_payout(table, w, by_seat[w.seat], hands)
                for w in ordered
                if w.seat == report.seat and w.kind in phase
            )
        payouts.extend(envy_payouts(table, wagers, cards, phase, hands))
    limited = apply_payout_limit(table, payouts, wagers, cards)
    return tuple(_slip(table, payout, wagers, by_seat, hands) for payout in limited)


def _slip(
    table: TableConfig,
    payout: Payout,
    wagers: Sequence[Wager],
    by_seat: dict[int, SeatCards],
    hands: RoundHands,
) -> Payout:
    """An award with its slip's facts: the cards of the hand that won (for an envy bonus,
    the qualifying hand at ``envy_for_seat``), the wager that won, and whether a fixed award
    is above the table's validation threshold (``validation_threshold_cents``; None: the
    registration declares none, and only percentage awards await validation)."""
    if payout.outcome is not SeatOutcome.PAID or payout.award is None:
        return payout
    rules = table.game_rules.wager(payout.kind)
    holder = payout.envy_for_seat or payout.seat
    on_dealer = payout.on_dealer_hand and not payout.envy_for_seat
    hand = hands.cards_of(rules, on_dealer, by_seat[holder].cards)
    wager_cents = next(
        (
            w.amount_cents
            for w in wagers
            if (w.seat, w.kind, w.on_dealer_hand) == (payout.seat, payout.kind, on_dealer)
        ),
        0,
    )
    threshold = table.validation_threshold_cents
    pending = (
        payout.award.kind is not AwardKind.PERCENT_OF_METER
        and threshold is not None
        and payout.amount_cents > threshold
    )
    return replace(
        payout, cards=format_cards(hand), wager_cents=wager_cents, pending_validation=pending
    )
