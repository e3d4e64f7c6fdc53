"""Rules Submissions: every shipped example loads; each refusal cites its section."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.ctl.main import main as jackpotctl
from controller.domain.submission import parse_submission
from controller.runtime.rules_file import load_submission
from jackpot.errors import InvalidConfiguration

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
    assert [(t.table_id, t.meter_ids) for t in tables] == [
        ("cs-1", ("cs-main",)),
        ("cs-2", ("cs-main",)),
        ("cs-3", ("cs-main",)),
    ]
    offers = {offer.wager: offer for offer in tables[0].wagers}
    assert (offers["progressive"].paytable.name, offers["progressive"].min_cents) == ("B", 100)
    assert (offers["bonus"].min_cents, offers["bonus"].max_cents) == (100, 10_000)
    assert offers["five_card_bonus"].paytable.citation == "Rules Submission"


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
            r"0 < min <= max <= \$1,000,000.00, got \$1.00 to \$0.50",
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
    path = Path(__file__).parents[2] / "deploy" / "rules" / "texas-holdem-bonus.toml"
    data = tomllib.loads(path.read_text())
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


THREE_CARD = tomllib.loads(
    (Path(__file__).parents[2] / "deploy" / "rules" / "three-card-poker.toml").read_text()
)


def three_card_with(lines: list[dict[str, str]], **wager: Any) -> dict[str, Any]:
    data = copy.deepcopy(THREE_CARD)
    data["games"]["three-card-poker"]["wagers"]["progressive"]["lines"] = lines
    data["games"]["three-card-poker"]["wagers"]["progressive"].update(wager)
    return data


def test_a_written_paytable_keeps_suit_specific_lines_first() -> None:
    submission = parse_submission(THREE_CARD)
    offer = submission.games["three-card-poker"]["progressive"]
    assert [line for line, _ in offer.paytable.lines][:2] == ["mini_royal_in_spades", "mini_royal"]
    assert offer.paytable.highest_award(("mini_royal_in_hearts", "mini_royal")) == (
        "mini_royal",
        offer.paytable.lines[1][1],
    )
    assert [t.meter_ids for t in submission.table_configs()] == [("tcp-main", "tcp-five")]


@pytest.mark.parametrize(
    ("lines", "wager", "message"),
    [
        (
            [{"hand": "five_aces", "award": "100% of meter"}],
            {},
            r"Three Card Poker Progressive Payout Wager \(§ 649a\.9\) cannot produce a hand "
            r"'five_aces'",
        ),
        ([{"hand": "royal_flush", "award": "$5"}], {}, "cannot produce a hand 'royal_flush'"),
        (
            [{"hand": "pair", "award": "$5", "suit": "spades"}],
            {},
            "cannot produce a hand 'pair_in_spades'",
        ),
        (
            [{"hand": "mini_royal", "award": "$5", "suit": "declared"}],
            {"declared_suit": None},
            "suit 'declared' needs the wager's declared_suit",
        ),
        ([{"hand": "mini_royal", "award": "$5", "suit": "stars"}], {}, "suit 'stars' is not"),
        (
            [{"hand": "straight", "award": "$5"}, {"hand": "straight", "award": "$6"}],
            {},
            "hand 'straight' is listed twice",
        ),
        ([{"hand": "straight", "award": "lots"}], {}, "is not one of 'N for 1'"),
        ([], {}, "the seeds print no paytable"),
    ],
)
def test_written_paytable_refusals(
    lines: list[dict[str, str]], wager: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidConfiguration, match=message):
        parse_submission(three_card_with(lines, **wager))


def test_a_printed_paytable_cannot_be_written_out_instead() -> None:
    data = copy.deepcopy(CARIBBEAN)
    data["games"]["caribbean-stud"]["wagers"]["bonus"]["lines"] = [
        {"hand": "pair", "award": "1 to 1"}
    ]
    with pytest.raises(
        InvalidConfiguration,
        match=r"§ 639a\.12\(c\) prints this wager's "
        "paytables; choose one by name",
    ):
        parse_submission(data)


def test_only_a_wager_that_feeds_a_meter_pays_a_share_of_it() -> None:
    path = Path(__file__).parents[2] / "deploy" / "rules" / "six-card-fortune-pai-gow.toml"
    data = tomllib.loads(path.read_text())
    data["games"]["six-card-fortune-pai-gow"]["wagers"]["fortune_bonus"]["lines"][0]["award"] = (
        "10% of meter"
    )
    with pytest.raises(
        InvalidConfiguration,
        match="fortune_bonus: paytable SCF-B pays a share of a meter, but the wager feeds no meter",
    ):
        parse_submission(data)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["meters"].append(dict(d["meters"][0], rate_percent="20")),
            "meters: id 'cs-main' is declared twice",
        ),
        (
            lambda d: d["tables"].append(dict(d["tables"][0], seats=5)),
            "tables: id 'cs-1' is declared twice",
        ),
        (
            lambda d: d["link_groups"].append({"id": "floor", "description": "again"}),
            "link_groups: id 'floor' is declared twice",
        ),
        (
            lambda d: d["meters"][0].update(reserve_rate_precent="5"),
            "meters.cs-main: unknown key 'reserve_rate_precent'",
        ),
        (lambda d: d["tables"][0].update(paytable="Z"), "tables.cs-1: unknown key 'paytable'"),
        (
            lambda d: d["meters"][0].update(reset=10000.10),
            "meters.cs-main: 'reset' must be dollars as a string",
        ),
        (
            lambda d: d["meters"][0].update(ceiling="100"),
            "meters.cs-main: ceiling \\$100.00 must be above the reset amount",
        ),
    ],
)
def test_duplicates_unknown_keys_and_floats_are_refused(edit: Any, message: str) -> None:
    data = copy.deepcopy(CARIBBEAN)
    edit(data)
    with pytest.raises(InvalidConfiguration, match=message):
        parse_submission(data)


def _with_mystery(**entry: Any) -> dict[str, Any]:
    """The Caribbean Stud example with a must-hit-by meter fed by its progressive wager
    after cs-main (which pays its "P% of meter" lines)."""
    data = copy.deepcopy(CARIBBEAN)
    meter = {
        "id": "cs-mystery",
        "link_group": "floor",
        "game": "caribbean-stud",
        "kind": "must_hit_by",
        "reset": "10000",
        "must_hit_by": "12500",
        "rate_percent": "2",
    }
    meter.update(entry)
    data["meters"].append({k: v for k, v in meter.items() if v is not None})
    data["games"]["caribbean-stud"]["wagers"]["progressive"].pop("meter", None)
    data["games"]["caribbean-stud"]["wagers"]["progressive"]["meters"] = ["cs-main", "cs-mystery"]
    return data


def test_a_must_hit_by_meter_is_declared_like_every_other_meter() -> None:
    submission = parse_submission(_with_mystery())
    meters = {m.meter_id: m for m in submission.meters}
    assert (meters["cs-mystery"].kind, meters["cs-mystery"].must_hit_by_cents) == (
        "must_hit_by",
        1_250_000,
    )
    assert (meters["cs-main"].kind, meters["cs-main"].must_hit_by_cents) == ("progressive", 0)
    assert submission.table_configs()[0].meter_ids == ("cs-main", "cs-mystery")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"must_hit_by": None}, r"meters\.cs-mystery: must-hit-by amount \$0\.00 .* must be above"),
        ({"must_hit_by": "10000"}, "must be above the reset amount"),
        ({"ceiling": "11000"}, "a must_hit_by meter has no ceiling"),
        ({"kind": "lucky"}, "kind 'lucky' is not one of progressive, must_hit_by"),
        ({"kind": None}, "must_hit_by_cents is for a must_hit_by meter only"),
    ],
)
def test_a_must_hit_by_declaration_is_refused_where_it_cannot_work(
    entry: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidConfiguration, match=message):
        parse_submission(_with_mystery(**entry))


def test_a_percent_of_meter_line_never_pays_from_a_must_hit_by_meter() -> None:
    data = _with_mystery()
    data["games"]["caribbean-stud"]["wagers"]["progressive"]["meters"] = ["cs-mystery", "cs-main"]
    with pytest.raises(
        InvalidConfiguration,
        match=r"games\.caribbean-stud\.wagers\.progressive: .* from must-hit-by meter cs-mystery",
    ):
        parse_submission(data)


def test_the_sign_reads_the_titles_of_the_submission() -> None:
    """Display names for the sign: the link group's and each meter's title, the game's, the
    top award; a link group without a meter shows its fixed top awards."""
    from controller.web.display import sign_displays

    shown = {
        group: display.as_json()
        for path in EXAMPLES
        for group, display in sign_displays([load_submission(path)]).items()
    }
    assert shown["floor"]["title"] == "Caribbean Stud Progressive"
    assert shown["floor"]["meters"]["cs-main"] == {
        "title": "Progressive Jackpot",
        "top_award": "royal flush wins 100% of the meter",  # the words of hand_words
    }
    assert shown["carnival"]["meters"]["tcp-main"]["title"] == "Mini Royal Jackpot"
    assert len(shown["carnival"]["meters"]) == 2
    pit = shown["poker-pit"]
    assert (pit["title"], pit["games"], pit["meters"], pit["progressive"]) == (
        "Texas Hold 'Em Bonus",
        ["Texas Hold 'Em Bonus Poker"],
        {},
        False,
    )
    (bonus,) = pit["fixed_awards"]
    assert bonus["wager"] == "Bonus"
    assert bonus["lines"][0] == ["ace-ace (dealer and player)", "1,000 to 1"]  # § 647a.12(b)
    untitled = changed(("link_groups",), [{"id": "floor"}])
    untitled["meters"][0].pop("title")
    (display,) = sign_displays([parse_submission(untitled)]).values()
    assert display.title == "floor"
    assert display.meters["cs-main"]["title"] == "Progressive Jackpot"


@pytest.mark.parametrize("title", ["", "   ", "x" * 61, "two\nlines", 5])
def test_a_title_the_sign_cannot_show_is_refused(title: Any) -> None:
    data = changed(("link_groups",), [{"id": "floor", "title": title}])
    with pytest.raises(InvalidConfiguration, match=r"link_groups\.floor: .?title.? must be"):
        parse_submission(data)
