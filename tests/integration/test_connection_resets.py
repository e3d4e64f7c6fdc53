"""A Redis connection reset under a call is UNAVAILABLE (the table retries), never INTERNAL,
under the controller's own event loop (uvloop's when installed, as here).

uvloop refuses a write on a transport a reset closed with a :class:`RuntimeError` ("the
handler is closed") where asyncio's loop drops the write and the read fails as a lost
connection; the script calls' kept connections and redis-py's own path passed it on as it
was, and Lockout and Settle answered INTERNAL."""

from __future__ import annotations

import collections
import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from controller.testing import ControllerProcess, FaultProxy, RedisServer, TestPKI
from jackpot import tls
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import CARIBBEAN_RULES, FLUSH_CLUBS, FULL_HOUSE, lockout, settle

pytest.importorskip("uvloop")

TABLES = ("cs-1", "cs-2", "cs-3")
ROUNDS = 40
"""Rounds per table at most."""
SECONDS = 20.0
"""The test's bound in time, whatever the rounds reached."""
RESET_EVERY_S = 0.01


def _play(
    target: str, pki: TestPKI, table_id: str, deadline: float, codes: collections.Counter[str]
) -> None:
    """Up to ROUNDS rounds (lockout, then settle), each step retried while UNAVAILABLE, as
    the table agent does; every answer's code counted."""
    with tls.channel(target, pki.client("table", table_id)) as channel:
        tables = pb_grpc.TableServiceStub(channel)
        for round_id in range(1, ROUNDS + 1):
            locking = lockout(table_id, round_id, [1, 2])
            settling = settle(table_id, round_id, {1: FLUSH_CLUBS, 2: FULL_HOUSE})
            steps: tuple[Callable[[], object], ...] = (
                functools.partial(tables.Lockout, locking, timeout=10),
                functools.partial(tables.Settle, settling, timeout=10),
            )
            for step in steps:
                while True:
                    if time.monotonic() > deadline:
                        return
                    try:
                        step()
                    except grpc.RpcError as error:
                        codes[error.code().name] += 1
                        if error.code() == grpc.StatusCode.UNAVAILABLE:
                            continue
                        codes[f"{error.code().name}: {error.details()}"] += 1
                        return  # anything else fails the test below
                    codes["OK"] += 1
                    break


def test_resets_between_controller_and_redis_are_unavailable_under_uvloop(
    tmp_path: Path, pki: TestPKI
) -> None:
    log = tmp_path / "controller.log"
    with RedisServer(tmp_path / "redis") as server, FaultProxy(server.port) as proxy:
        with ControllerProcess(
            proxy.url,
            log,
            pki=pki,
            rules=CARIBBEAN_RULES,
            metrics=False,
            extra_args=("--table-calls-per-second", "0"),  # the retries come fast
        ) as controller:
            assert "event loop: uvloop" in log.read_text()
            deadline = time.monotonic() + SECONDS
            codes: collections.Counter[str] = collections.Counter()
            stop = threading.Event()
            resets = 0

            def reset() -> None:
                nonlocal resets
                while not stop.wait(RESET_EVERY_S):
                    resets += proxy.reset()

            resetter = threading.Thread(target=reset, daemon=True)
            players = [
                threading.Thread(
                    target=_play, args=(controller.target, pki, table_id, deadline, codes)
                )
                for table_id in TABLES
            ]
            resetter.start()
            for player in players:
                player.start()
            for player in players:
                player.join(SECONDS + 15)
            stop.set()
            resetter.join(5)
    assert resets > 0
    assert codes["UNAVAILABLE"] > 0, codes  # the faults reached the calls
    assert set(codes) <= {"OK", "UNAVAILABLE"}, codes  # never INTERNAL, nor anything else
    assert codes["OK"] >= len(TABLES), codes
