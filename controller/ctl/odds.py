"""``jackpotctl odds``: the exact odds and return of a paytable at a given meter."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from controller.domain.games import Game, get_game
from controller.domain.odds import PaytableOdds, paytable_odds
from controller.domain.submission import RulesSubmission
from controller.runtime.rules_file import load_submission
from jackpot.errors import InvalidAmount, InvalidConfiguration
from jackpot.games import DEFAULT_WAGER_CENTS
from jackpot.hands.words import hand_words
from jackpot.money import format_cents, format_percent, parse_dollars_cents, parse_percent_ppm


def compute(
    game: Game,
    wager: str,
    paytable: str,
    meter_cents: int,
    wager_cents: int,
    submission: RulesSubmission | None = None,
) -> PaytableOdds:
    """The odds of one wager's paytable of ``game``: a regulation paytable by name, or the
    one the ``submission`` chose or wrote out for that wager."""
    table = game.wager(wager)
    if submission is None:
        chosen = table.paytable(paytable)
    else:
        offer = submission.games.get(game.facts.name, {}).get(wager)
        if offer is None:
            raise InvalidConfiguration(f"the submission does not offer the {table.facts.title}")
        if offer.paytable.name != paytable:
            raise InvalidConfiguration(
                f"the submission's {table.facts.title} uses paytable {offer.paytable.name!r}, not "
                f"{paytable!r}"
            )
        chosen = offer.paytable
    return paytable_odds(
        chosen, table.line_counts(), meter_cents=meter_cents, wager_cents=wager_cents
    )


def as_json(odds: PaytableOdds, rate_ppm: int | None) -> dict[str, Any]:
    """The JSON document: hands, hit frequency, return (a fraction of the wager), break-even.

    Probabilities and returns are ratios, not amounts, so they are given as decimals (and
    exactly, as "numerator/denominator" strings); amounts are integer cents.
    """
    document: dict[str, Any] = {
        "paytable": odds.paytable,
        "meter_cents": odds.meter_cents,
        "wager_cents": odds.wager_cents,
        "hands": [
            {
                "hand": line.hand,
                "combinations": line.combinations,
                "probability": float(line.probability),
                "probability_exact": str(line.probability),
                "award": line.award.text,
            }
            for line in odds.lines
        ],
        "hit_frequency": float(odds.hit_frequency),
        "return": float(odds.expected_return),
        "return_exact": str(odds.expected_return),
        "breakeven_meter_cents": odds.breakeven_meter_cents,
    }
    if rate_ppm is not None:
        document["contribution_microcents_per_wager"] = odds.wager_cents * rate_ppm
    return document


def as_table(odds: PaytableOdds, title: str, rate_ppm: int | None) -> str:
    """A table for people (hands in words, as the slip and the console name them; the JSON
    keeps the labels)."""
    width = max([24, *(len(hand_words(line.hand)) + 2 for line in odds.lines)])
    rows = [
        f"{title}, paytable {odds.paytable}, meter {format_cents(odds.meter_cents)}, "
        f"wager {format_cents(odds.wager_cents)}",
        f"{'hand':<{width}}{'award':>16}{'combinations':>14}{'probability':>16}{'1 in':>14}",
    ]
    for line in odds.lines:
        one_in = f"{float(1 / line.probability):,.1f}" if line.probability else "-"
        rows.append(
            f"{hand_words(line.hand):<{width}}{line.award.text:>16}{line.combinations:>14,}"
            f"{float(line.probability):>16.10f}{one_in:>14}"
        )
    rows.append(
        f"hit frequency {float(odds.hit_frequency):.6%}; return at this meter "
        f"{float(odds.expected_return):.4%}"
    )
    breakeven = odds.breakeven_meter_cents
    rows.append(
        "break-even meter: "
        + (
            format_cents(breakeven)
            if breakeven is not None
            else "none (no line pays a share of the meter)"
        )
    )
    if rate_ppm is not None:
        rows.append(
            f"rate of progression {format_percent(rate_ppm)}%: each wager adds "
            f"{odds.wager_cents * rate_ppm:,} microcents to the meter"
        )
    return "\n".join(rows)


def render(odds: PaytableOdds, title: str, rate_ppm: int | None, output: str) -> str:
    """The report in ``output`` format (``table`` or ``json``)."""
    if output == "json":
        return json.dumps(as_json(odds, rate_ppm), indent=2)
    return as_table(odds, title, rate_ppm)


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``odds``."""
    odds = top.add_parser("odds", help="exact odds and return of a paytable")
    odds.add_argument("--game", required=True)
    odds.add_argument(
        "--wager", required=True, help="progressive, bonus, five_card_bonus, insurance, ..."
    )
    odds.add_argument("--paytable", required=True)
    odds.add_argument("--meter", required=True, metavar="DOLLARS")
    odds.add_argument("--wager-cents", type=int, default=DEFAULT_WAGER_CENTS)
    odds.add_argument(
        "--rate", metavar="PERCENT", help="rate of progression, to show its contribution per wager"
    )
    odds.add_argument(
        "--rules",
        type=Path,
        metavar="FILE",
        help="take the paytable from this Rules Submission (for wagers whose "
        "paytables the regulation does not print)",
    )
    odds.add_argument("--format", choices=["table", "json"], default="table")
    odds.set_defaults(handler=_odds)


def _odds(args: argparse.Namespace) -> int:
    game = get_game(args.game)
    if args.wager_cents <= 0:
        raise InvalidAmount(f"--wager-cents must be positive, got {args.wager_cents}")
    rate_ppm = parse_percent_ppm(args.rate, "rate of progression") if args.rate else None
    submitted = load_submission(args.rules) if args.rules else None
    result = compute(
        game,
        args.wager,
        args.paytable,
        parse_dollars_cents(args.meter),
        args.wager_cents,
        submitted,
    )
    title = f"{game.facts.title}, {game.wager(args.wager).facts.title}"
    print(render(result, title, rate_ppm, args.format))
    return 0
