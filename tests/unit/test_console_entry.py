"""What the dealer types at the console, read and checked before anything is sent
(:mod:`table_agent.console.entry`)."""

from __future__ import annotations

import re

import pytest

from jackpot.kinds import WagerKind
from table_agent.console.entry import EntryError, read_cards, read_kind, read_wager
from table_agent.games import game_procedure
from table_agent.wagers import PlacedWager, TableLayout, WagerOffer

K = WagerKind
CARIBBEAN = game_procedure("caribbean-stud")
THREE_CARD = game_procedure("three-card-poker")
SIX_CARD = game_procedure("six-card-fortune-pai-gow")

CS_TABLE = TableLayout(
    "cs-1",
    "caribbean-stud",
    7,
    (
        WagerOffer(K.PROGRESSIVE, 100, 100),
        WagerOffer(K.BONUS, 100, 10_000),
        WagerOffer(K.FIVE_CARD_BONUS, 100, 2_500),
    ),
)
TCP_TABLE = TableLayout(
    "tcp-1",
    "three-card-poker",
    7,
    (
        WagerOffer(K.PROGRESSIVE, 100, 100),
        WagerOffer(K.FIVE_CARD_BONUS, 100, 2_500),
        WagerOffer(K.FIVE_CARD_PROGRESSIVE, 100, 100),
    ),
)
SCF_TABLE = TableLayout(
    "scf-1",
    "six-card-fortune-pai-gow",
    7,
    (WagerOffer(K.FORTUNE_BONUS, 500, 50_000, envy=True), WagerOffer(K.INSURANCE, 500, 2_000)),
)


@pytest.mark.parametrize(
    ("words", "wager"),
    [
        ("3 progressive", PlacedWager(3, K.PROGRESSIVE, 100)),  # a fixed wager's one amount
        ("3 prog $1.00", PlacedWager(3, K.PROGRESSIVE, 100)),
        ("1 BONUS 12.50", PlacedWager(1, K.BONUS, 1250)),
        ("7 five-card-bonus 25 dealer", PlacedWager(7, K.FIVE_CARD_BONUS, 2500, True)),
        ("2 five_card_bonus 1", PlacedWager(2, K.FIVE_CARD_BONUS, 100)),
    ],
)
def test_wagers_the_table_offers_are_read(words: str, wager: PlacedWager) -> None:
    assert read_wager(words.split(), CARIBBEAN, CS_TABLE) == wager


def test_the_envy_lammer_where_the_table_offers_envy_bonuses() -> None:
    assert read_wager("4 fortune 5 envy".split(), SIX_CARD, SCF_TABLE) == PlacedWager(
        4, K.FORTUNE_BONUS, 500, envy=True
    )


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ("3", "a wager is: wager SEAT KIND"),
        ("0 progressive", "'0' is not a seat of this table (1 to 7)"),
        ("8 progressive", "'8' is not a seat of this table (1 to 7)"),
        ("x progressive", "'x' is not a seat"),
        ("3 insurance", "Insurance Wager is not offered at this table (Caribbean Stud Poker)"),
        ("3 lottery", "no wager 'lottery' at this table; it takes progressive, bonus"),
        ("3 bonus", "Bonus Wager: give the amount, $1.00 to $100.00"),
        ("3 bonus 100.01", "$100.01 is outside the table's limits, $1.00 to $100.00"),
        ("3 bonus 0.99", "$0.99 is outside the table's limits"),
        ("3 progressive 2", "$2.00 is not the table's amount, $1.00"),
        ("3 bonus 1.5.0", "is not an amount of dollars"),
        ("3 bonus -5", "is not an amount of dollars"),
        ("3 bonus 5 6", "one amount per wager, not 5 6"),
        ("3 progressive dealer", "Progressive Payout Wager cannot be placed on the dealer's hand"),
        ("3 bonus 5 envy", "Bonus Wager takes no Envy lammer at this table"),
    ],
)
def test_a_wager_the_table_does_not_take_is_refused_with_the_reason(
    words: str, message: str
) -> None:
    with pytest.raises(EntryError, match=re.escape(message)):
        read_wager(words.split(), CARIBBEAN, CS_TABLE)


def test_an_ambiguous_start_of_a_kind_is_refused_and_an_exact_name_wins() -> None:
    with pytest.raises(EntryError, match="'five' could be five_card_bonus, five_card_progressive"):
        read_kind("five", THREE_CARD, TCP_TABLE)
    assert read_kind("five_card_bonus", THREE_CARD, TCP_TABLE).kind is K.FIVE_CARD_BONUS


def test_no_envy_lammer_where_the_table_offers_no_envy_bonus() -> None:
    plain = TableLayout("scf-2", SCF_TABLE.game, 7, (WagerOffer(K.FORTUNE_BONUS, 500, 50_000),))
    with pytest.raises(EntryError, match="takes no Envy lammer"):
        read_wager("4 fortune 5 envy".split(), SIX_CARD, plain)


def test_cards_are_read_by_the_shared_core_in_any_spelling() -> None:
    cards = read_cards("as kS 10s js Ts".split(), CARIBBEAN, 5, "seat 1")
    assert [str(card) for card in cards] == ["AS", "KS", "TS", "JS", "TS"]  # duplicates: later
    assert [str(c) for c in read_cards(["JK", "2C"], SIX_CARD, 2, "seat 1")] == ["JK", "2C"]


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ("AS KS QS JS", "seat 2 has 4 cards; the game deals exactly 5"),
        ("AS KS QS JS TS 9S", "seat 2 has 6 cards"),
        ("AS KS QS JS 1S", r"seat 2: not a card: '1S'"),
        ("AS KS QS JS JK", "seat 2: JK is not a card of Caribbean Stud Poker's deck"),
    ],
)
def test_cards_that_cannot_be_the_hand_are_refused(words: str, message: str) -> None:
    with pytest.raises(EntryError, match=message):
        read_cards(words.split(), CARIBBEAN, 5, "seat 2")
