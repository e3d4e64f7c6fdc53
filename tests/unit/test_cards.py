"""Card parsing and the one-deck checks."""

from __future__ import annotations

import pytest

from jackpot.cards import (
    FULL_DECK,
    Card,
    check_hand_size,
    check_no_duplicates,
    exact_cards,
    format_cards,
    parse_card,
    parse_cards,
)
from jackpot.errors import InvalidCards
from jackpot.hands.joker_poker import JOKER, parse_joker_card


@pytest.mark.parametrize(
    ("text", "card"),
    [
        ("AS", Card(14, "S")),
        ("10h", Card(10, "H")),
        ("Td", Card(10, "D")),
        ("2c", Card(2, "C")),
        (" kd ", Card(13, "D")),
    ],
)
def test_parse(text: str, card: Card) -> None:
    assert parse_card(text) == card


@pytest.mark.parametrize("text", ["", "A", "1S", "11S", "AX", "ZZ", "JK", "A S"])
def test_refused_with_the_text_named(text: str) -> None:
    with pytest.raises(InvalidCards, match="not a card"):
        parse_card(text)


def test_deck_has_52_distinct_cards_with_dense_indexes() -> None:
    assert len(set(FULL_DECK)) == 52
    assert sorted(card.index for card in FULL_DECK) == list(range(52))


def test_format_round_trips() -> None:
    cards = parse_cards("AS 10H 2C".split())
    assert format_cards(cards) == "AS TH 2C"


def test_hand_size_and_duplicates() -> None:
    with pytest.raises(InvalidCards, match="seat 3 has 4 cards; the game deals exactly 5"):
        check_hand_size(parse_cards("AS KS QS JS".split()), 5, "seat 3")
    with pytest.raises(InvalidCards, match=r"card AS is reported twice \(seat 1 and the dealer\)"):
        check_no_duplicates([("seat 1", parse_cards(["AS"])), ("the dealer", parse_cards(["AS"]))])


def test_parsed_cards_are_the_decks_interned_objects() -> None:
    """Parsing creates no card: every spelling of a card is the one object of FULL_DECK."""
    for card in FULL_DECK:
        spellings = [str(card), str(card).lower(), f" {card} "]
        if card.rank == 10:
            spellings.append("10" + card.suit)
        assert all(parse_card(text) is card for text in spellings)
    assert parse_joker_card("jk") is JOKER


def test_exact_cards_take_only_what_the_deck_spells_and_parse_cards_reads_the_rest() -> None:
    exact = exact_cards(["AS", "10H", "TH", "2C"])
    assert exact == parse_cards(["AS", "10H", "TH", "2C"])
    assert exact is not None and all(card in FULL_DECK for card in exact)
    assert [card.text for card in exact] == ["AS", "TH", "TH", "2C"]
    for sent in (["as"], [" AS"], ["AS", "1S"], ["JK"], [""]):
        assert exact_cards(sent) is None  # parse_cards reads it, or names what is wrong
    assert exact_cards([]) == ()
    assert str(parse_card("td")) == parse_card("td").text == "TD"
