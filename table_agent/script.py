"""Scripted rounds: chosen cards (and wagers) for demonstrations, dealt from a stacked deck.

A scripted round is a JSON file. Only ``hands`` is required::

    {"label": "straight flush and royal flush",
     "hands": {"6": "9H TH JH QH KH", "2": "AS KS QS JS TS"},
     "dealer": "2C 3D 5H 8S JC",
     "community": "KD 7C",
     "wagers": {"6": ["progressive", {"kind": "five_card_bonus", "on_dealer_hand": true}],
                "2": [{"kind": "bonus", "amount_cents": 500}]},
     "folded": [],
     "rest_of_round_void": ""}

``hands``: every seat dealt, with its cards ("JK" is the joker). ``dealer`` and ``community``
(Three Card Poker's two cards; dealt only when a five-card wager is placed) are optional: what
is left out is dealt at random. ``wagers`` by seat: a kind, or an object with ``kind`` and
optionally ``amount_cents`` (default: the table's minimum), ``on_dealer_hand`` and ``envy``; a
seat left out places the default wagers (the Progressive Payout Wager where offered), an empty
list none. ``folded``: seats that fold (Caribbean Stud), reported without cards.
``rest_of_round_void``: a Texas Hold 'Em Bonus irregularity after the first two cards
(``true`` for the simulator's § 647a.13(d) reason).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jackpot.kinds import WagerKind
from table_agent.deck import DeckCard, parse_deck_cards
from table_agent.wagers import PlacedWager


class ScriptError(ValueError):
    """A scripted round that cannot be read, or cannot be dealt at the table's game."""


@dataclass(frozen=True, slots=True)
class ScriptedRound:
    """A round with chosen cards by seat (``hands``: every seat dealt), optionally the dealer's
    and the community cards. ``wagers``: seats' wagers (an amount of 0 stands for the table's
    minimum); a seat of ``hands`` not in it places the default wagers. ``folded``: seats that
    fold. ``rest_of_round_void``: the reason, "" for none, ``True`` for the game's own."""

    hands: Mapping[int, Sequence[DeckCard]]
    dealer: Sequence[DeckCard] = ()
    community: Sequence[DeckCard] = ()
    wagers: Mapping[int, Sequence[PlacedWager]] = field(default_factory=dict)
    folded: Sequence[int] = ()
    rest_of_round_void: str | bool = ""


def _cards(text: Any) -> tuple[DeckCard, ...]:
    if not isinstance(text, str):
        raise ValueError(f"cards must be written as one string, e.g. 'AS KS QS', not {text!r}")
    return parse_deck_cards(text.split())


def _wager(seat: int, entry: Any) -> PlacedWager:
    if isinstance(entry, str):
        entry = {"kind": entry}
    if not isinstance(entry, Mapping) or "kind" not in entry:
        raise ValueError(f"seat {seat}: a wager is a kind or an object with 'kind', not {entry!r}")
    kinds = ", ".join(kind.value for kind in WagerKind)
    if entry["kind"] not in {kind.value for kind in WagerKind}:
        raise ValueError(f"seat {seat}: unknown wager kind {entry['kind']!r}; kinds: {kinds}")
    amount = entry.get("amount_cents", 0)
    if not isinstance(amount, int) or amount < 0:
        raise ValueError(f"seat {seat}: amount_cents must be a whole number of cents")
    return PlacedWager(
        seat,
        WagerKind(entry["kind"]),
        amount,
        bool(entry.get("on_dealer_hand", False)),
        bool(entry.get("envy", False)),
    )


def parse_script(data: Mapping[str, Any], default_label: str) -> tuple[str, ScriptedRound]:
    """The label and round of a script's data; raise ValueError (or InvalidCards) naming the
    first problem."""
    hands = {int(seat): _cards(cards) for seat, cards in data["hands"].items()}
    wagers: dict[int, list[PlacedWager]] = {}
    for seat_text, entries in data.get("wagers", {}).items():
        seat = int(seat_text)
        if seat not in hands:
            raise ValueError(f"seat {seat} has wagers but no hand in 'hands'")
        wagers[seat] = [_wager(seat, entry) for entry in entries]
    folded = [int(seat) for seat in data.get("folded", ())]
    if not set(folded) <= set(hands):
        raise ValueError("a folded seat must have its hand in 'hands'")
    rest_of_round_void = data.get("rest_of_round_void", "")
    if not isinstance(rest_of_round_void, (str, bool)):
        raise ValueError("rest_of_round_void is a reason or true")
    round_ = ScriptedRound(
        hands,
        _cards(data.get("dealer", "")),
        _cards(data.get("community", "")),
        wagers,
        folded,
        rest_of_round_void,
    )
    return str(data.get("label", default_label)), round_


def load_script(path: Path) -> tuple[str, ScriptedRound]:
    """Read a scripted round from a JSON file (see the module's documentation)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping):
        raise ValueError("a scripted round is a JSON object")
    return parse_script(data, path.name)
