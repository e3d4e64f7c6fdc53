"""The dealer console's state machine (:mod:`table_agent.console.session`) and its round
record (:mod:`table_agent.console.record`): phases, what is expected next, every entry
checked, refusals that change nothing, the controller's answers moving the round on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jackpot.kinds import AwardKind, IrregularityKind, WagerKind
from jackpot.results import (
    AcceptedWager,
    ChipCountResult,
    Contribution,
    IrregularityResult,
    LockoutResult,
    MeterValue,
    SeatOutcome,
    SeatResult,
    SettleResult,
    VoidResult,
)
from table_agent.console.entry import EntryError
from table_agent.console.record import RoundRecord, round_data
from table_agent.console.session import DealerSession, Phase, RoundSheet, Send
from table_agent.games import game_procedure
from table_agent.reports import SettleReport
from table_agent.wagers import PlacedWager, TableLayout, WagerOffer
from tests.unit.test_console_entry import CS_TABLE, TCP_TABLE

K = WagerKind
THB_TABLE = TableLayout("thb-1", "texas-holdem-bonus", 6, (WagerOffer(K.BONUS, 500, 10_000),))


def phase_of(console: DealerSession) -> Phase:
    """The console's phase, read afresh (each command may move it)."""
    return console.phase


def session(layout: TableLayout = CS_TABLE) -> DealerSession:
    return DealerSession(layout, game_procedure(layout.game))


def accepted(wagers: tuple[PlacedWager, ...]) -> tuple[AcceptedWager, ...]:
    """As the controller accepts them: progressive wagers feed meter m (15%)."""
    return tuple(
        AcceptedWager(
            w.seat,
            w.kind,
            w.amount_cents,
            (Contribution("m", w.amount_cents * 150_000, 0),)
            if "progressive" in w.kind.value
            else (),
            w.on_dealer_hand,
            w.envy,
        )
        for w in wagers
    )


def locked(console: DealerSession, *lines: str) -> tuple[AcceptedWager, ...]:
    """Open round 5, enter ``lines`` of wagers, lock out as the controller would."""
    assert console.handle("open") == Send("open")
    console.opened(5)
    for line in lines:
        assert console.handle(line) is None
    send = console.handle("lockout")
    assert send is not None and send.phase == "lockout" and send.round_id == 5
    wagers = accepted(send.wagers)
    console.locked_out(LockoutResult("cs-1", 5, wagers, (MeterValue("m", 1_000_015_000_000),)))
    return wagers


ROYAL = SeatResult(
    2,
    "royal_flush",
    SeatOutcome.PAID,
    K.PROGRESSIVE,
    line="royal_flush",
    award_kind=AwardKind.PERCENT_OF_METER,
    award_text="100% of meter",
    amount_cents=1_000_015,
    meter_id="m",
    meter_before_cents=1_000_015,
    meter_after_cents=1_000_000,
    pending_validation=True,
    jackpot_id="floor:8",
)


def test_a_round_from_open_to_settle() -> None:
    console = session()
    assert console.expected() == "type open for the next round"
    assert console.handle("open") == Send("open")
    console.opened(5)
    assert phase_of(console) is Phase.WAGERS
    assert "round 5: enter wagers" in console.expected()
    console.handle("wager 2 progressive")
    console.handle("wager 3 bonus 7")
    assert console.expected() == "round 5: more wagers, or lockout (no more bets)"
    send = console.handle("lockout")
    assert send == Send(
        "lockout", 5, wagers=(PlacedWager(2, K.PROGRESSIVE, 100), PlacedWager(3, K.BONUS, 700))
    )
    assert console.sheet is not None and console.sheet.lockout is None  # until it answers
    console.locked_out(LockoutResult("cs-1", 5, accepted(send.wagers), (MeterValue("m", 7),)))
    assert phase_of(console) is Phase.LOCKED and console.meters == {"m": 0}
    assert console.expected() == (
        "round 5: cards of seat 2 and seat 3 (count N: the chip count); or void REASON"
    )
    assert console.handle("count 1") == Send("chip_count", 5, chips=1)
    console.chip_counted(ChipCountResult("cs-1", 5, 1, 1, matched=True))
    console.handle("cards 2 AS KS QS JS TS")
    console.handle("cards 3 2c 3d 5h 8s jc")
    assert console.expected() == "round 5: settle; or void REASON"
    send = console.handle("settle")
    assert send is not None and send.phase == "settle" and send.report is not None
    assert {seat: [str(c) for c in cards] for seat, cards in send.report.hands.items()} == {
        2: ["AS", "KS", "QS", "JS", "TS"],
        3: ["2C", "3D", "5H", "8S", "JC"],
    }
    results = (ROYAL, SeatResult(3, "high_card", SeatOutcome.NO_AWARD, K.BONUS))
    sheet = console.settled(SettleResult("cs-1", 5, results, (MeterValue("m", 10**12),)))
    assert phase_of(console) is Phase.IDLE and sheet.round_id == 5
    assert console.meters == {"m": 1_000_000}
    award = next(line for line in console.messages if " wins " in line)
    assert award == (
        "table cs-1 round 5: seat 2 Progressive Payout Wager: royal flush wins 100% of meter = "
        "$10,000.15 (meter $10,000.15 -> $10,000.00 after the award and any reset; jackpot "
        "floor:8 awaits a supervisor's validation)"
    )
    assert "seat 3 Bonus Wager: high card, no award" in console.messages
    # The jackpot awaits a supervisor's validation: it is not paid (it said "$10,000.15 paid").
    summary = "round 5 settled: 1 award(s), $10,000.15 awaiting validation"
    assert console.messages[-1] == summary


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("lockout", "lockout is not possible now: type open for the next round"),
        ("cards 1 AS KS QS JS TS", "cards is not possible now"),
        ("settle", "settle is not possible now"),
        ("void misdeal", "void is not possible now"),
        ("deal", "no command 'deal'; type help for the commands"),
    ],
)
def test_a_command_out_of_its_phase_is_refused_saying_what_is_expected(
    line: str, message: str
) -> None:
    console = session()
    with pytest.raises(EntryError, match=message):
        console.handle(line)
    assert phase_of(console) is Phase.IDLE and console.sheet is None


