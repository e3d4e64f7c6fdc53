"""Meter, table and money configuration: refusals cite the regulation."""

from __future__ import annotations

import pytest

from controller.domain.config import LinkGroupConfig, MeterConfig, TableConfig
from jackpot.errors import InvalidAmount, InvalidConfiguration
from jackpot.money import (
    format_cents,
    format_percent,
    parse_dollars_cents,
    parse_percent_ppm,
    percent_of_cents,
)


def meter(**changes: object) -> MeterConfig:
    fields: dict[str, object] = dict(
        meter_id="m",
        link_group_id="g",
        game="caribbean-stud",
        reset_cents=1_000_000,
        rate_ppm=150_000,
    )
    fields.update(changes)
    return MeterConfig(**fields)  # type: ignore[arg-type]


def table(**changes: object) -> TableConfig:
    fields: dict[str, object] = dict(
        table_id="t", game="caribbean-stud", paytable="A", seats=7, link_group_id="g", meter_id="m"
    )
    fields.update(changes)
    return TableConfig.progressive(**fields)  # type: ignore[arg-type]


def test_caribbean_stud_reset_of_10000_is_accepted_and_below_is_refused() -> None:
    assert meter(reset_cents=1_000_000).reset_cents == 1_000_000
    with pytest.raises(
        InvalidConfiguration,
        match=r"below the \$10,000.00 minimum .*"
        r"§ 639a\.12\(d\)\(3\)",
    ):
        meter(reset_cents=999_999)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rate_ppm": 0}, "must be above 0%"),
        ({"rate_ppm": 900_000, "reserve_rate_ppm": 200_000}, "exceeds 100%"),
        ({"ceiling_cents": 1_000_000}, "above the reset amount"),
        ({"game": "blackjack"}, "unknown game 'blackjack'"),
        ({"meter_id": "a:b"}, "meter id 'a:b' must be 1-64 characters"),
        ({"reset_cents": 10**16}, "largest meter"),
    ],
)
def test_meter_refusals(changes: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidConfiguration, match=message):
        meter(**changes)


def test_more_than_seven_seats_is_refused_citing_the_table_rule() -> None:
    assert table(seats=7).seats == 7
    with pytest.raises(InvalidConfiguration, match=r"allows 1 to 7 \(§ 639a\.2\(a\)\)"):
        table(seats=8)
    with pytest.raises(InvalidConfiguration):
        table(seats=0)


def test_unlisted_paytable_is_refused() -> None:
    with pytest.raises(
        InvalidConfiguration,
        match=r"Progressive Payout Wager has no paytable 'D'; "
        r"§ 639a\.12\(d\)\(1\) lists A, B, C",
    ):
        table(paytable="D")


def test_table_wager_must_be_positive() -> None:
    with pytest.raises(InvalidAmount):
        table(wager_cents=0)


def test_link_group_id_checked() -> None:
    with pytest.raises(InvalidConfiguration):
        LinkGroupConfig("{tag}")


@pytest.mark.parametrize(
    ("text", "ppm"),
    [("15", 150_000), ("0.1234", 1_234), ("100", 1_000_000), ("12.5", 125_000), ("0", 0)],
)
def test_percent_parses_exactly(text: str, ppm: int) -> None:
    assert parse_percent_ppm(text, "rate") == ppm
    assert parse_percent_ppm(format_percent(ppm), "rate") == ppm


@pytest.mark.parametrize("text", ["0.12345", "-1", "1e2", "abc", "100.0001", "15%"])
def test_percent_refused(text: str) -> None:
    with pytest.raises(InvalidConfiguration):
        parse_percent_ppm(text, "rate of progression")


@pytest.mark.parametrize(
    ("text", "cents"),
    [("10000", 1_000_000), ("$10,000", 1_000_000), ("12.5", 1_250), ("0.01", 1), ("0", 0)],
)
def test_dollars(text: str, cents: int) -> None:
    assert parse_dollars_cents(text) == cents


@pytest.mark.parametrize("text", ["1.234", "-5", "ten", "1,00"])
def test_dollars_refused(text: str) -> None:
    with pytest.raises(InvalidAmount):
        parse_dollars_cents(text)


def test_format_and_percent_of_cents_round_down() -> None:
    assert format_cents(123_456_789) == "$1,234,567.89"
    assert format_cents(-5) == "-$0.05"
    assert percent_of_cents(1_000_019, 100_000) == 100_001  # 10% of $10,000.19, floor


def test_a_holdem_table_needs_its_payout_limit_and_awards_stay_exact() -> None:
    from controller.domain.config import WagerOffer
    from controller.domain.paytables import AwardRule, Paytable
    from controller.domain.wagers import TEXAS_HOLDEM_BONUS_WAGERS

    bonus = WagerOffer("bonus", TEXAS_HOLDEM_BONUS_WAGERS["bonus"].paytable("A"), 500, 10_000)
    with pytest.raises(
        InvalidConfiguration, match=r"needs its aggregate payout limit .*§ 647a\.12\(c\)"
    ):
        TableConfig("h", "texas-holdem-bonus", 6, "g", (bonus,))
    assert TableConfig("h", "texas-holdem-bonus", 6, "g", (bonus,), 5_000_000).payout_limit_cents
    huge = Paytable("X", "Rules Submission", (("flush", AwardRule.parse("123,456,788 to 1")),))
    offer = WagerOffer("five_card_bonus", huge, 100, 99_999_999)
    with pytest.raises(InvalidConfiguration, match="above the largest award this controller pays"):
        TableConfig("c", "caribbean-stud", 7, "g", (offer,))
