"""How the agent command settles its table: the registration, or the flags as a fallback."""

from __future__ import annotations

import argparse

import grpc
import pytest

from table_agent.cli import TableSetupError, _check, _parser, learn_layout
from table_agent.client import ControllerClient, ControllerRefused
from table_agent.wagers import TableLayout, WagerKind, WagerOffer, progressive_only

THB = TableLayout("thb-1", "texas-holdem-bonus", 6, (WagerOffer(WagerKind.BONUS, 500, 10_000),))


class Listing(ControllerClient):
    """Answers ListTables with ``layout``, or refuses it with ``code``."""

    def __init__(self, layout: TableLayout | None, code: grpc.StatusCode | None = None) -> None:
        self.layout = layout
        self.code = code

    async def list_table(self, table_id: str) -> TableLayout | None:
        if self.code is not None:
            raise ControllerRefused(self.code, "no")
        return self.layout


def args(*extra: str) -> argparse.Namespace:
    return _parser().parse_args(["--table-id", "thb-1", "--controller", "x:1", "--sim", *extra])


def test_usage_checks() -> None:
    assert "§ 639a.2(a)" in (_check(args("--seats", "8")) or "")
    assert _check(args("--rest-of-round-void-percent", "101")) == "percentages must be 0 to 100"
    assert _check(args()) is None


async def test_the_registration_is_the_table() -> None:
    assert await learn_layout(Listing(THB), args()) == THB
    assert await learn_layout(Listing(THB), args("--seats", "4", "--game", THB.game)) == THB


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--game", "caribbean-stud"), "registered for texas-holdem-bonus"),
        (("--seats", "7"), "--seats 7, but the table has 6 seats"),
        (("--wager-cents", "100"), "leave --wager-cents out"),
    ],
)
async def test_flags_that_contradict_the_registration_are_refused(
    flags: tuple[str, ...], message: str
) -> None:
    with pytest.raises(TableSetupError, match=message):
        await learn_layout(Listing(THB), args(*flags))


async def test_an_unregistered_table_is_refused() -> None:
    with pytest.raises(TableSetupError, match="not registered"):
        await learn_layout(Listing(None), args())


async def test_flags_stand_in_only_when_the_controller_does_not_list_tables() -> None:
    refusing = Listing(None, grpc.StatusCode.PERMISSION_DENIED)
    flags = args("--game", "three-card-poker", "--wager-cents", "500")
    layout = await learn_layout(refusing, flags)
    assert layout == progressive_only("thb-1", "three-card-poker", 7, 500)
    assert await learn_layout(refusing, args()) == progressive_only(
        "thb-1", "caribbean-stud", 7, 100
    )
    with pytest.raises(TableSetupError, match="offers no Progressive Payout Wager"):
        await learn_layout(refusing, args("--game", "texas-holdem-bonus"))
    with pytest.raises(ControllerRefused):
        await learn_layout(Listing(None, grpc.StatusCode.INVALID_ARGUMENT), args())