def test_wagers_are_entered_changed_and_taken_down() -> None:
    console = session()
    console.handle("open")
    console.opened(1)
    console.handle("wager 2 progressive")
    with pytest.raises(EntryError, match="seat 2 already has a Progressive Payout Wager"):
        console.handle("wager 2 prog")
    console.handle("wager 2 five 5")
    console.handle("wager 2 five 5 dealer")  # the dealer's hand is another wager
    console.handle("remove 2 five_card_bonus")
    assert console.sheet is not None
    assert console.sheet.wagers == [PlacedWager(2, K.PROGRESSIVE, 100)]
    with pytest.raises(EntryError, match="seat 4 has no such wager entered"):
        console.handle("remove 4")
    console.handle("remove 2")
    assert console.sheet.wagers == []


def test_again_enters_the_last_locked_out_rounds_wagers() -> None:
    console = session()
    console.handle("open")
    console.opened(1)
    with pytest.raises(EntryError, match="no earlier round's wagers"):
        console.handle("again")
    console.handle("wager 4 bonus 5")
    send = console.handle("lockout")
    assert send is not None
    console.locked_out(LockoutResult("cs-1", 1, accepted(send.wagers), ()))
    console.voiding("misdeal")
    console.voided(VoidResult("cs-1", 1, (), ()))
    console.opened(2)
    console.handle("again")
    assert console.sheet is not None and console.sheet.wagers == [PlacedWager(4, K.BONUS, 500)]
    with pytest.raises(EntryError, match="fills an empty round only"):
        console.handle("again")


def test_the_chip_count_is_compared_with_the_accepted_progressive_wagers() -> None:
    console = session()
    locked(console, "wager 1 progressive", "wager 2 progressive", "wager 2 bonus 5")
    assert console.sheet is not None and console.sheet.progressive_wagers == 2
    round_id = console.sheet.round_id
    assert console.handle("count 3") == Send("chip_count", round_id, chips=3)
    assert console.sheet.chip_count is None  # until the controller records it
    console.chip_counted(ChipCountResult("cs-1", round_id, 3, 2, matched=False))
    assert console.sheet.chip_count == 3 and console.sheet.chip_count_matches is False
    assert console.messages[-1].startswith("IRREGULARITY: chip count 3, but 2 progressive")
    assert "the round is held: call the floor supervisor" in console.messages[-1]
    console.chip_counted(ChipCountResult("cs-1", round_id, 2, 2, matched=True))
    assert console.sheet.chip_count_matches is True
    for bad in ("count two", "count 12345", "count"):
        with pytest.raises(EntryError, match="count N"):
            console.handle(bad)


def test_cards_seen_twice_are_refused_and_change_nothing() -> None:
    console = session()
    locked(console, "wager 1 progressive", "wager 2 five 5 dealer")
    console.handle("cards 1 AS KS QS JS TS")
    with pytest.raises(EntryError, match="card AS is reported twice"):
        console.handle("dealer AS 2D 3D 4D 5D")
    assert console.sheet is not None and console.sheet.dealer == ()
    console.handle("cards 1 AH KS QS JS TS")  # a seat's cards entered again replace them
    console.handle("dealer AS 2D 3D 4D 5D")
    assert console.missing_cards() == ["seat 2"]


