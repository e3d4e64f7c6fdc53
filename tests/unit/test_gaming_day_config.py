"""Where the gaming day is defined: the Rules Submission's [gaming_day] or --zone/--day-start
(which win), never a silent UTC default; and the hand-pay slip naming a hit's gaming day."""

from __future__ import annotations

import argparse
import copy
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from controller.ctl import gaming_days
from controller.ctl.jackpots import slip_lines
from controller.domain.gaming_day import GamingDay
from controller.domain.submission import parse_submission
from jackpot.errors import InvalidArgument, InvalidConfiguration
from jackpot.v1 import jackpot_pb2 as pb

RULES = Path(__file__).parents[2] / "deploy" / "rules" / "caribbean-stud.toml"
CARIBBEAN: dict[str, Any] = tomllib.loads(RULES.read_text())


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    gaming_days.add_arguments(parser)
    parser.add_argument("--day")
    parser.add_argument("--month")
    return parser.parse_args(list(argv))


def test_the_submission_declares_the_gaming_day() -> None:
    assert parse_submission(CARIBBEAN).gaming_day == GamingDay("America/New_York", 6)
    undeclared = copy.deepcopy(CARIBBEAN)
    del undeclared["gaming_day"]
    assert parse_submission(undeclared).gaming_day is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"zone": "Mars/Olympus", "start_hour": 6}, "is not an IANA zone name"),
        ({"zone": "America/New_York", "start_hour": 24}, "is not a whole hour from 0 to 23"),
        ({"zone": "America/New_York"}, "'start_hour' is required"),
        ({"zone": "UTC", "start_hour": 6, "offset": 1}, "offset"),
    ],
)
def test_a_bad_gaming_day_is_refused(section: dict[str, Any], message: str) -> None:
    data = copy.deepcopy(CARIBBEAN) | {"gaming_day": section}
    with pytest.raises(InvalidConfiguration, match=message):
        parse_submission(data)


def test_the_command_line_wins_and_nothing_defaults_to_utc() -> None:
    assert gaming_days.definition(_args("--rules", str(RULES))) == GamingDay("America/New_York", 6)
    chosen = _args("--rules", str(RULES), "--zone", "Europe/Zurich", "--day-start", "4")
    assert gaming_days.definition(chosen) == GamingDay("Europe/Zurich", 4)
    with pytest.raises(InvalidArgument, match="nothing is counted in UTC by default"):
        gaming_days.definition(_args())
    with pytest.raises(InvalidArgument, match="give both --zone and --day-start"):
        gaming_days.definition(_args("--zone", "UTC"))
    assert gaming_days.optional(_args()) is None


def test_day_and_month_windows_say_what_they_counted() -> None:
    start, end, said = gaming_days.window(_args("--day", "2026-03-07", "--rules", str(RULES)))
    assert (start, end) == GamingDay("America/New_York", 6).window_ms(date(2026, 3, 7))
    assert said.startswith("gaming day 2026-03-07 (23 hours), from 06:00 in America/New_York")
    start, end, said = gaming_days.window(_args("--month", "2026-11", "--zone", "UTC",
                                                "--day-start", "0"))  # fmt: skip
    assert end - start == 30 * 24 * 3_600_000
    with pytest.raises(InvalidArgument, match="YYYY-MM-DD"):
        gaming_days.window(_args("--day", "7 March", "--zone", "UTC", "--day-start", "0"))


def test_the_slip_names_the_gaming_day_of_a_hit_after_utc_midnight() -> None:
    hit = pb.Jackpot(jackpot_id="floor:9", hit_at_ms=1_772_933_400_000)  # 2026-03-08 01:30 UTC
    lines = slip_lines(hit, GamingDay("America/New_York", 6))
    assert "  hit          2026-03-08 01:30:00 UTC" in lines
    assert "  gaming day   2026-03-07 (America/New_York from 06:00)" in lines
    assert not any("gaming day" in line for line in slip_lines(hit))
