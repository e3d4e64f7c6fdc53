"""Every game's wagers settled through the real gRPC API and Redis, with the example Rules
Submissions of deploy/rules: several wagers per seat, several meters per table, envy bonuses,
community cards, the joker, the payout limit and the rest-of-round void."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from redis.asyncio import Redis

from controller.journal.audit import verify
from controller.runtime.rules_file import apply, load_submission
from controller.runtime.server import ControllerServer
from controller.store.redis_store import RedisStore
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import expect_refusal, journal, snapshot

RULES = Path(__file__).resolve().parents[2] / "deploy" / "rules"
KIND = {
    "progressive": pb.WAGER_KIND_PROGRESSIVE,
    "bonus": pb.WAGER_KIND_BONUS,
    "five_card_bonus": pb.WAGER_KIND_FIVE_CARD_BONUS,
    "five_card_progressive": pb.WAGER_KIND_FIVE_CARD_PROGRESSIVE,
    "fortune_bonus": pb.WAGER_KIND_FORTUNE_BONUS,
    "insurance": pb.WAGER_KIND_INSURANCE,
}
NAME = {number: name for name, number in KIND.items()}


@pytest.fixture
async def store(controller: ControllerServer, redis_url: str) -> AsyncIterator[RedisStore]:
    store = RedisStore.from_url(redis_url)
    for game in (
        "caribbean-stud",
        "three-card-poker",
        "six-card-fortune-pai-gow",
        "texas-holdem-bonus",
    ):
        await apply(store, load_submission(RULES / f"{game}.toml"))
    yield store
    await store.close()


def wager(
    seat: int, kind: str, cents: int = 100, dealer: bool = False, envy: bool = False
) -> pb.Wager:
    return pb.Wager(
        seat=seat, kind=KIND[kind], amount_cents=cents, on_dealer_hand=dealer, envy=envy
    )


def cards(
    table_id: str,
    round_id: int,
    hands: dict[int, str],
    dealer: str = "",
    community: str = "",
    **extra: object,
) -> pb.SettleRequest:
    wins = extra.pop("base_wins", {})
    assert isinstance(wins, dict)
    return pb.SettleRequest(
        table_id=table_id,
        round_id=round_id,
        seats=[
            pb.SeatCards(seat=s, cards=h.split(), base_game_win_cents=wins.get(s, 0))
            for s, h in hands.items()
        ],
        dealer_cards=dealer.split(),
        community_cards=community.split(),
        **extra,  # type: ignore[arg-type]
    )


def rows(reply: pb.SettleResponse) -> list[tuple[int, str, int, str, int, int]]:
    """Each result as (seat, wager, outcome, award text, amount in cents, envy for seat)."""
    return [
        (r.seat, NAME.get(r.kind, ""), r.outcome, r.award_text, r.amount_cents, r.envy_for_seat)
        for r in reply.results
    ]


PAID, NO_AWARD, FORFEITED, NO_WAGER = (
    pb.SEAT_OUTCOME_PAID,
    pb.SEAT_OUTCOME_NO_AWARD,
    pb.SEAT_OUTCOME_FORFEITED,
    pb.SEAT_OUTCOME_NO_WAGER,
)


async def meter_cents(admin: pb_grpc.AdminServiceAsyncStub, meter_id: str) -> int:
    return (await admin.GetMeter(pb.GetMeterRequest(meter_id=meter_id))).amount_cents


async def test_three_card_envy_seats_1_3_5(
    tables: pb_grpc.TableServiceAsyncStub, store: RedisStore, redis_client: Redis
) -> None:
    """Seats 1, 3 and 5 bet the progressive; seat 3's straight flush pays it $70 and seats
    1 and 5 one envy bonus each ($50); with two qualifying hands, two envies each."""
    await tables.Lockout(
        pb.LockoutRequest(
            table_id="tcp-1", round_id=1, wagers=[wager(s, "progressive") for s in (1, 3, 5)]
        )
    )
    reply = await tables.Settle(
        cards("tcp-1", 1, {1: "2C 7D 9H", 3: "9S TS JS", 5: "3D 8C KH"}, dealer="4S 5H 6C")
    )
    assert rows(reply) == [
        (5, "progressive", NO_AWARD, "", 0, 0),
        (3, "progressive", PAID, "$70.00", 7_000, 0),
        (1, "progressive", NO_AWARD, "", 0, 0),
        (5, "progressive", PAID, "$50.00", 5_000, 3),
        (1, "progressive", PAID, "$50.00", 5_000, 3),
    ]
    assert [r.award_kind for r in reply.results if r.envy_for_seat] == [pb.AWARD_KIND_ENVY] * 2

    await tables.Lockout(
        pb.LockoutRequest(
            table_id="tcp-1", round_id=2, wagers=[wager(s, "progressive") for s in (1, 3, 5)]
        )
    )
    reply = await tables.Settle(
        cards("tcp-1", 2, {1: "AD KD QD", 3: "9S TS JS", 5: "3D 8C KH"}, dealer="4S 5H 6C")
    )
    envies = [(r.seat, r.envy_for_seat) for r in reply.results if r.envy_for_seat]
    assert envies == [(5, 3), (1, 3), (5, 1), (3, 1)]  # two each for 5; never one's own
    fixed = [f for _, f in await journal(redis_client, "carnival") if f["type"] == "fixed_award"]
    assert [f.get("envy_for_seat") for f in fixed][-4:] == ["3", "3", "1", "1"]
    assert (await verify(store)).ok


async def test_three_card_five_card_progressive_feeds_and_pays_its_own_meter(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    store: RedisStore,
    redis_client: Redis,
) -> None:
    lock = await tables.Lockout(
        pb.LockoutRequest(
            table_id="tcp-1",
            round_id=1,
            wagers=[
                wager(2, "progressive"),
                wager(2, "five_card_progressive"),
                wager(2, "five_card_bonus", 500),
            ],
        )
    )
    contributions = {
        NAME[w.kind]: [(c.meter_id, c.to_meter_microcents) for c in w.contributions]
        for w in lock.accepted
    }
    assert contributions == {
        "progressive": [("tcp-main", 20_000_000)],  # 20% of $1
        "five_card_progressive": [("tcp-five", 10_000_000)],  # 10% of $1
        "five_card_bonus": [],
    }
    # Community cards are dealt only when a five-card wager exists (§ 649a.9(b)).
    await tables.Lockout(
        pb.LockoutRequest(table_id="tcp-1", round_id=2, wagers=[wager(4, "progressive")])
    )
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Settle(cards("tcp-1", 2, {4: "AS KS QS"}, dealer="2C 7D 9H", community="JS TS")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "community cards are dealt only when a Five Card Hand Bonus or Five-Card Progressive",
    )
    assert await snapshot(redis_client) == before
    await expect_refusal(
        tables.Settle(cards("tcp-1", 9, {4: "AS KS QS"}, dealer="2C 7D 9H", community="JS TS")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "round 9 of table tcp-1 was never locked out",
    )

    reply = await tables.Settle(
        cards("tcp-1", 1, {2: "AH KH QH"}, dealer="2C 7D 9H", community="JH TH")
    )
    assert rows(reply) == [
        (2, "progressive", PAID, "$500.00", 50_000, 0),  # a mini royal, not in spades
        (2, "five_card_bonus", PAID, "1,000 to 1", 500_500, 0),
        (2, "five_card_progressive", PAID, "100% of meter", 2_500_010, 0),
    ]
    jackpot = reply.results[2]
    assert (jackpot.meter_id, jackpot.pending_validation) == ("tcp-five", True)
    assert await meter_cents(admin, "tcp-five") == 2_500_000  # reset to $25,000
    assert await meter_cents(admin, "tcp-main") == 1_000_040  # two progressive wagers, no hit
    assert (await verify(store)).ok


async def test_six_card_fortune_joker_envies_and_insurance_and_a_replay(
    tables: pb_grpc.TableServiceAsyncStub, store: RedisStore, redis_client: Redis
) -> None:
    await tables.Lockout(
        pb.LockoutRequest(
            table_id="pg-1",
            round_id=7,
            wagers=[
                wager(1, "fortune_bonus", 500, envy=True),
                wager(1, "insurance", 500),
                wager(2, "progressive"),
                wager(4, "progressive"),
            ],
        )
    )
    request = cards(
        "pg-1",
        7,
        {
            1: "2C 5D 7H 9S JC KD",
            2: "AS AH AD AC JK 8D",
            4: "QS QH QD QC 4S 6H",
            6: "3S 4H 8S TD 2H 5C",
        },
        dealer="2D 3D 4D 6S 9C TC",
    )
    reply = await tables.Settle(request)
    # § 670a.11(h): every Fortune Bonus, their envies, every Insurance, every Progressive,
    # their envies; seat N down to 1 each time.
    assert rows(reply) == [
        (6, "", NO_WAGER, "", 0, 0),
        (1, "fortune_bonus", NO_AWARD, "", 0, 0),
        (1, "fortune_bonus", PAID, "$50.00", 5_000, 4),
        (1, "fortune_bonus", PAID, "$1,000.00", 100_000, 2),
        (1, "insurance", PAID, "5 to 1", 3_000, 0),
        (4, "progressive", PAID, "$50.00", 5_000, 0),
        (2, "progressive", PAID, "100% of meter", 1_000_040, 0),  # two 20% contributions
        (2, "progressive", PAID, "$25.00", 2_500, 4),
        (4, "progressive", PAID, "$500.00", 50_000, 2),
    ]
    # The journal pays them in that order too: each paid result's entry follows the one before.
    paid = [r for r in reply.results if r.outcome == PAID]
    seqs = [r.journal_seq for r in paid]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    entries = {int(fields["seq"]): fields for _, fields in await journal(redis_client, "pai-gow")}
    assert [(entries[s]["type"], entries[s]["seat"]) for s in seqs] == [
        ("fixed_award", "1"),
        ("fixed_award", "1"),
        ("fixed_award", "1"),
        ("fixed_award", "4"),
        ("award", "2"),
        ("fixed_award", "2"),
        ("fixed_award", "4"),
    ]
    state = await snapshot(redis_client)
    assert await tables.Settle(request) == reply  # a retry is answered, nothing changes
    assert await snapshot(redis_client) == state
    assert (await verify(store)).ok


async def test_six_card_fortune_refuses_an_envy_lammer_without_the_fortune_bonus(
    tables: pb_grpc.TableServiceAsyncStub, store: RedisStore
) -> None:
    await expect_refusal(
        tables.Lockout(
            pb.LockoutRequest(
                table_id="pg-1", round_id=1, wagers=[wager(1, "progressive", envy=True)]
            )
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "seat 1 progressive: the Six-Card Fortune Progressive Payout Wager at table pg-1 has no "
        "Envy lammer",
    )


async def test_holdem_bonus_payout_limit_and_rest_of_round_void(
    tables: pb_grpc.TableServiceAsyncStub, store: RedisStore, redis_client: Redis
) -> None:
    await tables.Lockout(
        pb.LockoutRequest(
            table_id="thb-1", round_id=1, wagers=[wager(1, "bonus", 10_000), wager(2, "bonus", 500)]
        )
    )
    reply = await tables.Settle(
        cards("thb-1", 1, {1: "AS AH", 2: "KS KH"}, dealer="AD AC", base_wins={1: 1_500_000})
    )
    first = reply.results[1]
    assert (first.seat, first.hand, first.award_text) == (1, "ace_ace", "1,000 to 1")
    # $100 at 1,000 to 1 = $100,000 won, but the hand may win $50,000 in all (§ 647a.12(c))
    # and its base game already won $15,000: $35,000, and the $100 wager back.
    assert (first.amount_cents, first.limited_from_cents) == (3_510_000, 10_010_000)
    assert (reply.results[0].amount_cents, reply.results[0].limited_from_cents) == (5_500, 0)
    assert first.line == "ace_ace_dealer_and_player"
    entry = [f for _, f in await journal(redis_client, "poker-pit") if f["type"] == "fixed_award"][
        1
    ]
    assert (entry["line"], entry["limited_from_cents"], entry["amount_cents"]) == (
        "ace_ace_dealer_and_player",
        "10010000",
        "3510000",
    )

    await tables.Lockout(
        pb.LockoutRequest(table_id="thb-1", round_id=2, wagers=[wager(3, "bonus", 500)])
    )
    reason = "dealer's card exposed before the players decided (§ 647a.13(d))"
    reply = await tables.Settle(
        cards("thb-1", 2, {3: "AS KS"}, dealer="2D 7C", rest_of_round_void=reason)
    )
    assert rows(reply) == [(3, "bonus", PAID, "25 to 1", 13_000, 0)]
    await tables.Lockout(
        pb.LockoutRequest(table_id="cs-1", round_id=1, wagers=[wager(1, "progressive")])
    )
    await expect_refusal(
        tables.Settle(cards("cs-1", 1, {1: "AS KS QS JS TS"}, rest_of_round_void=reason)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Caribbean Stud Poker settles no wager of a round that is void",
    )


async def test_holdem_bonus_a_round_recorded_bonus_settles_settles_only_its_bonus_wagers(
    tables: pb_grpc.TableServiceAsyncStub, store: RedisStore, redis_client: Redis
) -> None:
    """After the controller recorded "bonus_settles" (§ 647a.13(d)), a settlement that claims
    the whole round (no rest_of_round_void, a base game win) is refused - not paid with the
    bonus cut under the § 647a.12(c) limit by a base game win the round cannot have had."""
    await tables.Lockout(
        pb.LockoutRequest(table_id="thb-1", round_id=7, wagers=[wager(3, "bonus", 2_500)])
    )
    answer = await tables.ReportIrregularity(
        pb.ReportIrregularityRequest(
            table_id="thb-1", round_id=7, kind=pb.IRREGULARITY_KIND_DEALER_CARD_EXPOSED
        )
    )
    assert (answer.effect, answer.section) == ("bonus_settles", "§ 647a.13(d)")
    whole_round = cards("thb-1", 7, {3: "AS KS"}, dealer="2D 7C", base_wins={3: 4_950_000})
    await expect_refusal(
        tables.Settle(whole_round),
        grpc.StatusCode.FAILED_PRECONDITION,
        "round 7 of table thb-1: the dealer reported dealer_card_exposed: a dealer's card "
        "exposed too early: the rest of the round is void, Texas Hold 'Em Bonus Wagers settle "
        "(§ 647a.13(d)); settle only its Texas Hold 'Em Bonus Wagers, with rest_of_round_void "
        "set to that reason and no base game win",
    )
    await expect_refusal(
        tables.Settle(cards("thb-1", 7, {3: "AS KS"}, dealer="2D 7C")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "with rest_of_round_void set",
    )
    await expect_refusal(
        tables.Settle(
            cards(
                "thb-1",
                7,
                {3: "AS KS"},
                dealer="2D 7C",
                base_wins={3: 4_950_000},
                rest_of_round_void=answer.reason,
            )
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "seat 3: reports a base game win, but the rest of the round is void",
    )
    reply = await tables.Settle(
        cards("thb-1", 7, {3: "AS KS"}, dealer="2D 7C", rest_of_round_void=answer.reason)
    )
    # $25 at 25 to 1: $625 and the wager back, uncut (it was $525 against a $49,500 claim).
    assert rows(reply) == [(3, "bonus", PAID, "25 to 1", 65_000, 0)]
    assert reply.results[0].limited_from_cents == 0


async def test_caribbean_bonus_five_card_bonus_on_both_hands_and_a_void(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    store: RedisStore,
) -> None:
    wagers = [
        wager(3, "progressive"),
        wager(3, "bonus", 1_000),
        wager(3, "five_card_bonus", 200),
        wager(3, "five_card_bonus", 300, dealer=True),
        wager(5, "progressive"),
        wager(5, "five_card_bonus", 100, dealer=True),
    ]
    await tables.Lockout(pb.LockoutRequest(table_id="cs-1", round_id=1, wagers=wagers))
    reply = await tables.Settle(
        pb.SettleRequest(
            table_id="cs-1",
            round_id=1,
            seats=[
                pb.SeatCards(seat=3, cards="2H 3H 4H 5H 9H".split()),
                pb.SeatCards(seat=5, folded=True),
            ],
            dealer_cards="AS AD AC AH KD".split(),
        )
    )
    assert [
        (r.seat, NAME[r.kind], r.on_dealer_hand, r.outcome, r.amount_cents) for r in reply.results
    ] == [
        (5, "five_card_bonus", True, FORFEITED, 0),  # folded: all wagers (§ 639a.11(b))
        (5, "progressive", False, FORFEITED, 0),
        (3, "bonus", False, PAID, 41_000),  # flush, 40 to 1 (§ 639a.12(c) A)
        (3, "five_card_bonus", False, PAID, 3_200),  # flush, 15 to 1
        (3, "five_card_bonus", True, PAID, 30_300),
        (3, "progressive", False, PAID, 5_000),  # flush, 50 for 1 (§ 639a.12(d)(1) B)
    ]
    await expect_refusal(
        tables.Lockout(
            pb.LockoutRequest(table_id="cs-1", round_id=2, wagers=[wager(1, "bonus", 50)])
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "seat 1 bonus: wagered 50 cents; the bonus wager at table cs-1 takes 100 to 10000 cents",
    )
    before = await meter_cents(admin, "cs-main")
    lock = await tables.Lockout(pb.LockoutRequest(table_id="cs-1", round_id=3, wagers=wagers))
    void = await tables.VoidRound(
        pb.VoidRoundRequest(table_id="cs-1", round_id=3, reason="misdeal")
    )
    assert [len(w.contributions) for w in void.reversed] == [
        len(w.contributions) for w in lock.accepted
    ]
    assert await meter_cents(admin, "cs-main") == before
    assert (await verify(store)).ok


async def test_a_wager_feeding_two_meters_pays_from_the_meter_its_line_names(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    controller: ControllerServer,
    redis_url: str,
) -> None:
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="levels"))
    for meter_id, reset, rate in (("grand", 5_000_000, "10"), ("minor", 100_000, "5")):
        await admin.CreateMeter(
            pb.CreateMeterRequest(
                meter_id=meter_id,
                link_group_id="levels",
                game="three-card-poker",
                reset_cents=reset,
                rate_of_progression_percent=rate,
            )
        )
    line = pb.PaytableLine
    table = pb.Table(
        table_id="lv-1",
        game="three-card-poker",
        seats=6,
        link_group_id="levels",
        wagers=[
            pb.TableWager(
                kind=pb.WAGER_KIND_PROGRESSIVE,
                paytable="LEVELS",
                lines=[
                    line(hand="mini_royal_in_spades", award="100% of meter grand"),
                    line(hand="mini_royal", award="100% of meter minor"),
                    line(hand="straight_flush", award="$40"),
                ],
                envy_lines=[line(hand="mini_royal", award="$25")],
                min_cents=500,
                max_cents=500,
                meter_ids=["grand", "minor"],
            )
        ],
    )
    registered = await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    assert registered.wagers[0].lines[0].award == "100% of meter grand"
    assert (await admin.RegisterTable(pb.RegisterTableRequest(table=registered))) == registered
    lock = await tables.Lockout(
        pb.LockoutRequest(
            table_id="lv-1",
            round_id=1,
            wagers=[wager(1, "progressive", 500), wager(2, "progressive", 500)],
        )
    )
    assert [(c.meter_id, c.to_meter_microcents) for c in lock.accepted[0].contributions] == [
        ("grand", 50_000_000),
        ("minor", 25_000_000),
    ]
    reply = await tables.Settle(cards("lv-1", 1, {1: "AH KH QH", 2: "2C 7D 9H"}, dealer="4S 5H 6C"))
    assert [(r.seat, r.meter_id, r.amount_cents, r.envy_for_seat) for r in reply.results] == [
        (2, "", 0, 0),
        (1, "minor", 100_050, 0),  # minor: $1,000 + 2 x 5% of $5
        (2, "", 2_500, 1),
    ]
    assert await meter_cents(admin, "grand") == 5_000_100


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"payout_limit_cents": 4_999_999},
            "payout limit $49,999.99 is below $50,000.00; the limit is the greater of $50,000.00 "
            "and what one patron could win per round betting the minimum (§ 647a.12(c))",
        ),
        ({"envy": True}, "the Texas Hold 'Em Bonus Wager pays no envy bonus"),
        ({"lines": True}, "§ 647a.12(b) prints paytable A; its lines cannot be changed"),
        ({"kind": pb.WAGER_KIND_INSURANCE}, "Texas Hold 'Em Bonus Poker has no wager 'insurance'"),
    ],
)
async def test_bad_registrations_are_refused_citing_the_rule(
    admin: pb_grpc.AdminServiceAsyncStub, change: dict[str, object], message: str
) -> None:
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="pit"))
    offer = pb.TableWager(kind=pb.WAGER_KIND_BONUS, paytable="A", min_cents=500, max_cents=10_000)
    if change.get("envy"):
        offer.envy_lines.append(pb.PaytableLine(hand="ace_ace", award="$5"))
    if change.get("lines"):
        offer.lines.append(pb.PaytableLine(hand="ace_ace", award="300 to 1"))
    if "kind" in change:
        offer.kind = change["kind"]  # type: ignore[assignment]
    table = pb.Table(
        table_id="thb-9",
        game="texas-holdem-bonus",
        seats=6,
        link_group_id="pit",
        wagers=[offer],
        payout_limit_cents=int(change.get("payout_limit_cents", 5_000_000)),  # type: ignore[call-overload]
    )
    await expect_refusal(
        admin.RegisterTable(pb.RegisterTableRequest(table=table)),
        grpc.StatusCode.INVALID_ARGUMENT,
        message,
    )
