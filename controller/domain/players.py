"""The player at the seat: an opaque player token per seat at lockout (docs/staged-changes.md,
"The player at the seat").

A token is what the casino's player (loyalty) system issued for the rated player at a seat:
1 to :data:`PLAYER_TOKEN_MAX_CHARS` of ``[A-Za-z0-9._:-]``, never a name or any other personal
data (its charset leaves no room for one). It is never required. Given at lockout, it goes with
each of that seat's wagers (stored with the round), onto any jackpot they win (the slip, the
journal's award or mystery-hit entry, the export). A round without tokens stores, journals and
reads nothing more. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from controller.domain.bounds import MAX_SEAT_REPORTS, excerpt
from controller.domain.rounds import Wager
from jackpot.errors import InvalidArgument

PLAYER_TOKEN_MAX_CHARS = 64
"""The longest player token."""

_TOKEN = re.compile(rf"[A-Za-z0-9._:-]{{1,{PLAYER_TOKEN_MAX_CHARS}}}")


def seat_players(wagers: Sequence[Wager], players: Sequence[tuple[int, str]]) -> list[Wager]:
    """``wagers`` (checked against the table already) with each seat's player token of
    ``players`` ((seat, token) pairs); :class:`InvalidArgument` for more pairs than seats a
    lockout reports, a seat given twice, a token outside the charset or its length, or a seat
    without a wager in this lockout."""
    if len(players) > MAX_SEAT_REPORTS:
        raise InvalidArgument(
            f"players: at most {MAX_SEAT_REPORTS} seats, one token each; got {len(players)}"
        )
    tokens: dict[int, str] = {}
    for seat, token in players:
        if seat in tokens:
            raise InvalidArgument(f"players: seat {seat} is given twice; one token a seat")
        if not _TOKEN.fullmatch(token):
            raise InvalidArgument(
                f"the player token of seat {seat} must be 1-{PLAYER_TOKEN_MAX_CHARS} of "
                f"[A-Za-z0-9._:-] (the player system's opaque id, never personal data), not "
                f"{excerpt(token)}"
            )
        tokens[seat] = token
    wagering = {wager.seat for wager in wagers}
    for seat in sorted(tokens):
        if seat not in wagering:
            raise InvalidArgument(
                f"players: seat {seat} has no wager in this lockout; a player token goes with "
                "a seat's wagers"
            )
    return [dataclasses.replace(w, player_token=tokens.get(w.seat, "")) for w in wagers]
