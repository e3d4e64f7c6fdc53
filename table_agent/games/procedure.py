"""What the agent needs to know of a game to deal it and place its side wagers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from jackpot.games import GameFacts
from jackpot.kinds import Extra, WagerKind
from table_agent.deck import (
    Deal,
    DealOrder,
    DeckCard,
    deal_in_order,
    shuffled,
    stack_for_order,
)
from table_agent.wagers import PlacedWager


@dataclass(frozen=True, slots=True)
class GameProcedure:
    """One game's dealing procedure; its facts (name, seats, hand size, side wagers in the
    order a seat places them) are the shared :class:`jackpot.games.GameFacts`.

    ``deck`` is the one deck a round is dealt from (52 cards, or 53 with the joker).
    ``order`` is the dealing procedure (see :mod:`table_agent.deck`). ``folds`` is the
    simulated players' strategy where a player may fold and forfeit his side wagers (Caribbean
    Stud, § 639a.11(b)); None where folding forfeits none. ``misdeal_reason`` is the reason a
    misdealt round is voided for, citing the game's rule; ``rest_of_round_void_reason`` the
    irregularity after the first two cards after which only the bonus wagers settle (Texas
    Hold 'Em Bonus, § 647a.13(d)); empty where none applies. ``base_game_wagers`` names the
    wagers whose winnings a settlement reports for the aggregate payout limit per hand (Texas
    Hold 'Em Bonus: "Ante, Flop, Turn and River Wagers", § 647a.12(c)); empty where the
    controller needs none.
    """

    facts: GameFacts
    deck: tuple[DeckCard, ...]
    order: DealOrder
    misdeal_reason: str
    folds: Callable[[Sequence[DeckCard]], bool] | None = None
    rest_of_round_void_reason: str = ""
    base_game_wagers: str = ""

    @property
    def kinds(self) -> tuple[WagerKind, ...]:
        """The side wagers a seat may place, in the order it places them."""
        return self.facts.kinds

    @property
    def community_kinds(self) -> frozenset[WagerKind]:
        """The wagers that call for the community cards (dealt only when one was placed)."""
        return frozenset(w.kind for w in self.facts.wagers if w.extra is Extra.COMMUNITY)

    @property
    def dealer_hand_kinds(self) -> frozenset[WagerKind]:
        """The wagers a seat may also place on the dealer's hand."""
        return frozenset(w.kind for w in self.facts.wagers if w.on_dealer_hand)

    @property
    def envy_kinds(self) -> frozenset[WagerKind]:
        """The wagers that take the Envy lammer."""
        return frozenset(w.kind for w in self.facts.wagers if w.envy_by_marker)

    def deals_community(self, wagers: Iterable[PlacedWager]) -> bool:
        """Whether the round's accepted ``wagers`` call for the community cards."""
        return any(wager.kind in self.community_kinds for wager in wagers)

    def shuffled_deck(self) -> list[DeckCard]:
        """A new deck of this game, shuffled (CSPRNG)."""
        return shuffled(self.deck)

    def deal(
        self, deck: Sequence[DeckCard], players: Sequence[int], wagers: Iterable[PlacedWager] = ()
    ) -> Deal:
        """Deal ``players`` and the dealer from the top of ``deck`` by this game's procedure."""
        return deal_in_order(deck, self.order(players, self.deals_community(wagers)), players)

    def stack(
        self,
        players: Sequence[int],
        wagers: Iterable[PlacedWager],
        wanted: Mapping[int, Sequence[DeckCard]],
    ) -> list[DeckCard]:
        """A deck from which :meth:`deal` gives the ``wanted`` cards by position (seats,
        ``DEALER``, ``COMMUNITY``); the other cards are shuffled (CSPRNG)."""
        order = self.order(players, self.deals_community(wagers))
        return stack_for_order(self.deck, order, wanted)
