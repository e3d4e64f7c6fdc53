"""The dealer's window for a correction of the round just settled (docs/corrections.md).

After a settlement and before the next ``open`` (the controller closes the window at the
table's next lockout), the dealer may key the cards as they should have been and ask for a
correction; the floor supervisor approves it at the controller (``jackpotctl rounds
approve-correction``). Pure: the draft starts from the cards settled, ``fix`` changes one hand
(checked against the deck, the hand size and the other hands), ``correct REASON`` gives the
report to send. The wagers are the ones accepted at lockout (a wrong wager is a supervisor's
correction). Amounts are cents.

    fix SEAT C C ...       a seat's cards as they should have been
    fix dealer C C ...     the dealer's; fix community C C: the community cards
    correct REASON         ask the controller for the correction (a supervisor approves it)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jackpot.cards import check_no_duplicates
from jackpot.errors import InvalidCards
from jackpot.money import format_cents
from table_agent.client import CorrectionAnswer
from table_agent.console.entry import EntryError, read_cards, read_seat
from table_agent.deck import DeckCard
from table_agent.games import GameProcedure
from table_agent.reports import SettleReport
from table_agent.wagers import TableLayout

MAX_REASON_CHARS = 200
"""The controller's bound on a correction's reason."""


def answer_lines(answer: CorrectionAnswer) -> list[str]:
    """What the dealer reads: the correction, per seat what it would pay or recover, and that
    nothing is paid until the floor supervisor approves it."""
    lines = [f"correction {answer.correction_id} {answer.status}"]
    for seat, delta in answer.seats:
        verb = "pay" if delta > 0 else "recover"
        lines.append(f"  seat {seat}: {verb} {format_cents(abs(delta))} once approved")
    lines.append(
        f"call the floor supervisor: jackpotctl rounds approve-correction {answer.correction_id}"
    )
    return lines


@dataclass
class CorrectionDraft:
    """The cards of ``round_id`` as the dealer now says they were (from the cards settled)."""

    round_id: int
    hands: dict[int, tuple[DeckCard, ...]]
    folded: set[int]
    dealer: tuple[DeckCard, ...]
    community: tuple[DeckCard, ...]
    changed: set[str] = field(default_factory=set)

    def fix(self, words: list[str], layout: TableLayout, game: GameProcedure) -> str:
        """Change one hand (``SEAT``, ``dealer`` or ``community`` then its cards); answer the
        line to show. :class:`EntryError` (nothing changes) for a hand that cannot be."""
        if len(words) < 2:
            raise EntryError("fix SEAT CARDS, fix dealer CARDS or fix community CARDS")
        target = words[0].lower()
        facts = game.facts
        if target == "dealer":
            whose, count = "the dealer", facts.dealer_hand_size
        elif target == "community":
            if not facts.community_cards:
                raise EntryError(f"{facts.title} deals no community cards")
            whose, count = "the community", facts.community_cards
        else:
            seat = read_seat(words[0], layout)
            whose, count = f"seat {seat}", facts.hand_size
        cards = read_cards(words[1:], game, count, whose)
        hands = [(f"seat {s}", h) for s, h in self.hands.items()]
        hands += [("the dealer", self.dealer), ("the community", self.community)]
        try:
            check_no_duplicates(
                [(name, hand) for name, hand in hands if name != whose] + [(whose, cards)]  # type: ignore[arg-type]
            )
        except InvalidCards as error:
            raise EntryError(str(error)) from None
        if target == "dealer":
            self.dealer = cards
        elif target == "community":
            self.community = cards
        else:
            self.hands[seat] = cards
            self.folded.discard(seat)
        self.changed.add(whose)
        return f"correction of round {self.round_id}: {whose} {' '.join(map(str, cards))}"

    def report(self, reason: str) -> SettleReport:
        """The corrected cards to send, for ``reason``; refused without a change or reason."""
        if not self.changed:
            raise EntryError("nothing to correct: fix SEAT CARDS (or fix dealer CARDS) first")
        if not reason.strip():
            raise EntryError("correct REASON: say what was wrong (e.g. KC keyed as JD)")
        if len(reason) > MAX_REASON_CHARS:
            raise EntryError(f"the reason is at most {MAX_REASON_CHARS} characters")
        return SettleReport(
            hands=dict(sorted(self.hands.items())),
            folded=tuple(sorted(self.folded)),
            dealer=self.dealer,
            community=self.community,
        )
