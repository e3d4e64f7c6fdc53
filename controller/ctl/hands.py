"""``jackpotctl hands classify``: name each hand, and what every wager of the game pays on it.

One hand a line on standard input: cards as rank and suit (``AS KD TH 9C 2S``; ``10H`` also
accepted), optionally ``|`` and further cards (for Caribbean Stud: the dealer's hand). One JSON
object a line on standard output: ``hand`` (``royal_flush`` ... ``high_card``) and ``pays``
(per wager, per paytable, the line's award as printed), or ``error`` naming the problem. The
command exits 1 at the end if any line was bad.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from controller.domain.cards import check_hand_size, check_no_duplicates, parse_cards
from controller.domain.games import Game
from controller.errors import JackpotError


def classify_line(game: Game, line: str) -> dict[str, Any]:
    """Classify one input line; raise a :class:`JackpotError` naming what is wrong."""
    own_text, _, extra_text = line.partition("|")
    cards = parse_cards(own_text.split())
    extra = parse_cards(extra_text.split())
    check_hand_size(cards, game.hand_size, "the hand")
    if extra:
        check_hand_size(extra, game.dealer_hand_size, "the dealer")
    check_no_duplicates([("the hand", cards), ("the dealer", extra)])
    value = game.evaluate(cards)
    result: dict[str, Any] = {
        "cards": [str(card) for card in cards],
        "hand": value.category.label,
        "pays": {
            wager.name: {
                name: (award.text if (award := table.award_for(wager.line_of(value))) else None)
                for name, table in sorted(wager.paytables.items())
            }
            for wager in game.wagers.values()
        },
    }
    if extra:
        result["dealer_cards"] = [str(card) for card in extra]
        result["dealer_hand"] = game.evaluate(extra).category.label
    return result


def classify_stream(game: Game, lines: Iterable[str], out: TextIO = sys.stdout) -> int:
    """Classify every non-blank line; return how many were bad."""
    bad = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            result = classify_line(game, line)
        except JackpotError as error:
            bad += 1
            result = {"line": number, "input": line.strip(), "error": str(error)}
        out.write(json.dumps(result) + "\n")
    return bad
