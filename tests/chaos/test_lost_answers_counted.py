"""A step Redis applied whose answer was lost is counted in the metrics all the same.

The chaos scenario "answers from Redis lost" found the money counters falling behind the
meters: the controller counted a step from its answer, and a step whose answer was lost
(a reset connection, a timeout, the caller's deadline) was counted only as its retry's replay.
Redis now counts each event in the step itself (the link group's ``counters`` hash) and every
replica shows those totals."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from controller.store import keys
from controller.testing import ControllerProcess, FaultProxy, RedisServer, TestPKI
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.chaos.harness import CONTROLLER_ARGS, LINK_GROUP
from tests.helpers import CARIBBEAN_RULES as RULES

METER = "cs-main"


@pytest.fixture
def behind_proxy(
    tmp_path: Path, pki: TestPKI
) -> Iterator[tuple[RedisServer, FaultProxy, ControllerProcess]]:
    """Redis, a proxy in front of it, and a controller reaching Redis through the proxy."""
    with RedisServer(tmp_path / "redis") as server, FaultProxy(server.port) as proxy:
        with ControllerProcess(
            proxy.url, tmp_path / "controller.log", pki=pki, rules=RULES, extra_args=CONTROLLER_ARGS
        ) as controller:
            yield server, proxy, controller


def lockout(round_id: int) -> pb.LockoutRequest:
    wager = pb.Wager(seat=1, kind=pb.WAGER_KIND_PROGRESSIVE, amount_cents=100)
    return pb.LockoutRequest(table_id="cs-1", round_id=round_id, wagers=[wager])


def counted(controller: ControllerProcess, family_name: str) -> dict[str, float]:
    """One metric family of the controller, by its samples' labels."""
    url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    return {
        ",".join(sample.labels.values()): sample.value
        for family in text_string_to_metric_families(text)
        if family.name == family_name
        for sample in family.samples
        if sample.name.endswith("_total")
    }


def test_a_lockout_whose_answer_was_lost_is_counted_in_the_contribution_metrics(
    behind_proxy: tuple[RedisServer, FaultProxy, ControllerProcess], pki: TestPKI
) -> None:
    server, proxy, controller = behind_proxy
    group = keys.LinkGroupKeys(LINK_GROUP)
    direct = redis.Redis.from_url(server.url, decode_responses=True)
    with tls.channel(controller.target, pki.client("table", "cs-1")) as channel:
        tables = pb_grpc.TableServiceStub(channel)
        tables.Lockout(lockout(1), timeout=10)  # loads the script, knows the table
        proxy.partition(upstream=False)  # the next lockout runs; its answer is held
        with pytest.raises(grpc.RpcError):
            tables.Lockout(lockout(2), timeout=1)
        for _ in range(100):  # bounded: it ran as soon as Redis read it
            if direct.hget(group.table("cs-1"), "last_round") == "2":
                break
            time.sleep(0.05)
        assert direct.hget(group.table("cs-1"), "last_round") == "2", "round 2 never ran"
        proxy.reset()  # the held answer is lost
        proxy.heal()
        tables.Lockout(lockout(2), timeout=10)  # the retry: answered from the stored reply
    applied = int(str(direct.hget(group.meter(METER), "contributions_microcents_total")))
    direct.close()
    assert applied == 2 * 20 * 1_000_000  # two $1 wagers, 15% to the meter, 5% to the reserve
    assert counted(controller, "jackpot_replayed_requests") == {
        "lockout": 1,
        "settle": 0,
        "void": 0,
        "chip_count": 0,
        "irregularity": 0,
    }
    contributions: dict[str, float] = {}
    for _ in range(100):  # bounded: the controller reads Redis's counters every 2 s
        contributions = counted(controller, "jackpot_contributions_cents")
        if contributions[METER] * 1_000_000 == applied:
            return
        time.sleep(0.1)
    raise AssertionError(
        f"jackpot_contributions_cents_total says {contributions[METER]} cents, Redis applied "
        f"{applied / 1_000_000} cents"
    )
