"""What the sign shows players instead of internal ids, from the Rules Submissions.

For each link group: its title (``[[link_groups]] title``, else its description, else its
id), the games its tables deal (the regulation's titles: "Caribbean Stud Poker"), and for
each meter its title (``[[meters]] title``, else "Progressive Jackpot") and the top award it
pays ("royal flush wins 100% of the meter"). A link group without a meter (Texas Hold 'Em
Bonus) shows its games' fixed top awards instead (for each wager, its top lines: ``{"wager":
"Bonus", "lines": [["ace-ace (dealer and player)", "1,000 to 1"], ...]}``), and "no
progressive". Paytable lines are in the words of :func:`jackpot.hands.words.hand_words`, the
one helper the CLI, the console and the slip use (the page capitalizes their first letter).
A link group of no submission this controller was given shows its ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controller.domain.games import get_game
from controller.domain.submission import RulesSubmission
from jackpot.hands.words import hand_words
from jackpot.kinds import AwardKind

TOP_AWARDS = 5
"""Fixed top awards shown for each wager of a link group without a meter."""
DEFAULT_METER_TITLE = "Progressive Jackpot"


def words(name: str) -> str:
    """A wager's name as a title: ``progressive_payout`` -> ``Progressive Payout`` (a
    paytable line or hand is :func:`~jackpot.hands.words.hand_words`)."""
    parts = [part for part in name.replace("-", "_").split("_") if part]
    return " ".join(
        part if i and part in _SMALL else part.capitalize() for i, part in enumerate(parts)
    )


_SMALL = frozenset({"and", "in", "of", "or", "to", "for", "on"})


@dataclass(slots=True)
class SignDisplay:
    """The sign's names of one link group."""

    title: str
    games: list[str] = field(default_factory=list)
    meters: dict[str, dict[str, str]] = field(default_factory=dict)
    fixed_awards: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The ``display`` field of the sign's events."""
        return {
            "title": self.title,
            "games": self.games,
            "meters": self.meters,
            "fixed_awards": self.fixed_awards,
            "progressive": bool(self.meters),
        }


def sign_displays(submissions: Iterable[RulesSubmission]) -> dict[str, SignDisplay]:
    """Each link group of ``submissions`` by id (a later submission's entry wins)."""
    found: dict[str, SignDisplay] = {}
    for rules in submissions:
        for group in rules.link_groups:
            gid = group.link_group_id
            shown = SignDisplay(rules.titles.get(gid) or group.description or gid)
            game_names = sorted({t.game for t in rules.tables if t.link_group_id == gid})
            shown.games = [get_game(name).facts.title for name in game_names]
            meters = [m for m in rules.meters if m.link_group_id == gid]
            for meter in meters:
                shown.meters[meter.meter_id] = {
                    "title": rules.titles.get(meter.meter_id, DEFAULT_METER_TITLE),
                    "top_award": _top_award(rules, game_names, meter.meter_id),
                }
            if not meters:
                for name in game_names:
                    for offer in rules.games.get(name, {}).values():
                        fixed = [
                            [hand_words(line), rule.text]
                            for line, rule in offer.paytable.lines[:TOP_AWARDS]
                        ]
                        if fixed:
                            shown.fixed_awards.append({"wager": words(offer.wager), "lines": fixed})
            found[gid] = shown
    return found


def _top_award(rules: RulesSubmission, game_names: list[str], meter_id: str) -> str:
    """The first paytable line paying a share of ``meter_id`` ("" when none does)."""
    for name in game_names:
        for offer in rules.games.get(name, {}).values():
            if meter_id not in offer.meter_ids:
                continue
            for line, rule in offer.paytable.lines:
                if rule.kind is not AwardKind.PERCENT_OF_METER:
                    continue
                if rule.meter == meter_id or (not rule.meter and offer.meter_ids[0] == meter_id):
                    text = rule.text.removesuffix(" " + rule.meter).replace(
                        "of meter", "of the meter"
                    )
                    return f"{hand_words(line)} wins {text}"
    return ""
