"""Hand names in words where people read them (console, slip, report tables, demo); the wire,
journal, metrics, CSV and JSON keep the labels."""

from __future__ import annotations

import pytest

from jackpot.hands.words import hand_words
from jackpot.kinds import wager_words


@pytest.mark.parametrize(
    ("label", "words"),
    [
        ("royal_flush", "royal flush"),
        ("four_of_a_kind", "four of a kind"),
        ("mini_royal", "mini royal"),
        ("five_aces", "five aces"),
        ("ace_king_suited", "ace-king (same suit)"),  # § 647a.12(b) as printed
        ("pair_2_through_10", "a pair of 10-10 through 2-2"),
        ("none", "no qualifying hand"),
        ("", ""),
    ],
)
def test_hand_names_in_words(label: str, words: str) -> None:
    assert hand_words(label) == words


@pytest.mark.parametrize(
    ("name", "on_dealer_hand", "words"),
    [
        ("progressive", False, "Progressive Payout Wager"),
        ("five_card_bonus", True, "Five Card Hand Bonus Wager on the dealer's hand"),
        ("not_a_kind", False, "not_a_kind"),  # an unknown name stays as it is
    ],
)
def test_a_records_wager_in_the_words_the_console_uses(
    name: str, on_dealer_hand: bool, words: str
) -> None:
    assert wager_words(name, on_dealer_hand=on_dealer_hand) == words
