"""``jackpotctl hands classify``: name each hand, and what every wager of the game pays on it.

One hand a line on standard input: cards as rank and suit (``AS KD TH 9C 2S``; ``10H`` also
accepted), optionally ``|`` and the dealer's cards (five for Caribbean Stud; the first two for
Texas Hold 'Em Bonus, whose "ace-ace (dealer and player)" needs them). One JSON object a line
on standard output: ``hand`` (e.g. ``royal_flush``, ``ace_king_suited``) and ``pays`` (per
wager, per paytable, the award as printed, or null), or ``error`` naming the problem. The
command exits 1 at the end if any line was bad.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from controller.domain.games import Game, get_game
from controller.domain.paytables import Paytable
from controller.domain.wagers import WagerTable
from controller.runtime.rules_file import load_submission
from jackpot.cards import Card, check_hand_size, check_no_duplicates, parse_cards
from jackpot.errors import JackpotError
from jackpot.hands.joker_poker import parse_joker_cards
from jackpot.hands.poker import evaluate
from jackpot.kinds import Extra


def classify_line(
    game: Game, line: str, submitted: Mapping[str, Paytable] | None = None
) -> dict[str, Any]:
    """Classify one input line; raise a :class:`JackpotError` naming what is wrong.

    ``submitted`` adds, per wager name, the paytable a Rules Submission chose or wrote out.
    """
    submitted = submitted or {}
    own_text, _, extra_text = line.partition("|")
    cards, extra = _parse(game, own_text), _parse(game, extra_text)
    check_hand_size(cards, game.facts.hand_size, "the hand")
    # After "|": the community cards of a game that has them, else the dealer's cards.
    whose = "the community" if game.facts.community_cards else "the dealer"
    if extra:
        check_hand_size(extra, game.facts.community_cards or game.facts.dealer_hand_size, whose)
    check_no_duplicates([("the hand", cards), (whose, extra)])
    result: dict[str, Any] = {
        "cards": [str(card) for card in cards],
        "hand": game.name_hand(cards),
        "pays": {
            wager.facts.kind: _pays(wager, cards, extra, submitted.get(wager.facts.kind))
            for wager in game.wagers.values()
            if wager.facts.extra is not Extra.COMMUNITY or extra
        },
    }
    if extra and game.facts.community_cards:
        result["community_cards"] = [str(card) for card in extra]
        result["five_card_hand"] = evaluate((*cards, *extra)).category.label
    elif extra:
        result["dealer_cards"] = [str(card) for card in extra]
        result["dealer_hand"] = game.name_hand(extra)
    return result


def _parse(game: Game, text: str) -> tuple[Card, ...]:
    """Cards of ``game``; a joker game also reads ``JK``, which only its own hand
    functions ever see (they take the joker), hence the cast."""
    if game.facts.joker:
        return cast(tuple[Card, ...], parse_joker_cards(text.split()))
    return parse_cards(text.split())


def _pays(
    wager: WagerTable, cards: Sequence[Card], extra: Sequence[Card], submitted: Paytable | None
) -> dict[str, Any]:
    """Per paytable of ``wager`` (and the submission's): the award the hand is paid, as
    printed, or None."""
    if wager.facts.extra is Extra.COMMUNITY:
        cards, extra = (*cards, *extra), ()
    lines = wager.lines_of(cards, extra)
    pays: dict[str, Any] = {}
    paytables = dict(wager.paytables)
    if submitted is not None:
        paytables[submitted.name] = submitted
    for name, table in sorted(paytables.items()):
        paid = table.highest_award(lines)
        pays[name] = paid[1].text if paid else None
    return pays


def classify_stream(
    game: Game,
    lines: Iterable[str],
    out: TextIO = sys.stdout,
    submitted: Mapping[str, Paytable] | None = None,
) -> int:
    """Classify every non-blank line; return how many were bad."""
    bad = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            result = classify_line(game, line, submitted)
        except JackpotError as error:
            bad += 1
            result = {"line": number, "input": line.strip(), "error": str(error)}
        out.write(json.dumps(result) + "\n")
    return bad


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``hands classify``."""
    hands = top.add_parser("hands", help="classify hands").add_subparsers(
        dest="action", required=True
    )
    classify = hands.add_parser("classify", help="one hand a line on stdin -> JSON lines")
    classify.add_argument("--game", required=True)
    classify.add_argument(
        "--rules", type=Path, help="a Rules Submission: also show its paytables' awards"
    )
    classify.set_defaults(handler=_classify)


def _classify(args: argparse.Namespace) -> int:
    submitted = load_submission(args.rules).games.get(args.game, {}) if args.rules else {}
    paytables = {name: offer.paytable for name, offer in submitted.items()}
    bad = classify_stream(get_game(args.game), sys.stdin, sys.stdout, paytables)
    if bad:
        print(f"jackpotctl: {bad} lines could not be classified", file=sys.stderr)
    return 1 if bad else 0
