"""Hand names in words, as people read them: on the dealer's console, the hand-pay slip, the
reports' tables and the demo. The wire, the journal, metrics, CSV and JSON keep the labels
(``royal_flush``, ``ace_king_suited``)."""

from __future__ import annotations

from jackpot.hands.two_card import PRINTED_WORDING, StartingHand

_TWO_CARD = {hand.label: wording.lower() for hand, wording in PRINTED_WORDING.items() if wording}


def hand_words(label: str) -> str:
    """``royal_flush`` -> "royal flush"; a Texas Hold 'Em Bonus line as § 647a.12(b) prints
    it (``ace_king_suited`` -> "ace-king (same suit)"); ``""`` stays ``""``."""
    if label == StartingHand.NONE.value:
        return "no qualifying hand"
    return _TWO_CARD.get(label) or label.replace("_", " ")
