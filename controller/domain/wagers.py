"""The wagers of each game: their paytables and which lines a hand qualifies for.

A :class:`WagerTable` names, for a hand (the seat's cards, plus the dealer's or community
cards where the wager needs them), the paytable lines it qualifies for, highest first: a
straight flush is only ``straight_flush``; a player's ace-ace against the dealer's ace-ace is
``ace_ace_dealer_and_player`` and also ``ace_ace`` (paid as such on a paytable without the
first line). A paytable pays the highest of them that it lists, and nothing else.

How many deals make each line is a static table (:mod:`controller.domain.line_tables`, named
by :attr:`WagerTable.line_table`), counted once by :mod:`controller.domain.line_counting`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from controller.domain.odds import (
    FIVE_CARD_CATEGORIES,
    FIVE_CARD_PAIR_OF_TENS,
    FIVE_CARD_SUITED,
    SIX_CARD_INSURANCE,
    SIX_CARD_SUITED,
    THREE_CARD_SUITED,
    TWO_CARD,
    LineCounts,
    Lines,
    line_counts,
)
from controller.domain.paytables import (
    CARIBBEAN_STUD_BONUS,
    CARIBBEAN_STUD_PROGRESSIVE,
    TEXAS_HOLDEM_BONUS,
    AwardRule,
    Paytable,
)
from jackpot import games
from jackpot.cards import Card
from jackpot.errors import InvalidConfiguration
from jackpot.games import WagerFacts
from jackpot.hands import three_card, two_card
from jackpot.hands.joker_poker import Joker, evaluate_best_five, flush_suit
from jackpot.hands.poker import HandCategory, HandValue, evaluate
from jackpot.kinds import WagerKind


@dataclass(frozen=True, slots=True)
class WagerTable:
    """One wager of a game: its facts (:class:`jackpot.games.WagerFacts`), its regulation
    paytables and how hands are placed on them.

    ``lines_of(cards, extra)`` takes the hand's cards (the seat's, plus the community cards
    when ``facts.extra`` is COMMUNITY) and the dealer's cards when it is DEALER.
    ``line_table`` names its static table of line counts (the hands a written paytable may
    list, and the odds).
    """

    facts: WagerFacts
    paytables: dict[str, Paytable]
    lines_of: Callable[[Sequence[Card], Sequence[Card]], Lines]
    line_table: str
    lines_of_value: Callable[[HandValue], Lines] | None = None
    """For a wager whose lines come from the five-card value of its hand alone: those lines
    from the value (``lines_of(cards, extra)`` is ``lines_of_value(evaluate(cards))``), so a
    settlement that also names the hand evaluates it once."""

    def paytable(self, name: str) -> Paytable:
        """The paytable called ``name``; refuse a name the regulation does not list."""
        if not self.paytables:
            raise InvalidConfiguration(
                f"the seeds print no paytable for the {self.facts.title}; write its lines out "
                "in the Rules Submission"
            )
        try:
            return self.paytables[name]
        except KeyError:
            listed = ", ".join(sorted(self.paytables))
            raise InvalidConfiguration(
                f"{self.facts.title} has no paytable {name!r}; {self.facts.citation} lists {listed}"
            ) from None

    def line_counts(self) -> LineCounts:
        """How many deals make each tuple of lines (read from the static table)."""
        return line_counts(self.line_table)

    def known_lines(self) -> frozenset[str]:
        """Every line a hand can make on this wager (what a written-out paytable may list)."""
        return frozenset(line for lines in self.line_counts().counts for line in lines)

    def written_paytable(
        self,
        where: str,
        name: str,
        lines: Sequence[tuple[str, str]],
        envy_lines: Sequence[tuple[str, str]] = (),
    ) -> Paytable:
        """A paytable written out line by line as (hand line, award text), highest first,
        with its envy lines; refuse a hand the wager cannot produce or a line listed twice."""
        known = self.known_lines()

        def parsed(
            section: str, items: Sequence[tuple[str, str]]
        ) -> tuple[tuple[str, AwardRule], ...]:
            seen: set[str] = set()
            out = []
            for number, (line, award) in enumerate(items, start=1):
                at = f"{where}.{section}[{number}]"
                if line not in known:
                    raise InvalidConfiguration(
                        f"{at}: {self.facts.title} ({self.facts.citation}) cannot produce a hand "
                        f"{line!r}; "
                        f"its hands are {', '.join(sorted(h for h in known if '_in_' not in h))}"
                    )
                if line in seen:
                    raise InvalidConfiguration(f"{at}: hand {line!r} is listed twice")
                seen.add(line)
                try:
                    out.append((line, AwardRule.parse(award)))
                except InvalidConfiguration as error:
                    raise InvalidConfiguration(f"{at}: {error}") from None
            return tuple(out)

        written = parsed("lines", lines)
        if not written and not self.paytables:
            raise InvalidConfiguration(
                f"{where}: the seeds print no paytable for the {self.facts.title}; write it out as "
                "lines of hand and award"
            )
        return Paytable(
            name or "submitted", "Rules Submission", written, parsed("envy", envy_lines)
        )


# ------------------------------------------------------------------ five-card hands


def category_line(value: HandValue) -> str:
    """The hand's category as its line: ``royal_flush`` ... ``high_card``."""
    return value.category.label


def pair_of_tens_line(value: HandValue) -> str:
    """As :func:`category_line`, but a pair of 10s or better is its own line (§ 639a.12(c))."""
    if value.category is HandCategory.PAIR and value.tiebreak[0] >= 10:
        return "pair_of_tens_or_better"
    return value.category.label


