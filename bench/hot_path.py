"""``python -m bench.hot_path [--rounds N] [--repeats R] [--json FILE]``: the controller's own
work per round, without gRPC.

The rounds of :mod:`bench.run` (Caribbean Stud, paytable B, 7 seats each with a $1
Progressive Payout Wager, cards dealt from a seeded shuffled deck) are played by calling the
TableService's ``Lockout`` and ``Settle`` in this process with the requests the table agent
would send, against one redis-server (AOF off: Redis is another process and is not what is
measured here). What is measured is this process's CPU time per round (``time.process_time``:
robust when other work shares the cores): decoding is already done (protobuf messages are
handed in), everything after it is counted - conversion and checks, hand evaluation and the
settlement plan, the store's call (encoding, the Redis client, decoding the script's answer),
logging, and the reply message. gRPC's own work (HTTP/2, TLS, the event loop's I/O for it) is
what :mod:`bench.run` adds. Reported: the median over ``--repeats`` runs of ``--rounds``
rounds each, in microseconds (us). Bounded in rounds and in seconds (``--max-seconds`` a run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.workload import (
    GAME,
    LINK_GROUP,
    METER,
    PAYTABLE,
    RATE_PERCENT,
    RESET_CENTS,
    SEATS,
    WAGER_CENTS,
    round_requests,
)
from controller.api import convert
from controller.api.meter_watch import MeterWatcher
from controller.api.table_service import TableService
from controller.domain.config import LinkGroupConfig, TableConfig
from controller.observability.metrics import Metrics
from controller.store.redis_store import RedisStore
from controller.store.state_guard import StateGuard
from controller.testing import RedisServer
from jackpot.v1 import jackpot_pb2 as pb

ACTOR = "bench.hot_path"
TABLES = 16


async def _floor(store: RedisStore) -> list[str]:
    await store.catalog.create_link_group(
        LinkGroupConfig(LINK_GROUP, "hot path benchmark"), actor=ACTOR
    )
    await store.catalog.create_meter(
        convert.meter_config(
            pb.CreateMeterRequest(
                meter_id=METER,
                link_group_id=LINK_GROUP,
                game=GAME,
                reset_cents=RESET_CENTS,
                rate_of_progression_percent=RATE_PERCENT,
                reserve_rate_percent="0",
            )
        ),
        actor=ACTOR,
    )
    tables = []
    for number in range(1, TABLES + 1):
        table = TableConfig.progressive(
            f"t{number}", GAME, PAYTABLE, len(SEATS), LINK_GROUP, METER, WAGER_CENTS
        )
        tables.append((await store.tables.register_table(table, actor=ACTOR)).table_id)
    return tables


async def run_once(url: str, rounds: int, max_seconds: float, seed: int) -> float:
    """Play ``rounds`` rounds on a flushed Redis, the tables in turn, one round in flight per
    table; this process's CPU per round (us)."""
    store = RedisStore.from_url(url)
    try:
        await store.client.flushall()
        tables = await _floor(store)
        service = TableService(
            store, Metrics(), MeterWatcher(store.catalog.meter_values), StateGuard(store)
        )
        rng = random.Random(seed)
        # the requests are made before the clock starts: the table agent's work
        plays = [
            round_requests(tables[n % len(tables)], n // len(tables) + 1, rng)
            for n in range(rounds)
        ]
        context: Any = None  # the servicer passes it on; the interceptor is not measured here

        async def table(index: int) -> None:
            for lockout, settle in plays[index :: len(tables)]:
                if time.monotonic() > deadline:
                    return
                await service.Lockout(lockout, context)
                await service.Settle(settle, context)

        deadline = time.monotonic() + max_seconds
        await table(0)  # warm up: the scripts loaded, the table cached
        started = time.process_time()
        await asyncio.gather(*(table(i) for i in range(1, len(tables))))
        played = sum(len(plays[i :: len(tables)]) for i in range(1, len(tables)))
        return (time.process_time() - started) / played * 1e6
    finally:
        await store.close()


def _loop_factory() -> Any:
    """uvloop's loop, as the controller runs on (asyncio's when it is not installed)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def measure(rounds: int, repeats: int, max_seconds: float) -> dict[str, Any]:
    """``repeats`` runs on one redis-server; each run's CPU per round and their median."""
    with tempfile.TemporaryDirectory(prefix="jackpot-hot-path-") as work:
        redis = RedisServer(Path(work) / "redis").start()
        try:
            runs = []
            for n in range(repeats):
                with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                    runs.append(runner.run(run_once(redis.url, rounds, max_seconds, seed=n)))
        finally:
            redis.stop()
    return {
        "rounds": rounds,
        "repeats": repeats,
        "us_per_round": runs,
        "median_us": statistics.median(runs),
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.hot_path", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=3_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--json", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    if args.rounds < 2 * TABLES or args.repeats < 1:
        print(f"bench.hot_path: need --rounds >= {2 * TABLES}, --repeats >= 1", file=sys.stderr)
        return 2
    with open(os.devnull, "w") as sink:  # the controller's log lines are made, then dropped
        logging.basicConfig(stream=sink, level=logging.INFO)
        result = measure(args.rounds, args.repeats, args.max_seconds)
    runs = ", ".join(f"{us:.0f}" for us in result["us_per_round"])
    print(
        f"controller CPU per round without gRPC (Lockout + Settle, {len(SEATS)} seats): "
        f"{result['median_us']:.0f} us (median of {args.repeats} x {args.rounds:,} rounds: {runs})"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
