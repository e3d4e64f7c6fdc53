"""Rules Submissions: every shipped example loads; each refusal cites its section."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.ctl.main import main as jackpotctl
from controller.domain.submission import parse_submission
from controller.errors import InvalidConfiguration
from controller.rules_file import load_submission

EXAMPLES = sorted((Path(__file__).parents[2] / "deploy" / "rules").glob("*.toml"))
CARIBBEAN = tomllib.loads(
    (Path(__file__).parents[2] / "deploy" / "rules" / "caribbean-stud.toml").read_text()
)


def changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """The Caribbean Stud example with one entry replaced."""
    data = copy.deepcopy(CARIBBEAN)
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_shipped_example_loads(path: Path) -> None:
    submission = load_submission(path)
    assert submission.tables
    assert jackpotctl(["rules", "check", str(path)]) == 0


def test_the_caribbean_example_registers_progressive_tables() -> None:
    submission = parse_submission(CARIBBEAN)
    tables = submission.table_configs()
    assert [(t.table_id, t.paytable, t.meter_id, t.wager_cents) for t in tables] == [
        ("cs-1", "B", "cs-main", 100),
        ("cs-2", "B", "cs-main", 100),
        ("cs-3", "B", "cs-main", 100),
    ]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("meters", 0, "reset"),
            "9999.99",
            r"below the \$10,000.00 minimum for Caribbean Stud Poker \(§ 639a\.12\(d\)\(3\)\)",
        ),
        (
            ("tables", 0, "seats"),
            8,
            r"tables\.cs-1: 8 seats; Caribbean Stud Poker allows 1 to 7 "
            r"\(§ 639a\.2\(a\)\)",
        ),
        (
            ("games", "caribbean-stud", "wagers", "progressive", "paytable"),
            "D",
            r"Progressive Payout Wager has no paytable 'D'; § 639a\.12\(d\)\(1\) lists A, B, C",
        ),
        (
            ("games", "caribbean-stud", "wagers", "bonus", "paytable"),
            "E",
            r"Caribbean Stud Bonus Wager has no paytable 'E'; § 639a\.12\(c\) lists A, B, C",
        ),
        (
            ("games", "caribbean-stud", "wagers", "progressive", "meter"),
            "ghost",
            "meter ghost is not declared",
        ),
        (
            ("games", "caribbean-stud", "wagers", "bonus", "max"),
            "0.50",
            r"0 < min <= max, got \$1.00 to \$0.50",
        ),
        (("meters", 0, "rate_percent"), "1.23456", "at most 4 decimal places"),
        (("tables", 0, "link_group"), "elsewhere", "link group elsewhere is not declared"),
    ],
)
def test_refusals(path: tuple[Any, ...], value: Any, message: str) -> None:
    with pytest.raises(InvalidConfiguration, match=message):
        parse_submission(changed(path, value))


def test_a_table_linked_to_a_meter_in_another_link_group_is_refused() -> None:
    data = copy.deepcopy(CARIBBEAN)
    data["link_groups"].append({"id": "annex"})
    data["tables"][2]["link_group"] = "annex"
    with pytest.raises(
        InvalidConfiguration,
        match=r"tables\.cs-3: the table is in link group "
        r"annex but its progressive meter cs-main is "
        r"in floor; all of a table's meters",
    ):
        parse_submission(data)


def test_texas_holdem_bonus_seats_and_paytables() -> None:
    data = tomllib.loads((EXAMPLES[-1]).read_text())
    assert EXAMPLES[-1].name == "texas-holdem-bonus.toml"
    data["tables"][0]["seats"] = 7
    with pytest.raises(InvalidConfiguration, match=r"allows 1 to 6 \(§ 647a\.2\(a\)\)"):
        parse_submission(data)
    data["tables"][0]["seats"] = 6
    data["games"]["texas-holdem-bonus"]["wagers"]["bonus"]["paytable"] = "C"
    with pytest.raises(InvalidConfiguration, match=r"§ 647a\.12\(b\) lists A, B"):
        parse_submission(data)
    data["games"]["texas-holdem-bonus"]["wagers"]["bonus"]["paytable"] = "A"
    data["games"]["texas-holdem-bonus"]["wagers"]["progressive"] = {"paytable": "A"}
    with pytest.raises(InvalidConfiguration, match="has no wager 'progressive'"):
        parse_submission(data)


def test_unknown_game_and_unreadable_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvalidConfiguration, match="unknown game 'baccarat'"):
        parse_submission(changed(("games",), {"baccarat": {"wagers": {"bonus": {}}}}))
    bad = tmp_path / "bad.toml"
    bad.write_text("[[tables]\nid = 1")
    assert jackpotctl(["rules", "check", str(bad)]) == 1
    assert f"{bad}: not valid TOML" in capsys.readouterr().err
    assert jackpotctl(["rules", "check", str(tmp_path / "missing.toml")]) == 1
    assert "cannot read" in capsys.readouterr().err
