"""The console's round record: one JSON line per finished round, in the state directory.

``<state dir>/<table id>.rounds.jsonl``, appended and fsynced when a round is settled or
voided. Each line holds what the dealer entered and what the controller answered: the round
id, the wagers accepted at lockout (seat, kind, amount_cents, on_dealer_hand, envy), the
dealer's chip count of the progressive wagers (null when none was given) and whether it
matched, the cards (hands by seat, folded seats, dealer, community), and the outcome: the
settlement's results (seat, kind, hand, outcome, amount_cents, jackpot_id, pending_validation,
limited_from_cents: the award before the payout limit cut it, 0 when uncut), what each seat's
base game won as reported with it (``base_game_win_cents`` by seat; Texas Hold 'Em Bonus) and
``paid_cents``, or the void's reason and ``reversed_microcents``. Amounts are integers.

The record is the table's account for the floor (a chip count that did not match is kept
here); the reports themselves go through the agent's outbox (:mod:`table_agent.outbox`),
which is what a restart re-sends.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from table_agent.console.session import RoundSheet
from table_agent.deck import card_texts

RECORD_VERSION = 1
"""The version of the lines written here (the field ``v`` of each)."""


def round_data(sheet: RoundSheet) -> dict[str, Any]:
    """A finished round as JSON-ready data (see the module)."""
    data: dict[str, Any] = {
        "v": RECORD_VERSION,
        "round_id": sheet.round_id,
        "accepted": [
            {
                "seat": wager.seat,
                "kind": wager.kind.value,
                "amount_cents": wager.amount_cents,
                "on_dealer_hand": wager.on_dealer_hand,
                "envy": wager.envy,
            }
            for wager in sheet.accepted
        ],
        "progressive_wagers": sheet.progressive_wagers,
        "chip_count": sheet.chip_count,
        "chip_count_matches": sheet.chip_count_matches,
        "hands": {str(seat): card_texts(cards) for seat, cards in sorted(sheet.hands.items())},
        "folded": sorted(sheet.folded),
        "dealer": card_texts(sheet.dealer),
        "community": card_texts(sheet.community),
    }
    if sheet.settlement is not None:
        data["outcome"] = "settled"
        data["paid_cents"] = sheet.settlement.paid_cents
        data["base_game_win_cents"] = {
            str(seat): cents for seat, cents in sheet.base_game_win_cents.items()
        }
        data["results"] = [
            {
                "seat": result.seat,
                "kind": result.kind.value if result.kind else None,
                "on_dealer_hand": result.on_dealer_hand,
                "envy_for_seat": result.envy_for_seat,
                "hand": result.hand,
                "outcome": result.outcome.value,
                "amount_cents": result.amount_cents,
                "pending_validation": result.pending_validation,
                "jackpot_id": result.jackpot_id,
                "limited_from_cents": result.limited_from_cents,
            }
            for result in sheet.settlement.results
        ]
    elif sheet.void is not None:
        data["outcome"] = "void"
        data["void_reason"] = sheet.void_reason
        data["reversed_microcents"] = sheet.void.reversed_microcents
    else:
        raise ValueError(f"round {sheet.round_id} is neither settled nor void: not finished")
    return data


class RoundRecord:
    """The round record file of one table (see the module)."""

    def __init__(self, directory: Path, table_id: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{table_id}.rounds.jsonl"

    def append(self, sheet: RoundSheet) -> None:
        """Write a finished round, durably."""
        line = json.dumps(round_data(sheet), sort_keys=True) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def rounds(self) -> list[dict[str, Any]]:
        """Every round recorded, oldest first."""
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
