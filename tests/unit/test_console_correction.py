"""The dealer's window for a correction at the console (table_agent.console.correction): the
cards of the round just settled fixed, checked, sent; closed by the next open."""

from __future__ import annotations

import pytest

from jackpot.results import MeterValue, SeatOutcome, SeatResult, SettleResult
from table_agent.client import CorrectionAnswer
from table_agent.console.entry import EntryError
from table_agent.console.session import DealerSession, Send
from tests.unit.test_console_session import K, locked, session


def settled(console: DealerSession) -> None:
    """Round 5: seat 3's progressive keyed as a pair of jacks, settled."""
    locked(console, "wager 3 progressive")
    console.handle("cards 3 3C 5C 8C JC JD")
    console.handle("dealer 2D 3H 4S 7C 9S")
    assert console.handle("settle") is not None
    result = SeatResult(3, "one_pair", SeatOutcome.NO_AWARD, K.PROGRESSIVE)
    console.settled(SettleResult("cs-1", 5, (result,), (MeterValue("m", 10**12),)))


def test_fix_and_correct_send_the_corrected_cards_of_the_round_just_settled() -> None:
    console = session()
    settled(console)
    with pytest.raises(EntryError, match="nothing to correct"):
        console.handle("correct KC keyed as JD")
    with pytest.raises(EntryError, match="card 2D is reported twice"):
        console.handle("fix 3 3C 5C 8C JC 2D")
    with pytest.raises(EntryError, match="seat 3"):
        console.handle("fix 3 3C 5C 8C JC")
    assert console.handle("fix 3 3C 5C 8C JC KC") is None
    assert console.messages[-1] == "correction of round 5: seat 3 3C 5C 8C JC KC"
    with pytest.raises(EntryError, match="say what was wrong"):
        console.handle("correct")
    send = console.handle("correct KC keyed as JD")
    assert send is not None and (send.phase, send.round_id, send.reason) == (
        "correct",
        5,
        "KC keyed as JD",
    )
    assert send.report is not None
    assert [str(c) for c in send.report.hands[3]] == ["3C", "5C", "8C", "JC", "KC"]
    assert [str(c) for c in send.report.dealer] == ["2D", "3H", "4S", "7C", "9S"]
    console.correction_requested(CorrectionAnswer("floor:9", "requested", ((3, 5_000),), 5_000, 0))
    assert "  seat 3: pay $50.00 once approved" in console.messages
    assert console.messages[-1].endswith("rounds approve-correction floor:9")


def test_the_window_is_only_after_a_settlement_and_closes_at_open() -> None:
    console = session()
    with pytest.raises(EntryError, match="of the round just settled"):
        console.handle("fix 3 3C 5C 8C JC KC")
    settled(console)
    assert console.handle("open") == Send("open")
    console.opened(6)
    with pytest.raises(EntryError, match="fix is not possible now"):
        console.handle("fix 3 3C 5C 8C JC KC")
