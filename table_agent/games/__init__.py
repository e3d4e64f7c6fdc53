"""The games the agent deals, by the controller's game name."""

from __future__ import annotations

from table_agent.games import caribbean_stud, six_card_fortune, texas_holdem_bonus, three_card_poker
from table_agent.games.procedure import GameProcedure

GAMES: dict[str, GameProcedure] = {
    module.PROCEDURE.facts.name: module.PROCEDURE
    for module in (caribbean_stud, three_card_poker, six_card_fortune, texas_holdem_bonus)
}


class UnknownGame(ValueError):
    """The table's game is not one this agent deals."""


def game_procedure(name: str) -> GameProcedure:
    """The procedure of the game called ``name`` (e.g. ``three-card-poker``)."""
    try:
        return GAMES[name]
    except KeyError:
        raise UnknownGame(
            f"the agent does not deal {name!r}; it deals {', '.join(sorted(GAMES))}"
        ) from None


__all__ = ["GAMES", "GameProcedure", "UnknownGame", "game_procedure"]
