"""Every game's simulated table against a real controller process and a real Redis.

One controller per test, started with the game's example Rules Submission (deploy/rules/) and
mutual TLS. The agent, with its table's certificate, learns its table from
TableService.GetTable, plays rounds with every side wager the
table offers (misdeal voids included), then a scripted round with a top hand. Checked: every
accepted wager has exactly one result, envy bonuses name another reported seat, results come in
settlement order, folded seats forfeit only their own hand's wagers; and the agent's tally of
contributions and percentage awards matches the controller's meters.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from controller.domain.games import get_game
from controller.testing import ControllerProcess, TestPKI
from jackpot.hands.words import hand_words
from jackpot.kinds import AwardKind, WagerKind
from jackpot.results import LockoutResult, SeatOutcome, SeatResult, SettleResult
from jackpot.v1 import jackpot_pb2 as pb
from table_agent.client import ControllerClient
from table_agent.deck import parse_deck_cards
from table_agent.reports import SettleReport
from table_agent.script import ScriptedRound
from table_agent.simulator import MeterTally, SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager, TableLayout
from tests.helpers import connect

RULES = Path(__file__).resolve().parents[2] / "deploy" / "rules"
MICRO = 1_000_000
K = WagerKind

TABLES = {
    "caribbean-stud": "cs-1",
    "three-card-poker": "tcp-1",
    "six-card-fortune-pai-gow": "pg-1",
    "texas-holdem-bonus": "thb-1",
}
ROUNDS = 40


@contextmanager
def controller_for(
    game: str, redis_url: str, work: Path, pki: TestPKI
) -> Iterator[ControllerProcess]:
    """A controller process serving the game's example Rules Submission."""
    rules = RULES / f"{game}.toml"
    log = work / "controller.log"
    unlimited = ("--table-calls-per-second", "0")  # simulated tables play fast
    with ControllerProcess(
        redis_url, log, pki=pki, metrics=False, rules=rules, extra_args=unlimited
    ) as c:
        yield c


class RecordingAgent(TableAgent):
    """A table agent that keeps each round's wagers, cards and settlement for the checks."""

    def __init__(self, table_id: str, client: ControllerClient) -> None:
        super().__init__(table_id, client)
        self.wagers: dict[int, list[PlacedWager]] = {}
        self.settled: dict[int, tuple[SettleReport, SettleResult]] = {}

    async def lockout(self, round_id: int, wagers: Sequence[PlacedWager]) -> LockoutResult:
        answer = await super().lockout(round_id, wagers)
        self.wagers[round_id] = list(wagers)
        return answer

    async def settle(self, round_id: int, report: SettleReport) -> SettleResult:
        settlement = await super().settle(round_id, report)
        self.settled[round_id] = (report, settlement)
        return settlement


def _key(seat: int, kind: WagerKind | None, on_dealer_hand: bool) -> tuple[int, str, bool]:
    return seat, kind.value if kind else "", on_dealer_hand


def check_results(
    game: str, wagers: Sequence[PlacedWager], report: SettleReport, settlement: SettleResult
) -> None:
    """One result per wager, envy bonuses for other reported seats, one per seat without a
    wager, in settlement order (each phase of the game, § 670a.11(h), seat N down to 1; envy
    bonuses after every wager of their kind); folded seats forfeit every wager (§ 639a.11(b))."""
    results = settlement.results
    own = [r for r in results if not r.envy_for_seat and r.outcome is not SeatOutcome.NO_WAGER]
    assert sorted(_key(r.seat, r.kind, r.on_dealer_hand) for r in own) == sorted(
        _key(w.seat, w.kind, w.on_dealer_hand) for w in wagers
    ), results
    for envy in (r for r in results if r.envy_for_seat):
        assert envy.envy_for_seat != envy.seat and envy.envy_for_seat in report.hands
        assert envy.outcome is SeatOutcome.PAID and envy.kind is not None
        entitled = [w for w in wagers if w.seat == envy.seat and w.kind is envy.kind]
        assert entitled, f"envy bonus for a seat without that wager: {envy}"
        if envy.kind is K.FORTUNE_BONUS:
            assert any(w.envy for w in entitled), f"envy bonus without the Envy lammer: {envy}"
    wagering = {w.seat for w in wagers}
    no_wager = {r.seat for r in results if r.outcome is SeatOutcome.NO_WAGER}
    dealt_without_wager = set(report.hands) - wagering
    # a folded seat without a side wager was reported too: it may have a result
    assert dealt_without_wager <= no_wager <= dealt_without_wager | set(report.folded)
    phases = get_game(game).phases
    turns = [
        (next(i for i, p in enumerate(phases) if r.kind is None or r.kind.value in p), -r.seat)
        for r in results
        if not r.envy_for_seat
    ]
    assert turns == sorted(turns), f"not in settlement order: {results}"
    for index, result in enumerate(results):  # envy bonuses after every wager of their kind
        if result.envy_for_seat:
            later = results[index:]
            assert not [r for r in later if r.kind is result.kind and not r.envy_for_seat], results
    for result in own:
        folded = result.seat in report.folded
        forfeited = result.outcome is SeatOutcome.FORFEITED
        assert forfeited == folded, result  # only Caribbean Stud's simulated players fold


