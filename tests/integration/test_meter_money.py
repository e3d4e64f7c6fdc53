"""The Lua's meter money against the reference model, and conservation after every step.

A Hypothesis state machine drives the real store (real Redis, the production scripts) with
random lockouts (any amounts, up to seven seats), settlements paying percentages of the meter
(10% to 100%, several in one round, in plan order), voids (also after a hit since the
lockout), supervisors' approvals and rejections (a rejection refused after a later hit),
two-person adjustments (refused beyond zero or the ceiling) and the retirement of the meter
into a new one (its table updated to feed the new one, in maintenance), on a meter with a
reserve rate and, sometimes, a ceiling. The same steps run through
:mod:`controller.domain.meter_money`. After every step the meter's value and reserve in
Redis equal the model's to the microcent, every award equals the model's to the cent, the
step's journal entries move exactly what the model moved, and ``audit verify`` is OK.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)
from redis.asyncio import Redis

from controller.api import convert
from controller.domain import meter_money
from controller.domain.config import LinkGroupConfig, MeterConfig
from controller.domain.digests import lockout_fingerprint
from controller.domain.meter_money import MeterBook, PercentAward, StagedChange
from controller.domain.paytables import AwardRule
from controller.domain.rounds import Payout, Wager
from controller.journal.audit import verify
from controller.store import keys
from controller.store.redis_store import RedisStore
from controller.testing import RedisServer
from jackpot.errors import FailedPrecondition, StoreUnavailable
from jackpot.kinds import AwardKind
from jackpot.money import FULL_PPM, MICROCENTS_PER_CENT
from jackpot.results import SeatOutcome
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import STRAIGHT_FLUSH_HEARTS, Floor, lockout, progressive_table, settle

MICRO = MICROCENTS_PER_CENT
RESET_CENTS = 1_000_000
GROUPS = itertools.count(1)
PERCENTS = st.sampled_from([100_000, 250_000, 500_000, 1_000_000, 10_000, 333_333])


class MeterMoney(RuleBasedStateMachine):
    """One link group, one meter, one table; the model beside it (see the module)."""

    url = ""  # set by the test
    rounds = Bundle("rounds")
    jackpots = Bundle("jackpots")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.group = f"money-{next(GROUPS)}"
        self.store = RedisStore.from_url(self.url)
        self.redis: Redis = self.store.client
        self.round_ids = itertools.count(1)
        self.book: MeterBook | None = None
        self.locked: dict[int, tuple[list[meter_money.Contribution], int]] = {}
        self.awards: dict[str, tuple[PercentAward, int]] = {}
        self.seen_seq = 0
        self.generation = 0  # how many times the meter was retired into a new one
        self.params: dict[str, int] = {}

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()

    @initialize(
        rate=st.integers(1, 300_000),
        reserve_rate=st.integers(0, 100_000),
        ceiling_over_cents=st.one_of(st.just(0), st.integers(1, 20_000)),
    )
    def create(self, rate: int, reserve_rate: int, ceiling_over_cents: int) -> None:
        self.params = {"rate": rate, "reserve_rate": reserve_rate}

        async def create() -> None:
            await self.store.catalog.create_link_group(
                LinkGroupConfig(self.group, "money"), actor="t"
            )
            self.book = await self._create_meter(ceiling_over_cents)
            table = convert.table_config(progressive_table(self.table_id, self.group, self.meter))
            self.table = await self.store.tables.register_table(table, actor="t")

        self.run(create())
        self.seen_seq = self.run(self._seq())

    async def _create_meter(self, ceiling_over_cents: int) -> MeterBook:
        """Create meter ``self.meter`` and its book (the rates drawn at the start)."""
        ceiling = RESET_CENTS + ceiling_over_cents if ceiling_over_cents else 0
        await self.store.catalog.create_meter(
            convert.meter_config(
                pb.CreateMeterRequest(
                    meter_id=self.meter,
                    link_group_id=self.group,
                    game="caribbean-stud",
                    reset_cents=RESET_CENTS,
                    rate_of_progression_percent=_percent(self.params["rate"]),
                    reserve_rate_percent=_percent(self.params["reserve_rate"]),
                    ceiling_cents=ceiling,
                )
            ),
            actor="t",
        )
        return MeterBook.created(
            self.meter,
            reset_cents=RESET_CENTS,
            rate_ppm=self.params["rate"],
            reserve_rate_ppm=self.params["reserve_rate"],
            ceiling_cents=ceiling,
        )

    @property
    def meter(self) -> str:
        return f"{self.group}-m{self.generation or ''}"

    @property
    def table_id(self) -> str:
        return f"{self.group}-t"

    async def _seq(self) -> int:
        return int(await self.redis.get(keys.LinkGroupKeys(self.group).seq) or 0)

    def _moved(self) -> tuple[int, int]:
        """What the journal entries since the last step moved (meter, reserve)."""

        async def read() -> tuple[int, int, int]:
            d_meter = d_reserve = 0
            last = self.seen_seq
            async for entry in self.store.journal.entries(self.group):
                if entry.seq > self.seen_seq:
                    d_meter += entry.delta_meter_microcents
                    d_reserve += entry.delta_reserve_microcents
                    last = entry.seq
            return d_meter, d_reserve, last

        d_meter, d_reserve, self.seen_seq = self.run(read())
        return d_meter, d_reserve

    def _expect_moved(self, before: tuple[int, int]) -> None:
        assert self.book is not None
        moved = self._moved()
        assert moved == (self.book.value - before[0], self.book.reserve - before[1]), moved

    def _before(self) -> tuple[int, int]:
        assert self.book is not None
        return self.book.value, self.book.reserve

    @rule(target=rounds, amounts=st.lists(st.integers(1, 500_000), min_size=0, max_size=7))
    def lockout(self, amounts: list[int]) -> int:
        assert self.book is not None
        before = self._before()
        round_id = next(self.round_ids)
        wagers = tuple(Wager(seat, "progressive", cents) for seat, cents in enumerate(amounts, 1))
        result = self.run(
            self.store.rounds.lockout(self.table, round_id, wagers, lockout_fingerprint(wagers))
        )
        given = [meter_money.contribute(self.book, cents) for cents in amounts]
        stored = [
            (c.to_meter_microcents, c.to_reserve_microcents)
            for a in result.accepted
            for c in a.contributions
        ]
        assert stored == [(c.to_meter, c.to_reserve) for c in given]
        round_key = keys.LinkGroupKeys(self.group).round(self.table_id, round_id)
        lockout_seq = int(self.run(self.redis.hget(round_key, "lockout_seq")))
        self.locked[round_id] = (given, lockout_seq)
        self._expect_moved(before)
        return round_id

    @rule(target=jackpots, round_id=consumes(rounds), percents=st.lists(PERCENTS, max_size=4))
    def settle(self, round_id: int, percents: list[int]) -> Any:
        assert self.book is not None
        if round_id not in self.locked:
            return multiple()
        del self.locked[round_id]
        before = self._before()
        plan = [
            Payout(
                seat=seat,
                kind="progressive",
                hand="royal_flush",
                outcome=SeatOutcome.PAID,
                award=AwardRule(AwardKind.PERCENT_OF_METER, meter_ppm=ppm),
                meter_id=self.meter,
                line="royal_flush",
            )
            for seat, ppm in enumerate(percents, 1)
        ]
        locked = self.run(self.store.rounds.locked_round(self.table, round_id))
        result = self.run(
            self.store.rounds.settle(
                self.table, round_id, plan, locked.lockout_fingerprint, f"settle-{round_id}"
            )
        )
        ids = []
        for seat, ppm in zip(result.results, percents, strict=True):
            award = meter_money.award_percent(self.book, ppm, seat.journal_seq)
            assert seat.amount_cents == award.amount_cents
            assert seat.meter_before_cents == award.before_cents
            self.awards[seat.jackpot_id] = (award, seat.journal_seq)
            ids.append(seat.jackpot_id)
        self._expect_moved(before)
        return multiple(*ids)

    @rule(round_id=consumes(rounds))
    def void(self, round_id: int) -> None:
        assert self.book is not None
        if round_id not in self.locked:
            return
        given, lockout_seq = self.locked.pop(round_id)
        before = self._before()
        result = self.run(
            self.store.rounds.void_round(self.table, round_id, "misdeal", f"void-{round_id}")
        )
        returned = [meter_money.void(self.book, c, lockout_seq) for c in given]
        stored = [
            (c.to_meter_microcents, c.to_reserve_microcents)
            for w in result.reversed
            for c in w.contributions
        ]
        assert stored == [(r.from_meter, r.from_reserve) for r in returned]
        self._expect_moved(before)

    @rule(jackpot_id=consumes(jackpots), approve=st.booleans())
    def review(self, jackpot_id: str, approve: bool) -> None:
        assert self.book is not None
        award, seq = self.awards.pop(jackpot_id)
        before = self._before()
        review = self.store.jackpots.review_jackpot(
            jackpot_id,
            approve=approve,
            reviewer="jackpot://supervisor/s",
            reviewer_cert="x",
            note="",
        )
        if not approve:
            if self.book.last_hit_seq > seq:  # a later hit was paid from what this one left
                try:
                    self.run(review)
                except FailedPrecondition:
                    self._expect_moved(before)
                    # As the refusal says: approve it (a correction is an adjustment).
                    self.run(
                        self.store.jackpots.review_jackpot(
                            jackpot_id,
                            approve=True,
                            reviewer="jackpot://supervisor/s",
                            reviewer_cert="x",
                            note="",
                        )
                    )
                    self._expect_moved(before)
                    return
                raise AssertionError("a rejection after a later hit was accepted")
            meter_money.reject(self.book, award)
        self.run(review)
        self._expect_moved(before)

    @rule(amount=st.integers(-30_000, 30_000).filter(bool))
    def adjustment(self, amount: int) -> None:
        """One operator requests, another approves: the meter moves by the amount, or both
        steps are refused beyond zero or the ceiling and nothing moves."""
        assert self.book is not None
        before = self._before()
        fits = meter_money.adjust(meter_money.MeterBook(**vars(self.book)), amount)
        request = self.store.controls.request_adjustment(
            self.meter,
            amount,
            reason="r",
            reference="ref",
            actor="op-a",
            actor_cert="",
            request_id=uuid.uuid4().hex,  # each a new request (the same one is one adjustment)
        )
        if not fits:
            try:
                self.run(request)
            except FailedPrecondition:
                self._expect_moved(before)
                return
            raise AssertionError("an adjustment beyond zero or the ceiling was accepted")
        requested = self.run(request)
        approve = self.store.controls.review_adjustment
        try:
            self.run(
                approve(requested.adjustment_id, approve=True, actor="op-a", actor_cert="", note="")
            )
        except FailedPrecondition:
            pass  # the requester cannot approve
        else:
            raise AssertionError("the requester approved their own adjustment")
        self.run(
            approve(requested.adjustment_id, approve=True, actor="op-b", actor_cert="", note="")
        )
        assert meter_money.adjust(self.book, amount)
        self._expect_moved(before)

    @precondition(lambda self: self.book is not None and self.book.staged is None)
    @rule(
        at=st.sampled_from(["hit", "reset"]),
        reset_over_cents=st.integers(0, 30_000),
        rate=st.integers(1, 300_000),
    )
    def stage(self, at: str, reset_over_cents: int, rate: int) -> None:
        """A change of the reset and the rate staged for the next hit or reset (no money
        moves); the award that hits applies it or drops it as the model does."""
        assert self.book is not None
        reset = RESET_CENTS + reset_over_cents
        ceiling = self.book.ceiling_cents
        if ceiling and (reset >= ceiling or (at == "hit" and ceiling * MICRO < self.book.value)):
            return  # refused at request time (MeterConfig, the ceiling below the amount)
        if (reset, rate) == (self.book.reset_cents, self.book.rate_ppm):
            return  # nothing to change: refused
        old = self.run(self.store.catalog.get_meter(self.meter))
        new = MeterConfig(
            self.meter,
            self.group,
            "caribbean-stud",
            reset,
            rate,
            self.book.reserve_rate_ppm,
            ceiling,
        )
        before = self._before()
        self.run(
            self.store.controls.stage_meter_change(
                old, new, at=at, actor="op", actor_cert="", reason="r"
            )
        )
        self.book.staged = StagedChange(
            at, self.book.parameters, (reset, rate, self.book.reserve_rate_ppm, ceiling)
        )
        self._expect_moved(before)

    @precondition(
        lambda self: (
            not self.locked
            and not self.awards
            and self.book is not None
            and self.book.staged is None
        )
    )
    @rule(ceiling_over_cents=st.one_of(st.just(0), st.integers(1, 20_000)))
    def retire(self, ceiling_over_cents: int) -> None:
        """In maintenance: a new meter, the table updated to feed it, the old one retired into
        it; both meters' journal entries move what the model moved."""
        assert self.book is not None
        old_book, old_meter = self.book, self.meter
        controls = self.store.controls
        self.run(controls.enter_maintenance(self.group, actor="op", actor_cert="", reason="r"))
        self.generation += 1
        new_book = self.run(self._create_meter(ceiling_over_cents))
        self.seen_seq = self.run(self._seq())  # the new meter's seed is not a transfer
        table = convert.table_config(progressive_table(self.table_id, self.group, self.meter))
        self.run(controls.update_table(table, actor="op", actor_cert="", reason="r"))
        try:  # this table object is of the old revision: refused, never applied
            self.run(self.store.rounds.lockout(self.table, 10**6, (), lockout_fingerprint(())))
        except StoreUnavailable:
            pass
        else:
            raise AssertionError("a lockout with a changed table's old definition was accepted")
        self.table = self.run(self.store.tables.get_table(self.table_id))
        before = (old_book.value + new_book.value, old_book.reserve + new_book.reserve)
        retired = self.run(
            controls.retire_meter(
                old_meter, self.meter, actor="op", actor_cert="", reason="r", approval="a"
            )
        )
        moved = meter_money.retire(old_book, new_book)
        assert retired.operator_recovered_microcents == moved.recovered
        assert (
            retired.transferred_microcents + retired.reserve_transferred_microcents
            == moved.to_meter + moved.to_reserve
        )
        self.book = new_book
        self.run(controls.leave_maintenance(self.group, actor="op", actor_cert="", reason="r"))
        # Over both meters the journal moved what left them: the operator's part.
        d_meter, d_reserve = self._moved()
        assert (d_meter, d_reserve) == (new_book.value - before[0], new_book.reserve - before[1])
        assert d_meter + d_reserve == -moved.recovered

    @invariant()
    def meters_match_and_the_audit_holds(self) -> None:
        if self.book is None:
            return
        fields = self.run(
            self.redis.hmget(
                keys.LinkGroupKeys(self.group).meter(self.meter),
                "value_microcents",
                "reserve_microcents",
            )
        )
        assert (int(fields[0]), int(fields[1])) == (self.book.value, self.book.reserve)
        meter = self.run(self.store.catalog.get_meter(self.meter))
        assert (meter.reset_cents, meter.rate_ppm, meter.ceiling_cents) == (
            self.book.reset_cents,
            self.book.rate_ppm,
            self.book.ceiling_cents,
        )
        assert (meter.staged_change is None) == (self.book.staged is None)
        report = self.run(verify(self.store))
        assert report.ok, report.differences


