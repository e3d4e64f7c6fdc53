"""A wager offer from its declaration (:mod:`controller.domain.offers`): the same offer
whether the operator declared it in a Rules Submission or registered it over the wire."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.api import convert
from controller.domain.games import get_game
from controller.domain.offers import WagerDeclaration, wager_offer
from controller.runtime.rules_file import load_submission
from jackpot.errors import InvalidConfiguration

RULES = Path(__file__).resolve().parents[2] / "deploy" / "rules"


@pytest.mark.parametrize("path", sorted(RULES.glob("*.toml")), ids=lambda p: p.name)
def test_a_submissions_tables_come_back_the_same_from_the_wire(path: Path) -> None:
    """Every example table, written out to the wire (every line of every paytable) and read
    back, offers exactly what the submission declared: printed paytables, written lines, envy
    lines, limits and meters."""
    for table in load_submission(path).table_configs():
        assert convert.table_config(convert.table(table)) == table


def test_a_printed_paytable_is_chosen_by_name_and_its_lines_stay_as_printed() -> None:
    game = get_game("caribbean-stud")
    chosen = wager_offer(game, WagerDeclaration("bonus", "A", min_cents=100, max_cents=500), "w")
    assert chosen.paytable == game.wager("bonus").paytable("A")
    printed = tuple((line, rule.text) for line, rule in chosen.paytable.lines)
    same = wager_offer(game, WagerDeclaration("bonus", "A", printed, (), 100, 500), "w")
    assert same == chosen
    with pytest.raises(InvalidConfiguration, match=r"w: § 639a\.12\(c\) prints paytable A; its"):
        wager_offer(game, WagerDeclaration("bonus", "A", printed[1:], (), 100, 500), "w")
    with pytest.raises(InvalidConfiguration, match="has no paytable 'Z'"):
        wager_offer(game, WagerDeclaration("bonus", "Z", (), (), 100, 500), "w")


def test_written_lines_are_checked_against_the_hands_the_wager_makes() -> None:
    game = get_game("three-card-poker")
    lines = (("mini_royal", "100% of meter"), ("straight_flush", "$70.00"))
    offer = wager_offer(game, WagerDeclaration("progressive", "", lines, (), 100, 100), "w")
    assert [(line, rule.text) for line, rule in offer.paytable.lines] == list(lines)
    with pytest.raises(InvalidConfiguration, match=r"w\.lines\[1\]: .* cannot produce a hand"):
        wager_offer(game, WagerDeclaration("progressive", "", (("x", "$5"),), (), 1, 1), "w")


def test_registering_a_written_six_card_table_counts_no_hands() -> None:
    """The check of a written paytable reads the static line tables: building the Six-Card
    Fortune tables from the wire (what RegisterTable does) never loads the exhaustive counts,
    so no request stalls the controller's event loop counting 22,957,480 hands."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "import controller.runtime.server\n"
        "from controller.api import convert\n"
        "from controller.runtime.rules_file import load_submission\n"
        f"path = Path({str(RULES / 'six-card-fortune-pai-gow.toml')!r})\n"
        "for table in load_submission(path).table_configs():\n"
        "    assert convert.table_config(convert.table(table)) == table\n"
        "assert 'controller.domain.line_counting' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
