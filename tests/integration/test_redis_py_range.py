"""A round on the redis-py this process runs: the installed one (the top of the range
pyproject.toml declares), and, run again by tests/system/test_redis_py_lowest.py with the
lowest declared redis-py first on the path, the bottom of it.

The round is the controller's real path over real gRPC and a real redis-server: a meter and a
table created, a Lockout, a Settle with two awards, the journal read, the audit. The store's
script calls take the path they found at start (controller/store/script_calls.py): the
direct one where redis-py has what it needs, else redis-py's public one; the test checks
which, from what the process was told to expect (``EXPECT_SCRIPT_PATH``, ``direct`` when
unset) and from what the pool shows (the direct path keeps connections checked out between
calls, the public one gives each back). No codec is compiled during the round
(jackpot.codegen: every one was compiled when its module was imported).
"""

from __future__ import annotations

import os

import redis
from redis.asyncio import Redis

from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store.redis_store import RedisStore
from controller.store.script_calls import ScriptCalls
from jackpot import codegen
from jackpot.results import SettleResult
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from jackpot.wire import from_message
from tests.helpers import (
    PAIR,
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Floor,
    journal,
    lockout,
    settle,
)

MICRO = 1_000_000


async def test_a_round_on_this_redis_py(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    redis_url: str,
) -> None:
    expected = os.environ.get("EXPECT_REDIS_PY")
    if expected:
        assert redis.__version__ == expected, redis.__file__
    direct = os.environ.get("EXPECT_SCRIPT_PATH", "direct") == "direct"
    calls = ScriptCalls(controller.store.client)  # what the store found at start, looked up
    assert calls.direct is direct, calls.missing
    compiled = list(codegen.COMPILED)

    locked = await tables.Lockout(lockout("t1", 1, [2, 4, 6]))
    meter_m = locked.meters[0].amount_cents
    assert meter_m == RESET_CENTS + 3 * 15  # 15% of three $1 wagers
    reply = await tables.Settle(
        settle("t1", 1, {2: ROYAL_SPADES, 4: PAIR, 6: STRAIGHT_FLUSH_HEARTS})
    )
    result = from_message(reply, SettleResult)  # as the table agent reads it
    paid = {seat.seat: seat.amount_cents for seat in result.results}
    assert paid == {6: meter_m // 10, 4: 0, 2: meter_m - meter_m // 10}
    assert reply.meters[0].amount_cents == RESET_CENTS
    assert (await floor.meter()).amount_cents == RESET_CENTS
    # A replay answers the same, from the round's stored answer.
    again = await tables.Settle(
        settle("t1", 1, {2: ROYAL_SPADES, 4: PAIR, 6: STRAIGHT_FLUSH_HEARTS})
    )
    assert again == reply

    in_use = controller.store.client.connection_pool._in_use_connections
    assert bool(in_use) is direct  # kept between calls by the direct path only

    entries = await journal(redis_client)
    awards = [fields for _, fields in entries if fields["type"] == "award"]
    assert [(a["seat"], int(a["amount_cents"])) for a in awards] == [
        ("6", meter_m // 10),
        ("2", meter_m - meter_m // 10),
    ]
    assert [fields["type"] for _, fields in entries].count("contribution") == 3, entries
    # Every movement of the meter is in the journal, to the microcent: the meter's created
    # value, three contributions, two awards and the reset end at the reset value.
    assert sum(int(fields["d_meter"]) for _, fields in entries) == RESET_CENTS * MICRO

    store = RedisStore.from_url(redis_url)
    try:
        report = await verify(store)
    finally:
        await store.close()
    assert report.ok, report.differences
    assert codegen.COMPILED == compiled  # every codec the round used existed before it
    assert pb.SEAT_OUTCOME_NO_AWARD == next(r.outcome for r in reply.results if r.seat == 4)