def test_settle_needs_every_wagering_seat_and_the_dealer_where_a_wager_is_on_his_hand() -> None:
    console = session()
    locked(console, "wager 1 progressive", "wager 2 five 5 dealer")
    with pytest.raises(EntryError, match="settle needs the cards of seat 1, seat 2 and the dealer"):
        console.handle("settle")
    console.handle("fold 2")  # a fold forfeits the dealer's-hand wager too (§ 639a.11(b))
    console.handle("cards 1 AS KS QS JS TS")
    send = console.handle("settle")
    assert send is not None and send.report is not None
    assert send.report.folded == (2,) and list(send.report.hands) == [1]
    assert send.report.dealer == ()


def test_settle_carries_the_base_games_winnings_where_the_payout_limit_counts_them() -> None:
    """Texas Hold 'Em Bonus: the Ante, Flop, Turn and River Wagers' winnings go with the
    settlement (§ 647a.12(c)); every bad entry is refused in words and sends nothing."""
    console = session(THB_TABLE)
    locked(console, "wager 2 bonus 5", "wager 4 bonus 5")
    console.handle("cards 2 AS KS")
    console.handle("cards 4 2C 7D")
    console.handle("dealer 9H 9S")
    assert "settle [SEAT WON ...]" in console.expected()
    for line, refusal in [
        ("settle 2", "each seat once with what its Ante, Flop, Turn and River Wagers won"),
        ("settle 2 10 4", "each seat once"),
        ("settle 7 10", "'7' is not a seat of this table"),
        ("settle 3 10", "seat 3 holds no wager in round 5"),
        ("settle 2 10 2 20", "seat 2 is given twice"),
        ("settle 2 ten", "seat 2's winnings: 'ten' is not an amount of dollars"),
        ("settle 2 -5", "is not an amount of dollars"),
        ("settle 2 10.005", "is not an amount of dollars"),
        ("settle 2 999999999999999", "seat 2's winnings: $999,999,999,999,999.00 is more than"),
    ]:
        with pytest.raises(EntryError, match=re.escape(refusal)):
            console.handle(line)
        assert phase_of(console) is Phase.LOCKED and not console.sending
    send = console.handle("settle 4 40.50 2 $49,900")
    assert send is not None and send.report is not None
    assert send.report.base_game_win_cents == {2: 4_990_000, 4: 4_050}
    assert console.messages[-1] == (
        "round 5: Ante, Flop, Turn and River Wagers won seat 2 $49,900.00 and seat 4 $40.50"
    )
    assert SettleReport.from_data(send.report.to_data()) == send.report  # the outbox keeps them
    plain = console.handle("settle")
    assert plain is not None and plain.report is not None
    assert plain.report.base_game_win_cents == {}  # a seat not given won nothing


def test_base_game_winnings_are_refused_where_nothing_counts_them() -> None:
    cs = session()
    locked(cs, "wager 1 progressive")
    cs.handle("cards 1 AS KS QS JS TS")
    assert "WON" not in cs.expected()
    with pytest.raises(EntryError, match="settle takes no base-game winnings at Caribbean Stud"):
        cs.handle("settle 1 10")
    thb = session(THB_TABLE)
    locked(thb, "wager 2 bonus 5")
    thb.irregularity_applied(
        IrregularityResult(
            "thb-1",
            5,
            IrregularityKind.DEALER_CARD_EXPOSED,
            "bonus_settles",
            "§ 647a.13(d)",
            "a dealer card was exposed (§ 647a.13(d))",
        )
    )
    thb.handle("cards 2 AS KS")
    thb.handle("dealer 9H 9S")
    assert "WON" not in thb.expected()
    with pytest.raises(EntryError, match=r"rest of round 5 is void .*: its Ante, Flop, Turn"):
        thb.handle("settle 2 10")


def test_community_cards_only_where_a_five_card_wager_was_accepted() -> None:
    cs = session()
    locked(cs, "wager 1 progressive")
    with pytest.raises(EntryError, match="Caribbean Stud Poker deals no community cards"):
        cs.handle("community KD 7C")
    tcp = session(TCP_TABLE)
    locked(tcp, "wager 1 progressive")
    with pytest.raises(EntryError, match="only when a five-card wager was accepted"):
        tcp.handle("community KD 7C")
    tcp = session(TCP_TABLE)
    locked(tcp, "wager 1 five_card_progressive")
    assert tcp.missing_cards() == ["seat 1", "the community"]
    tcp.handle("cards 1 AS KS QS")
    with pytest.raises(EntryError, match="the community has 3 cards; the game deals exactly 2"):
        tcp.handle("community KD 7C 2H")
    tcp.handle("community KD 7C")
    send = tcp.handle("settle")
    assert send is not None and send.report is not None
    assert [str(c) for c in send.report.community] == ["KD", "7C"]


