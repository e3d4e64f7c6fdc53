"""Hand names in words where people read them (console, slip, report tables, demo); the wire,
journal, metrics, CSV and JSON keep the labels."""

from __future__ import annotations

import pytest

from jackpot.hands.words import hand_words


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