def check_meters(
    meters: Sequence[pb.Meter], tallied: Mapping[str, MeterTally], awards: Sequence[SeatResult]
) -> None:
    """Each meter's qualifying wagers, hits and percentage payouts are the agent's; its amount
    and reserve are the reset plus the agent's contributions minus its percentage awards
    (unless a 100% award reset it, which the controller funds)."""
    for meter in meters:
        tally = tallied.get(meter.meter_id, MeterTally())
        hits = [
            a for a in awards if a.award_kind == "percent_of_meter" and a.meter_id == meter.meter_id
        ]
        assert meter.wagers_total == tally.wagers, meter
        assert meter.hits_total == len(hits), meter
        assert meter.awards_cents_total == sum(a.amount_cents for a in hits), meter
        if any(a.award_text.startswith("100%") for a in hits):
            continue
        paid = sum(a.amount_cents for a in hits) * MICRO
        assert (
            meter.amount_microcents == meter.reset_cents * MICRO + tally.to_meter_microcents - paid
        )
        assert meter.reserve_microcents == tally.to_reserve_microcents, meter


async def list_meters(target: str, pki: TestPKI) -> list[pb.Meter]:
    async with connect(target, pki) as (_, admin):
        reply = await admin.ListMeters(pb.ListMetersRequest())
    return list(reply.meters)


def scripted_round(layout: TableLayout) -> tuple[ScriptedRound, int, str]:
    """A round with the game's top hand at one seat placing every offered wager (and another
    seat, with the Envy lammer where offered, to collect envy bonuses); the seat and (part of)
    the hand name the controller must pay its progressive (or bonus) wager for."""
    offered = {offer.kind for offer in layout.offers}

    def every_offered(seat: int, envy: bool = False) -> list[PlacedWager]:
        wagers = []
        for offer in layout.offers:
            lammer = envy and offer.envy and offer.kind is K.FORTUNE_BONUS
            wagers.append(PlacedWager(seat, offer.kind, 0, envy=lammer))
            if offer.kind is K.FIVE_CARD_BONUS and layout.game == "caribbean-stud":
                wagers.append(PlacedWager(seat, offer.kind, 0, on_dealer_hand=True))
        return wagers

    cards = parse_deck_cards
    if layout.game == "caribbean-stud":
        hands = {2: cards("AS KS QS JS TS".split()), 5: cards("2C 2D 7H 9S KC".split())}
        return (
            ScriptedRound(
                hands,
                dealer=cards("3H 5H 8H JH KH".split()),
                wagers={2: every_offered(2), 5: every_offered(5)},
            ),
            2,
            "royal_flush",
        )
    if layout.game == "three-card-poker":
        five_card = bool(offered & {K.FIVE_CARD_BONUS, K.FIVE_CARD_PROGRESSIVE})
        return (
            ScriptedRound(
                {4: cards("AS KS QS".split()), 2: cards("2D 3D 4C".split())},
                community=cards("JS TS".split()) if five_card else (),
                wagers={4: every_offered(4), 2: every_offered(2)},
            ),
            4,
            "mini_royal",
        )
    if layout.game == "six-card-fortune-pai-gow":
        return (
            ScriptedRound(
                {3: cards("JK AS AH AD AC KS".split()), 1: cards("2C 4D 6H 8S TC QD".split())},
                wagers={3: every_offered(3), 1: every_offered(1, envy=True)},
            ),
            3,
            "five_aces",
        )
    return (
        ScriptedRound(
            {1: cards("AS AH".split()), 4: cards("7C 2D".split())},
            dealer=cards("AD AC".split()),
            wagers={1: every_offered(1)},
            rest_of_round_void=True,
        ),
        1,
        "ace_ace",
    )


