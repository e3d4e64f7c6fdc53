"""The content digests that make each phase of a round idempotent: a repeat of (table, round,
phase) with the same digest gets the stored answer, with another digest it is refused."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from controller.domain.rounds import RoundCards, Wager
from jackpot.cards import Card
from jackpot.errors import InvalidArgument


def fingerprint(phase: str, content: object) -> str:
    """A stable digest of a request's content for the idempotency key (table, round, phase).

    ``content`` must be JSON-serialisable; the digest ignores dictionary order.
    """
    if not phase:
        raise InvalidArgument("phase is required")
    canonical = _CANONICAL.encode([phase, content])
    return hashlib.sha256(canonical.encode()).hexdigest()


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)
"""What ``json.dumps(..., sort_keys=True, separators=(",", ":"))`` writes, made once (content
holds no cycle)."""


def lockout_fingerprint(wagers: Sequence[Wager]) -> str:
    """The content digest of a lockout: its wagers, in a canonical order."""
    rows = sorted(
        [w.seat, w.kind, w.amount_cents, w.on_dealer_hand, w.envy]
        + ([w.player_token] if w.player_token else [])  # as before for a round without one
        for w in wagers
    )
    return fingerprint("lockout", rows)


def _card_texts(cards: Sequence[Card]) -> list[str]:
    return [card.text for card in cards]


def settle_fingerprint(cards: RoundCards) -> str:
    """The content digest of a settlement: every card (as parsed, so "10H" and "TH" are the
    same report), the folds, the base game wins and the irregularity."""
    ordered = sorted(cards.seats, key=lambda report: report.seat)
    content: dict[str, object] = {
        "seats": [[r.seat, _card_texts(r.cards), r.folded] for r in ordered],
        "dealer": _card_texts(cards.dealer),
    }
    if cards.community or cards.rest_of_round_void or any(r.base_game_win_cents for r in ordered):
        content["community"] = _card_texts(cards.community)
        content["rest_void"] = cards.rest_of_round_void
        content["base_wins"] = [r.base_game_win_cents for r in ordered]
    return fingerprint("settle", content)


def void_fingerprint(reason: str) -> str:
    """The content digest of a void: its reason."""
    return fingerprint("void", reason)
