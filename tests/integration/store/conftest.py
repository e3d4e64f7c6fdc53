"""A store on the session's real redis-server, and one link group, meter and table on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from controller.domain.config import LinkGroupConfig, MeterConfig, TableConfig
from controller.domain.digests import lockout_fingerprint, settle_fingerprint
from controller.domain.rounds import RoundCards, SeatCards, Wager
from controller.domain.settlement import plan_settlement
from controller.store.redis_store import RedisStore
from jackpot.cards import parse_cards
from jackpot.results import SettleResult

GROUP = "floor"
METER = "cs-main"
ACTOR = "test"
RESET_CENTS = 1_000_000
WAGER_CENTS = 100
ROYAL = "As Ks Qs Js Ts"
NOTHING = "2c 5d 9h Jc 3s"
NOTHING_TOO = "3d 7c 9c Qh 2h"
DEALER = "4c 6d 8h Tc Kd"


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisStore]:
    store = RedisStore.from_url(redis_url)
    yield store
    await store.close()


@pytest.fixture
async def table(store: RedisStore) -> TableConfig:
    """Link group ``floor``, its progressive meter ``cs-main`` and table ``t1`` feeding it."""
    await store.catalog.create_link_group(LinkGroupConfig(GROUP, "store tests"), actor=ACTOR)
    await store.catalog.create_meter(
        MeterConfig(METER, GROUP, "caribbean-stud", RESET_CENTS, 150_000), actor=ACTOR
    )
    config = TableConfig.progressive("t1", "caribbean-stud", "B", 7, GROUP, METER, WAGER_CENTS)
    return await store.tables.register_table(config, actor=ACTOR)


def wagers(*seats: int) -> tuple[Wager, ...]:
    return tuple(Wager(seat, "progressive", WAGER_CENTS) for seat in seats)


def cards(*hands: str) -> RoundCards:
    """Seat 1's hand first, then seat 2's, ...; the dealer holds :data:`DEALER`."""
    seats = tuple(SeatCards(n, parse_cards(hand.split())) for n, hand in enumerate(hands, 1))
    return RoundCards(seats, dealer=parse_cards(DEALER.split()))


async def play(store: RedisStore, table: TableConfig, round_id: int, *hands: str) -> SettleResult:
    """Lock a round out with one wager per hand, then settle it with those hands."""
    placed = wagers(*range(1, len(hands) + 1))
    await store.rounds.lockout(table, round_id, placed, lockout_fingerprint(placed))
    locked = await store.rounds.locked_round(table, round_id)
    assert locked is not None
    dealt = cards(*hands)
    plan = plan_settlement(table, locked.wagers, dealt)
    return await store.rounds.settle(
        table, round_id, plan, locked.lockout_fingerprint, settle_fingerprint(dealt)
    )


def step_between_reads(
    monkeypatch: pytest.MonkeyPatch, aggregate: Any, step: Callable[[], Awaitable[None]]
) -> list[int]:
    """Run ``step`` (another caller's change) just before ``aggregate``'s first script call,
    after what it read before it: the returned list holds the number of its script calls."""
    run = aggregate._run
    calls = [0]

    async def first_the_step(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            await step()
        return await run(*args, **kwargs)

    monkeypatch.setattr(aggregate, "_run", first_the_step)
    return calls