@pytest.mark.slow
@pytest.mark.parametrize("game", sorted(TABLES))
async def test_a_simulated_table_of_each_game_settles_every_wager(
    game: str, redis_url: str, tmp_path: Path, pki: TestPKI
) -> None:
    table_id = TABLES[game]
    with controller_for(game, redis_url, tmp_path, pki) as controller:
        client = ControllerClient(
            controller.target, tls_files=pki.client("table", table_id), retry_for_s=30
        )
        try:
            layout = (await client.get_table(table_id)).layout
            assert layout.game == game and layout.offers
            agent = RecordingAgent(table_id, client)
            config = SimulationConfig(
                occupancy_percent=90,
                wager_percent=70,
                void_percent=10,
                rest_of_round_void_percent=30,
            )
            lines: list[str] = []
            simulator = TableSimulator(agent, config, lines.append, layout)
            tally = await simulator.run(ROUNDS)
            assert tally.rounds == ROUNDS and tally.voids < ROUNDS
            placed = {w.kind for wagers in agent.wagers.values() for w in wagers}
            assert placed == {offer.kind for offer in layout.offers}
            for round_id, (report, settlement) in agent.settled.items():
                check_results(game, agent.wagers[round_id], report, settlement)
            assert tally.results == sum(len(s.results) for _, s in agent.settled.values())
            awards = [award for _, award in tally.awards]
            check_meters(await list_meters(controller.target, pki), tally.meters, awards)
            if game == "texas-holdem-bonus":
                assert tally.rest_of_round_voids > 0

            scripted, seat, hand = scripted_round(layout)
            round_id = await simulator.play_round(scripted)
            report, settlement = agent.settled[round_id]
            check_results(game, agent.wagers[round_id], report, settlement)
            top = K.PROGRESSIVE if layout.offer(K.PROGRESSIVE) else K.BONUS
            paid = next(r for r in settlement.results if (r.seat, r.kind) == (seat, top))
            assert paid.outcome is SeatOutcome.PAID and hand in paid.hand, settlement.results
            assert any(f"seat {seat} " in line and hand_words(hand) in line for line in lines)
        finally:
            await client.close()


def run_agent(
    controller: ControllerProcess, table_id: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """``table-agent --sim`` for ``table_id`` with its certificate, with more ``args``."""
    command = [sys.executable, "-m", "table_agent.cli", "--table-id", table_id]
    command += ["--controller", controller.target, "--sim"]
    command += [*controller.client_args("table", table_id), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("game", sorted(TABLES))
async def test_the_agent_command_plays_each_registered_game(
    game: str, redis_url: str, tmp_path: Path, pki: TestPKI
) -> None:
    table_id = TABLES[game]
    summary_path = tmp_path / "summary.json"
    with controller_for(game, redis_url, tmp_path, pki) as controller:
        done = run_agent(
            controller,
            table_id,
            *("--rounds", "25", "--void-percent", "5", "--rest-of-round-void-percent", "10"),
            *("--quiet", "--state-dir", str(tmp_path / "agents")),
            *("--summary-json", str(summary_path)),
        )
        assert done.returncode == 0, done.stdout + done.stderr + controller.log_tail()
        assert f"table {table_id}: 25 rounds" in done.stdout
        summary = json.loads(summary_path.read_text())
        assert summary["game"] == game and summary["rounds"] == 25
        awards = [
            SeatResult(
                seat=a["seat"],
                hand=a["hand"],
                outcome=SeatOutcome(a["outcome"]),
                kind=K(a["kind"]) if a["kind"] else None,
                award_text=a["award_text"],
                amount_cents=a["amount_cents"],
                award_kind=AwardKind(a["award_kind"]) if a["award_kind"] else None,
                meter_id=a["meter_id"],
            )
            for a in summary["awards"]
        ]
        tallied = {meter: MeterTally(**counts) for meter, counts in summary["meters"].items()}
        check_meters(await list_meters(controller.target, pki), tallied, awards)


def test_an_unlisted_table_or_another_game_is_refused(
    redis_url: str, tmp_path: Path, pki: TestPKI
) -> None:
    with controller_for("texas-holdem-bonus", redis_url, tmp_path, pki) as controller:
        done = run_agent(controller, "nope", "--rounds", "1")
        assert done.returncode == 2
        assert "table nope is not registered at the controller" in done.stderr
        done = run_agent(controller, "thb-1", "--game", "caribbean-stud")
        assert done.returncode == 2
        assert "--game caribbean-stud, but the table is registered for texas-holdem-bonus" in (
            done.stderr
        )
        done = run_agent(controller, "thb-1", "--rounds", "1", "--wager-cents", "100")
        assert done.returncode == 2 and "leave --wager-cents out" in done.stderr
