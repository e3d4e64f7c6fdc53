"""What the dealer types, read and checked before anything is sent.

A wager is ``SEAT KIND [AMOUNT] [dealer] [envy]``: the seat (1 to the table's seats), the kind
(its name, ``five_card_bonus`` or ``five-card-bonus``, or any unambiguous start of it, e.g.
``prog``), the amount in dollars (``5``, ``5.00``, ``$5``; left out for a fixed wager, which is
its one amount), ``dealer`` for a Five Card Hand Bonus on the dealer's hand and ``envy`` for a
Fortune Bonus with the Envy lammer. It must be a wager the table's game has and its registration
offers, within the offer's limits in cents.

Cards are written as the wire writes them (``AS KS QS JS TS``, ``10H``, the joker ``JK``, any
case), parsed by the shared core (:mod:`jackpot.cards`), and must be cards of the game's deck,
as many as the game deals that hand. Every refusal is an :class:`EntryError` whose message says
what was wrong; nothing is kept of a refused entry.
"""

from __future__ import annotations

from collections.abc import Sequence

from jackpot.cards import check_hand_size
from jackpot.errors import InvalidAmount, InvalidCards
from jackpot.kinds import WagerKind, wager_title
from jackpot.money import format_cents, parse_dollars_cents
from table_agent.deck import DeckCard, parse_deck_cards
from table_agent.games import GameProcedure
from table_agent.wagers import PlacedWager, TableLayout, WagerOffer


class EntryError(ValueError):
    """An entry refused before anything was sent; the message is for the dealer."""


def read_seat(text: str, layout: TableLayout) -> int:
    """The seat ``text`` names, 1 to the table's seats."""
    if not text.isdigit() or not 1 <= int(text) <= layout.seats:
        raise EntryError(f"{text!r} is not a seat of this table (1 to {layout.seats})")
    return int(text)


def _offers(game: GameProcedure, layout: TableLayout) -> list[WagerOffer]:
    """The table's offers of the kinds its game has, in the game's order."""
    return [offer for kind in game.kinds if (offer := layout.offer(kind)) is not None]


def offered_kinds(game: GameProcedure, layout: TableLayout) -> str:
    """The kinds a dealer may enter at this table, for a message."""
    return ", ".join(offer.kind.value for offer in _offers(game, layout)) or "none"


def read_kind(text: str, game: GameProcedure, layout: TableLayout) -> WagerOffer:
    """The table's offer of the kind ``text`` names (its name, with ``-`` or ``_``, or an
    unambiguous start of it)."""
    wanted = text.lower().replace("-", "_")
    offers = _offers(game, layout)
    exact = [offer for offer in offers if offer.kind.value == wanted]
    matches = exact or [offer for offer in offers if offer.kind.value.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        if wanted in {kind.value for kind in WagerKind}:
            raise EntryError(
                f"{wager_title(WagerKind(wanted))} is not offered at this table "
                f"({game.facts.title}); it takes {offered_kinds(game, layout)}"
            )
        raise EntryError(f"no wager {text!r} at this table; it takes {offered_kinds(game, layout)}")
    names = ", ".join(offer.kind.value for offer in matches)
    raise EntryError(f"{text!r} could be {names}: type more of the name")


def limits(offer: WagerOffer) -> str:
    """An offer's amount or limits, in dollars."""
    if offer.fixed:
        return format_cents(offer.min_cents)
    return f"{format_cents(offer.min_cents)} to {format_cents(offer.max_cents)}"


def _amount(text: str | None, offer: WagerOffer) -> int:
    title = wager_title(offer.kind)
    if text is None:
        if offer.fixed:
            return offer.min_cents
        raise EntryError(f"{title}: give the amount, {limits(offer)}")
    try:
        cents = parse_dollars_cents(text)
    except InvalidAmount as error:
        raise EntryError(f"{title}: {error}") from None
    if not offer.min_cents <= cents <= offer.max_cents:
        what = "is not the table's amount" if offer.fixed else "is outside the table's limits"
        raise EntryError(f"{title}: {format_cents(cents)} {what}, {limits(offer)}")
    return cents


def read_wager(words: Sequence[str], game: GameProcedure, layout: TableLayout) -> PlacedWager:
    """The wager ``SEAT KIND [AMOUNT] [dealer] [envy]`` (see the module)."""
    if len(words) < 2:
        raise EntryError("a wager is: wager SEAT KIND [AMOUNT] [dealer] [envy]")
    seat = read_seat(words[0], layout)
    offer = read_kind(words[1], game, layout)
    flags = {word.lower() for word in words[2:] if word.lower() in {"dealer", "envy"}}
    rest = [word for word in words[2:] if word.lower() not in {"dealer", "envy"}]
    if len(rest) > 1:
        raise EntryError(f"one amount per wager, not {' '.join(rest)}")
    amount = _amount(rest[0] if rest else None, offer)
    title = wager_title(offer.kind)
    if "dealer" in flags and offer.kind not in game.dealer_hand_kinds:
        raise EntryError(f"a {title} cannot be placed on the dealer's hand")
    if "envy" in flags and not (offer.kind in game.envy_kinds and offer.envy):
        raise EntryError(f"a {title} takes no Envy lammer at this table")
    return PlacedWager(seat, offer.kind, amount, "dealer" in flags, "envy" in flags)


def read_cards(
    words: Sequence[str], game: GameProcedure, count: int, whose: str
) -> tuple[DeckCard, ...]:
    """``count`` cards of the game's deck for ``whose`` hand (e.g. "seat 3")."""
    try:
        cards = parse_deck_cards(words)
    except InvalidCards as error:
        raise EntryError(f"{whose}: {error}") from None
    foreign = [str(card) for card in cards if card not in game.deck]
    if foreign:
        raise EntryError(f"{whose}: {' '.join(foreign)} is not a card of {game.facts.title}'s deck")
    try:
        check_hand_size(cards, count, whose)  # type: ignore[arg-type]  # a joker has a size too
    except InvalidCards as error:
        raise EntryError(str(error)) from None
    return cards
