"""Every line of every paytable the example Rules Submissions write out (deploy/rules): a hand
that pays it, and the hand just below it, which is paid a lower line or nothing. The printed
paytables (§ 639a.12(c), (d), § 647a.12(b)) are covered line by line in test_paytables.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.domain.games import get_game
from controller.domain.paytables import Paytable
from controller.domain.rounds import cards_of
from controller.domain.wagers import WagerTable
from controller.runtime.rules_file import load_submission
from jackpot.cards import Card
from jackpot.hands.joker_poker import parse_joker_cards
from jackpot.kinds import Extra

RULES = Path(__file__).resolve().parents[2] / "deploy" / "rules"

FIVE_CARD = [  # highest first; for Three Card Poker the last two cards are community cards
    ("AS KS QS JS TS", "royal_flush_in_spades"),
    ("AH KH QH JH TH", "royal_flush"),
    ("9D TD JD QD KD", "straight_flush"),
    ("7C 7D 7H 7S 2C", "four_of_a_kind"),
    ("4S 4H 4D 5S 5H", "full_house"),
    ("3C 5C 8C JC KC", "flush"),
    ("6D 7C 8S 9D TC", "straight"),
    ("7S 7H 7D 9S JD", "three_of_a_kind"),
    ("3H 3D 6S 6H QD", "two_pair"),
    ("8H 8D 4C TD QC", "pair"),
    ("5D 6C 9C KD AH", "high_card"),
]
LADDERS: dict[str, list[tuple[str, str]]] = {
    "caribbean-stud": FIVE_CARD[1:],
    "three-card-poker": [
        ("AS KS QS", "mini_royal_in_spades"),
        ("AH KH QH", "mini_royal"),
        ("JD QD KD", "straight_flush"),
        ("7C 7D 7H", "three_of_a_kind"),
        ("4C 5D 6H", "straight"),
        ("2H 7H 9H", "flush"),
        ("8C 8D 3S", "pair"),
        ("2C 7D 9H", "high_card"),
    ],
    "three-card-poker five-card": FIVE_CARD,
    "six-card-fortune-pai-gow": [
        ("AS AH AD AC JK 2C", "five_aces"),
        ("AS KS QS JS TS 2C", "royal_flush"),
        ("9D TD JD QD KD 2C", "straight_flush"),
        ("7C 7D 7H 7S 2C 4D", "four_of_a_kind"),
        ("4S 4H 4D 5S 5H 9C", "full_house"),
        ("3C 5C 8C JC KC 2D", "flush"),
        ("6D 7C 8S 9D TC 2H", "straight"),
        ("7S 7H 7D 9S JD 2C", "three_of_a_kind"),
        ("3H 3D 6S 6H QD 2C", "two_pair"),
        ("8H 8D 4C TD QC 2S", "pair"),
        ("AC 5D 7H 9S JC 2D", "high_card"),  # ace high
        ("KC 5D 7H 9S JC 2D", "king_high_or_less"),
    ],
}


def _offers() -> list[tuple[str, str, Paytable]]:
    return [
        (game, offer.wager, offer.paytable)
        for path in sorted(RULES.glob("*.toml"))
        for game, offers in load_submission(path).games.items()
        for offer in offers.values()
        if offer.paytable.citation == "Rules Submission"
    ]


def _ladder(game: str, wager: WagerTable) -> list[tuple[tuple[Card, ...], str]]:
    key = f"{game} five-card" if wager.facts.extra is Extra.COMMUNITY else game
    return [(cards_of(parse_joker_cards(text.split())), hand) for text, hand in LADDERS[key]]


def _rank(paytable_lines: list[str], paid: str | None) -> int:
    return len(paytable_lines) if paid is None else paytable_lines.index(paid)


@pytest.mark.parametrize(
    ("game", "wager_name", "paytable"), _offers(), ids=lambda v: getattr(v, "name", str(v))
)
def test_each_line_pays_its_hand_and_the_hand_just_below_pays_less(
    game: str, wager_name: str, paytable: Paytable
) -> None:
    wager = get_game(game).wager(wager_name)
    ladder = _ladder(game, wager)
    for lines, award in (
        (paytable.lines, paytable.highest_award),
        (paytable.envy_lines, paytable.envy_award),
    ):
        names = [line for line, _ in lines]
        paid = []
        for cards, _ in ladder:
            won = award(wager.lines_of(cards, ()))
            paid.append(won[0] if won else None)
        for line in names:
            position = next(i for i, (_, hand) in enumerate(ladder) if hand == line)
            assert paid[position] == line, (line, paid[position])
            if position + 1 < len(ladder):
                below = paid[position + 1]
                assert _rank(names, below) > _rank(names, line), (line, below)
        assert all(p is None or p in names for p in paid)


def test_every_written_paytable_is_covered() -> None:
    offers = {(game, wager) for game, wager, _ in _offers()}
    assert offers == {
        ("caribbean-stud", "five_card_bonus"),
        ("three-card-poker", "progressive"),
        ("three-card-poker", "five_card_progressive"),
        ("three-card-poker", "five_card_bonus"),
        ("six-card-fortune-pai-gow", "progressive"),
        ("six-card-fortune-pai-gow", "fortune_bonus"),
        ("six-card-fortune-pai-gow", "insurance"),
    }