def _by_kind(*tables: WagerTable) -> dict[str, WagerTable]:
    return {table.facts.kind: table for table in tables}


def _five_card_wager(
    facts: WagerFacts,
    paytables: dict[str, Paytable],
    line_of: Callable[[HandValue], str],
    line_table: str,
) -> WagerTable:
    def lines_of_value(value: HandValue) -> Lines:
        return (line_of(value),)

    def lines_of(cards: Sequence[Card], extra: Sequence[Card]) -> Lines:
        return lines_of_value(evaluate(cards))

    return WagerTable(facts, paytables, lines_of, line_table, lines_of_value)


_CS = games.CARIBBEAN_STUD
CARIBBEAN_STUD_WAGERS = _by_kind(
    _five_card_wager(
        _CS.wager(WagerKind.PROGRESSIVE),
        CARIBBEAN_STUD_PROGRESSIVE,
        category_line,
        FIVE_CARD_CATEGORIES,
    ),
    _five_card_wager(
        _CS.wager(WagerKind.BONUS), CARIBBEAN_STUD_BONUS, pair_of_tens_line, FIVE_CARD_PAIR_OF_TENS
    ),
    # Flush or better on the player's or the dealer's five cards; the seeds print no paytable.
    _five_card_wager(_CS.wager(WagerKind.FIVE_CARD_BONUS), {}, category_line, FIVE_CARD_CATEGORIES),
)


# ------------------------------------------------------------------ two-card hands


def two_card_lines(player: Sequence[Card], dealer: Sequence[Card]) -> Lines:
    hand = two_card.classify(player, dealer)
    if hand is two_card.StartingHand.ACE_ACE_DEALER_AND_PLAYER:
        return (hand.value, two_card.StartingHand.ACE_ACE.value)
    return (hand.value,)


TEXAS_HOLDEM_BONUS_WAGERS = _by_kind(
    WagerTable(
        games.TEXAS_HOLDEM_BONUS.wager(WagerKind.BONUS),
        TEXAS_HOLDEM_BONUS,
        two_card_lines,
        TWO_CARD,
    ),
)


# ------------------------------------------------------------------ suit-specific lines

SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
SINGLE_SUITED = frozenset({"mini_royal", "royal_flush", "straight_flush", "flush"})


# A hand that is also the next hand down, for a written paytable that lists only that one.
_ALSO = {"mini_royal": "straight_flush", "royal_flush": "straight_flush"}


def suited_lines(label: str, suit: str | None) -> Lines:
    """The lines of a hand, highest first: a one-suit hand's suit-specific line
    (``mini_royal_in_spades``), the hand (``mini_royal``), and the hand it also is
    (``straight_flush``), so a paytable pays the highest of them it lists."""
    lines = (label, _ALSO[label]) if label in _ALSO else (label,)
    if suit is not None and label in SINGLE_SUITED:
        return (f"{label}_in_{SUIT_NAMES[suit]}", *lines)
    return lines


# ------------------------------------------------------------------ three-card hands


def three_card_lines(cards: Sequence[Card], extra: Sequence[Card]) -> Lines:
    value = three_card.evaluate(cards)
    suit = cards[0].suit if len({card.suit for card in cards}) == 1 else None
    return suited_lines(value.category.label, suit)


def five_suited_lines(cards: Sequence[Card], extra: Sequence[Card]) -> Lines:
    """A five-card hand's lines with its suit: the seat's three cards and two community cards."""
    suit = cards[0].suit if len({card.suit for card in cards}) == 1 else None
    return suited_lines(evaluate(cards).category.label, suit)


_TCP = games.THREE_CARD_POKER
THREE_CARD_POKER_WAGERS = _by_kind(
    WagerTable(_TCP.wager(WagerKind.PROGRESSIVE), {}, three_card_lines, THREE_CARD_SUITED),
    WagerTable(_TCP.wager(WagerKind.FIVE_CARD_BONUS), {}, five_suited_lines, FIVE_CARD_SUITED),
    WagerTable(
        _TCP.wager(WagerKind.FIVE_CARD_PROGRESSIVE), {}, five_suited_lines, FIVE_CARD_SUITED
    ),
)


# ------------------------------------------------------------------ six cards and a joker


def six_card_lines(cards: Sequence[Card | Joker], extra: Sequence[Card]) -> Lines:
    value = evaluate_best_five(cards)
    return suited_lines(value.category.label, flush_suit(cards))


KING = 13


def insurance_lines(cards: Sequence[Card | Joker], extra: Sequence[Card]) -> Lines:
    """``king_high_or_less``: no pair, straight or flush and no ace (the joker is an ace)
    in the best five of six (§ 670a.11(h)(2)); otherwise the hand's category."""
    value = evaluate_best_five(cards)
    if value.category.label == "high_card" and value.tiebreak[0] <= KING:
        return ("king_high_or_less",)
    return (value.category.label,)


_SCF = games.SIX_CARD_FORTUNE_PAI_GOW
SIX_CARD_FORTUNE_WAGERS = _by_kind(
    WagerTable(_SCF.wager(WagerKind.PROGRESSIVE), {}, six_card_lines, SIX_CARD_SUITED),
    WagerTable(_SCF.wager(WagerKind.FORTUNE_BONUS), {}, six_card_lines, SIX_CARD_SUITED),
    WagerTable(_SCF.wager(WagerKind.INSURANCE), {}, insurance_lines, SIX_CARD_INSURANCE),
)