def test_a_wager_a_fold_does_not_forfeit_needs_the_cards() -> None:
    console = session(THB_TABLE)
    locked(console, "wager 3 bonus 5")
    console.handle("fold 3")
    console.handle("dealer AS AD")
    with pytest.raises(EntryError, match="settled even when the player folds; enter the seat's"):
        console.handle("settle")
    six = session(TableLayout("s", "six-card-fortune-pai-gow", 7, ()))
    six.opened(1)
    six.phase = Phase.LOCKED
    with pytest.raises(EntryError, match="no player folds at Six-Card Fortune Pai Gow Poker"):
        six.handle("fold 1")


def test_void_needs_a_reason_and_ends_the_round() -> None:
    console = session()
    wagers = locked(console, "wager 1 progressive")
    with pytest.raises(EntryError, match="void REASON"):
        console.handle("void")
    send = console.handle("void misdeal: seat 1 has six cards")
    assert send == Send("void", 5, reason="misdeal: seat 1 has six cards")
    console.voiding(send.reason)
    sheet = console.voided(VoidResult("cs-1", 5, wagers, (MeterValue("m", 10**12),)))
    assert phase_of(console) is Phase.IDLE and sheet.void_reason == send.reason
    assert console.messages[-1] == (
        "round 5 VOID (misdeal: seat 1 has six cards): 1 wager(s) returned to the players"
    )


def test_refusals_of_the_controller() -> None:
    console = session()
    console.handle("open")
    console.opened(5)
    console.handle("wager 1 progressive")
    send = console.handle("lockout")
    assert send is not None
    console.refused(send, "round 5 is not the next round", next_round_id=6)
    assert phase_of(console) is Phase.WAGERS and console.round_id == 6
    assert console.sheet is not None and console.sheet.wagers == [send.wagers[0]]
    locked_console = session()
    locked(locked_console, "wager 1 progressive")
    locked_console.handle("cards 1 AS KS QS JS TS")
    settle = locked_console.handle("settle")
    assert settle is not None
    locked_console.refused(settle, "seat 1: no")
    assert phase_of(locked_console) is Phase.LOCKED  # correct the cards and settle again
    assert locked_console.handle("settle") == settle


def test_while_a_report_is_on_its_way_nothing_else_is_taken() -> None:
    console = session()
    locked(console, "wager 1 progressive")
    console.sending = "settle"
    assert console.expected() == "sending the settle to the controller..."
    with pytest.raises(EntryError, match="wait: the settle is on its way"):
        console.handle("void x")


def test_an_unanswered_report_halts_the_console_until_it_is_restarted() -> None:
    console = session()
    locked(console, "wager 1 progressive")
    with pytest.raises(EntryError, match="quit is not possible now"):
        console.handle("quit")
    console.halt("NOT ANSWERED: the controller did not answer the void of round 5")
    assert phase_of(console) is Phase.HALTED
    assert "quit, and start the console again" in console.expected()
    assert console.handle("quit") == Send("quit")


def test_the_round_record_keeps_the_chip_count_cards_and_outcome(tmp_path: Path) -> None:
    console = session()
    locked(console, "wager 2 progressive")
    assert console.sheet is not None
    console.handle("count 2")
    console.chip_counted(ChipCountResult("cs-1", console.sheet.round_id, 2, 1, matched=False))
    console.handle("cards 2 AS KS QS JS TS")
    sheet = console.settled(SettleResult("cs-1", 5, (ROYAL,), ()))
    record = RoundRecord(tmp_path, "cs-1")
    record.append(sheet)
    [line] = record.path.read_text(encoding="utf-8").splitlines()
    data = json.loads(line)
    assert data == record.rounds()[0] == round_data(sheet)
    assert data["chip_count"] == 2 and data["chip_count_matches"] is False
    assert data["progressive_wagers"] == 1 and data["outcome"] == "settled"
    assert data["hands"] == {"2": ["AS", "KS", "QS", "JS", "TS"]}
    assert data["paid_cents"] == 1_000_015
    assert data["results"][0]["jackpot_id"] == "floor:8"
    assert data["results"][0]["pending_validation"] is True
    with pytest.raises(ValueError, match="round 6 is neither settled nor void"):
        round_data(RoundSheet(6))