def _percent(ppm: int) -> str:
    """ppm as the decimal percent text the API takes ("15", "0.1234")."""
    whole, rest = divmod(ppm, 10_000)
    return f"{whole}.{rest:04d}".rstrip("0").rstrip(".")


def test_the_lua_moves_the_meter_money_as_the_reference_model_does(
    redis_server: RedisServer,
) -> None:
    MeterMoney.url = redis_server.url
    run_state_machine_as_test(
        MeterMoney,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_the_model_follows_the_rules_it_states() -> None:
    """Hand-computed: the ceiling diverts to the reserve, a 100% award resets from the reserve
    first, a rejection undoes it exactly."""
    book = MeterBook.created(
        "m",
        reset_cents=RESET_CENTS,
        rate_ppm=150_000,
        reserve_rate_ppm=50_000,
        ceiling_cents=RESET_CENTS + 20,
    )
    first = meter_money.contribute(book, 100)  # 15 cents to the meter, 5 to the reserve
    assert (first.to_meter, first.to_reserve) == (15 * MICRO, 5 * MICRO)
    second = meter_money.contribute(book, 100)  # 5 cents of room left: 10 more to the reserve
    assert (second.to_meter, second.to_reserve) == (5 * MICRO, 15 * MICRO)
    assert (book.value, book.reserve) == ((RESET_CENTS + 20) * MICRO, 20 * MICRO)
    award = meter_money.award_percent(book, FULL_PPM, seq=9)
    assert (award.amount_cents, award.before_cents) == (RESET_CENTS + 20, RESET_CENTS + 20)
    assert (award.topup, award.from_reserve) == (RESET_CENTS * MICRO, 20 * MICRO)
    assert award.operator_seed == (RESET_CENTS - 20) * MICRO
    assert (book.value, book.reserve, book.last_hit_seq) == (RESET_CENTS * MICRO, 0, 9)
    meter_money.reject(book, award)
    assert (book.value, book.reserve) == ((RESET_CENTS + 20) * MICRO, 20 * MICRO)
    assert _percent(150_000) == "15" and _percent(1_234) == "0.1234"


async def test_a_void_without_a_hit_since_its_lockout_takes_its_contribution_back_in_full(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    floor = Floor(admin)
    await floor.create()
    await tables.Lockout(lockout("t1", 1, [6]))
    await tables.Settle(settle("t1", 1, {6: STRAIGHT_FLUSH_HEARTS}))  # 10%: below the reset
    before = await floor.meter()
    assert before.amount_cents < RESET_CENTS
    await tables.Lockout(lockout("t1", 2, [1, 2]))
    reply = await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=2, reason="misdeal"))
    assert [w.contributions[0].to_meter_microcents for w in reply.reversed] == [
        15_000_000,
        15_000_000,
    ]
    after = await floor.meter()
    assert after.amount_microcents == before.amount_microcents
    assert after.operator_seed_microcents_total == before.operator_seed_microcents_total
