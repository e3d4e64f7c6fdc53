"""What the round tests build with: the example tables of every game, seats and deals."""

from __future__ import annotations

from pathlib import Path

from controller.domain.config import TableConfig
from controller.domain.rounds import Payout, RoundCards, SeatCards, cards_of
from controller.runtime.rules_file import load_submission
from jackpot.cards import parse_cards
from jackpot.hands.joker_poker import parse_joker_cards

RULES = Path(__file__).resolve().parents[2] / "deploy" / "rules"
P = "progressive"


def example(game: str) -> TableConfig:
    """The first table of the shipped example submission of ``game``."""
    return load_submission(RULES / f"{game}.toml").table_configs()[0]


CARIBBEAN = example("caribbean-stud")
THREE_CARD = example("three-card-poker")
SIX_CARD = example("six-card-fortune-pai-gow")
HOLDEM = example("texas-holdem-bonus")
TABLE = TableConfig.progressive("t1", "caribbean-stud", "B", 7, "g", "m")  # progressive only


def seat(number: int, cards: str = "", folded: bool = False, base_win: int = 0) -> SeatCards:
    """One seat's report: its cards (``JK`` is the joker), folded, its base game win."""
    return SeatCards(number, cards_of(parse_joker_cards(cards.split())), folded, base_win)


def deal(*seats: SeatCards, dealer: str = "", community: str = "", void: str = "") -> RoundCards:
    """The cards of a round: the seats, the dealer's, the community cards, a rest-of-round
    void."""
    return RoundCards(
        seats, cards_of(parse_joker_cards(dealer.split())), parse_cards(community.split()), void
    )


def summary(plan: tuple[Payout, ...]) -> list[tuple[int, str, str, int, int]]:
    """A plan as (seat, wager, outcome, amount in cents, envy for seat) rows."""
    return [(p.seat, p.kind, str(p.outcome), p.amount_cents, p.envy_for_seat) for p in plan]
