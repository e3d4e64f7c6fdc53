"""``python -m bench.settle_plan``: settlement plans per second for a full round.

Two rounds: Caribbean Stud at 7 seats, each seat with a Progressive Payout Wager, a Bonus and
a Five Card Hand Bonus on its hand and on the dealer's; and Six-Card Fortune at its 6 seats,
each with a Fortune Bonus (Envy lammer), an Insurance and a Progressive Payout Wager, every
hand read for its wagers and for the envy bonuses of both kinds. The plan as shipped (each
hand read once per plan, :class:`controller.domain.round_hands.RoundHands`) is compared, in
the same run, with the same plan reading each hand again at every use (the earlier
behaviour); the report gives both rates and their ratio. Bounded: a fixed number of plans,
best of a few repeats, no network.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from unittest import mock

from controller.domain import settlement
from controller.domain.config import TableConfig
from controller.domain.round_hands import RoundHands
from controller.domain.rounds import Cards, RoundCards, SeatCards, Wager, cards_of
from controller.domain.settlement import plan_settlement
from controller.domain.wagers import WagerTable
from controller.runtime.rules_file import load_submission
from jackpot.hands.joker_poker import parse_joker_cards

RULES = Path(__file__).resolve().parents[1] / "deploy" / "rules"
SIX_CARD_HANDS = (
    "AS AH AD AC JK 8D",  # five aces
    "QS QH QD QC 4S 6H",  # four of a kind
    "7C 8C 9C TC JC 3D",  # straight flush
    "2C 5D 7H 9S JD KH",  # king high
    "3H 4H 5H 8H TH 2S",  # flush
    "6C 6D 6S 9D 9H KS",  # full house
)
CARIBBEAN_HANDS = (
    "AS KS QS JS TS",  # royal flush
    "2H 3H 4H 5H 6H",  # straight flush
    "9C 9D 9H 9S 2C",  # four of a kind
    "KC KD KH 7C 7D",  # full house
    "2D 5D 8D JD QD",  # flush
    "3C 4D 5C 6D 7S",  # straight
    "TC TD 8S 4S 3S",  # pair of tens
)
CARIBBEAN_DEALER = "AC AD AH 8C 6S"


class _ReadEveryTime(RoundHands):
    """The earlier reading: every use of a hand evaluates it again."""

    def lines(self, rules: WagerTable, hand: Cards) -> tuple[str, ...]:
        self._lines.clear()
        return super().lines(rules, hand)

    def name(self, rules: WagerTable | None, hand: Cards) -> str:
        self._names.clear()
        return super().name(rules, hand)


Round = tuple[str, TableConfig, list[Wager], RoundCards]


def _seats(hands: Sequence[str]) -> tuple[SeatCards, ...]:
    return tuple(
        SeatCards(seat, cards_of(parse_joker_cards(hand.split())))
        for seat, hand in enumerate(hands, start=1)
    )


def rounds() -> list[Round]:
    """The two rounds: (label, the example table, every seat's wagers, the cards)."""
    caribbean = load_submission(RULES / "caribbean-stud.toml").table_configs()[0]
    six_card = load_submission(RULES / "six-card-fortune-pai-gow.toml").table_configs()[0]
    caribbean_wagers = [
        Wager(seat, kind, 100, on_dealer_hand=on_dealer_hand)
        for seat in range(1, 8)
        for kind, on_dealer_hand in (
            ("progressive", False),
            ("bonus", False),
            ("five_card_bonus", False),
            ("five_card_bonus", True),
        )
    ]
    six_card_wagers = [
        Wager(seat, kind, cents, envy=kind == "fortune_bonus")
        for seat in range(1, 7)
        for kind, cents in (("fortune_bonus", 500), ("insurance", 500), ("progressive", 100))
    ]
    dealer = cards_of(parse_joker_cards(CARIBBEAN_DEALER.split()))
    return [
        (
            "Caribbean Stud, 7 seats",
            caribbean,
            caribbean_wagers,
            RoundCards(_seats(CARIBBEAN_HANDS), dealer),
        ),
        (
            "Six-Card Fortune, 6 seats",
            six_card,
            six_card_wagers,
            RoundCards(_seats(SIX_CARD_HANDS)),
        ),
    ]


def plans_per_second(plan: Callable[[], object], count: int, repeat: int) -> float:
    """The best rate of ``repeat`` runs of ``count`` plans."""
    best = float("inf")
    for _ in range(repeat):
        begin = time.perf_counter()
        for _ in range(count):
            plan()
        best = min(best, time.perf_counter() - begin)
    return count / best


def main(argv: Sequence[str] | None = None) -> int:
    """Measure both readings and print the rates and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=500, help="plans per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per reading (best kept)")
    args = parser.parse_args(argv)
    print(f"{'round':<28}{'every use /s':>14}{'once /s':>12}{'ratio':>8}")
    for label, table, wagers, cards in rounds():
        expected = plan_settlement(table, wagers, cards)

        def plan(table: TableConfig = table, wagers: list[Wager] = wagers) -> object:
            return plan_settlement(table, wagers, cards)  # noqa: B023 (bound per round)

        with mock.patch.object(settlement, "RoundHands", _ReadEveryTime):
            assert plan() == expected  # the same plan, only read more often
            before = plans_per_second(plan, args.plans, args.repeat)
        after = plans_per_second(plan, args.plans, args.repeat)
        print(f"{label:<28}{before:>14.0f}{after:>12.0f}{after / before:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
