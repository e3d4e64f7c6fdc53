"""The cards a settlement reports, as the agent keeps them and writes them to its outbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from table_agent.deck import DeckCard, card_texts, parse_deck_cards


@dataclass(frozen=True, slots=True)
class SettleReport:
    """One round's cards for the controller.

    ``hands``: the cards of every seat still in the round, by seat. ``folded``: the seats that
    folded (Caribbean Stud, § 639a.11(b)), reported without cards. ``dealer``: the dealer's
    hand; ``community``: Three Card Poker's two community cards, only when a five-card wager
    was placed (§ 649a.9(b)). ``rest_of_round_void``: the irregularity that voided the rest of
    a Texas Hold 'Em Bonus round after the first two cards (§ 647a.13(d)), empty otherwise.
    ``base_game_win_cents``: what each seat's Ante, Flop, Turn and River Wagers won, in cents
    (Texas Hold 'Em Bonus, for the payout limit); a seat not listed won 0.
    """

    hands: Mapping[int, tuple[DeckCard, ...]]
    folded: tuple[int, ...] = ()
    dealer: tuple[DeckCard, ...] = ()
    community: tuple[DeckCard, ...] = ()
    rest_of_round_void: str = ""
    base_game_win_cents: Mapping[int, int] = field(default_factory=dict)

    def to_data(self) -> dict[str, Any]:
        """The report as JSON-ready data (the outbox's settle record)."""
        return {
            "hands": {str(seat): card_texts(cards) for seat, cards in self.hands.items()},
            "folded": list(self.folded),
            "dealer": card_texts(self.dealer),
            "community": card_texts(self.community),
            "rest_of_round_void": self.rest_of_round_void,
            "base_game_win_cents": {
                str(seat): cents for seat, cents in self.base_game_win_cents.items()
            },
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SettleReport:
        """Read :meth:`to_data`'s output."""
        return cls(
            hands={int(seat): parse_deck_cards(cards) for seat, cards in data["hands"].items()},
            folded=tuple(int(seat) for seat in data["folded"]),
            dealer=parse_deck_cards(data["dealer"]),
            community=parse_deck_cards(data["community"]),
            rest_of_round_void=str(data["rest_of_round_void"]),
            base_game_win_cents={
                int(seat): int(cents) for seat, cents in data["base_game_win_cents"].items()
            },
        )
