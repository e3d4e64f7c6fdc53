"""Must-hit-by mystery meters: the seed of a draw and the commitment anyone can check.

A must-hit-by meter's hit point is drawn uniformly in whole cents in (reset, must-hit-by]
inside the Redis script that starts its cycle (``_lib.lua`` ``mystery_draw``), from a seed
of 32 bytes this process draws with :mod:`secrets` (the operating system's CSPRNG) for every
step that may need a draw. Until the hit only the commitment is journaled:

    commitment = SHA-256 of the ASCII text "<hit point in cents>:<salt>" (lowercase hex)

The hit's journal entry then reveals the hit point and the salt, so anyone can recompute the
commitment (``printf '%s' '1234567:<salt>' | sha256sum``). docs/mystery.md has the design.
"""

from __future__ import annotations

import hashlib
import secrets

SEED_BYTES = 32
"""The seed of one step's draws: 256 bits from the CSPRNG, sent as 64 hex digits."""


def new_seed() -> str:
    """A fresh seed for a script that may draw hit points (64 lowercase hex digits)."""
    return secrets.token_hex(SEED_BYTES)


def commitment(hit_cents: int, salt: str) -> str:
    """The commitment to a hit point (cents) and its salt (hex), as the journal holds it."""
    return hashlib.sha256(f"{hit_cents}:{salt}".encode("ascii")).hexdigest()


def verifies(hit_cents: int, salt: str, committed: str) -> bool:
    """Whether a revealed hit point and salt open ``committed``."""
    return secrets.compare_digest(commitment(hit_cents, salt), committed)


class CommitmentCheck:
    """Follows the journal's must-hit-by entries (in order) and names every hit whose revealed
    hit point and salt do not open the commitment its cycle started with, or that lies outside
    the cycle's (reset, must-hit-by]. A cycle whose draw was trimmed away is checked by its
    own commitment only."""

    def __init__(self, link_group_id: str) -> None:
        self._group = link_group_id
        self._open: dict[str, dict[str, str]] = {}  # meter -> its open draw entry's fields
        self.problems: list[str] = []
        self.hits = 0

    def add(self, fields: dict[str, str]) -> None:
        """One journal entry's fields (every entry; others are ignored)."""
        kind, meter = fields.get("type"), fields.get("meter", "")
        if kind == "mystery_draw":
            self._open[meter] = fields
        elif kind == "mystery_hit":
            self.hits += 1
            self._check_hit(meter, fields)

    def _check_hit(self, meter: str, fields: dict[str, str]) -> None:
        where = f"{self._group}/{meter}: the hit at journal #{fields.get('seq', '?')}"
        try:
            hit = int(fields["hit_cents"])
            salt, committed = fields["salt"], fields["commitment"]
        except (KeyError, ValueError):
            self.problems.append(f"{where} does not reveal its hit point and salt")
            return
        if not verifies(hit, salt, committed):
            self.problems.append(f"{where}: its hit point and salt do not open its commitment")
        draw = self._open.pop(meter, None)
        if draw is None:
            return
        if draw.get("commitment") != committed or draw.get("cycle") != fields.get("cycle"):
            self.problems.append(
                f"{where} reveals another commitment than cycle {draw.get('cycle')} started "
                f"with (journal #{draw.get('seq')})"
            )
        if not int(draw["reset_cents"]) < hit <= int(draw["must_hit_by_cents"]):
            self.problems.append(
                f"{where} is outside the cycle's range (reset {draw['reset_cents']}, "
                f"must-hit-by {draw['must_hit_by_cents']}] in cents"
            )
