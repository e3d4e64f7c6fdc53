"""A wager offer built from its declaration, whichever way the operator declared it (a Rules
Submission's ``[games.<game>.wagers.<kind>]`` entry, or a table registered over the wire).

A wager whose paytables the regulation prints is offered on one of them, chosen by name and
never rewritten; a wager the regulation prints no paytable for is offered on the lines the
operator writes out, each a hand the wager can produce. Either may add envy lines where the
wager pays envy bonuses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from controller.domain.config import WagerOffer
from controller.domain.games import Game
from jackpot.errors import InvalidConfiguration

Line = tuple[str, str]  # (hand line, award text), e.g. ("royal_flush", "100% of meter")


@dataclass(frozen=True, slots=True)
class WagerDeclaration:
    """One wager a table offers, as declared: its kind, the paytable's name, the lines written
    out (hand line, award text; highest first), the envy lines, the limits in cents and the
    meters it feeds (the first pays "P% of meter")."""

    kind: str
    paytable: str = ""
    lines: tuple[Line, ...] = ()
    envy_lines: tuple[Line, ...] = ()
    min_cents: int = 0
    max_cents: int = 0
    meter_ids: tuple[str, ...] = ()


def wager_offer(game: Game, declared: WagerDeclaration, where: str) -> WagerOffer:
    """The offer ``declared`` makes at ``game``; ``where`` names the declaration in a refusal.

    Refused: a paytable the regulation does not print, lines that differ from the printed
    paytable named, a written line the wager cannot produce or listed twice, an award that is
    not an award. The offer's limits and meters are checked by :meth:`WagerOffer.check`.
    """
    rules = game.wager(declared.kind)
    if rules.paytables:  # printed by the regulation: chosen by name, never rewritten
        paytable = rules.paytable(declared.paytable)
        printed = [(line, rule.text) for line, rule in paytable.lines]
        if declared.lines and list(declared.lines) != printed:
            raise InvalidConfiguration(
                f"{where}: {rules.facts.citation} prints paytable {paytable.name}; its "
                "lines cannot be changed"
            )
        if declared.envy_lines:
            written = rules.written_paytable(where, paytable.name, [], declared.envy_lines)
            paytable = replace(paytable, envy_lines=written.envy_lines)
    else:
        paytable = rules.written_paytable(
            where, declared.paytable, declared.lines, declared.envy_lines
        )
    return WagerOffer(
        declared.kind, paytable, declared.min_cents, declared.max_cents, declared.meter_ids
    )
