"""How the agent command settles its table: the registration, checked against the flags."""

from __future__ import annotations

import argparse

import grpc
import pytest

from jackpot.kinds import WagerKind
from table_agent.cli import _check, _parser
from table_agent.client import ControllerClient, ControllerRefused, TableInfo
from table_agent.setup import TableSetupError, learn_table
from table_agent.wagers import TableLayout, WagerOffer

THB = TableLayout("thb-1", "texas-holdem-bonus", 6, (WagerOffer(WagerKind.BONUS, 500, 10_000),))


class Registered(ControllerClient):
    """Answers GetTable with ``layout`` (last round 41), or refuses it with ``code``."""

    def __init__(self, layout: TableLayout | None, code: grpc.StatusCode | None = None) -> None:
        self.layout = layout
        self.code = code

    async def get_table(self, table_id: str) -> TableInfo:
        if self.code is not None or self.layout is None:
            raise ControllerRefused(self.code or grpc.StatusCode.NOT_FOUND, "no")
        return TableInfo(self.layout, 41, 1000)


def args(*extra: str) -> argparse.Namespace:
    return _parser().parse_args(["--table-id", "thb-1", "--controller", "x:1", "--sim", *extra])


def test_usage_checks() -> None:
    assert "§ 639a.2(a)" in (_check(args("--seats", "8")) or "")
    assert _check(args("--rest-of-round-void-percent", "101")) == "percentages must be 0 to 100"
    assert _check(args()) is None


async def test_the_registration_is_the_table() -> None:
    info = await learn_table(Registered(THB), args())
    assert info.layout == THB and info.last_round_id == 41
    assert (
        await learn_table(Registered(THB), args("--seats", "4", "--game", THB.game))
    ).layout == THB


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
        await learn_table(Registered(THB), args(*flags))


async def test_an_unregistered_table_is_refused() -> None:
    with pytest.raises(TableSetupError, match="not registered"):
        await learn_table(Registered(None), args())


async def test_a_refusal_of_the_certificate_is_not_papered_over() -> None:
    """A controller that refuses this table's certificate (another table's, revoked) stops
    the agent: it never plays a table it guessed from its flags."""
    for code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
        with pytest.raises(ControllerRefused):
            await learn_table(Registered(THB, code), args("--game", THB.game))


def test_the_agent_needs_its_certificate_or_insecure() -> None:
    from jackpot import tls

    with pytest.raises(tls.TLSConfigError, match="--ca, --cert, --key"):
        tls.from_arguments(args(), environ={})
    assert tls.from_arguments(args("--insecure"), environ={}) is None
    files = tls.from_arguments(
        args(), environ={"JACKPOT_CA": "c", "JACKPOT_CERT": "t.crt", "JACKPOT_KEY": "t.key"}
    )
    assert files is not None and str(files.cert) == "t.crt"
