"""The simulator deals and reports each game's rounds by its procedure (a recording stand-in
for the controller; the real one is in tests/integration/test_agent_games.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from jackpot.irregularities import HOUSE_RULE
from jackpot.kinds import WagerKind
from jackpot.results import (
    AcceptedWager,
    Contribution,
    LockoutResult,
    MeterValue,
    SeatOutcome,
    SeatResult,
    SettleResult,
    VoidResult,
)
from table_agent.client import ControllerClient
from table_agent.deck import parse_deck_cards
from table_agent.games import game_procedure
from table_agent.link import Link
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.script import ScriptedRound, ScriptError
from table_agent.simulator import SimulationConfig, TableSimulator, describe_award
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager, TableLayout, WagerOffer

K = WagerKind


METERS = (MeterValue("m", 0),)


class RecordingController(ControllerClient):
    """Answers every report as a controller would, without one: each wager feeds meter "m"
    with 10% of its amount and settles without an award."""

    def __init__(self) -> None:  # no channel
        self.link = Link()
        self.lockouts: dict[int, list[PlacedWager]] = {}
        self.settlements: dict[int, SettleReport] = {}
        self.voids: dict[int, str] = {}

    async def close(self) -> None:
        pass

    async def lockout(
        self, table_id: str, round_id: int, wagers: Sequence[PlacedWager]
    ) -> LockoutResult:
        self.lockouts[round_id] = list(wagers)
        accepted = tuple(
            AcceptedWager(
                w.seat,
                w.kind,
                w.amount_cents,
                (Contribution("m", w.amount_cents * 100_000, 0),),
                w.on_dealer_hand,
                w.envy,
            )
            for w in wagers
        )
        return LockoutResult(table_id, round_id, accepted, METERS)

    async def settle(self, table_id: str, round_id: int, report: SettleReport) -> SettleResult:
        self.settlements[round_id] = report
        results = tuple(
            SeatResult(
                w.seat, "high_card", SeatOutcome.NO_AWARD, w.kind, on_dealer_hand=w.on_dealer_hand
            )
            for w in self.lockouts.get(round_id, [])
        )
        return SettleResult(table_id, round_id, results, METERS)

    async def void_round(self, table_id: str, round_id: int, reason: str) -> VoidResult:
        self.voids[round_id] = reason
        return VoidResult(table_id, round_id, (), METERS)


LAYOUTS = {
    "caribbean-stud": (
        WagerOffer(K.PROGRESSIVE, 100, 100),
        WagerOffer(K.BONUS, 100, 10_000),
        WagerOffer(K.FIVE_CARD_BONUS, 100, 2_500),
    ),
    "three-card-poker": (
        WagerOffer(K.PROGRESSIVE, 100, 100),
        WagerOffer(K.FIVE_CARD_BONUS, 100, 2_500),
        WagerOffer(K.FIVE_CARD_PROGRESSIVE, 100, 100),
    ),
    "six-card-fortune-pai-gow": (
        WagerOffer(K.PROGRESSIVE, 100, 100),
        WagerOffer(K.FORTUNE_BONUS, 500, 50_000, envy=True),
        WagerOffer(K.INSURANCE, 500, 2_000),
    ),
    "texas-holdem-bonus": (WagerOffer(K.BONUS, 500, 10_000),),
}


def simulator(game: str, **config: int) -> tuple[TableSimulator, RecordingController]:
    controller = RecordingController()
    layout = TableLayout("t1", game, game_procedure(game).facts.max_seats, LAYOUTS[game])
    return (
        TableSimulator(
            TableAgent("t1", controller), SimulationConfig(**config), lambda _: None, layout
        ),
        controller,
    )


def all_cards(report: SettleReport) -> list[str]:
    cards = [*report.dealer, *report.community, *(c for h in report.hands.values() for c in h)]
    return [str(card) for card in cards]


@pytest.mark.parametrize("game", sorted(LAYOUTS))
async def test_every_round_reports_one_deck_by_the_games_counts(game: str) -> None:
    sim, controller = simulator(game, occupancy_percent=80, wager_percent=50)
    tally = await sim.run(60)
    procedure = game_procedure(game)
    assert tally.rounds == 60 and len(controller.settlements) == 60
    placed: set[WagerKind] = set()
    jokers = 0
    for round_id, report in controller.settlements.items():
        wagers = controller.lockouts[round_id]
        placed |= {w.kind for w in wagers}
        cards = all_cards(report)
        assert len(cards) == len(set(cards))
        assert "JK" not in cards or len(procedure.deck) == 53
        jokers += cards.count("JK")
        assert len(report.dealer) == procedure.facts.hand_size
        assert all(len(hand) == procedure.facts.hand_size for hand in report.hands.values())
        # every wagering seat is reported, with cards or folded
        assert {w.seat for w in wagers} <= {*report.hands, *report.folded}
        five_card = any(w.kind in procedure.community_kinds for w in wagers)
        assert len(report.community) == (2 if five_card else 0)
        if procedure.folds is None:
            assert report.folded == ()
        assert report.rest_of_round_void == ""
    assert placed == {offer.kind for offer in LAYOUTS[game]}
    if len(procedure.deck) == 53:
        assert jokers > 0  # ~ 40% of 53 cards are dealt a round: the joker shows up
    assert tally.wagers == sum(len(w) for w in controller.lockouts.values())
    assert tally.results == tally.wagers


async def test_three_card_poker_deals_community_cards_in_some_rounds_only() -> None:
    sim, controller = simulator("three-card-poker", occupancy_percent=60, wager_percent=15)
    await sim.run(80)
    sizes = {len(report.community) for report in controller.settlements.values()}
    assert sizes == {0, 2}


async def test_caribbean_stud_folded_seats_are_reported_without_cards() -> None:
    sim, controller = simulator("caribbean-stud", occupancy_percent=100, wager_percent=100)
    await sim.run(20)
    folded = [seat for report in controller.settlements.values() for seat in report.folded]
    assert folded  # about half of all hands fold by the strategy
    for report in controller.settlements.values():
        assert not set(report.folded) & set(report.hands)


async def test_texas_holdem_bonus_rest_of_round_void_cites_647a_13_d() -> None:
    sim, controller = simulator("texas-holdem-bonus", rest_of_round_void_percent=100)
    tally = await sim.run(5)
    assert tally.rest_of_round_voids == 5
    for report in controller.settlements.values():
        assert "§ 647a.13(d)" in report.rest_of_round_void


async def test_misdeals_void_with_each_games_citation() -> None:
    for game, citation in [
        ("caribbean-stud", "§ 639a.13(c)"),
        ("three-card-poker", "§ 649a.9(f)"),
        ("texas-holdem-bonus", "§ 647a.13(c)"),
        ("six-card-fortune-pai-gow", HOUSE_RULE),
    ]:
        sim, controller = simulator(game, void_percent=100)
        tally = await sim.run(3)
        assert tally.voids == 3 and not controller.settlements
        assert all(citation in reason for reason in controller.voids.values())
        assert all(meter.wagers == 0 for meter in tally.meters.values())  # net of the voids


async def test_scripted_rounds_deal_the_chosen_cards_and_wagers() -> None:
    sim, controller = simulator("three-card-poker")
    hands = {4: parse_deck_cards("AS KS QS".split()), 2: parse_deck_cards("2D 3D 4C".split())}
    scripted = ScriptedRound(
        hands,
        community=parse_deck_cards("JS TS".split()),
        wagers={4: [PlacedWager(4, K.PROGRESSIVE, 0), PlacedWager(4, K.FIVE_CARD_BONUS, 0)]},
    )
    round_id = await sim.play_round(scripted)
    assert controller.lockouts[round_id] == [
        PlacedWager(2, K.PROGRESSIVE, 100),  # seat 2: the default wager
        PlacedWager(4, K.PROGRESSIVE, 100),
        PlacedWager(4, K.FIVE_CARD_BONUS, 100),
    ]
    report = controller.settlements[round_id]
    assert report.hands == hands and [str(c) for c in report.community] == ["JS", "TS"]


async def test_a_script_that_does_not_fit_the_game_fails_before_the_lockout() -> None:
    sim, controller = simulator("texas-holdem-bonus")
    with pytest.raises(ScriptError, match="does not fit Texas Hold 'Em Bonus Poker"):
        await sim.play_round(ScriptedRound({1: parse_deck_cards("AS KS QS".split())}))
    assert controller.lockouts == {}


async def test_recovery_resends_the_full_wagers_and_cards(tmp_path: Path) -> None:
    controller = RecordingController()
    outbox = Outbox(tmp_path, "t1")
    wagers = [
        PlacedWager(1, K.FIVE_CARD_BONUS, 500, on_dealer_hand=True),
        PlacedWager(3, K.FORTUNE_BONUS, 500, envy=True),
    ]
    report = SettleReport(
        {1: parse_deck_cards("AS KS QS".split())},
        dealer=parse_deck_cards("2C 3C 4C".split()),
        community=parse_deck_cards("JS TS".split()),
    )
    outbox.put("7:lockout", "lockout", 7, {"wagers": [w.to_data() for w in wagers]})
    outbox.put(
        "8:lockout", "lockout", 8, {"wagers": [PlacedWager(2, K.PROGRESSIVE, 100).to_data()]}
    )
    outbox.ack("8:lockout")
    outbox.put("8:settle", "settle", 8, report.to_data())
    agent = TableAgent("t1", controller, Outbox(tmp_path, "t1"))
    assert await agent.recover() == 3  # lockout 7, settle 8, then the void of round 7
    assert controller.lockouts[7] == wagers
    assert controller.settlements[8] == report
    assert "restarted" in controller.voids[7]


def test_award_lines_name_the_wager_the_envy_source_and_the_limit() -> None:
    paid = SeatResult(
        3,
        "flush",
        SeatOutcome.PAID,
        K.FIVE_CARD_BONUS,
        award_text="50 to 1",
        amount_cents=25_500,
        on_dealer_hand=True,
    )
    assert describe_award("cs-1", 9, paid) == (
        "table cs-1 round 9: seat 3 Five Card Hand Bonus Wager on the dealer's hand: flush "
        "wins 50 to 1 = $255.00"
    )
    envy = SeatResult(
        2,
        "four_of_a_kind",
        SeatOutcome.PAID,
        K.FORTUNE_BONUS,
        award_text="$50.00",
        amount_cents=5_000,
        envy_for_seat=5,
    )
    assert describe_award("pg-1", 1, envy) == (
        "table pg-1 round 1: seat 2 envy bonus (Fortune Bonus Wager) for seat 5's "
        "four of a kind wins $50.00"
    )
    limited = SeatResult(
        1,
        "ace_ace",
        SeatOutcome.PAID,
        K.BONUS,
        award_text="1,000 to 1",
        amount_cents=5_000_000,
        limited_from_cents=10_010_000,
    )
    assert "(limited from $100,100.00 by the payout limit)" in describe_award("thb-1", 1, limited)


def test_an_award_awaiting_validation_names_its_jackpot_and_the_meter_only_if_it_moved_one() -> (
    None
):
    percent = SeatResult(
        4,
        "royal_flush",
        SeatOutcome.PAID,
        K.PROGRESSIVE,
        award_text="100% of meter",
        amount_cents=1_000_000,
        meter_id="cs-main",
        meter_before_cents=1_000_000,
        meter_after_cents=1_000_000,
        pending_validation=True,
        jackpot_id="pit:7",
    )
    assert describe_award("cs-1", 2, percent).endswith(
        "(meter $10,000.00 -> $10,000.00 after the award and any reset; jackpot pit:7 awaits a "
        "supervisor's validation)"
    )
    held = SeatResult(
        4,
        "straight_flush",
        SeatOutcome.PAID,
        K.BONUS,
        award_text="500 to 1",
        amount_cents=250_000,
        pending_validation=True,
        jackpot_id="pit:8",
    )
    assert describe_award("cs-1", 3, held).endswith(
        "= $2,500.00 (jackpot pit:8 awaits a supervisor's validation)"
    )
