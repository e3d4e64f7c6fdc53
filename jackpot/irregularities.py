"""What each seeded irregularity does at each game, and the section that says so.

The Pennsylvania chapters (58 Pa. Code) void the round for every irregularity listed here -
all hands void, all wagers returned - except at Texas Hold 'Em Bonus Poker, where a card found
face up after every player and the dealer received their first two cards (§ 647a.13(a)), or a
dealer's card exposed too early (§ 647a.13(d)), voids the rest of the round while the Texas
Hold 'Em Bonus Wagers still settle by § 647a.12(b) (settled with ``rest_of_round_void``).

The seeds give Three Card Poker's rule for a misdeal only (§ 649a.9(f)). For Six-Card Fortune
Pai Gow Poker they hold § 670a.11 alone, which names § 670a.13 ("irregularities") without its
text: a wrong card count or a misdeal there voids the round by a documented house rule
(:data:`HOUSE_RULE`, as every seeded chapter voids a misdeal), cited as such, never as a
section the seeds do not hold. Any other irregularity at either game is refused, and the round
is voided with TableService.VoidRound and the dealer's reason.

Shared by the controller (which decides) and the table agent (which tells the dealer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jackpot.errors import InvalidArgument
from jackpot.kinds import IrregularityEffect, IrregularityKind, WagerKind

CHIP_COUNT_SECTION = "§ 639a.8(b)"
"""The dealer verifies that the value chips collected equal the Progressive Payout Wagers the
system accepted (also § 639a.9(a)(3), § 639a.10(a)(2), § 649a.9(a)(3))."""

COUNTED_WAGERS: tuple[WagerKind, ...] = (WagerKind.PROGRESSIVE, WagerKind.FIVE_CARD_PROGRESSIVE)
"""The wagers the dealer's chip count is compared with: the Progressive Payout Wagers (one
value chip each), not the electronic bonus wagers locked out with them."""

TITLES: Mapping[IrregularityKind, str] = {
    IrregularityKind.CHIP_COUNT: "chip count differs from the accepted Progressive Payout Wagers",
    IrregularityKind.WRONG_CARD_COUNT: "a player or the dealer was dealt an incorrect number of "
    "cards",
    IrregularityKind.MISDEAL: "the stub count shows the cards were misdealt",
    IrregularityKind.CARDS_EXPOSED: "more than one card found face up in the shoe or deck",
    IrregularityKind.DEALER_CARD_EXPOSED: "a dealer's card exposed too early",
    IrregularityKind.SHOE_JAM: "the automated dealing shoe jammed or stopped dealing",
}
"""Each kind as the journal and the dealer read it."""


@dataclass(frozen=True, slots=True)
class IrregularityRule:
    """What an irregularity does (``effect``) and where the game's chapter says so."""

    effect: IrregularityEffect
    section: str


HOUSE_RULE = "house rule; the seeds give no Six-Card Fortune irregularity text"
"""The citation where the seeds are silent: Six-Card Fortune's irregularities (§ 670a.13) are
not among them, and the operator voids a misdealt round as § 639a.13(c), § 647a.13(c) and
§ 649a.9(f) do at the other games (README, "Chip count and irregularities")."""

_VOID = IrregularityEffect.VOID
_BONUS = IrregularityEffect.BONUS_SETTLES
K = IrregularityKind

RULES: Mapping[str, Mapping[IrregularityKind, IrregularityRule]] = {
    "caribbean-stud": {
        K.WRONG_CARD_COUNT: IrregularityRule(_VOID, "§ 639a.13(c)"),
        K.MISDEAL: IrregularityRule(_VOID, "§ 639a.8(h), § 639a.9(f), § 639a.10(f)"),
        K.CARDS_EXPOSED: IrregularityRule(_VOID, "§ 639a.13(a)"),
        K.DEALER_CARD_EXPOSED: IrregularityRule(_VOID, "§ 639a.13(d)"),
        K.SHOE_JAM: IrregularityRule(_VOID, "§ 639a.13(f)"),
    },
    "texas-holdem-bonus": {
        K.WRONG_CARD_COUNT: IrregularityRule(_VOID, "§ 647a.13(c)"),
        K.MISDEAL: IrregularityRule(_VOID, "§ 647a.8(h), § 647a.9(f), § 647a.10(f)"),
        K.CARDS_EXPOSED: IrregularityRule(_VOID, "§ 647a.13(a)"),
        K.DEALER_CARD_EXPOSED: IrregularityRule(_BONUS, "§ 647a.13(d)"),
        K.SHOE_JAM: IrregularityRule(_VOID, "§ 647a.13(f)"),
    },
    "three-card-poker": {
        K.WRONG_CARD_COUNT: IrregularityRule(_VOID, "§ 649a.9(f)"),
        K.MISDEAL: IrregularityRule(_VOID, "§ 649a.9(f)"),
    },
    "six-card-fortune-pai-gow": {
        K.WRONG_CARD_COUNT: IrregularityRule(_VOID, HOUSE_RULE),
        K.MISDEAL: IrregularityRule(_VOID, HOUSE_RULE),
    },
}
"""Per game (its name in :mod:`jackpot.games`), the seeded irregularities and their rule."""

LATE_EXPOSURE = IrregularityRule(_BONUS, "§ 647a.13(a)")
"""Texas Hold 'Em Bonus: cards found face up after every player and the dealer received their
first two cards - the Texas Hold 'Em Bonus Wagers settle."""


def irregularity_rule(
    game: str, kind: IrregularityKind, *, after_initial_cards: bool = False
) -> IrregularityRule:
    """The rule of ``kind`` at ``game``; ``after_initial_cards``: the cards were found face up
    after every player and the dealer received their first two cards (it matters only there,
    § 647a.13(a)). :class:`InvalidArgument` for the chip count (reported by its own call) and
    for an irregularity the game's chapter in the seeds does not rule on."""
    if kind is IrregularityKind.CHIP_COUNT:
        raise InvalidArgument(
            "a chip count is reported with ReportChipCount (§ 639a.8(b)), not as an irregularity"
        )
    if kind is IrregularityKind.CARDS_EXPOSED and after_initial_cards:
        if game == "texas-holdem-bonus":
            return LATE_EXPOSURE
    rule = RULES.get(game, {}).get(kind)
    if rule is None:
        raise InvalidArgument(
            f"the rules of {game} here give no effect for {kind.value} ({TITLES[kind]}); void "
            "the round with VoidRound and the dealer's reason"
        )
    return rule


def irregularity_reason(kind: IrregularityKind, rule: IrregularityRule) -> str:
    """The round's reason, journaled with its void or sent as the settlement's
    ``rest_of_round_void``: the irregularity, its effect and its section."""
    if rule.effect is IrregularityEffect.VOID:
        effect = "all hands void, all wagers returned"
    else:
        effect = "the rest of the round is void, Texas Hold 'Em Bonus Wagers settle"
    return f"{kind.value}: {TITLES[kind]}: {effect} ({rule.section})"
