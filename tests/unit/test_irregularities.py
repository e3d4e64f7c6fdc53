"""The seeded irregularities' rules per game (jackpot.irregularities), and how the agent's
outbox tells which rounds an irregularity finished."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.domain.bounds import REASON_MAX_CHARS
from jackpot.epochs import JournalPosition
from jackpot.errors import InvalidArgument
from jackpot.irregularities import (
    CHIP_COUNT_SECTION,
    HOUSE_RULE,
    LATE_EXPOSURE,
    RULES,
    irregularity_reason,
    irregularity_rule,
)
from jackpot.kinds import IrregularityEffect, IrregularityKind
from table_agent.games import GAMES
from table_agent.outbox import Outbox

K = IrregularityKind


@pytest.mark.parametrize(
    ("game", "kind", "after", "effect", "section"),
    [
        ("caribbean-stud", K.WRONG_CARD_COUNT, False, "void", "§ 639a.13(c)"),
        ("caribbean-stud", K.CARDS_EXPOSED, True, "void", "§ 639a.13(a)"),
        ("caribbean-stud", K.DEALER_CARD_EXPOSED, False, "void", "§ 639a.13(d)"),
        ("caribbean-stud", K.SHOE_JAM, False, "void", "§ 639a.13(f)"),
        ("texas-holdem-bonus", K.CARDS_EXPOSED, False, "void", "§ 647a.13(a)"),
        ("texas-holdem-bonus", K.CARDS_EXPOSED, True, "bonus_settles", "§ 647a.13(a)"),
        ("texas-holdem-bonus", K.DEALER_CARD_EXPOSED, False, "bonus_settles", "§ 647a.13(d)"),
        ("texas-holdem-bonus", K.SHOE_JAM, False, "void", "§ 647a.13(f)"),
        ("three-card-poker", K.MISDEAL, False, "void", "§ 649a.9(f)"),
        ("six-card-fortune-pai-gow", K.WRONG_CARD_COUNT, False, "void", HOUSE_RULE),
    ],
)
def test_each_game_applies_its_chapter(
    game: str, kind: IrregularityKind, after: bool, effect: str, section: str
) -> None:
    rule = irregularity_rule(game, kind, after_initial_cards=after)
    assert (rule.effect.value, rule.section) == (effect, section)


SEEDED_SECTIONS = frozenset(
    [f"639a.{n}" for n in range(1, 14)]  # 41 Pa.B. 3975: chapter 639a, §§ 639a.1-639a.13
    + [f"647a.{n}" for n in range(1, 14)]  # and chapter 647a, §§ 647a.1-647a.13
    + ["649a.9", "670a.11"]  # the Three Card Poker and Six-Card Fortune seeds: one each
)
"""The sections whose text the seeds (docs: the seeds' README) hold."""


def test_irregularities_cite_only_sections_the_seeds_hold() -> None:
    """§ 670a.13 is named by § 670a.11 but its text is not in the seeds: a Six-Card Fortune
    misdeal is voided by the documented house rule, cited as such."""
    cited = [rule.section for rules in RULES.values() for rule in rules.values()]
    cited += [LATE_EXPOSURE.section, CHIP_COUNT_SECTION]
    cited += [procedure.misdeal_reason for procedure in GAMES.values()]
    cited += [p.rest_of_round_void_reason for p in GAMES.values() if p.rest_of_round_void_reason]
    for text in cited:
        sections = re.findall(r"§ (\d+a\.\d+)", text)
        assert sections or HOUSE_RULE in text, text
        assert set(sections) <= SEEDED_SECTIONS, text
    assert irregularity_rule("six-card-fortune-pai-gow", K.MISDEAL).section == HOUSE_RULE


def test_what_the_seeds_do_not_rule_on_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="give no effect for shoe_jam"):
        irregularity_rule("three-card-poker", K.SHOE_JAM)
    with pytest.raises(InvalidArgument, match="ReportChipCount"):
        irregularity_rule("caribbean-stud", K.CHIP_COUNT)


def test_every_reason_fits_a_void_and_names_its_section() -> None:
    for game, rules in RULES.items():
        for kind, rule in rules.items():
            reason = irregularity_reason(kind, rule)
            assert len(reason) <= REASON_MAX_CHARS and rule.section in reason, (game, kind)
            returned = "all wagers returned" in reason
            assert returned is (rule.effect is IrregularityEffect.VOID)


def test_an_irregularity_finishes_a_round_only_when_it_voided_it(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path, "t1")
    position = JournalPosition("e1", 1)
    for round_id in (1, 2, 3):
        outbox.put(f"{round_id}:lockout", "lockout", round_id, {"wagers": []})
        outbox.ack(f"{round_id}:lockout", position=position, sums={})
    outbox.put("1:chip_count", "chip_count", 1, {"chips": 0})
    outbox.ack("1:chip_count", position=position, sums={})
    outbox.put("2:irregularity", "irregularity", 2, {"kind": "misdeal"})
    outbox.ack("2:irregularity", position=position, sums={"reversed_microcents": 0})
    outbox.put("3:irregularity", "irregularity", 3, {"kind": "dealer_card_exposed"})
    outbox.ack("3:irregularity", position=position, sums={})  # bonus wagers still to settle
    assert outbox.unfinished_rounds() == [1, 3]
